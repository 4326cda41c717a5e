/* st_test_util.h: temporary folders and hand-made files for the safetensors
 * and checkpoint tests. Included by test files only (each is its own
 * translation unit, so these statics stay private to it). */
#ifndef TESTS_CORE_ST_TEST_UTIL_H
#define TESTS_CORE_ST_TEST_UTIL_H

#include <check.h>
#include <dirent.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A fresh folder under /tmp for one test; remove it with remove_tree. */
static char *temp_dir(void) {
    char tmpl[] = "/tmp/tl-st-test-XXXXXX";
    ck_assert_msg(mkdtemp(tmpl) != NULL, "mkdtemp failed");
    return strdup(tmpl);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_tree(char *dir) {
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

/* dir/name in one of a few rotating buffers (so two can be used at once). */
static const char *in_dir(const char *dir, const char *name) {
    static char bufs[4][1024];
    static int next;
    char *b = bufs[next++ % 4];
    snprintf(b, sizeof bufs[0], "%s/%s", dir, name);
    return b;
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *fp = fopen(path, "wb");
    ck_assert_msg(fp != NULL, "cannot create %s", path);
    ck_assert(fwrite(data, 1, n, fp) == n);
    fclose(fp);
}

/* A safetensors file from a header (written as given: no padding) and
 * data_bytes bytes of data (0, 1, 2, ...). */
static void write_st(const char *path, const char *header, size_t data_bytes) {
    size_t h = strlen(header);
    unsigned char *buf = malloc(8 + h + data_bytes + 1);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(buf + 8, header, h);
    for (size_t i = 0; i < data_bytes; i++) buf[8 + h + i] = (unsigned char)i;
    write_bytes(path, buf, 8 + h + data_bytes);
    free(buf);
}

static unsigned char *read_all(const char *path, size_t *n) {
    FILE *fp = fopen(path, "rb");
    ck_assert_msg(fp != NULL, "cannot open %s", path);
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)size + 1);
    ck_assert(fread(buf, 1, (size_t)size, fp) == (size_t)size);
    fclose(fp);
    *n = (size_t)size;
    return buf;
}

static bool file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Whether dir holds a temporary file of a write to dir/name: a name that
 * begins with "name.tmp" (tl_create_temp_beside adds a unique suffix). */
static inline bool temp_left(const char *dir, const char *name) {
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s.tmp", name);
    DIR *d = opendir(dir);
    bool found = false;
    for (struct dirent *e; d && !found && (e = readdir(d));)
        found = strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d) closedir(d);
    return found;
}

/* fixtures/<rel>, or $TINYLLM_FIXTURES/<rel>. */
static const char *fixture(const char *rel) {
    static char buf[1024];
    const char *root = getenv("TINYLLM_FIXTURES");
    if (root && *root) snprintf(buf, sizeof buf, "%s/%s", root, rel);
    else snprintf(buf, sizeof buf, "%s/fixtures/%s", TL_SOURCE_ROOT, rel);
    return buf;
}

/* expr must fail with a message that names `where` and contains needle. */
#define assert_fails_naming(expr, where, needle)                                      \
    do {                                                                              \
        tl_clear_error();                                                             \
        const void *r_ = (const void *)(expr);                                        \
        const char *e_ = tl_error();                                                  \
        ck_assert_msg(r_ == NULL, "%s succeeded; expected an error about '%s'", #expr, \
                      (needle));                                                      \
        ck_assert_msg(e_ && strstr(e_, (needle)),                                     \
                      "%s failed with '%s'; expected it to mention '%s'", #expr,      \
                      e_ ? e_ : "(no message)", (needle));                            \
        ck_assert_msg(strstr(e_, (where)), "the message '%s' does not name %s", e_,   \
                      (where));                                                       \
        tl_clear_error();                                                             \
    } while (0)

#endif
