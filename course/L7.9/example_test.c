/* Your tests for L7.9, the downloader: a first one to start from.
 *
 * Write Check tests in any .c file of this folder:
 *     START_TEST(test_what_it_proves) { ... } END_TEST
 * ol finds and registers them. Include only contract headers, <check.h> and
 * standard C headers. The fake Hub (tinyllm/testing/hub.h: its API is
 * documented there) runs inside your test on 127.0.0.1: give it files, start
 * it, point hf_download at its endpoint, and read back what it was asked.
 * `ol check L7.9` runs your tests against the reference (they must pass) and
 * against buggy variants of it (they should fail). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinyllm/io/hf.h"
#include "tinyllm/tensor.h"
#include "tinyllm/testing/hub.h"

START_TEST(test_example_one_file_from_the_fake_hub)
{
    static const char config[] = "{\"hidden_size\": 8}\n";
    setenv("NO_PROXY", "127.0.0.1", 1);
    unsetenv("HF_TOKEN");
    unsetenv("HF_HUB_OFFLINE");
    hub *h = hub_new();
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(hub_add_file(h, "org/tiny", "config.json", config, strlen(config)), 0);
    const char *endpoint;
    ck_assert_msg(hub_start(h, &endpoint) == 0, "the fake Hub did not start: %s", hub_error(h));

    char cache[] = "/tmp/my-first-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(cache));
    const char *names[] = {"config.json"};
    char *dir = hf_download("org/tiny", names, 1, cache, "main", endpoint, NULL, 10.0);
    ck_assert_msg(dir != NULL, "hf_download: %s", tl_error());

    /* the bytes the Hub was given, in the cache's layout */
    char path[512], got[64] = {0};
    snprintf(path, sizeof path, "%s/org--tiny/main/config.json", cache);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s is missing", path);
    size_t n = fread(got, 1, sizeof got - 1, f);
    fclose(f);
    ck_assert_uint_eq(n, strlen(config));
    ck_assert_str_eq(got, config);

    /* Next: what the request log says (hub_log_count, hub_log_get), an LFS
     * file (hub_set_lfs_threshold), a fault (hub_add_fault)... */
    free(dir);
    hub_free(h);
}
END_TEST
