/* ol tests L7.x: builds the student's code and runs the course tests on it. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "cli.h"

static const char HELP[] =
    "usage: ol tests L7.x [--ref-deps] [-k NAME] [--workspace DIR]\n"
    "\n"
    "Builds your code for the lesson (c/, with -Wall -Wextra: warnings are shown,\n"
    "not fatal) and runs the course tests on it, each in its own process. A failing\n"
    "test is named with its check and the file:line of the assertion.\n"
    "\n"
    "  --ref-deps   use the reference for the lessons this one needs, instead of yours\n"
    "  -k NAME      run only the tests whose name contains NAME\n"
    "\n"
    "Exit status: 0 every test passed, 1 a test failed or your code does not compile,\n"
    "2 usage error or a broken course.\n";

int build_student_code(ol_ctx *ctx, const lesson *l, bool ref_deps, lesson_lib *mine, deps *d) {
    char *err = NULL;
    memset(mine, 0, sizeof *mine);
    memset(d, 0, sizeof *d);
    if (build_prepare(ctx) != 0 || require_link_files(ctx, l) != 0) return OL_USAGE;
    if (lesson_lib_prepare(ctx, mine, l, LIB_STUDENT, NULL, "your code", &err) != 0 ||
        deps_prepare(ctx, l, false, ref_deps, d, &err) != 0) {
        ol_error("%s", err);
        free(err);
        return OL_USAGE;
    }
    lesson_lib **libs = xcalloc((size_t)d->n + 1, sizeof *libs);
    libs[0] = mine;
    for (int i = 0; i < d->n; i++) libs[i + 1] = &d->libs[i];
    int failed = lesson_libs_build(ctx, libs, d->n + 1);
    for (int i = 0; i <= d->n && failed >= 0; i++) lesson_lib_print_log(ctx, libs[i]);
    int rc = OL_PASS;
    if (failed < 0) rc = OL_USAGE;
    else if (failed > 0) {
        for (int i = 0; i <= d->n; i++)
            if (!libs[i]->ok) ol_error("%s does not compile (the compiler's messages are above)", libs[i]->label);
        rc = OL_FAIL;
        /* the reference not compiling is the course's fault, not the student's */
        for (int i = 1; i <= d->n; i++)
            if (!libs[i]->ok && libs[i]->kind != LIB_STUDENT) rc = OL_USAGE;
    }
    free(libs);
    return rc;
}

int build_course_suite(ol_ctx *ctx, const lesson *l, suite *s) {
    char *err = NULL;
    char *dir = path_join(ctx->root, l->course_tests);
    char *name = xasprintf("%s course tests", l->id);
    int rc = OL_PASS;
    if (suite_scan(s, name, dir, &err) != 0 || suite_generate(ctx, s, &err) != 0) {
        ol_error("%s (lesson.json \"course_tests\"): tell your instructor", err);
        rc = OL_USAGE;
    } else if (s->tests.n == 0) {
        ol_error("%s holds no START_TEST: the course tests are missing", shown_path(ctx, dir));
        rc = OL_USAGE;
    } else {
        int failed = suite_compile(ctx, s, "the course tests");
        if (failed > 0)
            ol_error("the course tests of %s do not compile against the contracts: tell your instructor", l->id);
        if (failed != 0) rc = OL_USAGE; /* < 0: interrupted, and ol says so */
    }
    free(err);
    free(dir);
    free(name);
    return rc;
}

int print_results(ol_ctx *ctx, const run_result *r, const char *what, bool hide_values, bool list_passes) {
    int failed = 0;
    for (int i = 0; i < r->n; i++) {
        const test_result *t = &r->t[i];
        if (t->status == TEST_PASS) {
            if (list_passes) printf("  %spass%s %s\n", color(stdout, C_GREEN), color(stdout, C_RESET), t->name);
        } else {
            fflush(stdout);
            print_test_failure(ctx, stdout, t, hide_values);
            failed++;
        }
    }
    if (r->watchdog)
        printf("  the test program ran past its time limit (%.0f s) and was stopped\n", r->seconds);
    else if (r->term_signal)
        printf("  the test program itself died: signal %d (%s)\n", r->term_signal, strsignal(r->term_signal));
    printf("%s: %d test%s, %d passed, %d failed%s\n", what, r->n, r->n == 1 ? "" : "s", r->n - failed, failed,
           r->cached ? " (unchanged since the last run)" : "");
    return failed;
}

int cmd_tests(int argc, char **argv) {
    static const struct option opts[] = {{"workspace", required_argument, 0, 'w'},
                                         {"ref-deps", no_argument, 0, 'r'},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *workspace = NULL, *filter = NULL;
    bool ref_deps = false;
    int c;
    optind = 0;
    opterr = 0;   /* option_error says it once, with the way out */
    while ((c = getopt_long(argc, argv, "hw:k:", opts, NULL)) != -1) {
        if (c == 'h') return print_help(HELP);
        else if (c == 'w') workspace = optarg;
        else if (c == 'k') filter = optarg;
        else if (c == 'r') ref_deps = true;
        else return option_error("tests", c, argv);
    }
    if (argc - optind != 1) return usage_error("tests", "give one lesson, e.g. `ol tests L7.1`");
    ol_ctx ctx;
    lesson l;
    if (open_lesson(&ctx, &l, workspace, argv[optind]) != 0) return OL_USAGE;
    lesson_lib mine;
    deps d;
    suite s = {0};
    link_spec prog = {0};
    run_result r = {0};
    int rc = build_student_code(&ctx, &l, ref_deps, &mine, &d);
    if (rc == OL_PASS) rc = build_course_suite(&ctx, &l, &s);
    if (rc == OL_PASS && filter) {
        bool any = false;
        for (int i = 0; i < s.tests.n; i++) any = any || strstr(s.tests.v[i], filter);
        if (!any) {
            char *all = sl_join(&s.tests, ", ");
            ol_error("no course test of %s has \"%s\" in its name; they are: %s", l.id, filter, all);
            free(all);
            rc = OL_USAGE;
        }
    }
    if (rc == OL_PASS) {
        program_spec(&prog, &s, &mine, &l, &d);
        int failed = build_links(&ctx, &prog, 1);
        if (failed != 0) {
            print_compiler_log(&ctx, prog.log);
            if (failed > 0) ol_error("your code does not link with the course tests (the linker's messages are above)");
            rc = failed > 0 ? OL_FAIL : OL_USAGE;
        }
    }
    if (rc == OL_PASS) {
        run_spec spec = {.bin = prog.bin, .bin_key = prog.key, .tests = &s.tests, .filter = filter,
                         .timeout = l.test_timeout};
        char data_key[HASH_HEX];
        fixtures_key(&ctx, &l, data_key);
        spec.data_key = data_key;
        if (run_suite_by_file(&ctx, &s, &spec, &r) != 0) rc = 130;
        else {
            printf("%s: the course tests on your code\n", l.id);
            char *what = xasprintf("%s course tests", l.id);
            int failed = print_results(&ctx, &r, what, false, true);
            free(what);
            rc = failed ? OL_FAIL : OL_PASS;
            if (!failed) printf("Next: write your own tests in c/%s/, then `ol check %s`\n", l.student_tests, l.id);
        }
    }
    cache_prune(&ctx);
    run_result_free(&r);
    link_free(&prog);
    suite_free(&s);
    lesson_lib_free(&mine);
    deps_free(&d);
    lesson_free(&l);
    ctx_free(&ctx);
    return rc;
}
