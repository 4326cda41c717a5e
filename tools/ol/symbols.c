#include "symbols.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "hash.h"
#include "lessonlib.h"
#include "proc.h"

/* What grading relies on, by name. */
static const char *const HARNESS[] = {"main",      "srunner_*", "suite_*",  "tcase_*", "_ck_*",
                                      "testgen_*", "__wrap_*",  "__real_*", "tl_*"};

/* The global symbols `nm` says path defines (dynamic: a shared library's
 * exports), "NAME" each, into out. An archive's members are all read. Not
 * an ELF file (a linker script): nothing, and 0. */
static int nm_run(ol_ctx *ctx, const char *path, bool dynamic, strlist *out);

/* nm_run, remembered beside an object of ol's cache (PATH.nm: the object's
 * digest, then the names; sealed like the object), so a rerun asks nm nothing. */
static int nm_defined(ol_ctx *ctx, const char *path, bool dynamic, strlist *out) {
    if (path_rel(path, ctx->cache) == path) return nm_run(ctx, path, dynamic, out);
    hasher *h = hash_new();
    hash_file(h, path);
    char digest[HASH_HEX];
    hash_done(h, digest);
    char *memo = xasprintf("%s.nm", path);
    char *text = cache_intact(memo) ? read_file(memo, NULL) : NULL;
    int rc = 0;
    if (text && strncmp(text, digest, HASH_HEX - 1) == 0 && text[HASH_HEX - 1] == '\n') {
        for (char *save = NULL, *w = strtok_r(text + HASH_HEX, "\n", &save); w;
             w = strtok_r(NULL, "\n", &save))
            sl_push(out, w);
    } else {
        strlist names = {0};
        rc = nm_run(ctx, path, dynamic, &names);
        if (rc == 0) {
            strbuf b = {0};
            sb_printf(&b, "%s\n", digest);
            for (int i = 0; i < names.n; i++) {
                sb_printf(&b, "%s\n", names.v[i]);
                sl_push(out, names.v[i]);
            }
            if (write_file_atomic(memo, b.s ? b.s : "", b.len) == 0) cache_seal(memo);
            sb_free(&b);
        }
        sl_free(&names);
    }
    free(text);
    free(memo);
    return rc;
}

static int nm_run(ol_ctx *ctx, const char *path, bool dynamic, strlist *out) {
    FILE *f = fopen(path, "rb");
    char magic[8] = {0};
    size_t got = f ? fread(magic, 1, sizeof magic, f) : 0;
    if (f) fclose(f);
    bool elf = got >= 4 && memcmp(magic, "\177ELF", 4) == 0;
    bool archive = got >= 8 && memcmp(magic, "!<arch>\n", 8) == 0;
    if (!elf && !archive) return 0;
    char *tmp = ctx_cache_dir(ctx, "tmp");
    if (!tmp) return -1;
    proc_job job = {0};
    proc_arg(&job, "nm");
    proc_arg(&job, "-g");
    proc_arg(&job, "--defined-only");
    if (dynamic) proc_arg(&job, "-D");
    proc_arg(&job, path);
    job.out_path = xasprintf("%s/nm.%ld.txt", tmp, (long)getpid());
    free(tmp);
    int rc = -1;
    if (proc_run(&job) == 0 && job.exit_code == 0) {
        char *text = read_file(job.out_path, NULL);
        for (char *save = NULL, *line = text ? strtok_r(text, "\n", &save) : NULL; line;
             line = strtok_r(NULL, "\n", &save)) {
            /* "ADDR TYPE NAME" (a common symbol has no address); an archive says "MEMBER:" too */
            char a[128], b[64], c[1024];
            int k = sscanf(line, "%127s %63s %1023s", a, b, c);
            const char *name = k == 3 ? c : k == 2 && strlen(a) == 1 ? b : NULL;
            if (!name) continue;
            char *at = strchr(name, '@'); /* versioned: memcpy@@GLIBC_2.14 */
            char *plain = at ? xstrndup(name, (size_t)(at - name)) : xstrdup(name);
            sl_push_owned(out, plain);
        }
        free(text);
        rc = 0;
    } else {
        ol_error("nm could not read %s: is binutils installed?", path);
    }
    unlink(job.out_path);
    proc_job_free(&job);
    return rc;
}

int symbols_of_reference(ol_ctx *ctx, const lesson *l, strlist *out) {
    lesson *need = NULL;
    int nneed = 0;
    char *err = NULL;
    if (lesson_needs_closure(ctx->root, l, &need, &nneed, &err) != 0) {
        ol_error("%s", err);
        free(err);
        return -1;
    }
    int rc = 0;
    for (int k = 0; k <= nneed && rc == 0; k++) {
        const lesson *x = k < nneed ? &need[k] : l;
        lesson_lib lib;
        if (lesson_lib_prepare(ctx, &lib, x, LIB_REFERENCE, NULL, "the reference", &err) != 0) {
            ol_error("%s", err);
            free(err);
            rc = -1;
            break;
        }
        lesson_lib *libs[] = {&lib};
        if (lesson_libs_build(ctx, libs, 1) != 0) {
            lesson_lib_print_log(ctx, &lib);
            ol_error("the reference of %s does not compile", x->id);
            rc = -1;
        }
        for (int i = 0; i < lib.n && rc == 0; i++)
            rc = nm_defined(ctx, lib.units[i].obj, false, out);
        lesson_lib_free(&lib);
    }
    lessons_free(need, nneed);
    return rc;
}

