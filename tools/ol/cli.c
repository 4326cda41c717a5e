#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int print_help(const char *text) {
    fputs(text, stdout);
    return OL_PASS;
}

int usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ol %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(ol %s --help says how to use it)\n", cmd);
    va_end(ap);
    return OL_USAGE;
}

/* Does dir look like a student's workspace: a c/ holding what `ol start`
 * makes (c/tinyllm/ or c/tests/)? A bare c/ elsewhere may be anything. */
static bool holds_student_code(const char *dir) {
    char *code = path_join(dir, "c/tinyllm"), *tests = path_join(dir, "c/tests");
    bool yes = is_dir(code) || is_dir(tests);
    free(code);
    free(tests);
    return yes;
}

/* The workspace above `from` when `from` has no c/ of its own: the nearest
 * folder holding c/tinyllm/ or c/tests/, so that ol works from anywhere
 * inside the workspace (c/tinyllm/modern/, c/tests/...). The search stops
 * at the course root, which is never a workspace. NULL when none is found. */
static char *workspace_above(const char *from, const char *root) {
    char *c = path_join(from, "c");
    bool own = is_dir(c);
    free(c);
    if (own || strcmp(from, root) == 0) return NULL;
    char *dir = path_dirname(from);
    while (strcmp(dir, "/") != 0 && strcmp(dir, root) != 0) {
        if (holds_student_code(dir)) return dir;
        char *up = path_dirname(dir);
        free(dir);
        dir = up;
    }
    free(dir);
    return NULL;
}

int open_workspace(ol_ctx *ctx, const char *workspace) {
    if (ctx_init(ctx, workspace) != 0) return -1;
    const char *env = getenv("OL_WORKSPACE");
    if ((workspace && *workspace) || (env && *env)) return 0;
    char *above = workspace_above(ctx->ws, ctx->root);
    if (!above) return 0;
    fprintf(stderr, "ol: working in %s (the folder above that holds your c/)\n", above);
    ctx_free(ctx);
    int rc = ctx_init(ctx, above);
    free(above);
    return rc;
}

int open_lesson(ol_ctx *ctx, lesson *l, const char *workspace, const char *id) {
    if (open_workspace(ctx, workspace) != 0) return -1;
    char *err = NULL;
    if (lesson_load(ctx->root, id, l, &err) != 0) {
        ol_error("%s", err);
        free(err);
        ctx_free(ctx);
        return -1;
    }
    return 0;
}
