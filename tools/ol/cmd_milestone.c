/* ol milestone MS-L7 [--smoke] [--ref-deps] [--gradescope FILE]: builds the
 * student's `tinyllm` with their lessons and checks what it does, one line
 * per check, then a verdict (milestone.h; course/<ID>/milestone.json). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "build.h"
#include "cli.h"
#include "commands.h"
#include "milestone.h"
#include "opts.h"
#include "proc.h"
#include "tinyllm_build.h"

static const char HELP[] =
    "usage: ol milestone MS-L7 [--smoke] [--ref-deps] [--gradescope FILE] [--workspace DIR]\n"
    "\n"
    "Builds the `tinyllm` command line with your code (each lesson you started;\n"
    "the reference for the others, or for all with --ref-deps) and checks it as a\n"
    "user would run it, one line per check:\n"
    "  --smoke  on the course's tiny checkpoints (fixtures/L7.9): `tinyllm info`'s\n"
    "           parameter count, `tinyllm logits` against the oracle's logits,\n"
    "           greedy `tinyllm generate` against the oracle's ids (with and without\n"
    "           the KV cache), and `tinyllm pull` from a fake Hub, then a load.\n"
    "  without  the same on SmolLM2-135M-Instruct from your tinyllm cache, each\n"
    "           against the course's reference tinyllm on the same files (it says\n"
    "           how to `tinyllm pull` the model when it is not there, and exits 2).\n"
    "  --gradescope FILE  also write Gradescope's results.json.\n"
    "course/MS-L7/README.md is the milestone's chapter.\n"
    "Exit status: 0 every check passed, 1 a check failed, 2 a usage error, the\n"
    "model missing, or a broken course (130 after Ctrl-C).\n";

static int write_gradescope(const char *path, const milestone *m, const milestone_results *r,
                            double seconds, const char *mode) {
    cJSON *o = cJSON_CreateObject(), *tests = cJSON_AddArrayToObject(o, "tests");
    int passed = 0;
    for (int i = 0; i < r->n; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "name", r->v[i].name);
        cJSON_AddNumberToObject(t, "score", r->v[i].passed ? 1 : 0);
        cJSON_AddNumberToObject(t, "max_score", 1);
        cJSON_AddStringToObject(t, "status", r->v[i].passed ? "passed" : "failed");
        cJSON_AddStringToObject(t, "output", r->v[i].detail);
        cJSON_AddItemToArray(tests, t);
        passed += r->v[i].passed;
    }
    cJSON_AddNumberToObject(o, "score", passed);
    cJSON_AddNumberToObject(o, "execution_time", round(seconds * 1000) / 1000);
    char *summary = xasprintf("%s %s: %d of %d checks passed", m->id, mode, passed, r->n);
    cJSON_AddStringToObject(o, "output", summary);
    free(summary);
    /* JSON is UTF-8; what the student's tinyllm printed (in a detail) need not be */
    char *raw = cJSON_Print(o), *text = utf8_repaired(raw);
    free(raw);
    cJSON_Delete(o);
    int rc = write_file_atomic(path, text, strlen(text));
    free(text);
    if (rc != 0) ol_error("cannot write %s", path);
    return rc;
}

int cmd_milestone(int argc, char **argv) {
    const char *workspace = NULL, *gradescope = NULL;
    bool smoke = false, ref_deps = false;
    const ol_option opts[] = {{"workspace", 'w', "DIR", &workspace, NULL},
                              {"gradescope", 0, "FILE", &gradescope, NULL},
                              {"smoke", 0, NULL, NULL, &smoke},
                              {"ref-deps", 0, NULL, NULL, &ref_deps},
                              {0}};
    strlist args = {0};
    opts_result parsed = opts_parse("milestone", argc, argv, opts, 0, &args);
    if (parsed != OPTS_RUN) {
        sl_free(&args);
        return parsed == OPTS_HELP ? print_help(HELP) : OL_USAGE;
    }
    if (args.n != 1) {
        ol_error("ol milestone takes one milestone id (MS-L7); see ol milestone --help");
        sl_free(&args);
        return OL_USAGE;
    }
    ol_ctx ctx;
    milestone m;
    if (open_workspace(&ctx, workspace) != 0 || require_student_workspace(&ctx) != 0) {
        sl_free(&args);
        ctx_free(&ctx);
        return OL_USAGE;
    }
    if (milestone_load(ctx.root, args.v[0], &m) != 0) {
        sl_free(&args);
        ctx_free(&ctx);
        return OL_USAGE;
    }
    sl_free(&args);
    proc_setup();
    double t0 = now_seconds();
    char *model = smoke ? NULL : milestone_cached_checkpoint(&m);
    int rc = OL_PASS;
    if (!smoke && !model) {
        ol_error("%s is not in your tinyllm cache ($TINYLLM_CACHE, else ~/.cache/tinyllm/hub).\n"
                 "  Download it (about 270 MB) with your own downloader:\n"
                 "      ol tinyllm pull %s\n"
                 "  (or the course's: tinyllm pull %s), then run this again;\n"
                 "  or check on the course's tiny checkpoints: ol milestone %s --smoke",
                 m.repo, m.repo, m.repo, m.id);
        rc = OL_USAGE;
    }
    if (rc == OL_PASS && build_prepare(&ctx) != 0) rc = OL_USAGE;
    printf("%s: %s%s\n", m.id, m.title, smoke ? " (--smoke: the course's tiny checkpoints)" : "");
    fflush(stdout);
    char *bin = NULL, *ref_bin = NULL;
    if (rc == OL_PASS) rc = tinyllm_build(&ctx, ref_deps, "tinyllm", &bin);
    if (rc == OL_PASS && !smoke) rc = tinyllm_build(&ctx, true, "tinyllm-reference", &ref_bin);
    milestone_results res = {0};
    if (rc == OL_PASS) {
        if (!smoke) printf("checking %s\n", model);
        int run = smoke ? milestone_run_smoke(&ctx, &m, bin, &res)
                        : milestone_run_full(&ctx, &m, bin, ref_bin, model, &res);
        if (run != 0) rc = run;
    }
    if (rc == OL_PASS) {
        int passed = 0;
        for (int i = 0; i < res.n; i++) passed += res.v[i].passed;
        bool all = passed == res.n && res.n > 0;
        printf("%s %s: %s: %d of %d checks passed (%.1f s)\n", m.id, smoke ? "--smoke" : m.repo,
               all ? "PASS" : "FAIL", passed, res.n, now_seconds() - t0);
        if (!all) rc = OL_FAIL;
        if (gradescope && write_gradescope(gradescope, &m, &res, now_seconds() - t0,
                                           smoke ? "--smoke" : m.repo) != 0)
            rc = OL_USAGE;
    }
    milestone_results_free(&res);
    free(bin);
    free(ref_bin);
    free(model);
    milestone_free(&m);
    ctx_free(&ctx);
    return rc;
}
