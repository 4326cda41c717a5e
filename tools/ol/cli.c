#include "cli.h"

#include <ctype.h>
#include <getopt.h>
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

int option_error(const char *cmd, int c, char **argv) {
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    if (c == ':') return usage_error(cmd, "%s needs a value", arg);
    /* getopt_long leaves a short option's letter in optopt, 0 for a long one */
    if (optopt && optopt != '?' && strncmp(arg, "--", 2) != 0) return usage_error(cmd, "unknown option -%c", optopt);
    return usage_error(cmd, "unknown option %s", arg);
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

int require_link_files(ol_ctx *ctx, const lesson *l) {
    for (int i = 0; i < l->link.n; i++)
        if (l->link.v[i][0] == '/' && !is_file(l->link.v[i])) {
            ol_error("%s links %s (lesson.json \"link\"), which is not built: run `make -C %s` first", l->id,
                     path_rel(l->link.v[i], ctx->root), ctx->root);
            return -1;
        }
    return 0;
}

bool lesson_started(ol_ctx *ctx, const lesson *l) {
    for (int i = 0; i < l->sources.n; i++) {
        char *p = path_join(ctx->student, l->sources.v[i]);
        bool there = is_file(p);
        free(p);
        if (!there) return false;
    }
    return true;
}

int deps_prepare(ol_ctx *ctx, const lesson *l, bool reference, bool ref_deps, deps *d, char **err) {
    memset(d, 0, sizeof *d);
    *err = NULL;
    if (lesson_needs_closure(ctx->root, l, &d->lessons, &d->n, err) != 0) return -1;
    d->libs = xcalloc((size_t)d->n + 1, sizeof *d->libs);
    for (int i = 0; i < d->n; i++) {
        const lesson *dep = &d->lessons[i];
        bool mine = !reference && !ref_deps && lesson_started(ctx, dep);
        if (!reference && !ref_deps && !mine) {
            *err = xasprintf("%s needs %s, which you have not started: run `ol start %s` and write it, "
                             "or pass --ref-deps to use the reference for the lessons it needs",
                             l->id, dep->id, dep->id);
            return -1;
        }
        char *label = xasprintf("%s %s", mine ? "your" : "the reference", dep->id);
        if (require_link_files(ctx, dep) != 0) {
            free(label);
            *err = xasprintf("%s needs %s, whose libraries are not built", l->id, dep->id);
            return -1;
        }
        int rc = lesson_lib_prepare(ctx, &d->libs[i], dep, mine ? LIB_STUDENT : LIB_REFERENCE, NULL, label, err);
        free(label);
        if (rc != 0) return -1;
    }
    return 0;
}

void deps_free(deps *d) {
    for (int i = 0; i < d->n; i++) lesson_lib_free(&d->libs[i]);
    free(d->libs);
    lessons_free(d->lessons, d->n);
    memset(d, 0, sizeof *d);
}

void program_spec(link_spec *spec, const suite *s, const lesson_lib *lib, const lesson *l, const deps *d) {
    suite_link(s, spec);
    link_add(spec, &lib->archive);
    /* dependents before what they depend on, as a static link needs */
    for (int i = d ? d->n - 1 : -1; i >= 0; i--) link_add(spec, &d->libs[i].archive);
    for (int i = 0; i < l->link.n; i++)
        if (!sl_contains(&spec->ldflags, l->link.v[i])) sl_push(&spec->ldflags, l->link.v[i]);
    for (int k = 0; d && k < d->n; k++)
        for (int i = 0; i < d->lessons[k].link.n; i++)
            if (!sl_contains(&spec->ldflags, d->lessons[k].link.v[i])) sl_push(&spec->ldflags, d->lessons[k].link.v[i]);
}

const char *shown_path(ol_ctx *ctx, const char *path) {
    if (!path) return "";
    const char *p = path_rel(path, ctx->ws);
    if (p == path) p = path_rel(path, ctx->root);
    return p;
}

/* Every number becomes "#": a digit run not glued to an identifier, with
 * its sign, decimals and exponent; and inf / nan. */
char *mask_numbers(const char *msg) {
    strbuf b = {0};
    const char *p = msg ? msg : "";
    while (*p) {
        bool after_word = p > msg && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
        bool starts = !after_word && (isdigit((unsigned char)*p) ||
                                      ((*p == '-' || *p == '+' || *p == '.') && isdigit((unsigned char)p[1])));
        const char *w = (*p == '-' || *p == '+') ? p + 1 : p;
        if (!after_word && (strncasecmp(w, "nan", 3) == 0 || strncasecmp(w, "inf", 3) == 0) &&
            !isalnum((unsigned char)w[3]) && w[3] != '_') {
            sb_add(&b, "#");
            p = w + 3;
            continue;
        }
        if (!starts) {
            sb_addn(&b, p, 1);
            p++;
            continue;
        }
        if (*p == '-' || *p == '+') p++;
        if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
            p += 2;
            while (isxdigit((unsigned char)*p)) p++;
        } else {
            while (isdigit((unsigned char)*p) || *p == '.') p++;
            if ((*p == 'e' || *p == 'E') && (isdigit((unsigned char)p[1]) ||
                                             ((p[1] == '-' || p[1] == '+') && isdigit((unsigned char)p[2])))) {
                p += 2;
                while (isdigit((unsigned char)*p)) p++;
            }
        }
        sb_add(&b, "#");
    }
    return sb_take(&b);
}

