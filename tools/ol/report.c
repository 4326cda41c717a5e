/* report: what `ol check` prints on the terminal. Stages as they end; then
 * the mutant table, survivors as compiler-style warnings, the score against
 * the rung, the tests that kill nothing, and what to do next. */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "prebuilt.h"
#include "report.h"
#include "results.h"
#include "site.h"

void duration_text(double seconds, char *buf, size_t size) {
    if (seconds < 0) snprintf(buf, size, "an unknown time");
    else if (seconds < 0.0005) snprintf(buf, size, "%.0f µs", seconds * 1e6);
    else if (seconds < 0.01) snprintf(buf, size, "%.1f ms", seconds * 1e3);
    else if (seconds < 1) snprintf(buf, size, "%.0f ms", seconds * 1e3);
    else snprintf(buf, size, "%.2f s", seconds);
}

void report_header(const lesson *l) {
    printf("%sol check %s%s: %s (rung %s)\n", color(stdout, C_BOLD), l->id, color(stdout, C_RESET),
           l->title, l->rung);
    fflush(stdout);
}

/* "file:line: message" -> "file:line: error: message", as a compiler says it
 * (names and lines of the student's files in it, shown_text). */
static void print_problems(const strlist *problems) {
    for (int i = 0; i < problems->n; i++) {
        char *problem = shown_text(problems->v[i]);
        const char *msg = strstr(problem, ": ");
        int head = msg ? (int)(msg - problem) : 0;
        printf("%.*s: %serror:%s %s\n", head, problem, color(stdout, C_RED), color(stdout, C_RESET),
               msg ? msg + 2 : problem);
        free(problem);
    }
}

void report_stage(const check_report *r, int i, void *ctx) {
    const stage *s = &r->stages[i];
    /* what made the stage fail, then the stage's line */
    if (i == ST_COURSE && s->state == STAGE_FAIL)
        for (int k = 0; k < r->ncourse_failed; k++) {
            print_test_failure(ctx, stdout, &r->course_failed[k], false);
            char *cmd =
                xasprintf("ol tests %s -k %s   (add --gdb, --asan or --valgrind to debug it)",
                          r->l->id, r->course_failed[k].name);
            print_rerun(stdout, cmd);
            free(cmd);
        }
    if (i == ST_TESTS && s->state == STAGE_FAIL) print_problems(&r->problems);
    if (i == ST_VALID && s->state == STAGE_FAIL)   /* their own code: nothing to hide */
        for (int k = 0; k < r->nown_failed; k++) {
            print_test_failure(ctx, stdout, &r->own_failed[k], false);
            char *cmd = xasprintf("ol tests %s --mine -k %s   (add --gdb, --asan or --valgrind to "
                                  "debug it)", r->l->id, r->own_failed[k].name);
            print_rerun(stdout, cmd);
            free(cmd);
        }
    const char *word = s->state == STAGE_PASS ? "PASS" : s->state == STAGE_FAIL ? "FAIL" : "skip";
    const char *ansi = s->state == STAGE_PASS ? C_GREEN : s->state == STAGE_FAIL ? C_RED : C_DIM;
    printf("[%d/%d] %s%s%s  %s", i + 1, N_STAGES, color(stdout, ansi), word, color(stdout, C_RESET),
           s->title);
    if (s->state == STAGE_FAIL && !s->required) printf(" (not required at %s)", r->l->rung);
    if (s->summary) { /* it may name the student's files and tests */
        char *summary = shown_text(s->summary);
        printf(": %s", summary);
        free(summary);
    }
    printf("\n");
    fflush(stdout);
}

static const char *status_color(mutant_status s) {
    switch (s) {
    case MS_KILLED:
    case MS_TIMEOUT: return C_GREEN;
    case MS_SURVIVED:
    case MS_NOCOVERAGE: return C_RED;
    default: return C_YELLOW;
    }
}

/* The terminal's width, or 0 (no limit) when stdout is not a terminal. */
static int width_of_stdout(void) {
    struct winsize ws;
    if (!isatty(STDOUT_FILENO)) return 0;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 60) return ws.ws_col;
    return 100;
}

static void print_mutant_table(const check_report *r) {
    int width = width_of_stdout();
    int title_w = width ? width - 66 : 1000;
    if (title_w < 20) title_w = 20;
    printf("\n%-6s %-7s %-12s %-36s %s\n", "Mutant", "Pitfall", "Status", "Caught by", "Title");
    for (int i = 0; i < r->nmutants; i++) {
        const mutant_outcome *o = &r->outcomes[i];
        /* the first test that caught it, and how many more did */
        char *killers = !o->killed_by.n ? xstrdup("-")
                        : o->killed_by.n == 1
                            ? xstrdup(o->killed_by.v[0])
                            : xasprintf("%s +%d", o->killed_by.v[0], o->killed_by.n - 1);
        if (strlen(killers) > 36) strcpy(killers + 32, "...");
        char pit[16];
        snprintf(pit, sizeof pit, "%s%s", o->m->pitfall, o->required ? "*" : "");
        /* pad before colouring, so the columns hold */
        printf("%-6s %-7s %s%-12s%s %-36s %.*s%s\n", o->m->id, pit,
               color(stdout, status_color(o->status)), mutant_status_name(o->status),
               color(stdout, C_RESET), killers, title_w, o->m->title,
               (int)strlen(o->m->title) > title_w ? "..." : "");
        free(killers);
    }
    printf("(* a required pitfall: your tests must kill it)\n");
}

