/* My downloader tests, the happy paths: the layout of section 3, a resume
 * after a dropped connection and from an earlier run's .part, a server that
 * ignores Range, and a second pull that fetches nothing.
 *
 * Oracle: the bytes I gave the fake Hub. The Hub's request log shows what
 * the downloader asked for. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tinyllm/io/hf.h"
#include "tinyllm/tensor.h"
#include "tinyllm/testing/hub.h"

#define SIZE 150000                       /* model.safetensors: above the LFS threshold */
static const char CONFIG[] = "{\"hidden_size\": 8}\n";

typedef struct {
    hub *h;
    const char *endpoint;
    char root[64], path[256];
    unsigned char model[SIZE];
} world;

/* A hub with org/tiny (config.json, and an LFS model.safetensors); a fresh
 * cache folder. */
static world *world_new(void) {
    world *w = calloc(1, sizeof *w);
    ck_assert_ptr_nonnull(w);
    unsigned x = 12345;
    for (int i = 0; i < SIZE; i++) {
        x = x * 1103515245u + 12345u;
        w->model[i] = (unsigned char)(x >> 16);
    }
    snprintf(w->root, sizeof w->root, "/tmp/my-hf-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(w->root));
    unsetenv("HF_TOKEN");
    unsetenv("HF_HUB_OFFLINE");
    setenv("NO_PROXY", "127.0.0.1", 1);
    w->h = hub_new();
    hub_add_file(w->h, "org/tiny", "config.json", CONFIG, strlen(CONFIG));
    hub_add_file(w->h, "org/tiny", "model.safetensors", w->model, SIZE);
    hub_add_ref(w->h, "org/tiny", "abc123");
    hub_set_lfs_threshold(w->h, 1024);
    ck_assert_int_eq(hub_start(w->h, &w->endpoint), 0);
    return w;
}

/* root/<rel>, in a buffer of the world. */
static const char *at(world *w, const char *rel) {
    snprintf(w->path, sizeof w->path, "%s/%s", w->root, rel);
    return w->path;
}

static void world_free(world *w) {
    const char *files[] = {"org--tiny/abc123/config.json", "org--tiny/abc123/model.safetensors",
                           "org--tiny/abc123/model.safetensors.part", "org--tiny/abc123",
                           "org--tiny", ""};
    for (int i = 0; i < 6; i++) remove(at(w, files[i]));
    hub_free(w->h);
    free(w);
}

static char *pull(world *w, const char *file) {
    const char *names[] = {file};
    tl_clear_error();
    return hf_download("org/tiny", names, 1, w->root, "abc123", w->endpoint, NULL, 10.0);
}

static bool holds(world *w, const char *rel, const void *data, long n) {
    FILE *f = fopen(at(w, rel), "rb");
    if (!f) return false;
    unsigned char *buf = malloc((size_t)n + 1);
    long got = (long)fread(buf, 1, (size_t)n + 1, f);
    bool same = got == n && memcmp(buf, data, (size_t)n) == 0;
    free(buf);
    fclose(f);
    return same;
}

static bool exists(world *w, const char *rel) {
    FILE *f = fopen(at(w, rel), "rb");
    if (f) fclose(f);
    return f != NULL;
}

static int gets(world *w, hub_host host) {
    hub_request r;
    int n = 0;
    for (int i = 0; hub_log_get(w->h, i, &r); i++) n += r.host == host && !strcmp(r.method, "GET");
    return n;
}

START_TEST(my_hand_example_layout)
{
    world *w = world_new();
    const char *names[] = {"config.json", "model.safetensors"};
    char *dir = hf_download("org/tiny", names, 2, w->root, "abc123", w->endpoint, NULL, 10.0);
    ck_assert_msg(dir != NULL, "%s", tl_error());
    ck_assert_str_eq(dir, at(w, "org--tiny/abc123"));
    ck_assert(holds(w, "org--tiny/abc123/config.json", CONFIG, (long)strlen(CONFIG)));
    ck_assert(holds(w, "org--tiny/abc123/model.safetensors", w->model, SIZE));
    ck_assert(!exists(w, "org--tiny/abc123/model.safetensors.part"));
    ck_assert_int_eq(gets(w, HUB_HOST_CDN), 1);   /* the 302 sent the model to the CDN */
    free(dir);
    world_free(w);
}
END_TEST

START_TEST(my_resume_after_a_dropped_connection)
{
    world *w = world_new();
    hub_add_fault(w->h, &(hub_fault){.kind = HUB_FAULT_CLOSE_AFTER, .n = 40000, .times = 1,
                                     .on = HUB_HOST_CDN});
    char *dir = pull(w, "model.safetensors");
    ck_assert_msg(dir != NULL, "%s", tl_error());
    ck_assert(holds(w, "org--tiny/abc123/model.safetensors", w->model, SIZE));
    hub_request r;
    bool resumed = false;
    for (int i = 0; hub_log_get(w->h, i, &r); i++)
        resumed |= !strcmp(r.range, "bytes=40000-");
    ck_assert_msg(resumed, "no request for bytes=40000-");
    free(dir);
    world_free(w);
}
END_TEST

START_TEST(my_resume_from_an_earlier_part_file)
{
    world *w = world_new();
    free(pull(w, "config.json"));                 /* creates the folder */
    FILE *f = fopen(at(w, "org--tiny/abc123/model.safetensors.part"), "wb");
    ck_assert_ptr_nonnull(f);
    fwrite(w->model, 1, 60000, f);
    fclose(f);
    char *dir = pull(w, "model.safetensors");
    ck_assert_msg(dir != NULL, "%s", tl_error());
    ck_assert(holds(w, "org--tiny/abc123/model.safetensors", w->model, SIZE));
    hub_request r;
    for (int i = 0; hub_log_get(w->h, i, &r); i++)
        if (r.host == HUB_HOST_CDN) ck_assert_str_eq(r.range, "bytes=60000-");
    free(dir);
    world_free(w);
}
END_TEST

START_TEST(my_server_that_ignores_ranges)
{
    world *w = world_new();
    hub_add_fault(w->h, &(hub_fault){.kind = HUB_FAULT_CLOSE_AFTER, .n = 40000, .times = 1,
                                     .on = HUB_HOST_CDN});
    hub_add_fault(w->h, &(hub_fault){.kind = HUB_FAULT_IGNORE_RANGE});
    char *dir = pull(w, "model.safetensors");
    ck_assert_msg(dir != NULL, "%s", tl_error());
    ck_assert(holds(w, "org--tiny/abc123/model.safetensors", w->model, SIZE));
    free(dir);
    world_free(w);
}
END_TEST

START_TEST(my_second_pull_downloads_nothing)
{
    world *w = world_new();
    free(pull(w, "model.safetensors"));
    hub_log_clear(w->h);
    char *dir = pull(w, "model.safetensors");
    ck_assert_msg(dir != NULL, "%s", tl_error());
    ck_assert_int_eq(gets(w, HUB_HOST_CDN) + gets(w, HUB_HOST_HUB), 0);
    free(dir);

    /* a stale copy (one byte changed) is replaced */
    FILE *f = fopen(at(w, "org--tiny/abc123/model.safetensors"), "r+b");
    ck_assert_ptr_nonnull(f);
    fputc(w->model[0] ^ 1, f);
    fclose(f);
    dir = pull(w, "model.safetensors");
    ck_assert_msg(dir != NULL, "%s", tl_error());
    ck_assert(holds(w, "org--tiny/abc123/model.safetensors", w->model, SIZE));
    free(dir);
    world_free(w);
}
END_TEST
