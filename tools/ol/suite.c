#include "suite.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "testgen.h"

int suite_scan(suite *s, const char *name, const char *dir, char **err) {
    memset(s, 0, sizeof *s);
    *err = NULL;
    s->name = xstrdup(name);
    s->dir = xstrdup(dir);
    if (!is_dir(dir)) {
        *err = xasprintf("the test folder %s does not exist", dir);
        return -1;
    }
    list_files(dir, ".c", &s->files);
    for (int i = 0; i < s->files.n; i++) {
        char **names = NULL;
        int n = testgen_scan(s->files.v[i], &names);
        if (n < 0) {
            *err = xasprintf("cannot read %s: %s", s->files.v[i], strerror(errno));
            return -1;
        }
        for (int k = 0; k < n; k++) {
            for (int j = 0; j < s->tests.n; j++)
                if (strcmp(s->tests.v[j], names[k]) == 0 && !*err)
                    *err = xasprintf("the test %s is defined twice, in %s and %s: give each test its own name",
                                     names[k], path_base(s->test_file.v[j]), path_base(s->files.v[i]));
            sl_push(&s->tests, names[k]);
            sl_push(&s->test_file, s->files.v[i]);
        }
        testgen_free_names(names, n);
        if (*err) return -1;
    }
    return 0;
}

/* Copies a generated file into place only when it changed, so a rerun sees
 * the same paths and contents (and the cache keys hold). */
static int sync_file(const char *from, const char *to) {
    char *a = read_file(from, NULL), *b = read_file(to, NULL);
    int rc = 0;
    if (!a) rc = -1;
    else if (!b || strcmp(a, b) != 0) rc = copy_file_atomic(from, to);
    free(a);
    free(b);
    return rc;
}

int suite_generate(ol_ctx *ctx, suite *s, char **err) {
    *err = NULL;
    hasher *h = hash_new();
    hash_str(h, "gen-1");
    hash_str(h, s->name);
    for (int i = 0; i < s->files.n; i++) hash_str(h, s->files.v[i]);
    char key[HASH_HEX];
    hash_done(h, key);
    char *gen_root = ctx_cache_dir(ctx, "gen");
    if (!gen_root) {
        *err = xstrdup("cannot create build/ol/gen");
        return -1;
    }
    char *dir = path_join(gen_root, key);
    char *tmp = make_temp_dir(gen_root, "new");
    int rc = -1;
    if (!tmp || mkdir_p(dir) != 0) {
        *err = xasprintf("cannot create a folder under %s", gen_root);
        goto done;
    }
    char msg[1024];
    if (testgen_write(tmp, s->name, (const char *const *)s->files.v, s->files.n, msg, sizeof msg) < 0) {
        *err = xasprintf("cannot register the tests of %s: %s", s->dir, msg);
        goto done;
    }
    /* course test folders may keep helper headers beside the tests */
    strlist headers = {0};
    list_files(s->dir, ".h", &headers);
    s->nunits = s->files.n + 1;
    s->units = xcalloc((size_t)s->nunits, sizeof *s->units);
    for (int i = 0; i < s->nunits; i++) {
        char *name = i < s->files.n ? xasprintf("wrap_%d.c", i) : xstrdup("main.c");
        char *from = path_join(tmp, name), *to = path_join(dir, name);
        if (sync_file(from, to) != 0) {
            *err = xasprintf("cannot write %s", to);
            free(name);
            free(from);
            free(to);
            sl_free(&headers);
            goto done;
        }
        unit *u = &s->units[i];
        u->src = to;
        u->cwd = xstrdup(dir);
        u->test = true;
        if (i < s->files.n) {
            sl_push(&u->deps, s->files.v[i]);
            for (int k = 0; k < headers.n; k++) sl_push(&u->deps, headers.v[k]);
        }
        free(name);
        free(from);
    }
    sl_free(&headers);
    rc = 0;
done:
    if (tmp) remove_tree(tmp, ctx->cache);
    free(tmp);
    free(dir);
    free(gen_root);
    return rc;
}

void print_compiler_log(ol_ctx *ctx, const char *log) {
    if (!log || !*log) return;
    /* absolute paths are long: show them from the workspace or the root */
    char *ws = xasprintf("%s/", ctx->ws), *root = xasprintf("%s/", ctx->root);
    for (const char *p = log; *p;) {
        const char *w = strstr(p, ws), *r = strstr(p, root);
        const char *hit = w && (!r || w <= r) ? w : r;
        size_t skip = hit == w ? strlen(ws) : strlen(root);
        if (!hit) {
            fputs(p, stderr);
            break;
        }
        fwrite(p, 1, (size_t)(hit - p), stderr);
        p = hit + skip;
    }
    free(ws);
    free(root);
}

int suite_compile(ol_ctx *ctx, suite *s, const char *label) {
    int failed = build_units(ctx, s->units, s->nunits);
    if (failed < 0) return -1;
    for (int i = 0; i < s->nunits; i++) print_compiler_log(ctx, s->units[i].log);
    if (failed > 0) {
        int bad = 0;
        for (int i = 0; i < s->files.n; i++)
            if (!s->units[i].ok) bad++;
        if (!bad) ol_error("the generated runner of %s did not compile (see above)", label);
        return bad ? bad : 1;
    }
    return 0;
}