/* "reference/x.c:64: warning: Survived: <title> [s05]" and the symptom. */
/* "c/tinyllm/x.c:48: warning: Survived in rmsnorm_forward: <title> [s05]":
 * the lesson's function and where it is in the student's own file, never
 * the hidden reference's path or lines. */
static void print_survivors(ol_ctx *ctx, const check_report *r) {
    bool any = false;
    for (int i = 0; i < r->nmutants; i++) {
        const mutant_outcome *o = &r->outcomes[i];
        if (o->status != MS_SURVIVED && o->status != MS_NOCOVERAGE) continue;
        if (!any) printf("\n");
        any = true;
        mutant_site site;
        mutant_site_of(ctx, o->m, o->status == MS_NOCOVERAGE ? o->uncovered_line : 0, &site);
        char at[32] = "";
        if (site.line) snprintf(at, sizeof at, ":%d", site.line);
        printf("%s%s: %swarning:%s %s%s%s: %s [%s]%s\n", site.file ? site.file : "?", at,
               color(stdout, C_YELLOW), color(stdout, C_RESET),
               o->status == MS_SURVIVED ? "Survived" : "NoCoverage", site.function ? " in " : "",
               site.function ? site.function : "", o->m->title, o->m->id,
               o->required ? " (required)" : "");
        if (o->status == MS_NOCOVERAGE)
            printf("    no test of yours runs the part of %s that this mutant changes\n",
                   site.function ? site.function : "the lesson's code");
        mutant_site_free(&site);
        if (o->m->symptom && *o->m->symptom) printf("    symptom: %s\n", o->m->symptom);
        if (o->m->hint && *o->m->hint) printf("    hint: %s\n", o->m->hint);
    }
}

static void print_invalid(ol_ctx *ctx, const check_report *r) {
    if (!r->ninvalid) return;
    printf(
        "\nYour tests must pass on every correct implementation; these do not (values are hidden:\n"
        "they would show the reference's answers):\n");
    /* each test once, where it first failed; then the other places it fails */
    for (int i = 0; i < r->ninvalid; i++) {
        const char *name = r->invalid[i].t.name;
        bool seen = false;
        for (int k = 0; k < i; k++) seen = seen || !strcmp(r->invalid[k].t.name, name);
        if (seen) continue;
        printf("  on %s:\n", r->invalid[i].where);
        print_test_failure(ctx, stdout, &r->invalid[i].t, true);
        strlist also = {0};
        for (int k = i + 1; k < r->ninvalid; k++)
            if (!strcmp(r->invalid[k].t.name, name)) sl_push(&also, r->invalid[k].where);
        if (also.n) {
            char *where = sl_join(&also, "; ");
            printf("       it fails the same way on %s\n", where);
            free(where);
        }
        sl_free(&also);
    }
    for (int i = 0; i < r->hints.n; i++)
        printf("  %shint:%s %s\n", color(stdout, C_BOLD), color(stdout, C_RESET), r->hints.v[i]);
    char *cmd = xasprintf(
        "ol check %s --tests-only   (your tests alone; `ol tests %s --mine` runs them on your "
        "code)",
        r->l->id, r->l->id);
    print_rerun(stdout, cmd);
    free(cmd);
}

