/* fuzz_model_dir.h: the model folder the index harnesses work in.
 *
 *   <tmp>/outside.safetensors            a valid file the loader must never open
 *   <tmp>/model/model-00001-of-00002.safetensors   a (F32 [2]), b (BF16 [2])
 *   <tmp>/model/model-00002-of-00002.safetensors   c (I64 [1])
 *   <tmp>/model/alias.safetensors   -> model-00001-of-00002.safetensors
 *   <tmp>/model/escape.safetensors  -> ../outside.safetensors
 *   <tmp>/model/model.safetensors.index.json       the fuzzed bytes
 *
 * The two links give the fuzzer a way out of the folder and a second name
 * for a shard; model_dir_contains() tells whether a file the loader opened
 * stays inside. Included by the index harnesses and by the regression test
 * that replays their findings (tests/core/test_safetensors_regressions.c);
 * each is one translation unit, so the statics stay private.
 */
#ifndef TESTS_FUZZ_MODEL_DIR_H
#define TESTS_FUZZ_MODEL_DIR_H

#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdtemp under /tmp: short paths, so fixed buffers hold every name below. */
static char model_root[256], model_dir[256 + 16], model_index[256 + 64];

/* A safetensors file from a header and data bytes. */
static inline void put_st(const char *path, const char *header, const void *data, size_t n) {
    FILE *fp = fopen(path, "wb");
    if (!fp) abort();
    uint64_t h = strlen(header);
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(h >> (8 * i));
    if (fwrite(len, 1, 8, fp) != 8 || fwrite(header, 1, h, fp) != h ||
        fwrite(data, 1, n, fp) != n)
        abort();
    fclose(fp);
}

static inline int model_dir_remove_entry(const char *path, const struct stat *st, int flag,
                                         struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static inline void model_dir_remove(void) {
    if (model_root[0]) nftw(model_root, model_dir_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    model_root[0] = '\0';
}

static inline void model_dir_make(void) {
    char tmpl[] = "/tmp/tl-fuzz-XXXXXX";
    char *real = mkdtemp(tmpl) ? realpath(tmpl, NULL) : NULL;
    if (!real || strlen(real) >= sizeof model_root) abort();
    strcpy(model_root, real);
    free(real);
    snprintf(model_dir, sizeof model_dir, "%s/model", model_root);
    snprintf(model_index, sizeof model_index, "%s/model.safetensors.index.json", model_dir);
    if (mkdir(model_dir, 0700) != 0) abort();
    char p[sizeof model_dir + 64];
    static const unsigned char zeros[16];
    snprintf(p, sizeof p, "%s/model-00001-of-00002.safetensors", model_dir);
    put_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
              "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[8,12]}}", zeros, 12);
    snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", model_dir);
    put_st(p, "{\"c\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", zeros, 8);
    snprintf(p, sizeof p, "%s/outside.safetensors", model_root);
    put_st(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", zeros, 4);
    snprintf(p, sizeof p, "%s/alias.safetensors", model_dir);
    if (symlink("model-00001-of-00002.safetensors", p) != 0) abort();
    snprintf(p, sizeof p, "%s/escape.safetensors", model_dir);
    if (symlink("../outside.safetensors", p) != 0) abort();
}

static inline void model_dir_write_index(const uint8_t *data, size_t size) {
    FILE *fp = fopen(model_index, "wb");
    if (!fp || fwrite(data, 1, size, fp) != size) abort();
    fclose(fp);
}

/* Whether path, links resolved, lies inside the model folder. */
static inline int model_dir_contains(const char *path) {
    char real[PATH_MAX];
    if (!realpath(path, real)) return 0;
    size_t n = strlen(model_dir);
    return strncmp(real, model_dir, n) == 0 && real[n] == '/';
}

#endif