void print_test_failure(ol_ctx *ctx, FILE *f, const test_result *t, bool hide_values) {
    char *what = test_describe(t);
    fprintf(f, "  %sFAIL%s %s: %s\n", color(f, C_RED), color(f, C_RESET), t->name, what);
    free(what);
    char *msg = hide_values ? mask_numbers(t->message) : xstrdup(t->message ? t->message : "");
    /* Check says where the last assertion (or mark) was; for a crash that is "after this point" */
    if (t->file && *t->file && t->line > 0)
        fprintf(f, "       %s:%d: %s%s\n", shown_path(ctx, t->file), t->line,
                t->status == TEST_FAIL ? "" : "(after this point) ", msg);
    else if (*msg)
        fprintf(f, "       %s\n", msg);
    free(msg);
    char *line = t->file && t->line > 0 ? source_line(t->file, t->line) : NULL;
    if (line) fprintf(f, "       %s%5d | %s%s\n", color(f, C_DIM), t->line, line, color(f, C_RESET));
    free(line);
}

void fixtures_key(ol_ctx *ctx, const lesson *l, char out[HASH_HEX]) {
    hasher *h = hash_new();
    hash_str(h, "fixtures");
    if (l->fixtures) {
        char *dir = path_join(ctx->root, l->fixtures);
        hash_tree(h, dir);
        free(dir);
    }
    hash_done(h, out);
}

int run_suite_by_file(ol_ctx *ctx, const suite *s, const run_spec *base, run_result *out) {
    memset(out, 0, sizeof *out);
    /* one program run per test: its file (CK_RUN_CASE) and its name (-k) */
    run_spec *specs = xcalloc((size_t)s->tests.n + 1, sizeof *specs);
    strlist *names = xcalloc((size_t)s->tests.n + 1, sizeof *names);
    int n = 0;
    for (int t = 0; t < s->tests.n; t++) {
        if (base->filter && !strstr(s->tests.v[t], base->filter)) continue;
        sl_push(&names[n], s->tests.v[t]);
        specs[n] = *base;
        specs[n].tests = &names[n];
        specs[n].filter = s->tests.v[t];
        specs[n].tcase = path_base(s->test_file.v[t]); /* testgen names each TCase after its file */
        n++;
    }
    run_result *parts = xcalloc((size_t)n + 1, sizeof *parts);
    int rc = run_tests(ctx, specs, parts, n);
    out->cached = n > 0;
    strbuf output = {0};
    for (int k = 0; k < n; k++) {
        run_result *p = &parts[k];
        /* -k matches substrings: keep the one test asked for (settle puts it first) */
        if (rc == 0 && p->n > 0) {
            out->t = xrealloc(out->t, (size_t)(out->n + 1) * sizeof *out->t);
            out->t[out->n++] = p->t[0];
            memmove(p->t, p->t + 1, (size_t)(p->n - 1) * sizeof *p->t);
            p->n--;
            if (p->exit_code && !out->exit_code) out->exit_code = p->exit_code;
            if (p->term_signal && !out->term_signal) out->term_signal = p->term_signal;
            out->watchdog = out->watchdog || p->watchdog;
            out->seconds += p->seconds;
            out->cached = out->cached && p->cached;
            if (p->output && *p->output) sb_add(&output, p->output);
        }
        run_result_free(p);
        sl_free(&names[k]);
    }
    out->output = sb_take(&output);
    free(parts);
    free(specs);
    free(names);
    return rc;
}
