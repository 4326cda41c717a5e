#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

char *resolve_lesson_id(ol_ctx *ctx, const char *id) {
    strlist ids = {0};
    lesson_ids(ctx->root, &ids);
    char *found = NULL;
    for (int i = 0; i < ids.n && !found; i++)
        if (!strcmp(ids.v[i], id)) found = xstrdup(id);
    /* l7.1 is L7.1 */
    for (int i = 0; i < ids.n && !found; i++)
        if (!strcasecmp(ids.v[i], id)) found = xstrdup(ids.v[i]);
    if (!found && lesson_id_valid(id)) {
        const char *near = closest_word(id, (const char *const *)ids.v, ids.n);
        char *json = xasprintf("%s/course/%s", ctx->root, id);
        bool folder = is_dir(json);
        free(json);
        if (folder)
            found = xstrdup(id); /* a folder without lesson.json: lesson_load says so */
        else if (near)
            ol_error("there is no lesson %s: did you mean %s? (`ol list` shows the lessons)", id,
                     near);
        else
            ol_error("there is no lesson %s in %s/course (`ol list` shows the lessons)", id,
                     ctx->root);
    } else if (!found) {
        ol_error("\"%s\" is not a lesson id (ids look like L7.1; `ol list` shows them)", id);
    }
    sl_free(&ids);
    return found;
}

int require_student_workspace(ol_ctx *ctx) {
    /* c/ in the course repository would mix a student's work with the course
     * (its build/ is scratch space: `make demo` works in build/demo) */
    const char *inside = path_rel(ctx->ws, ctx->root);
    if (strcmp(ctx->ws, ctx->root) != 0 && (inside == ctx->ws || strncmp(inside, "build/", 6) == 0))
        return 0;
    ol_error(
        "%s is in the course repository (%s), not a workspace: make a folder of your own, e.g. "
        "`mkdir ~/tinyllm && cd ~/tinyllm`, and run ol there (`ol list`, then `ol start L7.1`)",
        ctx->ws, ctx->root);
    return -1;
}

int open_lesson_flags(ol_ctx *ctx, lesson *l, const char *workspace, const char *id,
                      unsigned flags) {
    if (open_workspace(ctx, workspace) != 0) return -1;
    char *err = NULL, *real = resolve_lesson_id(ctx, id);
    if (!real || lesson_load_flags(ctx->root, real, flags, l, &err) != 0) {
        if (err) ol_error("%s", err);
        free(err);
        free(real);
        ctx_free(ctx);
        return -1;
    }
    free(real);
    return 0;
}

int open_lesson(ol_ctx *ctx, lesson *l, const char *workspace, const char *id) {
    return open_lesson_flags(ctx, l, workspace, id, 0);
}
