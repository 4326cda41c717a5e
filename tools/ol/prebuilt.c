#include "prebuilt.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "hash.h"

bool prebuilt_release(const ol_ctx *ctx) {
    return lesson_release_kind(ctx->root) == RELEASE_STUDENT;
}

char *prebuilt_variant_dir(ol_ctx *ctx, const char *lesson_id, const char *variant) {
    return xasprintf("%s/prebuilt/%s/%s", ctx->root, lesson_id, variant);
}

cJSON *prebuilt_manifest(ol_ctx *ctx, const lesson *l, char **err) {
    *err = NULL;
    char *path = xasprintf("%s/prebuilt/%s/manifest.json", ctx->root, l->id);
    char *text = read_file(path, NULL);
    cJSON *m = text ? cJSON_Parse(text) : NULL;
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(m, "format");
    if (!text)
        *err = xasprintf("%s is missing: this release does not hold the compiled reference of %s; "
                         "ask your instructor for a release made with `ol dist --lessons %s`",
                         path, l->id, l->id);
    else if (!cJSON_IsObject(m) || !cJSON_IsNumber(format) || format->valueint != PREBUILT_FORMAT)
        *err =
            xasprintf("%s is not a manifest of format %d: this ol and this release do not belong "
                      "together; use the release's own bin/ol",
                      path, PREBUILT_FORMAT);
    free(text);
    free(path);
    if (*err) {
        cJSON_Delete(m);
        return NULL;
    }
    return m;
}

int prebuilt_rewrite_string(char *bytes, size_t len, const char *from, const char *to) {
    size_t nf = strlen(from) + 1, nt = strlen(to);
    if (nt >= nf || nf > len) return -1;
    char *hit = NULL, *p = bytes, *end = bytes + len;
    while ((size_t)(end - p) >= nf) {
        char *q = memmem(p, (size_t)(end - p), from, nf);
        if (!q) break;
        p = q + nf;
        if (q > bytes && q[-1] != 0) continue; /* the end of a longer string */
        if (hit) return -1;                    /* twice: which one is the counts' path? */
        hit = q;
    }
    if (!hit) return -1;
    memset(hit, 0, nf);
    memcpy(hit, to, nt);
    return 0;
}

/* The base name of a source without .c (or an object without .o), as ol's
 * coverage objects are named. */
static char *stem(const char *src) {
    const char *b = path_base(src);
    size_t n = strlen(b);
    if (n > 2 && (strcmp(b + n - 2, ".c") == 0 || strcmp(b + n - 2, ".o") == 0)) n -= 2;
    return xstrndup(b, n);
}

/* Installs a prebuilt coverage object at cov/KEY/NAME.o with its notes, its
 * counts' path rewritten to cov/KEY/NAME.gcda, as ol's own coverage build
 * lays them out; the folder's "done" marker says it is whole. */
static int install_coverage(ol_ctx *ctx, const char *obj, const char *gcda, const char *source,
                            unit *u, char **err) {
    size_t len;
    char *bytes = read_file(obj, &len);
    if (!bytes) {
        *err = xasprintf("cannot read %s: %s (the release is incomplete: unpack it again)", obj,
                         strerror(errno));
        return -1;
    }
    hasher *h = hash_new();
    hash_str(h, "prebuilt-coverage-1");
    hash_bytes(h, bytes, len);
    hash_done(h, u->key);
    char *base = ctx_cache_dir(ctx, "cov");
    char *dir = base ? path_join(base, u->key) : NULL;
    char *name = stem(source);
    u->obj = dir ? xasprintf("%s/%s.o", dir, name) : NULL;
    char *marker = dir ? path_join(dir, "done") : NULL;
    int rc = base ? 0 : -1;
    if (rc == 0 && !is_file(marker)) {
        char *counts = xasprintf("%s/%s.gcda", dir, name);
        char *notes_from = xasprintf("%.*s.gcno", (int)(strlen(obj) - 2), obj);
        char *notes_to = xasprintf("%s/%s.gcno", dir, name);
        if (prebuilt_rewrite_string(bytes, len, gcda, counts) != 0) {
            *err = xasprintf("%s: the coverage build cannot write its line counts to %s (the path "
                             "is longer than the release allows, or the object is damaged): use a "
                             "shorter workspace path",
                             obj, counts);
            rc = -1;
        } else if (mkdir_p(dir) != 0 || write_file_atomic(u->obj, bytes, len) != 0 ||
                   copy_file_atomic(notes_from, notes_to) != 0 ||
                   write_file_atomic(marker, "", 0) != 0) {
            *err = xasprintf("cannot install the coverage build of %s in %s", source, dir);
            rc = -1;
        }
        free(counts);
        free(notes_from);
        free(notes_to);
    }
    if (rc == 0) cache_touch(marker);
    free(marker);
    free(name);
    free(dir);
    free(base);
    free(bytes);
    return rc;
}