/* Every symbol some library of the lesson's test programs defines, one
 * "NAME<TAB>LIBRARY" a line, cached by the toolchain and the link flags. */
static char *library_symbols(ol_ctx *ctx, const lesson *l) {
    strlist flags = {0};
    for (int i = 0; i < l->link.n; i++) sl_push(&flags, l->link.v[i]);
    lesson *need = NULL;
    int nneed = 0;
    char *err = NULL;
    if (lesson_needs_closure(ctx->root, l, &need, &nneed, &err) == 0) {
        for (int k = 0; k < nneed; k++)
            for (int i = 0; i < need[k].link.n; i++)
                if (!sl_contains(&flags, need[k].link.v[i])) sl_push(&flags, need[k].link.v[i]);
        lessons_free(need, nneed);
    }
    free(err);
    hasher *h = hash_new();
    hash_str(h, "library-symbols-1");
    hash_str(h, ctx->runtime);
    for (int i = 0; i < flags.n; i++) hash_str(h, flags.v[i]);
    char key[HASH_HEX];
    hash_done(h, key);
    char *dir = ctx_cache_dir(ctx, "obj");
    char *path = dir ? xasprintf("%s/%s.syms", dir, key) : NULL;
    free(dir);
    char *text = path && cache_intact(path) ? read_file(path, NULL) : NULL;
    if (!text && path) {
        strlist inputs = {0};
        strbuf b = {0};
        int rc = build_link_inputs(ctx, &flags, &inputs);
        for (int i = 0; i < inputs.n && rc == 0; i++) {
            strlist names = {0};
            size_t n = strlen(inputs.v[i]);
            bool shared = strstr(inputs.v[i], ".so") != NULL &&
                          !(n > 2 && !strcmp(inputs.v[i] + n - 2, ".a"));
            rc = nm_defined(ctx, inputs.v[i], shared, &names);
            for (int k = 0; k < names.n; k++)
                sb_printf(&b, "%s\t%s\n", names.v[k], path_base(inputs.v[i]));
            sl_free(&names);
        }
        text = sb_take(&b);
        if (rc == 0 && write_file_atomic(path, text, strlen(text)) == 0) cache_seal(path);
        if (rc != 0) {
            free(text);
            text = NULL;
        }
        sl_free(&inputs);
    }
    free(path);
    sl_free(&flags);
    return text;
}

/* The library that defines name, from library_symbols' text, or NULL. */
static char *defined_by(const char *table, const char *name) {
    size_t n = strlen(name);
    for (const char *p = table; p && *p;) {
        const char *eol = strchr(p, '\n');
        if (strncmp(p, name, n) == 0 && p[n] == '\t') {
            const char *lib = p + n + 1;
            return xstrndup(lib, eol ? (size_t)(eol - lib) : strlen(lib));
        }
        p = eol ? eol + 1 : NULL;
    }
    return NULL;
}

int symbols_check(ol_ctx *ctx, const lesson *l, const unit *units, const char *const *shown, int n,
                  const strlist *lesson_functions, bool tests, strlist *problems) {
    char *table = library_symbols(ctx, l);
    if (!table) return -1;
    int before = problems->n;
    for (int i = 0; i < n; i++) {
        strlist names = {0};
        if (nm_defined(ctx, units[i].obj, false, &names) != 0) {
            sl_free(&names);
            free(table);
            return -1;
        }
        for (int k = 0; k < names.n; k++) {
            const char *name = names.v[k];
            /* testgen's wrapper of the file defines it (a second one would not compile) */
            if (tests && fnmatch("testgen_register_*", name, 0) == 0) continue;
            bool lesson_own = sl_contains(lesson_functions, name);
            char *why = NULL;
            if (tests && lesson_own) {
                why = xstrdup("one of the lesson's functions: a test that defines it replaces the "
                              "code it grades");
            } else if (!lesson_own) {
                char *lib = defined_by(table, name);
                if (lib)
                    why = xasprintf("which %s defines too: the linker would take yours, and change "
                                    "how the test "
                                    "program (or Check, which reports its results) works",
                                    lib);
                for (size_t p = 0; !why && p < sizeof HARNESS / sizeof *HARNESS; p++)
                    if (fnmatch(HARNESS[p], name, 0) == 0)
                        why = xstrdup("a name grading keeps for itself (Check's runner, ol's "
                                      "harness, the runtime)");
                free(lib);
            }
            if (!why) continue;
            sl_push_owned(problems, xasprintf("%s: defines %s, %s: make it static, or rename it",
                                              shown[i], name, why));
            free(why);
        }
        sl_free(&names);
    }
    free(table);
    return problems->n - before;
}
