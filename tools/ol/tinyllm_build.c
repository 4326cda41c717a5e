/* tinyllm_build.c: the milestone's command line built with the student's
 * code (tinyllm_build.h), for `ol tinyllm` and `ol milestone`. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "harness.h"
#include "prebuilt.h"
#include "tinyllm_build.h"

/* The command line's own sources, compiled from the course root (in a
 * student release, its prebuilt objects). */
static int tinyllm_units(ol_ctx *ctx, unit **out, int *n) {
    if (prebuilt_release(ctx)) { /* a student release: its prebuilt objects */
        char *err = NULL;
        int rc = prebuilt_tinyllm_units(ctx, out, n, &err);
        if (rc != 0) ol_error("%s", err);
        free(err);
        return rc;
    }
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

int tinyllm_build(ol_ctx *ctx, bool ref_deps, const char *name, char **bin_out) {
    lesson *ls;
    int nl;
    lesson_load_all(ctx->root, &ls, &nl);
    lesson_lib *libs = xcalloc((size_t)nl + 1, sizeof *libs);
    lesson_lib **all = xcalloc((size_t)nl + 1, sizeof *all);
    strlist mine = {0}, theirs = {0};
    int rc = OL_PASS, k = 0;
    for (int i = 0; i < nl && rc == OL_PASS; i++) {
        bool started = !ref_deps && lesson_started(ctx, &ls[i]);
        char *err = NULL;
        if (require_link_files(ctx, &ls[i]) != 0)
            rc = OL_USAGE;
        else if (lesson_lib_prepare(ctx, &libs[k], &ls[i], started ? LIB_STUDENT : LIB_REFERENCE,
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
    if (rc == OL_PASS && tinyllm_units(ctx, &units, &nu) != 0) rc = OL_USAGE;
    int failed = rc == OL_PASS ? lesson_libs_build(ctx, all, k) : 0;
    if (failed < 0) rc = 130;
    for (int i = 0; rc == OL_PASS && i < k; i++) lesson_lib_print_log(ctx, &libs[i]);
    if (rc == OL_PASS && failed > 0) {
        ol_error("your code does not compile (the compiler's messages are above)");
        rc = OL_FAIL;
    }
    /* a release's command line is prebuilt: nothing of it to compile */
    if (rc == OL_PASS && !prebuilt_release(ctx) && build_units(ctx, units, nu) != 0) {
        for (int i = 0; i < nu; i++) print_compiler_log(ctx, units[i].log);
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
        int lf = build_links(ctx, &prog, 1);
        if (lf != 0) {
            print_compiler_log(ctx, prog.log);
            if (lf > 0)
                ol_error("tinyllm does not link with your code (the linker's messages are above)");
            rc = lf > 0 ? OL_FAIL : OL_USAGE;
        }
    }
    char *rel = xasprintf("build/bin/%s", name), *bin = path_join(ctx->ws, rel);
    free(rel);
    *bin_out = bin;
    if (rc == OL_PASS) {
        char *dir = path_dirname(bin);
        if (mkdir_p(dir) != 0 || copy_file_atomic(prog.bin, bin) != 0 || chmod(bin, 0755) != 0) {
            ol_error("cannot write %s: %s", shown_path(ctx, bin), strerror(errno));
            rc = OL_USAGE;
        }
        free(dir);
    }
    if (rc == OL_PASS) {
        char *yours = sl_join(&mine, ", "), *ref = sl_join(&theirs, ", ");
        fprintf(stderr, "ol: %s: tinyllm with your code of %s%s%s\n", shown_path(ctx, bin),
                mine.n ? yours : "no lesson", theirs.n ? "; the reference of " : "", ref);
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
    return rc;
}
