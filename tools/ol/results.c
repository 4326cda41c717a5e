#include "results.h"

#include <ctype.h>
#include <limits.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

/* Every number becomes "#": a digit run not glued to an identifier, with
 * its sign, decimals and exponent; and inf / nan. */
char *mask_numbers(const char *msg) {
    strbuf b = {0};
    const char *p = msg ? msg : "";
    while (*p) {
        bool after_word = p > msg && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
        bool starts = !after_word &&
                      (isdigit((unsigned char)*p) ||
                       ((*p == '-' || *p == '+' || *p == '.') && isdigit((unsigned char)p[1])));
        const char *w = (*p == '-' || *p == '+') ? p + 1 : p;
        if (!after_word && (strncasecmp(w, "nan", 3) == 0 || strncasecmp(w, "inf", 3) == 0) &&
            !isalnum((unsigned char)w[3]) && w[3] != '_') {
            sb_add(&b, "#");
            p = w + 3;
            continue;
        }
        if (!starts) {
            sb_addn(&b, p, 1);
            p++;
            continue;
        }
        if (*p == '-' || *p == '+') p++;
        if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
            p += 2;
            while (isxdigit((unsigned char)*p)) p++;
        } else {
            while (isdigit((unsigned char)*p) || *p == '.') p++;
            if ((*p == 'e' || *p == 'E') &&
                (isdigit((unsigned char)p[1]) ||
                 ((p[1] == '-' || p[1] == '+') && isdigit((unsigned char)p[2])))) {
                p += 2;
                while (isdigit((unsigned char)*p)) p++;
            }
        }
        sb_add(&b, "#");
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
    char *what = test_describe(t);
    fprintf(f, "  %sFAIL%s %s: %s\n", color(f, C_RED), color(f, C_RESET), t->name, what);
    free(what);
    /* Hidden (a test failing on the reference): whatever the test wrote, in
     * any spelling, could be what the reference computed, so only the place
     * it failed and that line of its own file are shown, never a message.
     * "No result" messages are ol's own. */
    bool own_message = t->status == TEST_MISSING;
    char *msg = hide_values && !own_message ? xstrdup("") : xstrdup(t->message ? t->message : "");
    bool located = t->line > 0 && showable(ctx, t->file, hide_values);
    /* Check says where the last assertion (or mark) was; for a crash that is "after this point" */
    if (located)
        fprintf(f, "       %s:%d:%s%s%s\n", shown_path(ctx, t->file), t->line,
                t->status == TEST_FAIL ? "" : " (after this point)", *msg ? " " : "", msg);
    else if (*msg)
        fprintf(f, "       %s\n", msg);
    else if (hide_values && t->line > 0)
        fprintf(f, "       (at a place outside your test files)\n");
    free(msg);
    char *line = located ? source_line(t->file, t->line) : NULL;
    if (line)
        fprintf(f, "       %s%5d | %s%s\n", color(f, C_DIM), t->line, line, color(f, C_RESET));
    free(line);
}

int print_results(ol_ctx *ctx, const run_result *r, const char *what, bool hide_values,
                  bool list_passes) {
    int failed = 0;
    for (int i = 0; i < r->n; i++) {
        const test_result *t = &r->t[i];
        if (t->status == TEST_PASS) {
            if (list_passes)
                printf("  %spass%s %s\n", color(stdout, C_GREEN), color(stdout, C_RESET), t->name);
        } else {
            fflush(stdout);
            print_test_failure(ctx, stdout, t, hide_values);
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
