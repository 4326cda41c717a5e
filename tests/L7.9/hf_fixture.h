/* hf_fixture.h: what every downloader test needs. A fake Hub on 127.0.0.1
 * (tools/hub) serving repo "org/tiny" with a small config.json (a git file:
 * its ETag is the blob sha1) and a model.safetensors above the LFS threshold
 * (a 302 to the CDN listener carrying X-Linked-Etag); a fresh cache folder
 * under /tmp; and readers for the files and the hub's request log.
 *
 *   hf_fx f;
 *   fx_init(&f);                 // hub with content, not started; env cleaned
 *   hub_add_ref(f.h, ...);       // more setup before the start, if needed
 *   fx_start(&f);
 *   char *dir = fx_download(&f, "main", names, 2, NULL);
 *   ...
 *   free(dir);
 *   fx_end(&f);                  // stops the hub, removes the folder
 *
 * Layout: base = /tmp/tl-hf-<pid>-XXXXXX (nothing else may appear there) and
 * cache = base/cache, so a test can prove that nothing was written outside
 * the cache folder.
 */
#ifndef TESTS_L7_9_HF_FIXTURE_H
#define TESTS_L7_9_HF_FIXTURE_H

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tinyllm/io/hf.h"
#include "tinyllm/tensor.h"
#include "tinyllm/testing.h"
#include "tinyllm/testing/hub.h"

#define FX_REPO "org/tiny"
#define FX_CONFIG "{\"model_type\": \"llama\", \"hidden_size\": 64, \"vocab_size\": 256}\n"
#define FX_LFS_THRESHOLD 1024
#define FX_MODEL_SIZE 200000     /* bytes of model.safetensors */
#define FX_TIMEOUT 10.0          /* seconds: a hang fails the test instead of stalling it */

typedef struct {
    hub *h;
    const char *endpoint;        /* the Hub's URL, once started */
    char base[64];               /* /tmp/tl-hf-<runner pid>-XXXXXX */
    char cache[96];              /* base/cache: the cache_dir of every call */
    unsigned char *model;        /* the bytes of model.safetensors */
    size_t model_size;
} hf_fx;

/* Deterministic bytes (an xorshift stream), different for each seed. */
static unsigned char *fx_bytes(size_t n, unsigned seed) {
    unsigned char *p = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(p);
    unsigned long long x = 0x9E3779B97F4A7C15ull * (seed + 1);
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        p[i] = (unsigned char)(x >> 24);
    }
    return p;
}

/* The variables that change where and how hf_download goes: every test
 * starts without them, whatever the environment it was run from. */
static void fx_clean_env(void) {
    unsetenv("HF_ENDPOINT");
    unsetenv("HF_TOKEN");
    unsetenv("HF_HUB_OFFLINE");
    setenv("NO_PROXY", "127.0.0.1,localhost", 1);   /* never through a proxy */
    setenv("no_proxy", "127.0.0.1,localhost", 1);
}

static int fx_remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}

/* A failed assertion ends a test's process with _exit, so its folder stays.
 * Folders are named after the test runner (Check forks each test from it;
 * with CK_FORK=no the runner is the test's own process), and every test
 * first removes what earlier tests of the same run left behind. */
static pid_t fx_runner(void) {
    const char *fork_mode = getenv("CK_FORK");
    return fork_mode && !strcmp(fork_mode, "no") ? getpid() : getppid();
}

static void fx_remove_leftovers(pid_t runner) {
    char prefix[64], path[320];
    snprintf(prefix, sizeof prefix, "tl-hf-%ld-", (long)runner);
    DIR *tmp = opendir("/tmp");
    for (struct dirent *e; tmp && (e = readdir(tmp)) != NULL;)
        if (!strncmp(e->d_name, prefix, strlen(prefix))) {
            snprintf(path, sizeof path, "/tmp/%s", e->d_name);
            nftw(path, fx_remove_one, 16, FTW_DEPTH | FTW_PHYS);
        }
    if (tmp) closedir(tmp);
}

static void fx_init(hf_fx *f) {
    memset(f, 0, sizeof *f);
    fx_clean_env();
    tl_clear_error();
    pid_t runner = fx_runner();
    fx_remove_leftovers(runner);
    snprintf(f->base, sizeof f->base, "/tmp/tl-hf-%ld-XXXXXX", (long)runner);
    ck_assert_msg(mkdtemp(f->base) != NULL, "mkdtemp: %s", strerror(errno));
    snprintf(f->cache, sizeof f->cache, "%s/cache", f->base);
    f->h = hub_new();
    ck_assert_ptr_nonnull(f->h);
    f->model_size = FX_MODEL_SIZE;
    f->model = fx_bytes(f->model_size, 7);
    ck_assert_int_eq(hub_add_file(f->h, FX_REPO, "config.json", FX_CONFIG, strlen(FX_CONFIG)), 0);
    ck_assert_int_eq(hub_add_file(f->h, FX_REPO, "model.safetensors", f->model, f->model_size), 0);
    hub_set_lfs_threshold(f->h, FX_LFS_THRESHOLD);
}

static void fx_start(hf_fx *f) {
    ck_assert_msg(hub_start(f->h, &f->endpoint) == 0, "hub_start: %s", hub_error(f->h));
}

static void fx_end(hf_fx *f) {
    hub_free(f->h);
    free(f->model);
    nftw(f->base, fx_remove_one, 16, FTW_DEPTH | FTW_PHYS);
    fx_clean_env();
    tl_clear_error();
}