static void print_next(ol_ctx *ctx, const check_report *r) {
    const lesson *l = r->l;
    printf("\n");
    if (r->tests_only && r->tests_pass) {
        printf(
            "%sYOUR TESTS PASS%s at %s (--tests-only): %s is not passed until `ol check %s` passes "
            "both stages, your code (the course tests) and your tests.\nNext: make the course "
            "tests pass on your code: `ol tests %s`.\n",
            color(stdout, C_GREEN), color(stdout, C_RESET), l->rung, l->id, l->id, l->id);
        return;
    }
    if (r->tests_only)
        printf(
            "(--tests-only: your tests alone were graded; the lesson needs your code to pass the "
            "course tests too)\n");
    if (r->passed) {
        printf("%sPASS%s: %s reaches %s.", color(stdout, C_GREEN), color(stdout, C_RESET), l->id,
               l->rung);
        if (prebuilt_release(ctx)) /* a student release holds no reference source */
            printf(" The grader's report of a passing submission shows the reference.\n");
        else
            printf(" `ol diff %s` shows your code beside the reference.\n", l->id);
        if (r->survived + r->no_coverage > 0)
            printf(
                "The survivors above still point at bugs your tests would let through: worth a "
                "test each.\n");
        return;
    }
    printf("%sFAIL%s: %s does not reach %s yet.\nNext: ", color(stdout, C_RED),
           color(stdout, C_RESET), l->id, l->rung);
    if (r->stages[ST_BUILD].state == STAGE_FAIL)
        printf("fix the compiler's errors above, then run `ol check %s` again.\n", l->id);
    else if (r->stages[ST_COURSE].state == STAGE_FAIL)
        printf("make the course tests pass first: `ol tests %s` (-k NAME runs one test).\n", l->id);
    else if (r->stages[ST_TESTS].state == STAGE_FAIL)
        printf(
            "write your tests in c/%s/ as START_TEST(name) ... END_TEST blocks, including only "
            "contract headers, <check.h>, standard C headers and files of that folder.\n",
            l->student_tests);
    else if (r->stages[ST_VALID].state == STAGE_FAIL && r->nown_failed)
        printf(
            "your tests fail on your own code, which passes the course tests: either your code "
            "has a bug they found (fix it), or they check something the contract does not promise "
            "(read their assertions above against contracts/%s).\n",
            l->contracts.n ? l->contracts.v[0] : "");
    else if (r->stages[ST_VALID].state == STAGE_FAIL && r->invalid_on_rerun)
        printf(
            "a test that passes once and fails when it runs again depends on something besides "
            "what the code computes (how the code was built or laid out in memory, files an "
            "earlier run left, the order, the time, its environment): make each test start from "
            "nothing and check only what the code returns.\n");
    else if (r->stages[ST_VALID].state == STAGE_FAIL)
        printf(
            "a test that fails on the reference checks something the contract does not promise (or "
            "has a bug): read its assertion above against the contract in contracts/%s.\n",
            l->contracts.n ? l->contracts.v[0] : "");
    else if (r->stages[ST_CANARY].state == STAGE_FAIL)
        printf("call the lesson's functions from your tests and check what they return.\n");
    else {
        if (r->required_missed.n) {
            char *ids = sl_join(&r->required_missed, ", ");
            printf("kill the required pitfalls first (%s): ", ids);
            free(ids);
        }
        printf(
            "for each survivor, write a test whose assertion fails when its symptom happens; the "
            "chapter's pitfall table (course/%s/README.md) says what each one breaks.\n",
            l->id);
    }
}

void report_summary(ol_ctx *ctx, const check_report *r) {
    if (r->harness_broken) {
        fflush(stdout);
        ol_error(
            "the grading harness is broken: %s.\nThis is not a grade of your work: tell your "
            "instructor.",
            r->harness_message ? r->harness_message : "?");
        return;
    }
    for (int i = 0; i < N_STAGES; i++)
        if (r->stages[i].state == STAGE_SKIPPED && !r->stages[i].summary)
            printf("[%d/%d] %sskip%s  %s: skipped, an earlier stage failed\n", i + 1, N_STAGES,
                   color(stdout, C_DIM), color(stdout, C_RESET), r->stages[i].title);
    print_invalid(ctx, r);
    bool ran = r->stages[ST_MUTATION].state != STAGE_SKIPPED && r->nmutants > 0;
    if (ran) {
        print_mutant_table(r);
        print_survivors(ctx, r);
        printf(
            "\nMutation score: %.2f = (%d killed + %d timed out) / %d valid mutant%s (%d survived, "
            "%d not covered",
            r->score, r->killed, r->timed_out, r->valid, r->valid == 1 ? "" : "s", r->survived,
            r->no_coverage);
        if (r->errors) printf(", %d not counted: CompileError or RuntimeError", r->errors);
        printf("); %s asks for %.2f\n", r->l->rung, r->l->threshold);
        if (r->l->required_pitfalls.n) {
            if (r->required_missed.n) {
                char *ids = sl_join(&r->required_missed, ", ");
                printf("Required pitfalls: %d of %d killed; not killed: %s\n",
                       r->l->required_pitfalls.n - r->required_missed.n, r->l->required_pitfalls.n,
                       ids);
                free(ids);
            } else {
                printf("Required pitfalls: all %d killed\n", r->l->required_pitfalls.n);
            }
        }
        if (r->kill_nothing.n) {
            char *names = sl_join(&r->kill_nothing, ", ");
            printf("Tests that kill no mutant: %s\n", names);
            free(names);
        }
        char slowest[32];
        duration_text(r->baseline_seconds, slowest, sizeof slowest);
        if (r->timeout + 1e-9 < 1.5 * r->baseline_seconds + 2.0)
            printf(
                "Per-test timeout for mutants: %.1f s, the lesson's limit (1.5 x %s, the slowest "
                "of your tests on the reference, + 2 s would be more)\n",
                r->timeout, slowest);
        else
            printf(
                "Per-test timeout for mutants: %.1f s = 1.5 x %s (the slowest of your tests on the "
                "reference) + 2 s\n",
                r->timeout, slowest);
    }
    print_next(ctx, r);
}
