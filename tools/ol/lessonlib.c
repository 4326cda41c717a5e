#include "lessonlib.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "prebuilt.h"
#include "suite.h"

/* Headers a student keeps beside their code: an object depends on them. */
static void student_headers(const char *dir, const char *skip, strlist *out) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char *full = path_join(dir, e->d_name);
        size_t n = strlen(e->d_name);
        if (strcmp(full, skip) != 0 && is_dir(full)) student_headers(full, skip, out);
        else if (n > 2 && strcmp(e->d_name + n - 2, ".h") == 0) sl_push(out, full);
        free(full);
    }
    closedir(d);
}

/* True when the two files hold the same bytes. */
static bool same_bytes(const char *a_path, const char *b_path) {
    size_t la = 0, lb = 0;
    char *a = read_file(a_path, &la), *b = read_file(b_path, &lb);
    bool same = a && b && la == lb && memcmp(a, b, la) == 0;
    free(a);
    free(b);
    return same;
}

int lesson_lib_prepare(ol_ctx *ctx, lesson_lib *lib, const lesson *l, lib_kind kind,
                       const char *patched_dir, const char *label, char **err) {
    memset(lib, 0, sizeof *lib);
    *err = NULL;
    lib->l = l;
    lib->kind = kind;
    lib->label = xstrdup(label);
    lib->n = l->sources.n;
    lib->units = xcalloc((size_t)lib->n, sizeof *lib->units);
    if (kind != LIB_STUDENT && prebuilt_release(ctx)) {
        /* a student release: the reference and its variants exist only compiled */
        const char *variant = kind == LIB_COVERAGE ? PREBUILT_COVERAGE : PREBUILT_REFERENCE;
        char *dir = kind == LIB_PATCHED ? xstrdup(patched_dir)
                                        : prebuilt_variant_dir(ctx, l->id, variant);
        lib->prebuilt = true;
        int rc = prebuilt_units(ctx, l, dir, kind == LIB_COVERAGE, lib->units, err);
        free(dir);
        return rc;
    }
    strlist headers = {0};
    if (kind == LIB_STUDENT) {
        char *tests = path_join(ctx->student, "tests");
        student_headers(ctx->student, tests, &headers);
        sl_sort(&headers);
        free(tests);
    }
    for (int i = 0; i < lib->n; i++) {
        const char *src = l->sources.v[i];
        unit *u = &lib->units[i];
        switch (kind) {
        case LIB_STUDENT: {
            char *path = path_join(ctx->student, src);
            bool there = is_file(path);
            free(path);
            if (!there) {
                *err = xasprintf("c/%s is missing: run `ol start %s` to get the starting code", src,
                                 l->id);
                sl_free(&headers);
                return -1;
            }
            u->cwd = xstrdup(ctx->ws);
            u->src = xasprintf("c/%s", src);
            u->student = true;
            for (int k = 0; k < headers.n; k++) sl_push(&u->deps, headers.v[k]);
            break;
        }
        case LIB_STUB:
            u->cwd = xstrdup(ctx->root);
            u->src = xasprintf("stubs/%s", src);
            break;
        case LIB_REFERENCE:
        case LIB_COVERAGE:
            u->cwd = xstrdup(ctx->root);
            u->src = xasprintf("reference/%s", src);
            u->coverage = kind == LIB_COVERAGE;
            break;
        case LIB_PATCHED: {
            /* A source the patch left alone is the reference's, compiled as it is
             * (the same object, from the cache): a lesson of several files then
             * compiles one file per mutant, not all of them. */
            char *copy = xasprintf("%s/reference/%s", patched_dir, src);
            char *orig = xasprintf("%s/reference/%s", ctx->root, src);
            bool unchanged = same_bytes(copy, orig);
            free(copy);
            free(orig);
            if (unchanged) {
                u->cwd = xstrdup(ctx->root);
                u->src = xasprintf("reference/%s", src);
                break;
            }
            u->cwd = xstrdup(patched_dir);
            u->src = xasprintf("reference/%s", src);
            /* the copy's own folder has no private headers: look in the original's */
            char *dir = path_dirname(src);
            sl_push_owned(&u->flags, xasprintf("-iquote%s/reference/%s", ctx->root, dir));
            /* debug info names the folder built in: name the reference's, so a
             * test reading its own program cannot tell which variant it is */
            sl_push_owned(&u->flags, xasprintf("-fdebug-prefix-map=%s=%s", patched_dir, ctx->root));
            free(dir);
            break;
        }
        }
    }
    sl_free(&headers);
    return 0;
}

int lesson_libs_build(ol_ctx *ctx, lesson_lib **libs, int n) {
    int total = 0;
    for (int i = 0; i < n; i++) total += libs[i]->prebuilt ? 0 : libs[i]->n;
    unit *all = xcalloc((size_t)total + 1, sizeof *all);
    int k = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; !libs[i]->prebuilt && j < libs[i]->n; j++) all[k++] = libs[i]->units[j];
    int rc = build_units(ctx, all, total);
    k = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; !libs[i]->prebuilt && j < libs[i]->n; j++) libs[i]->units[j] = all[k++];
    free(all);
    if (rc < 0) return -1;
    int failed = 0;
    for (int i = 0; i < n; i++) {
        lesson_lib *lib = libs[i];
        lib->ok = true;
        for (int j = 0; j < lib->n; j++) lib->ok = lib->ok && lib->units[j].ok;
        if (lib->ok && !lib->archive.path)
            lib->ok = build_archive(ctx, lib->units, lib->n, &lib->archive) == 0;
        failed += !lib->ok;
    }
    return failed;
}

void lesson_lib_print_log(ol_ctx *ctx, const lesson_lib *lib) {
    for (int i = 0; i < lib->n; i++) print_compiler_log(ctx, lib->units[i].log);
}

void lesson_lib_free(lesson_lib *lib) {
    for (int i = 0; i < lib->n; i++) unit_free(&lib->units[i]);
    free(lib->units);
    free(lib->label);
    link_input_free(&lib->archive);
    memset(lib, 0, sizeof *lib);
}
