#include "hash.h"

#include <dirent.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct hasher {
    EVP_MD_CTX *ctx;
};

hasher *hash_new(void) {
    hasher *h = xmalloc(sizeof *h);
    h->ctx = EVP_MD_CTX_new();
    if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
        fputs("ol: error: OpenSSL cannot start a SHA-256 digest\n", stderr);
        exit(OL_USAGE);
    }
    return h;
}

void hash_bytes(hasher *h, const void *data, size_t n) { EVP_DigestUpdate(h->ctx, data, n); }

void hash_str(hasher *h, const char *s) {
    char len[32];
    size_t n = s ? strlen(s) : 0;
    snprintf(len, sizeof len, "%zu:", n);
    hash_bytes(h, len, strlen(len));
    if (n) hash_bytes(h, s, n);
}

void hash_file(hasher *h, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        hash_str(h, "missing");
        return;
    }
    hash_str(h, "file");
    unsigned char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) hash_bytes(h, buf, got);
    fclose(f);
}

static void hash_tree_at(hasher *h, const char *dir, const char *rel) {
    DIR *d = opendir(dir);
    if (!d) return;
    strlist names = {0};
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') sl_push(&names, e->d_name);
    closedir(d);
    sl_sort(&names);
    for (int i = 0; i < names.n; i++) {
        char *full = path_join(dir, names.v[i]);
        char *name = *rel ? path_join(rel, names.v[i]) : xstrdup(names.v[i]);
        if (is_dir(full)) {
            hash_tree_at(h, full, name);
        } else if (is_file(full)) {
            hash_str(h, name);
            hash_file(h, full);
        }
        free(full);
        free(name);
    }
    sl_free(&names);
}

void hash_tree(hasher *h, const char *dir) { hash_tree_at(h, dir, ""); }

void hash_done(hasher *h, char out[HASH_HEX]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(h->ctx, md, &n);
    EVP_MD_CTX_free(h->ctx);
    free(h);
    for (unsigned i = 0; i < n && i < 32; i++) snprintf(out + 2 * i, 3, "%02x", md[i]);
    out[64] = 0;
}
