/* The cache: a verified file is never downloaded twice (pulling again is
 * free), a stale one is replaced, and HF_HUB_OFFLINE=1 serves the cache
 * without a single request. */
#include "hf_fixture.h"

#define MODEL_FINAL "org--tiny/main/model.safetensors"
#define CONFIG_FINAL "org--tiny/main/config.json"

START_TEST(test_existing_files_are_not_downloaded_again)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    const char *names[] = {"config.json", "model.safetensors"};
    char *dir = fx_download(&f, "main", names, 2, NULL);
    ck_assert_msg(dir != NULL, "hf_download failed: %s", tl_error());
    free(dir);

    /* again: asking what the files are is fine, fetching them is not */
    hub_log_clear(f.h);
    dir = fx_download(&f, "main", names, 2, NULL);
    ck_assert_msg(dir != NULL, "the second call failed: %s", tl_error());
    ck_assert_str_eq(dir, fx_path(&f, "org--tiny/main"));
    free(dir);
    ck_assert_msg(fx_count(&f, "GET", HUB_ANY, NULL) == 0,
                  "verified files were downloaded again; requests:%s", fx_log_text(&f));
    ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
    ck_assert(fx_holds(fx_path(&f, CONFIG_FINAL), FX_CONFIG, strlen(FX_CONFIG)));

    /* stale, same size (one byte changed): replaced */
    unsigned char *stale = malloc(f.model_size);
    memcpy(stale, f.model, f.model_size);
    stale[100] ^= 0x55;
    fx_write(fx_path(&f, MODEL_FINAL), stale, f.model_size);
    free(stale);
    /* stale, another size: replaced */
    fx_write(fx_path(&f, CONFIG_FINAL), "{}", 2);
    hub_log_clear(f.h);
    dir = fx_download(&f, "main", names, 2, NULL);
    ck_assert_msg(dir != NULL, "stale files should be replaced: %s", tl_error());
    free(dir);
    ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
    ck_assert(fx_holds(fx_path(&f, CONFIG_FINAL), FX_CONFIG, strlen(FX_CONFIG)));
    ck_assert_msg(fx_count(&f, "GET", HUB_HOST_CDN, NULL) == 1 &&
                  fx_count(&f, "GET", HUB_HOST_HUB, "config.json") == 1,
                  "each stale file should be fetched once; requests:%s", fx_log_text(&f));
    fx_end(&f);
}
END_TEST

START_TEST(test_offline_serves_from_the_cache)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    const char *names[] = {"config.json", "model.safetensors"};
    char *dir = fx_download(&f, "main", names, 2, NULL);
    ck_assert_msg(dir != NULL, "hf_download failed: %s", tl_error());
    free(dir);

    hub_log_clear(f.h);
    setenv("HF_HUB_OFFLINE", "1", 1);
    dir = fx_download(&f, "main", names, 2, NULL);
    ck_assert_msg(dir != NULL, "offline, cached files should be served: %s", tl_error());
    ck_assert_str_eq(dir, fx_path(&f, "org--tiny/main"));
    free(dir);
    ck_assert_msg(hub_log_count(f.h) == 0, "offline means no request; requests:%s",
                  fx_log_text(&f));

    /* a file not in the cache: a clear error, still no request */
    const char *missing[] = {"config.json", "tokenizer.json"};
    dir = fx_download(&f, "main", missing, 2, NULL);
    fx_assert_failed_cleanly(&f, dir, "tokenizer.json", "org--tiny/main/tokenizer.json");
    fx_assert_error_mentions("HF_HUB_OFFLINE");
    ck_assert_int_eq(hub_log_count(f.h), 0);

    /* a revision never downloaded */
    dir = fx_download(&f, "v2", names, 2, NULL);
    ck_assert_ptr_null(dir);
    fx_assert_error_mentions("config.json", "HF_HUB_OFFLINE");
    ck_assert_int_eq(hub_log_count(f.h), 0);
    fx_end(&f);
}
END_TEST
