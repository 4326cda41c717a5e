#include "workspace.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#ifndef TL_SOURCE_ROOT
#define TL_SOURCE_ROOT "."
#endif

static char *absolute(const char *path) {
    char buf[PATH_MAX];
    if (realpath(path, buf)) return xstrdup(buf);
    return NULL;
}

/* A student release (`ol dist`) keeps ol in bin/ beside its release.json:
 * the release is then the root, wherever it was unpacked. */
static const char *release_root(void) {
    static char top[PATH_MAX];
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return NULL;
    exe[n] = 0;
    char *bin = path_dirname(exe), *up = path_dirname(bin);
    char *marker = path_join(up, "release.json");
    bool yes = is_file(marker) && strlen(up) < sizeof top;
    if (yes) strcpy(top, up);
    free(marker);
    free(bin);
    free(up);
    return yes ? top : NULL;
}

int ctx_init(ol_ctx *ctx, const char *workspace_opt) {
    memset(ctx, 0, sizeof *ctx);
    const char *root = getenv("OL_ROOT");
    const char *root_from = "$OL_ROOT";
    const char *release = (!root || !*root) ? release_root() : NULL;
    if (release) {
        root = release;
        root_from = "the student release holding this ol";
    } else if (!root || !*root) {
        root = TL_SOURCE_ROOT;
        root_from = "the root ol was built in";
    }
    ctx->root = absolute(root);
    if (!ctx->root) {
        ol_error("the course root %s (%s) does not exist: set OL_ROOT to the course repository",
                 root, root_from);
        return -1;
    }
    char *course = path_join(ctx->root, "course");
    bool ok = is_dir(course);
    free(course);
    if (!ok) {
        ol_error("%s (%s) has no course/ folder: set OL_ROOT to the course repository", ctx->root,
                 root_from);
        return -1;
    }
    const char *ws = workspace_opt;
    if (!ws || !*ws) ws = getenv("OL_WORKSPACE");
    if (!ws || !*ws) ws = ".";
    ctx->ws = absolute(ws);
    if (!ctx->ws || !is_dir(ctx->ws)) {
        ol_error("the workspace %s is not a folder: create it, or pass --workspace DIR", ws);
        return -1;
    }
    ctx->student = path_join(ctx->ws, "c");
    ctx->cache = path_join(ctx->ws, "build/ol");
    const char *cc = getenv("CC");
    ctx->cc = xstrdup(cc && *cc ? cc : "gcc");
    ctx->core_lib = path_join(ctx->root, "build/lib/libtinyllm_core.a");
    ctx->testing_lib = path_join(ctx->root, "build/lib/libtinyllm_testing.a");
    ctx->jobs = 2;
    const char *jobs = getenv("OL_JOBS");
    if (jobs && atoi(jobs) > 0) ctx->jobs = atoi(jobs);
    const char *verbose = getenv("OL_VERBOSE");
    ctx->verbose = verbose && *verbose && strcmp(verbose, "0") != 0;
    return 0;
}

void ctx_free(ol_ctx *ctx) {
    free(ctx->root);
    free(ctx->ws);
    free(ctx->student);
    free(ctx->cache);
    free(ctx->cc);
    free(ctx->core_lib);
    free(ctx->testing_lib);
    memset(ctx, 0, sizeof *ctx);
}

int ctx_require_runtime(ol_ctx *ctx) {
    const char *libs[] = {ctx->core_lib, ctx->testing_lib};
    for (int i = 0; i < 2; i++)
        if (!is_file(libs[i])) {
            ol_error("the runtime library %s is missing: run `make -C %s` first", libs[i],
                     ctx->root);
            return -1;
        }
    return ctx_require_writable(ctx);
}

int ctx_require_writable(ol_ctx *ctx) {
    /* Said once, up front: otherwise every build step fails on it and the
     * last message blames the student's code or the harness. */
    if (mkdir_p(ctx->cache) != 0 || access(ctx->cache, W_OK | X_OK) != 0) {
        int err = errno;
        if (err == ENOTDIR || err == EEXIST)
            ol_error("cannot create %s, where ol keeps its builds: a file is in the way. "
                     "Move that file (build/ and build/ol/ must be folders), then run ol again.",
                     ctx->cache);
        else
            ol_error("cannot write in %s, where ol keeps its builds: %s. Make the workspace "
                     "writable (chmod -R u+w %s), or work in a copy you own.", ctx->cache,
                     strerror(err), ctx->ws);
        return -1;
    }
    return 0;
}

char *ctx_cache_dir(ol_ctx *ctx, const char *name) {
    char *dir = path_join(ctx->cache, name);
    if (mkdir_p(dir) != 0) {
        ol_error("cannot create %s: %s", dir, strerror(errno));
        free(dir);
        return NULL;
    }
    return dir;
}

const char *shown_path(ol_ctx *ctx, const char *path) {
    if (!path) return "";
    const char *p = path_rel(path, ctx->ws);
    if (p == path) p = path_rel(path, ctx->root);
    return p;
}
