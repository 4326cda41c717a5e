/* ol check L7.x: the full grade (check.c), then the reports. */
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "check.h"
#include "cli.h"
#include "commands.h"
#include "opts.h"
#include "report.h"

static const char HELP[] =
    "usage: ol check L7.x [--tests-only] [--ref-deps] [--json FILE] [--html FILE]\n"
    "                     [--gradescope FILE] [--workspace DIR]\n"
    "\n"
    "Grades the lesson in stages; a stage runs only if the ones before it passed:\n"
    "  1. your code builds (-Wall -Wextra; warnings are shown)\n"
    "  2. the course tests pass on your code\n"
    "  3. your tests exist (c/tests/<lesson>/) and include only contract headers\n"
    "  4. your tests pass on the reference and on every wheat (a correct variant),\n"
    "     which run again, each built its own way, shuffled among the mutants; a\n"
    "     test failing on any of them is INVALID and the mutation score is unknown\n"
    "  5. the canary (a variant that aborts in every function) fails your tests\n"
    "  6. every mutant (a pitfall of the chapter injected into the reference) runs\n"
    "     against your tests: killed, timed out, survived, or not covered\n"
    "Score = (killed + timed out) / valid mutants. The lesson passes at its rung's\n"
    "threshold with every required pitfall killed. Your code and tests compile,\n"
    "and your tests run, in a sandbox: they reach only the system, the contracts,\n"
    "the fixtures and your own files, each run its own /tmp and no network but a\n"
    "loopback (tools/ol/README.md says what holds on which machine). Results are\n"
    "cached: a rerun with nothing changed takes a moment. docs/grading.md says more.\n"
    "\n"
    "  --tests-only       grade your tests alone (stages 3 to 6), even while the\n"
    "                     course tests still fail on your code: the lesson is not\n"
    "                     passed until a full `ol check` passes both\n"
    "  --ref-deps         use the reference for the lessons this one needs\n"
    "  --json FILE        also write Stryker's mutation-testing report (schema 2);\n"
    "                     until the lesson passes, it shows your code, not the\n"
    "                     reference's\n"
    "  --html FILE        also write that report as one HTML file in Stryker's viewer\n"
    "                     (opens offline in any browser)\n"
    "  --gradescope FILE  also write Gradescope's results.json\n"
    "\n"
    "Exit status: 0 pass (with --tests-only: your tests reach the rung), 1 fail,\n"
    "2 usage error or a broken grading harness.\n";

int cmd_check(int argc, char **argv) {
    const char *workspace = NULL, *json = NULL, *html = NULL, *gradescope = NULL;
    check_options opt = {.on_stage = report_stage};
    const ol_option opts[] = {{"workspace", 'w', "DIR", &workspace, NULL},
                              {"ref-deps", 0, NULL, NULL, &opt.ref_deps},
                              {"json", 0, "FILE", &json, NULL},
                              {"html", 0, "FILE", &html, NULL},
                              {"gradescope", 0, "FILE", &gradescope, NULL},
                              {"tests-only", 0, NULL, NULL, &opt.tests_only},
                              {0}};
    char *id;
    int status;
    if (!opts_one_lesson("check", argc, argv, opts, HELP, "L7.1", &id, &status)) return status;
    ol_ctx ctx;
    lesson l;
    int opened = open_lesson(&ctx, &l, workspace, id);
    free(id);
    if (opened != 0) return OL_USAGE;
    if (require_student_workspace(&ctx) != 0 || ctx_require_writable(&ctx) != 0) {
        lesson_free(&l);
        ctx_free(&ctx);
        return OL_USAGE;
    }
    /* Not started is the student's next step, not a broken harness. */
    for (int i = 0; !opt.tests_only && i < l.sources.n; i++) {
        char *rel = xasprintf("c/%s", l.sources.v[i]);
        char *path = path_join(ctx.ws, rel);
        bool started = is_file(path);
        if (!started)
            ol_error(
                "%s is missing in %s: you have not started %s yet; run `ol start %s`, write your "
                "code and tests, then `ol check %s`",
                rel, ctx.ws, l.id, l.id, l.id);
        free(rel);
        free(path);
        if (!started) {
            lesson_free(&l);
            ctx_free(&ctx);
            return OL_USAGE;
        }
    }
    check_report r;
    opt.data = &ctx;
    report_header(&l);
    int rc = check_run(&ctx, &l, &opt, &r);
    if (rc != 130) {
        report_summary(&ctx, &r);
        if (json && report_write_stryker(&ctx, &r, json) != 0 && rc == OL_PASS) rc = OL_USAGE;
        if (html && report_write_html(&ctx, &r, html) != 0 && rc == OL_PASS) rc = OL_USAGE;
        if (gradescope && report_write_gradescope(&ctx, &r, gradescope) != 0 && rc == OL_PASS)
            rc = OL_USAGE;
    }
    check_report_free(&r);
    cache_prune(&ctx);
    lesson_free(&l);
    ctx_free(&ctx);
    return rc;
}
