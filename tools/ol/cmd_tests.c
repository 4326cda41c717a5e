/* ol tests L7.x: builds the student's code and runs the course tests on it. */
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "cli.h"
#include "commands.h"
#include "debugrun.h"
#include "harness.h"
#include "opts.h"
#include "results.h"

static const char HELP[] =
    "usage: ol tests L7.x [--mine] [--ref-deps] [-k NAME] [--gdb | --asan | --valgrind]\n"
    "                     [--workspace DIR]\n"
    "\n"
    "Builds your code for the lesson (c/, with -Wall -Wextra: warnings are shown,\n"
    "not fatal, but for a call to an undeclared function and an int taken as a\n"
    "pointer) and runs the course tests on it, each in its own process. A failing\n"
    "test is named with its check, the file:line of the assertion (of a crash, when\n"
    "its backtrace says where) and the command that reruns it. What your code prints\n"
    "is not shown here: a tool below runs one test in the foreground, where it is.\n"
    "\n"
    "  --mine       run your own tests (c/tests/<lesson>/) on your code instead:\n"
    "               their verdicts, no grade (`ol check L7.x --tests-only` grades\n"
    "               them by mutation)\n"
    "  --ref-deps   use the reference for the lessons this one needs, instead of yours\n"
    "  -k NAME      run only the tests whose name contains NAME (a name of yours too,\n"
    "               with a tool below: the course's first, then yours)\n"
    "  --gdb        rerun test NAME (-k) under gdb, in the foreground\n"
    "  --asan       rebuild with AddressSanitizer and UBSan and run in the foreground\n"
    "  --valgrind   run under valgrind (errors and definite leaks fail), foreground\n"
    "The tools run the program as build/ol/debug/L7.x-course-tests (or -your-tests)\n"
    "in the tests' sandbox (your c/ is readable there, the course is not), and say\n"
    "the command they ran.\n"
    "\n"
    "Exit status: 0 every test passed, 1 a test failed or your code does not compile,\n"
    "2 usage error or a broken course.\n";

/* The test a debugging run is for: the name itself when it is a test, else
 * the one test whose name holds it. NULL when none or several do (said). */
static const char *one_test(const suite *s, const char *filter, const char *whose,
                            bool must_be_one) {
    for (int i = 0; i < s->tests.n; i++)
        if (!strcmp(s->tests.v[i], filter)) return s->tests.v[i];
    strlist hits = {0};
    for (int i = 0; i < s->tests.n; i++)
        if (strstr(s->tests.v[i], filter)) sl_push(&hits, s->tests.v[i]);
    const char *found = NULL;
    if (hits.n == 1) {
        for (int i = 0; i < s->tests.n && !found; i++)
            if (!strcmp(s->tests.v[i], hits.v[0])) found = s->tests.v[i];
    } else if (hits.n > 1 && must_be_one) {
        char *all = sl_join(&hits, ", ");
        ol_error("-k %s names %d of %s: %s; give one of them whole", filter, hits.n, whose, all);
        free(all);
    }
    sl_free(&hits);
    return found;
}

static bool any_has(const suite *s, const char *filter) {
    for (int i = 0; i < s->tests.n; i++)
        if (strstr(s->tests.v[i], filter)) return true;
    return false;
}