/* Tests that download in child processes first call hf_download here, with
 * no file: a downloader that is not written yet fails with its own "not
 * implemented" message instead of a child's silence. */
static void fx_require_downloader(hf_fx *f) {
    tl_clear_error();
    char *dir = hf_download(FX_REPO, NULL, 0, f->cache, "main", f->endpoint, NULL, 5.0);
    ck_assert_msg(dir != NULL, "hf_download with no file failed: %s", tl_error());
    free(dir);
}

/* hf_download of FX_REPO from the fixture's endpoint into its cache (the
 * error of an earlier call cleared first). */
static char *fx_download(hf_fx *f, const char *revision, const char *const *names, int n,
                         const char *const *sha256) {
    tl_clear_error();
    return hf_download(FX_REPO, names, n, f->cache, revision, f->endpoint, sha256, FX_TIMEOUT);
}

/* A path under the cache ("org--tiny/main/config.json"); 4 rotating buffers. */
static const char *fx_path(const hf_fx *f, const char *rel) {
    static char buf[4][512];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, sizeof buf[0], "%s/%s", f->cache, rel);
    return p;
}

static long long fx_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static bool fx_exists(const char *path) { return fx_size(path) >= 0; }

/* True when the file at path holds exactly these bytes. */
static bool fx_holds(const char *path, const void *data, size_t n) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return false;
    unsigned char *got = malloc(n + 1);
    size_t read = got ? fread(got, 1, n + 1, fp) : 0;
    bool same = got && read == n && memcmp(got, data, n) == 0;
    free(got);
    fclose(fp);
    return same;
}

/* Writes n bytes to path (a .part from an "earlier run", a stale file). */
static void fx_write(const char *path, const void *data, size_t n) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') { *p = 0; mkdir(dir, 0755); *p = '/'; }
    FILE *fp = fopen(path, "wb");
    ck_assert_msg(fp != NULL, "cannot write %s: %s", path, strerror(errno));
    ck_assert_uint_eq(fwrite(data, 1, n, fp), n);
    fclose(fp);
}

/* Requests in the log with this method on this listener whose path ends
 * with suffix (NULL: any). */
static int fx_count(const hf_fx *f, const char *method, hub_host host, const char *suffix) {
    int count = 0;
    hub_request r;
    for (int i = 0; hub_log_get(f->h, i, &r); i++) {
        size_t lp = strlen(r.path), ls = suffix ? strlen(suffix) : 0;
        if ((!method || !strcmp(r.method, method)) && (host == HUB_ANY || r.host == host) &&
            (!suffix || (lp >= ls && !strcmp(r.path + lp - ls, suffix))))
            count++;
    }
    return count;
}

/* The log as text, for failure messages. */
static const char *fx_log_text(const hf_fx *f) {
    static char text[8192];
    size_t used = 0;
    hub_request r;
    text[0] = 0;
    for (int i = 0; hub_log_get(f->h, i, &r) && used < sizeof text - 200; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "\n  %s %s %s%s%s -> %d",
                                 r.host == HUB_HOST_CDN ? "cdn" : "hub", r.method, r.path,
                                 r.has_range ? " Range: " : "", r.range, r.status);
    return used ? text : " (no request)";
}

/* Fails unless the last error mentions every one of the (NULL-ended) words. */
#define fx_assert_error_mentions(...)                                                  \
    do {                                                                               \
        const char *fx_words_[] = {__VA_ARGS__, NULL};                                 \
        const char *fx_e_ = tl_error();                                                \
        for (int fx_i_ = 0; fx_words_[fx_i_]; fx_i_++)                                 \
            ck_assert_msg(fx_e_ && strstr(fx_e_, fx_words_[fx_i_]),                    \
                          "the error '%s' should mention '%s'",                        \
                          fx_e_ ? fx_e_ : "(none)", fx_words_[fx_i_]);                 \
    } while (0)

/* After any failure: NULL, an error naming the file, and nothing under the
 * file's final name in the cache (rel is "org--tiny/main/model.safetensors"). */
#define fx_assert_failed_cleanly(f, dir, file, rel)                                    \
    do {                                                                               \
        ck_assert_msg((dir) == NULL, "hf_download should fail; requests:%s",           \
                      fx_log_text(f));                                                 \
        fx_assert_error_mentions(file);                                                \
        ck_assert_msg(!fx_exists(fx_path((f), (rel))),                                 \
                      "a failed download left a file under its final name %s", (rel)); \
    } while (0)

/* Every regular file under dir, relative to it, sorted, '\n'-separated. */
static int fx_collect_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}
static char *fx_tree_names[256];
static int fx_tree_n;
static size_t fx_tree_skip;
static int fx_tree_add(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st; (void)ftw;
    if (flag != FTW_D && fx_tree_n < 256) fx_tree_names[fx_tree_n++] = strdup(path + fx_tree_skip);
    return 0;
}
static void fx_tree(const char *dir, char *out, size_t size) {
    fx_tree_n = 0;
    fx_tree_skip = strlen(dir) + 1;
    nftw(dir, fx_tree_add, 16, FTW_PHYS);
    qsort(fx_tree_names, (size_t)fx_tree_n, sizeof *fx_tree_names, fx_collect_cmp);
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < fx_tree_n; i++) {
        if (used < size)
            used += (size_t)snprintf(out + used, size - used, "%s\n", fx_tree_names[i]);
        free(fx_tree_names[i]);
    }
}

/* Seconds since an arbitrary start, for loose observations only. */
static double fx_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
