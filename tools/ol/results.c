#include "results.h"

#include <ctype.h>
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

void print_test_failure(ol_ctx *ctx, FILE *f, const test_result *t, bool hide_values) {
    char *what = test_describe(t);
    fprintf(f, "  %sFAIL%s %s: %s\n", color(f, C_RED), color(f, C_RESET), t->name, what);
    free(what);
    char *line = t->file && t->line > 0 ? source_line(t->file, t->line) : NULL;
    char *raw = hide_values ? mask_numbers_keeping(t->message, line)
                            : xstrdup(t->message ? t->message : "");
    char *msg = indented(raw, "       ");
    free(raw);
    /* Check says where the last assertion (or mark) was: for a crash that is
     * "after this point", unless its backtrace says where it happened */
    if (t->file && *t->file && t->line > 0 && t->crash_in)
        fprintf(f, "       %s:%d: crashed here (in %s)%s%s\n", shown_path(ctx, t->file), t->line,
                t->crash_in, *msg ? ": " : "", msg);
    else if (t->file && *t->file && t->line > 0)
        fprintf(f, "       %s:%d: %s%s\n", shown_path(ctx, t->file), t->line,
                t->status == TEST_FAIL ? "" : "(after this point) ", msg);
    else if (*msg)
        fprintf(f, "       %s\n", msg);
    free(msg);
    if (line)
        fprintf(f, "       %s%5d | %s%s\n", color(f, C_DIM), t->line, line, color(f, C_RESET));
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
            if (list_passes)
                printf("  %spass%s %s\n", color(stdout, C_GREEN), color(stdout, C_RESET), t->name);
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
