#include "cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hash.h"
#include "util.h"

void cache_touch(const char *path) { utimensat(AT_FDCWD, path, NULL, 0); }

static void file_digest(const char *path, char out[HASH_HEX]) {
    hasher *h = hash_new();
    hash_file(h, path);
    hash_done(h, out);
}

int cache_seal(const char *path) {
    if (!is_file(path)) return -1;
    char digest[HASH_HEX];
    file_digest(path, digest);
    char *sum = xasprintf("%s.sum", path);
    int rc = write_file_atomic(sum, digest, strlen(digest));
    free(sum);
    return rc;
}

bool cache_intact(const char *path) {
    char *sum = xasprintf("%s.sum", path);
    char *want = read_file(sum, NULL);
    free(sum);
    bool ok = false;
    if (want && is_file(path)) {
        char digest[HASH_HEX];
        file_digest(path, digest);
        ok = strcmp(digest, want) == 0;
    }
    free(want);
    return ok;
}

typedef struct {
    char *path;
    off_t size;
    time_t used;
} entry;

static int by_age(const void *a, const void *b) {
    const entry *x = a, *y = b;
    return (x->used > y->used) - (x->used < y->used);
}

void cache_prune(ol_ctx *ctx) {
    const char *env = getenv("OL_CACHE_MB");
    double cap = (env && atof(env) > 0 ? atof(env) : 512) * 1024 * 1024;
    static const char *const DIRS[] = {"bin", "obj", "lib", "run"};
    entry *all = NULL;
    int n = 0;
    double total = 0;
    for (size_t d = 0; d < sizeof DIRS / sizeof *DIRS; d++) {
        char *dir = path_join(ctx->cache, DIRS[d]);
        DIR *h = opendir(dir);
        struct dirent *e;
        while (h && (e = readdir(h)) != NULL) {
            struct stat st;
            char *p = path_join(dir, e->d_name);
            if (e->d_name[0] != '.' && stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
                all = xrealloc(all, (size_t)(n + 1) * sizeof *all);
                all[n++] = (entry){p, st.st_size, st.st_mtime};
                total += (double)st.st_size;
            } else {
                free(p);
            }
        }
        if (h) closedir(h);
        free(dir);
    }
    if (total > cap) {
        qsort(all, (size_t)n, sizeof *all, by_age);
        time_t recent = time(NULL) - 3600;
        for (int i = 0; i < n && total > 0.8 * cap; i++) {
            if (all[i].used >= recent) break;
            if (unlink(all[i].path) == 0) total -= (double)all[i].size;
        }
    }
    for (int i = 0; i < n; i++) free(all[i].path);
    free(all);
}
