/* My downloader tests, the failures: a corrupt byte never reaches the final
 * name, bad names never reach the server, offline means no request, and
 * the token never reaches the CDN. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tinyllm/io/hf.h"
#include "tinyllm/tensor.h"
#include "tinyllm/testing/hub.h"

#define SIZE 50000
static const char CONFIG[] = "{\"hidden_size\": 8}\n";

typedef struct {
    hub *h;
    const char *endpoint;
    char root[64], path[256];
    unsigned char model[SIZE];
} world;

static world *world_new(void) {
    world *w = calloc(1, sizeof *w);
    ck_assert_ptr_nonnull(w);
    for (int i = 0; i < SIZE; i++) w->model[i] = (unsigned char)(i * 7 + i / 251);
    snprintf(w->root, sizeof w->root, "/tmp/my-hf-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(w->root));
    unsetenv("HF_TOKEN");
    unsetenv("HF_HUB_OFFLINE");
    unsetenv("HF_ENDPOINT");
    setenv("NO_PROXY", "127.0.0.1", 1);
    w->h = hub_new();
    hub_add_file(w->h, "org/tiny", "config.json", CONFIG, strlen(CONFIG));
    hub_add_file(w->h, "org/tiny", "model.safetensors", w->model, SIZE);
    hub_set_lfs_threshold(w->h, 1024);
    ck_assert_int_eq(hub_start(w->h, &w->endpoint), 0);
    return w;
}

static const char *at(world *w, const char *rel) {
    snprintf(w->path, sizeof w->path, "%s/%s", w->root, rel);
    return w->path;
}

static bool exists(world *w, const char *rel) {
    FILE *f = fopen(at(w, rel), "rb");
    if (f) fclose(f);
    return f != NULL;
}

static void world_free(world *w) {
    const char *files[] = {"org--tiny/main/config.json", "org--tiny/main/model.safetensors",
                           "org--tiny/main/model.safetensors.part",
                           "org--tiny/main/config.json.part", "org--tiny/main", "org--tiny", ""};
    for (int i = 0; i < 7; i++) remove(at(w, files[i]));
    unsetenv("HF_TOKEN");
    unsetenv("HF_HUB_OFFLINE");
    hub_free(w->h);
    free(w);
}

static char *pull(world *w, const char *file) {
    const char *names[] = {file};
    tl_clear_error();
    return hf_download("org/tiny", names, 1, w->root, "main", w->endpoint, NULL, 10.0);
}

START_TEST(my_flipped_byte_is_refused)
{
    world *w = world_new();
    hub_add_fault(w->h, &(hub_fault){.kind = HUB_FAULT_FLIP_BYTE, .n = 1000, .on = HUB_HOST_CDN});
    char *dir = pull(w, "model.safetensors");
    ck_assert_ptr_null(dir);
    ck_assert_msg(strstr(tl_error(), "model.safetensors") && strstr(tl_error(), "sha256"),
                  "%s", tl_error());
    ck_assert(!exists(w, "org--tiny/main/model.safetensors"));
    ck_assert(!exists(w, "org--tiny/main/model.safetensors.part"));

    /* a small file is checked too (git blob sha1) */
    hub_add_fault(w->h, &(hub_fault){.kind = HUB_FAULT_FLIP_BYTE, .n = 2, .on = HUB_HOST_HUB});
    ck_assert_ptr_null(pull(w, "config.json"));
    ck_assert(!exists(w, "org--tiny/main/config.json"));
    world_free(w);
}
END_TEST

START_TEST(my_bad_names_never_reach_the_server)
{
    world *w = world_new();
    const char *bad_files[] = {"../x", "/etc/passwd", "a/../../b", "a\\b", ""};
    for (int i = 0; i < 5; i++) {
        ck_assert_ptr_null(pull(w, bad_files[i]));
        ck_assert_msg(strstr(tl_error(), "filename"), "%s", tl_error());
    }
    const char *names[] = {"config.json"};
    const char *bad_repos[] = {"../tiny", "org/../x", "a/b/c", "org--x/y", ""};
    for (int i = 0; i < 5; i++) {
        tl_clear_error();
        ck_assert_ptr_null(
            hf_download(bad_repos[i], names, 1, w->root, "main", w->endpoint, NULL, 5));
        ck_assert_msg(strstr(tl_error(), "repo id"), "%s", tl_error());
    }
    tl_clear_error();
    ck_assert_ptr_null(hf_download("org/tiny", names, 1, w->root, "../..", w->endpoint, NULL, 5));
    ck_assert_msg(strstr(tl_error(), "revision"), "%s", tl_error());
    ck_assert_int_eq(hub_log_count(w->h), 0);
    ck_assert_int_eq(hf_validate_revision("refs/pr/1"), 0);
    world_free(w);
}
END_TEST

START_TEST(my_offline_uses_only_the_cache)
{
    world *w = world_new();
    free(pull(w, "config.json"));
    hub_log_clear(w->h);
    setenv("HF_HUB_OFFLINE", "1", 1);
    char *dir = pull(w, "config.json");
    ck_assert_msg(dir != NULL, "%s", tl_error());
    free(dir);
    ck_assert_ptr_null(pull(w, "model.safetensors"));
    ck_assert_msg(strstr(tl_error(), "model.safetensors"), "%s", tl_error());
    ck_assert_int_eq(hub_log_count(w->h), 0);
    world_free(w);
}
END_TEST

START_TEST(my_token_stays_with_the_hub)
{
    world *w = world_new();
    setenv("HF_TOKEN", "hf_mine", 1);
    char *dir = pull(w, "model.safetensors");
    ck_assert_msg(dir != NULL, "%s", tl_error());
    free(dir);
    hub_request r;
    int hub_seen = 0;
    for (int i = 0; hub_log_get(w->h, i, &r); i++) {
        if (r.host == HUB_HOST_CDN) ck_assert_msg(!r.authorization, "the CDN saw the token");
        else hub_seen += r.authorization;
    }
    ck_assert_int_ge(hub_seen, 1);
    world_free(w);
}
END_TEST