void suite_free(suite *s) {
    free(s->name);
    free(s->dir);
    sl_free(&s->files);
    sl_free(&s->tests);
    sl_free(&s->test_file);
    for (int i = 0; i < s->nunits; i++) unit_free(&s->units[i]);
    free(s->units);
    memset(s, 0, sizeof *s);
}

void suite_link(const suite *s, link_spec *l) {
    for (int i = 0; i < s->nunits; i++) link_add_unit(l, &s->units[i]);
}

/* ---- the include rule ---- */

static const char *const STANDARD_HEADERS[] = {
    "assert.h", "complex.h", "ctype.h",     "errno.h",    "fenv.h",     "float.h",
    "inttypes.h", "iso646.h", "limits.h",   "locale.h",   "math.h",     "setjmp.h",
    "signal.h", "stdalign.h", "stdarg.h",   "stdatomic.h", "stdbool.h", "stddef.h",
    "stdint.h", "stdio.h",   "stdlib.h",    "stdnoreturn.h", "string.h", "tgmath.h",
    "threads.h", "time.h",   "uchar.h",     "wchar.h",    "wctype.h",   "check.h"};

static bool is_standard(const char *name) {
    for (size_t i = 0; i < sizeof STANDARD_HEADERS / sizeof *STANDARD_HEADERS; i++)
        if (strcmp(name, STANDARD_HEADERS[i]) == 0) return true;
    return false;
}

/* A header of contracts/, reached without "..". */
static bool is_contract(ol_ctx *ctx, const char *name) {
    if (name[0] == '/' || strstr(name, "..")) return false;
    char *path = xasprintf("%s/contracts/%s", ctx->root, name);
    bool ok = is_file(path);
    free(path);
    return ok;
}

/* Blanks comments, keeping newlines (so line numbers hold) and strings. */
static void blank_comments(char *s) {
    for (char *p = s; *p; p++) {
        if (p[0] == '/' && p[1] == '*') {
            char *end = strstr(p + 2, "*/");
            char *stop = end ? end + 2 : p + strlen(p);
            for (char *q = p; q < stop; q++)
                if (*q != '\n') *q = ' ';
            p = stop - 1;
        } else if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') *p++ = ' ';
            if (!*p) break;
        } else if (*p == '"' || *p == '\'') {
            char q = *p++;
            while (*p && *p != q && *p != '\n') {
                if (*p == '\\' && p[1]) p++;
                p++;
            }
            if (!*p) break;
        }
    }
}

int suite_check_includes(ol_ctx *ctx, const suite *s, strlist *problems) {
    int before = problems->n;
    for (int i = 0; i < s->files.n; i++) {
        const char *file = s->files.v[i];
        const char *shown = path_rel(file, ctx->ws);
        char *text = read_file(file, NULL);
        if (!text) {
            sl_push_owned(problems, xasprintf("%s: cannot read it", shown));
            continue;
        }
        blank_comments(text);
        char *dir = path_dirname(file);
        int lineno = 1;
        for (char *line = text, *next; line; line = next, lineno++) {
            next = strchr(line, '\n');
            if (next) *next++ = 0;
            char *p = line;
            while (*p == ' ' || *p == '\t') p++;
            if (*p != '#') continue;
            p++;
            while (*p == ' ' || *p == '\t') p++;
            if (strncmp(p, "include", 7) != 0 && strncmp(p, "import", 6) != 0) continue;
            bool next_form = strncmp(p, "include_next", 12) == 0;
            p += (*p == 'i' && p[1] == 'm') ? 6 : (next_form ? 12 : 7);
            while (*p == ' ' || *p == '\t') p++;
            char open = *p, close = open == '<' ? '>' : '"';
            char *end = (open == '<' || open == '"') ? strchr(p + 1, close) : NULL;
            if (next_form || !end) {
                sl_push_owned(problems, xasprintf("%s:%d: this #include is not a plain <header> or \"header\": "
                                                  "include contract headers by name", shown, lineno));
                continue;
            }
            char *name = xstrndup(p + 1, (size_t)(end - p - 1));
            if (is_standard(name) && open == '<') {
                /* <stdio.h>, <check.h>: fine */
            } else if (is_contract(ctx, name)) {
                /* a quoted name is looked up beside the test first: it must not shadow the contract */
                char *local = path_join(dir, name);
                if (open == '"' && is_file(local))
                    sl_push_owned(problems, xasprintf("%s:%d: \"%s\" would read the copy in your test folder, "
                                                      "not the contract: remove %s", shown, lineno, name,
                                                      path_rel(local, ctx->ws)));
                free(local);
            } else {
                sl_push_owned(problems,
                              xasprintf("%s:%d: #include %c%s%c is not allowed: tests include only contract "
                                        "headers (contracts/tinyllm/...), <check.h> and standard C headers, "
                                        "so they test the contract, not one implementation",
                                        shown, lineno, open, name, close));
            }
            free(name);
        }
        free(dir);
        free(text);
    }
    return problems->n - before;
}