int cmd_tests(int argc, char **argv) {
    const char *workspace = NULL, *filter = NULL;
    bool ref_deps = false, mine_only = false, gdb = false, asan = false, valgrind = false;
    const ol_option opts[] = {{"workspace", 'w', "DIR", &workspace, NULL},
                              {"ref-deps", 0, NULL, NULL, &ref_deps},
                              {"mine", 0, NULL, NULL, &mine_only},
                              {NULL, 'k', "NAME", &filter, NULL},
                              {"gdb", 0, NULL, NULL, &gdb},
                              {"asan", 0, NULL, NULL, &asan},
                              {"valgrind", 0, NULL, NULL, &valgrind},
                              {0}};
    char *id;
    int status;
    if (!opts_one_lesson("tests", argc, argv, opts, HELP, "L7.1", &id, &status)) return status;
    debug_tool tool = gdb ? TOOL_GDB : asan ? TOOL_ASAN : valgrind ? TOOL_VALGRIND : TOOL_NONE;
    if (gdb + asan + valgrind > 1 || (gdb && !filter)) {
        free(id);
        return usage_error("tests", gdb + asan + valgrind > 1
                                        ? "one of --gdb, --asan and --valgrind at a time"
                                        : "--gdb debugs one test: name it with -k NAME");
    }
    ol_ctx ctx;
    lesson l;
    int opened = open_lesson(&ctx, &l, workspace, id);
    free(id);
    if (opened != 0) return OL_USAGE;
    if (require_student_workspace(&ctx) != 0) {
        lesson_free(&l);
        ctx_free(&ctx);
        return OL_USAGE;
    }
    lesson_lib code;
    deps d;
    suite s = {0};
    link_spec prog = {0};
    run_result r = {0};
    bool sanitize = tool == TOOL_ASAN, mine = mine_only;
    int rc = build_student_code(&ctx, &l, ref_deps, sanitize, &code, &d);
    if (rc == OL_PASS && !mine) {
        rc = build_course_suite(&ctx, &l, sanitize, &s);
        /* with a tool, -k may name one of the student's tests */
        if (rc == OL_PASS && filter && tool != TOOL_NONE && !any_has(&s, filter)) {
            suite theirs = {0};
            char *dir = path_join(ctx.student, l.student_tests), *err = NULL;
            bool found = suite_scan(&theirs, l.slug, dir, &err) == 0 && any_has(&theirs, filter);
            suite_free(&theirs);
            free(err);
            free(dir);
            if (found) {
                suite_free(&s);
                mine = true;
            }
        }
    }
    if (rc == OL_PASS && mine) rc = build_student_suite(&ctx, &l, sanitize, &s);
    const char *whose = mine ? "your tests" : "the course tests";
    const char *test = NULL;
    if (rc == OL_PASS && filter) {
        if (!any_has(&s, filter)) {
            char *all = sl_join(&s.tests, ", ");
            ol_error("no %s of %s has \"%s\" in its name; they are: %s",
                     mine ? "test of yours" : "course test", l.id, filter, all);
            free(all);
            rc = OL_USAGE;
        } else if (tool != TOOL_NONE) {
            test = one_test(&s, filter, whose, tool == TOOL_GDB);
            if (!test && tool == TOOL_GDB) rc = OL_USAGE;
        }
    }
    if (rc == OL_PASS) {
        program_spec(&prog, &s, &code, &l, &d);
        prog.sanitize = sanitize;
        int failed = build_links(&ctx, &prog, 1);
        if (failed != 0) {
            print_compiler_log(&ctx, prog.log);
            if (failed > 0)
                ol_error("your code does not link with %s (the linker's messages are above)",
                         whose);
            rc = failed > 0 ? OL_FAIL : OL_USAGE;
        }
    }
    if (rc == OL_PASS && tool != TOOL_NONE) {
        char *readable = xasprintf("%s-%s%s", l.id, mine ? "your-tests" : "course-tests",
                                   sanitize ? "-asan" : "");
        const char *file = NULL;
        for (int i = 0; test && i < s.tests.n && !file; i++)
            if (!strcmp(s.tests.v[i], test)) file = path_base(s.test_file.v[i]);
        debug_spec spec = {.bin = prog.bin,
                           .readable = readable,
                           .tool = tool,
                           .test = test,
                           .tcase = file,
                           .filter = test ? NULL : filter,
                           .timeout = l.test_timeout,
                           .sources = &l.sources,
                           .memory_bytes = lesson_memory_bytes(&l)};
        rc = debug_run(&ctx, &spec);
        free(readable);
    } else if (rc == OL_PASS) {
        run_spec spec = {.bin = prog.bin, .bin_key = prog.key, .tests = &s.tests, .filter = filter,
                         .timeout = l.test_timeout, .memory_bytes = lesson_memory_bytes(&l),
                         .fill_idle = true, .retry_timeouts = true};
        char data_key[HASH_HEX];
        fixtures_key(&ctx, &l, data_key);
        spec.data_key = data_key;
        /* said before the run: a hang in the code would otherwise look like ol's */
        int ntests = 0;
        for (int i = 0; i < s.tests.n; i++) ntests += !filter || strstr(s.tests.v[i], filter);
        if (mine)
            printf(
                "%s: your tests on your code (their verdicts, no grade: `ol check %s "
                "--tests-only` grades them by mutation)",
                l.id, l.id);
        else printf("%s: the course tests on your code", l.id);
        printf(": %d test%s, at most %g s each\n", ntests, ntests == 1 ? "" : "s", l.test_timeout);
        fflush(stdout);
        if (run_suite_by_file(&ctx, &s, &spec, &r) != 0) rc = 130;
        else {
            char *what = xasprintf("%s %s", l.id, mine ? "your tests" : "course tests");
            char *rerun = xasprintf("ol tests %s%s%s", l.id, mine ? " --mine" : "",
                                    ref_deps ? " --ref-deps" : "");
            int failed = print_results(&ctx, &r, what, false, true, rerun);
            free(rerun);
            free(what);
            rc = failed ? OL_FAIL : OL_PASS;
            const char *deps_flag = ref_deps ? " --ref-deps" : "";
            if (!failed && !mine)
                printf(
                    "Next: write your own tests in c/%s/ (`ol tests %s --mine%s` runs them), then "
                    "`ol check %s%s`\n",
                    l.student_tests, l.id, deps_flag, l.id, deps_flag);
            else if (!failed)
                printf(
                    "Next: `ol check %s%s` (or --tests-only while the course tests still fail on "
                    "your code)\n",
                    l.id, deps_flag);
        }
    }
    cache_prune(&ctx);
    run_result_free(&r);
    link_free(&prog);
    suite_free(&s);
    lesson_lib_free(&code);
    deps_free(&d);
    lesson_free(&l);
    ctx_free(&ctx);
    return rc;
}
