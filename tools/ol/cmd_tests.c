/* ol tests L7.x: builds the student's code and runs the course tests on it. */
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "cli.h"
#include "commands.h"
#include "harness.h"
#include "opts.h"
#include "results.h"

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

int cmd_tests(int argc, char **argv) {
    const char *workspace = NULL, *filter = NULL;
    bool ref_deps = false;
    const ol_option opts[] = {{"workspace", 'w', "DIR", &workspace, NULL},
                              {"ref-deps", 0, NULL, NULL, &ref_deps},
                              {NULL, 'k', "NAME", &filter, NULL},
                              {0}};
    char *id;
    int status;
    if (!opts_one_lesson("tests", argc, argv, opts, HELP, "L7.1", &id, &status)) return status;
    ol_ctx ctx;
    lesson l;
    int opened = open_lesson(&ctx, &l, workspace, id);
    free(id);
    if (opened != 0) return OL_USAGE;
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
