#include "coverage.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

static char *with_ext(const char *obj, const char *ext) {
    size_t n = strlen(obj);
    if (n > 2 && strcmp(obj + n - 2, ".o") == 0) n -= 2;
    return xasprintf("%.*s%s", (int)n, obj, ext);
}

/* gcov -t prints "   count:  line:source"; count is "-" (not code), "#####"
 * (never ran) or a number (a '*' marks a partly run line). A source's
 * output also has a section per header with inline code ("0:Source:PATH"
 * starts each): only the section of `source` counts. */
void coverage_parse_gcov(const char *text, const char *source, file_coverage *fc) {
    bool mine = true;
    for (const char *p = text; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char *line = xstrndup(p, len);
        p = eol ? eol + 1 : NULL;
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c2 && atoi(c1 + 1) == 0 && strncmp(c2 + 1, "Source:", 7) == 0) {
            const char *path = c2 + 8;
            size_t lp = strlen(path), ls = strlen(source);
            mine = lp >= ls && strcmp(path + lp - ls, source) == 0;
        } else if (c2 && mine) {
            *c1 = *c2 = 0;
            char *count = line;
            while (*count == ' ') count++;
            int lineno = atoi(c1 + 1);
            int value = -2;
            if (*count == '-') value = -1;
            else if (*count == '#' || *count == '=') value = 0;
            else if (isdigit((unsigned char)*count)) value = atoi(count);
            if (lineno > 0 && value > -2) {
                if (lineno > fc->nlines) {
                    fc->count = xrealloc(fc->count, (size_t)lineno * sizeof *fc->count);
                    for (int k = fc->nlines; k < lineno; k++) fc->count[k] = -1;
                    fc->nlines = lineno;
                }
                fc->count[lineno - 1] = value;
            }
        }
        free(line);
    }
}

int coverage_collect(ol_ctx *ctx, const lesson_lib *cov_lib, const char *counts, coverage *out) {
    memset(out, 0, sizeof *out);
    out->f = xcalloc((size_t)cov_lib->n + 1, sizeof *out->f);
    char *tmp = ctx_cache_dir(ctx, "tmp");
    if (!tmp) return -1;
    int rc = 0;
    for (int i = 0; i < cov_lib->n && rc == 0; i++) {
        const unit *u = &cov_lib->units[i];
        file_coverage *fc = &out->f[out->n++];
        fc->file = xstrdup(cov_lib->l->sources.v[i]);
        proc_job job = {0};
        /* the run wrote NAME.gcda under counts at the object's place in the
         * cache (GCOV_PREFIX): the notes go beside it, a copy, so nothing of
         * the run's ever lands in the cache */
        const char *rel = path_rel(u->obj, ctx->cache);
        char *objdir = path_dirname(rel == u->obj ? path_base(u->obj) : rel);
        char *dir = path_join(counts, objdir);
        free(objdir);
        objdir = dir;
        char *notes = with_ext(u->obj, ".gcno"), *copy = path_join(objdir, path_base(notes));
        if (mkdir_p(objdir) != 0 || copy_file_atomic(notes, copy) != 0) {
            ol_error("cannot copy the coverage notes %s into %s", notes, objdir);
            rc = -1;
        }
        free(notes);
        free(copy);
        proc_arg(&job, "gcov");
        proc_arg(&job, "-t");
        proc_arg(&job, "-o");
        proc_arg(&job, objdir);
        proc_arg(&job, u->src);
        job.cwd = xstrdup(u->cwd ? u->cwd : ctx->root);
        job.out_path = xasprintf("%s/gcov.%ld.txt", tmp, (long)getpid());
        if (rc != 0) {
        } else if (proc_run(&job) != 0) rc = -1;
        else if (job.exit_code != 0) {
            char *said = read_file(job.out_path, NULL);
            ol_error("gcov could not read the baseline's coverage of %s: %s", u->src,
                     said ? said : "");
            free(said);
            rc = -1;
        } else {
            char *text = read_file(job.out_path, NULL);
            coverage_parse_gcov(text ? text : "", u->src, fc);
            free(text);
        }
        unlink(job.out_path);
        proc_job_free(&job);
        free(objdir);
    }
    free(tmp);
    return rc;
}

int coverage_save(const coverage *c, const char *path) {
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; i < c->n; i++) {
        cJSON *counts = cJSON_AddArrayToObject(o, c->f[i].file);
        for (int k = 0; k < c->f[i].nlines; k++)
            cJSON_AddItemToArray(counts, cJSON_CreateNumber(c->f[i].count[k]));
    }
    char *text = cJSON_PrintUnformatted(o);
    int rc = write_file_atomic(path, text, strlen(text));
    free(text);
    cJSON_Delete(o);
    return rc;
}

int coverage_load(coverage *c, const char *path) {
    memset(c, 0, sizeof *c);
    char *text = read_file(path, NULL);
    if (!text) return -1;
    cJSON *o = cJSON_Parse(text);
    free(text);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return -1;
    }
    c->f = xcalloc((size_t)cJSON_GetArraySize(o) + 1, sizeof *c->f);
    const cJSON *file;
    cJSON_ArrayForEach(file, o) {
        file_coverage *fc = &c->f[c->n++];
        fc->file = xstrdup(file->string);
        fc->nlines = cJSON_GetArraySize(file);
        fc->count = xcalloc((size_t)fc->nlines + 1, sizeof *fc->count);
        int k = 0;
        const cJSON *v;
        cJSON_ArrayForEach(v, file) fc->count[k++] = (int)v->valuedouble;
    }
    cJSON_Delete(o);
    return 0;
}

void coverage_free(coverage *c) {
    for (int i = 0; i < c->n; i++) {
        free(c->f[i].file);
        free(c->f[i].count);
    }
    free(c->f);
    memset(c, 0, sizeof *c);
}

int coverage_count(const coverage *c, const char *file, int line) {
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->f[i].file, file) == 0)
            return line >= 1 && line <= c->f[i].nlines ? c->f[i].count[line - 1] : -1;
    return -1;
}
