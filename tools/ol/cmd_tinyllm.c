/* ol tinyllm [ARGS...]: the milestone's command line (tools/tinyllm) built
 * with the student's own code, so `ol tinyllm pull ...` by hand runs their
 * downloader: each lesson they started links their code, the others the
 * reference. Built into the workspace's build/bin/tinyllm; with ARGS, run. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "harness.h"
#include "tinyllm_build.h"
#include "opts.h"

static const char HELP[] =
    "usage: ol tinyllm [--workspace DIR] [-- ARGS...]\n"
    "       ol tinyllm pull REPO [FILE...] [--endpoint URL] ...   (the same, run)\n"
    "\n"
    "Builds the `tinyllm` command line of the milestone with your code: each\n"
    "lesson you started (its files in c/) links your code, the others the\n"
    "reference. The program is build/bin/tinyllm in your workspace; given ARGS,\n"
    "ol runs it with them, so `ol tinyllm pull org/tiny --endpoint URL` tries your\n"
    "hf_download by hand (`ol hub serve DIR` gives you a Hub to point it at).\n"
    "Everything after the first argument that is not ol's goes to tinyllm.\n";

int cmd_tinyllm(int argc, char **argv) {
    const char *workspace = NULL;
    const ol_option opts[] = {{"workspace", 'w', "DIR", &workspace, NULL}, {0}};
    strlist args = {0};
    /* ol's own options come first; the first other argument starts tinyllm's */
    opts_result parsed = opts_parse("tinyllm", argc, argv, opts, 1, &args);
    if (parsed != OPTS_RUN) {
        sl_free(&args);
        return parsed == OPTS_HELP ? print_help(HELP) : OL_USAGE;
    }
    ol_ctx ctx;
    if (open_workspace(&ctx, workspace) != 0 || require_student_workspace(&ctx) != 0 ||
        build_prepare(&ctx) != 0) {
        sl_free(&args);
        ctx_free(&ctx);
        return OL_USAGE;
    }
    char *bin = NULL;
    int rc = tinyllm_build(&ctx, false, "tinyllm", &bin);
    if (rc == OL_PASS && args.n) {
        /* tinyllm takes over: its output, its exit status */
        char **av = xcalloc((size_t)args.n + 2, sizeof *av);
        av[0] = bin;
        for (int i = 0; i < args.n; i++) av[i + 1] = args.v[i];
        fflush(NULL);
        execv(bin, av);
        ol_error("cannot run %s: %s", bin, strerror(errno));
        rc = OL_USAGE;
        free(av);
    }
    free(bin);
    sl_free(&args);
    ctx_free(&ctx);
    return rc;
}
