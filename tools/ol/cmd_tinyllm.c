/* ol tinyllm [ARGS...]: the milestone's command line (tools/tinyllm) built
 * with the student's own code, so `ol tinyllm pull ...` by hand runs their
 * downloader: each lesson they started links their code, the others the
 * reference. Built into the workspace's build/bin/tinyllm; with ARGS, run. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "harness.h"
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

/* The command line's own sources, compiled from the course root. */
static int tinyllm_units(ol_ctx *ctx, unit **out, int *n) {
    char *dir = path_join(ctx->root, "tools/tinyllm");
    strlist files = {0};
    int rc = list_files(dir, ".c", &files);
    *n = files.n;
    *out = xcalloc((size_t)files.n + 1, sizeof **out);
    for (int i = 0; i < files.n; i++) {
        (*out)[i].src = xasprintf("tools/tinyllm/%s", path_base(files.v[i]));
        (*out)[i].cwd = xstrdup(ctx->root);
    }
    sl_free(&files);
    free(dir);
    if (rc != 0 || *n == 0) ol_error("the course has no tools/tinyllm/*.c: tell your instructor");
    return rc != 0 || *n == 0 ? -1 : 0;
}

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
    lesson *ls;
    int nl;
    lesson_load_all(ctx.root, &ls, &nl);
    lesson_lib *libs = xcalloc((size_t)nl + 1, sizeof *libs);
    lesson_lib **all = xcalloc((size_t)nl + 1, sizeof *all);
    strlist mine = {0}, theirs = {0};
    int rc = OL_PASS, k = 0;
    for (int i = 0; i < nl && rc == OL_PASS; i++) {
        bool started = lesson_started(&ctx, &ls[i]);
        char *err = NULL;
        if (require_link_files(&ctx, &ls[i]) != 0)
            rc = OL_USAGE;
        else if (lesson_lib_prepare(&ctx, &libs[k], &ls[i], started ? LIB_STUDENT : LIB_REFERENCE,
                                    NULL, started ? "your code" : "the reference", &err) != 0) {
            ol_error("%s", err);
            rc = OL_USAGE;
        } else {
            all[k] = &libs[k];
            k++;
            sl_push(started ? &mine : &theirs, ls[i].id);
        }
        free(err);
    }
    unit *units = NULL;
    int nu = 0;
    if (rc == OL_PASS && tinyllm_units(&ctx, &units, &nu) != 0) rc = OL_USAGE;
    int failed = rc == OL_PASS ? lesson_libs_build(&ctx, all, k) : 0;
    if (failed < 0) rc = 130;
    for (int i = 0; rc == OL_PASS && i < k; i++) lesson_lib_print_log(&ctx, &libs[i]);
    if (rc == OL_PASS && failed > 0) {
        ol_error("your code does not compile (the compiler's messages are above)");
        rc = OL_FAIL;
    }
    if (rc == OL_PASS && build_units(&ctx, units, nu) != 0) {
        for (int i = 0; i < nu; i++) print_compiler_log(&ctx, units[i].log);
        ol_error("the tinyllm command line does not compile: tell your instructor");
        rc = OL_USAGE;
    }
    link_spec prog = {0};
    if (rc == OL_PASS) {
        for (int i = 0; i < nu; i++) link_add_unit(&prog, &units[i]);
        /* dependents before what they depend on: later lessons first */
        for (int i = k - 1; i >= 0; i--) link_add(&prog, &libs[i].archive);
        for (int i = 0; i < nl; i++)
            for (int f = 0; f < ls[i].link.n; f++)
                if (!sl_contains(&prog.ldflags, ls[i].link.v[f]))
                    sl_push(&prog.ldflags, ls[i].link.v[f]);
        int lf = build_links(&ctx, &prog, 1);
        if (lf != 0) {
            print_compiler_log(&ctx, prog.log);
            if (lf > 0)
                ol_error("tinyllm does not link with your code (the linker's messages are above)");
            rc = lf > 0 ? OL_FAIL : OL_USAGE;
        }
    }
    char *bin = path_join(ctx.ws, "build/bin/tinyllm");
    if (rc == OL_PASS) {
        char *dir = path_dirname(bin);
        if (mkdir_p(dir) != 0 || copy_file_atomic(prog.bin, bin) != 0 || chmod(bin, 0755) != 0) {
            ol_error("cannot write %s: %s", shown_path(&ctx, bin), strerror(errno));
            rc = OL_USAGE;
        }
        free(dir);
    }
    if (rc == OL_PASS) {
        char *yours = sl_join(&mine, ", "), *ref = sl_join(&theirs, ", ");
        fprintf(stderr, "ol: %s: tinyllm with your code of %s%s%s\n", shown_path(&ctx, bin),
                mine.n ? yours : "no lesson yet", theirs.n ? "; the reference of " : "", ref);
        free(yours);
        free(ref);
    }
    for (int i = 0; i < k; i++) lesson_lib_free(&libs[i]);
    for (int i = 0; i < nu; i++) unit_free(&units[i]);
    free(units);
    free(libs);
    free(all);
    link_free(&prog);
    lessons_free(ls, nl);
    sl_free(&mine);
    sl_free(&theirs);
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
