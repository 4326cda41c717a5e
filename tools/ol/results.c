#include "results.h"

#include <ctype.h>
#include <limits.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The length of the number token at p (its sign, decimals and exponent;
 * hex; inf and nan), or 0 when none starts there. at_start: p follows no
 * letter, digit or '_'. */
static size_t number_at(const char *p, bool at_start) {
    if (!at_start) return 0;
    const char *w = (*p == '-' || *p == '+') ? p + 1 : p;
    if ((strncasecmp(w, "nan", 3) == 0 || strncasecmp(w, "inf", 3) == 0) &&
        !isalnum((unsigned char)w[3]) && w[3] != '_')
        return (size_t)(w + 3 - p);
    bool starts = isdigit((unsigned char)*p) ||
                  ((*p == '-' || *p == '+' || *p == '.') && isdigit((unsigned char)p[1]));
    if (!starts) return 0;
    const char *q = w;
    if (q[0] == '0' && (q[1] == 'x' || q[1] == 'X')) {
        q += 2;
        while (isxdigit((unsigned char)*q)) q++;
    } else {
        while (isdigit((unsigned char)*q) || *q == '.') q++;
        if ((*q == 'e' || *q == 'E') &&
            (isdigit((unsigned char)q[1]) ||
             ((q[1] == '-' || q[1] == '+') && isdigit((unsigned char)q[2])))) {
            q += 2;
            while (isdigit((unsigned char)*q)) q++;
        }
    }
    return (size_t)(q - p);
}

static bool word_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Does text hold the number token tok (len bytes) as a token of its own? */
static bool holds_number(const char *text, const char *tok, size_t len) {
    for (const char *p = text; p && *p; p++) {
        size_t n = number_at(p, p == text || !word_char(p[-1]));
        if (n == len && strncmp(p, tok, len) == 0) return true;
        if (n) p += n - 1;
    }
    return false;
}

char *mask_numbers_keeping(const char *msg, const char *keep) {
    strbuf b = {0};
    const char *p = msg ? msg : "";
    while (*p) {
        size_t n = number_at(p, p == msg || !word_char(p[-1]));
        if (!n) {
            sb_addn(&b, p, 1);
            p++;
            continue;
        }
        /* the student's own text (their source line) is theirs to see */
        if (keep && holds_number(keep, p, n))
            sb_addn(&b, p, n);
        else
            sb_add(&b, "#");
        p += n;
    }
    return sb_take(&b);
}

char *mask_numbers(const char *msg) { return mask_numbers_keeping(msg, NULL); }

/* text with every line after the first indented by `indent`, so a message
 * of several lines stays under its heading. */
static char *indented(const char *text, const char *indent) {
    strbuf b = {0};
    for (const char *p = text; *p; p++) {
        sb_addn(&b, p, 1);
        if (*p == '\n' && p[1]) sb_add(&b, indent);
    }
    return sb_take(&b);
}

/* May ol show a line of this file? Check's file:line comes from the test
 * program, which can name any file (_ck_assert_failed is a function it may
 * call): only the student's own files and the course tests are shown. */
static bool showable(ol_ctx *ctx, const char *file, bool student_only) {
    if (!file || !*file) return false;
    char real[PATH_MAX], dir[PATH_MAX];
    if (!realpath(file, real)) return false;
    struct stat st;
    if (lstat(real, &st) != 0 || !S_ISREG(st.st_mode)) return false;
    if (realpath(ctx->student, dir) && path_rel(real, dir) != real) return true;
    if (student_only) return false;
    char *tests = path_join(ctx->root, "tests");
    bool course = realpath(tests, dir) && path_rel(real, dir) != real;
    free(tests);
    return course;
}

void print_test_failure(ol_ctx *ctx, FILE *f, const test_result *t, bool hide_values) {
    char *what = test_describe(t), *name = shown_text(t->name);
    fprintf(f, "  %sFAIL%s %s: %s\n", color(f, C_RED), color(f, C_RESET), name, what);
    free(name);
    free(what);
    /* Hidden (a test failing on the reference): whatever the test wrote, in
     * any spelling, could be what the reference computed, so only the place
     * it failed and that line of its own file are shown, never a message
     * (nor the function a crash names: the program's output says which).
     * "No result" messages are ol's own. */
    bool own_message = t->status == TEST_MISSING;
    char *raw = hide_values && !own_message ? xstrdup("") : xstrdup(t->message ? t->message : "");
    /* the message, the file, its line and a function are the student's text;
     * its later lines are marked, so none can pass for a line of ol's report */
    char *shown = shown_text(raw), *msg = indented(shown, "       | ");
    free(shown);
    free(raw);
    bool located = t->line > 0 && showable(ctx, t->file, hide_values);
    char *file = located ? shown_text(shown_path(ctx, t->file)) : NULL;
    /* Check says where the last assertion (or mark) was: for a crash that is
     * "after this point", unless its backtrace says where it happened */
    if (located && t->crash_in && !hide_values) {
        char *in = shown_text(t->crash_in);
        fprintf(f, "       %s:%d: crashed here (in %s)%s%s\n", file, t->line, in, *msg ? ": " : "",
                msg);
        free(in);
    } else if (located)
        fprintf(f, "       %s:%d:%s%s%s\n", file, t->line,
                t->status == TEST_FAIL || t->crash_in ? "" : " (after this point)", *msg ? " " : "",
                msg);
    else if (*msg)
        fprintf(f, "       %s\n", msg);
    else if (hide_values && t->line > 0)
        fprintf(f, "       (at a place outside your test files)\n");
    free(msg);
    free(file);
    char *line = located ? source_line(t->file, t->line) : NULL;
    if (line) {
        shown = shown_text(line);
        fprintf(f, "       %s%5d | %s%s\n", color(f, C_DIM), t->line, shown, color(f, C_RESET));
        free(shown);
    }
    free(line);
}

void print_rerun(FILE *f, const char *command) {
    fprintf(f, "       %srerun it: %s%s\n", color(f, C_DIM), command, color(f, C_RESET));
}

int print_results(ol_ctx *ctx, const run_result *r, const char *what, bool hide_values,
                  bool list_passes, const char *rerun) {
    int failed = 0;
    for (int i = 0; i < r->n; i++) {
        const test_result *t = &r->t[i];
        if (t->status == TEST_PASS) {
            if (list_passes) {
                char *name = shown_text(t->name);
                printf("  %spass%s %s\n", color(stdout, C_GREEN), color(stdout, C_RESET), name);
                free(name);
            }
        } else {
            fflush(stdout);
            print_test_failure(ctx, stdout, t, hide_values);
            if (rerun) {
                char *cmd = xasprintf("%s -k %s   (add --gdb, --asan or --valgrind to debug it)",
                                      rerun, t->name);
                print_rerun(stdout, cmd);
                free(cmd);
            }
            failed++;
        }
    }
    if (r->watchdog)
        printf("  the test program ran past its time limit (%.0f s) and was stopped\n", r->seconds);
    else if (r->term_signal)
        printf("  the test program itself died: signal %d (%s)\n", r->term_signal,
               strsignal(r->term_signal));
    printf("%s: %d test%s, %d passed, %d failed%s\n", what, r->n, r->n == 1 ? "" : "s",
           r->n - failed, failed, r->cached ? " (unchanged since the last run)" : "");
    return failed;
}