int prebuilt_units(ol_ctx *ctx, const lesson *l, const char *variant_dir, bool coverage,
                   unit *units, char **err) {
    *err = NULL;
    cJSON *m = NULL;
    const cJSON *gcda = NULL;
    if (coverage) {
        if (!(m = prebuilt_manifest(ctx, l, err))) return -1;
        gcda = cJSON_GetObjectItemCaseSensitive(m, "coverage_gcda");
        if (cJSON_GetArraySize(gcda) != l->sources.n) {
            *err = xasprintf(
                "prebuilt/%s/manifest.json: \"coverage_gcda\" must name one path per source",
                l->id);
            cJSON_Delete(m);
            return -1;
        }
    }
    int rc = 0;
    char *blank = xasprintf("%s/prebuilt/%s/blank", ctx->root, l->id);
    for (int i = 0; i < l->sources.n && rc == 0; i++) {
        unit *u = &units[i];
        char *obj = xasprintf("%s/%d.o", variant_dir, i);
        u->src = xasprintf("reference/%s", l->sources.v[i]);
        u->cwd = xstrdup(blank);
        u->coverage = coverage;
        u->log = xstrdup("");
        if (!is_file(obj)) {
            *err =
                xasprintf("%s is missing: the release is incomplete (unpack it again, or ask for a "
                          "new one)",
                          obj);
            rc = -1;
        } else if (coverage) {
            const cJSON *path = cJSON_GetArrayItem(gcda, i);
            if (!cJSON_IsString(path))
                *err = xasprintf("prebuilt/%s/manifest.json: \"coverage_gcda\"[%d] is not a path",
                                 l->id, i);
            rc = *err ? -1 : install_coverage(ctx, obj, path->valuestring, l->sources.v[i], u, err);
        } else {
            hasher *h = hash_new();
            hash_str(h, "prebuilt-1");
            hash_file(h, obj);
            hash_done(h, u->key);
            u->obj = xstrdup(obj);
        }
        u->ok = u->cached = rc == 0;
        free(obj);
    }
    free(blank);
    cJSON_Delete(m);
    return rc;
}

int prebuilt_tinyllm_units(ol_ctx *ctx, unit **out, int *n, char **err) {
    char *dir = path_join(ctx->root, PREBUILT_TINYLLM);
    strlist objs = {0};
    *err = NULL;
    if (list_files(dir, ".o", &objs) != 0 || objs.n == 0)
        *err = xasprintf("%s holds no object: this release does not carry the tinyllm command "
                         "line (a release of every lesson does: ask your instructor)",
                         dir);
    *n = *err ? 0 : objs.n;
    *out = xcalloc((size_t)*n + 1, sizeof **out);
    for (int i = 0; i < *n; i++) {
        unit *u = &(*out)[i];
        char *name = stem(objs.v[i]);
        u->src = xasprintf("tools/tinyllm/%s.c", name);
        free(name);
        u->cwd = xstrdup(ctx->root);
        u->log = xstrdup("");
        hasher *h = hash_new();
        hash_str(h, "prebuilt-1");
        hash_file(h, objs.v[i]);
        hash_done(h, u->key);
        u->obj = xstrdup(objs.v[i]);
        u->ok = u->cached = true;
    }
    sl_free(&objs);
    free(dir);
    return *err ? -1 : 0;
}
