/* L7.9 section 3, the download by hand:
 *
 *   hf_download("org/tiny", ["config.json", "model.safetensors"], cache,
 *               revision "abc123")
 *   HEAD /org/tiny/resolve/abc123/config.json        200, ETag = blob sha1
 *   GET  /org/tiny/resolve/abc123/config.json        200, the bytes
 *   HEAD /org/tiny/resolve/abc123/model.safetensors  302 to the CDN,
 *                                                    X-Linked-Etag = sha256
 *   GET  (CDN) /repos/org/tiny/<sha256>?...          200, the bytes
 *
 * and both files end up in cache/org--tiny/abc123/, with no .part file.
 */
#include "hf_fixture.h"

START_TEST(test_hand_example_layout_and_redirect)
{
    hf_fx f;
    fx_init(&f);
    ck_assert_int_eq(hub_add_ref(f.h, FX_REPO, "abc123"), 0);
    fx_start(&f);
    const char *names[] = {"config.json", "model.safetensors"};
    char *dir = fx_download(&f, "abc123", names, 2, NULL);
    ck_assert_msg(dir != NULL, "hf_download failed: %s\nrequests:%s", tl_error(), fx_log_text(&f));

    /* the folder: cache/<org>--<name>/<revision> */
    ck_assert_str_eq(dir, fx_path(&f, "org--tiny/abc123"));
    ck_assert(fx_holds(fx_path(&f, "org--tiny/abc123/config.json"), FX_CONFIG, strlen(FX_CONFIG)));
    ck_assert(fx_holds(fx_path(&f, "org--tiny/abc123/model.safetensors"), f.model, f.model_size));
    char tree[1024];
    fx_tree(f.cache, tree, sizeof tree);
    ck_assert_msg(
        !strcmp(tree, "org--tiny/abc123/config.json\norg--tiny/abc123/model.safetensors\n"),
        "the cache should hold the two files and nothing else (no .part):\n%s", tree);

    /* the URLs: both files asked of the Hub at the revision; the model's
     * bytes came from the CDN, the redirect's target */
    const char *config_url = "/org/tiny/resolve/abc123/config.json";
    const char *model_url = "/org/tiny/resolve/abc123/model.safetensors";
    hub_request r;
    bool asked_config = false, asked_model = false;
    for (int i = 0; hub_log_get(f.h, i, &r); i++) {
        if (r.host == HUB_HOST_HUB && !strcmp(r.path, config_url)) asked_config = true;
        if (r.host == HUB_HOST_HUB && !strcmp(r.path, model_url)) {
            asked_model = true;
            ck_assert_msg(r.status == 302, "the Hub should redirect the model: %d", r.status);
        }
    }
    ck_assert_msg(asked_config && asked_model, "expected %s and %s on the Hub; requests:%s",
                  config_url, model_url, fx_log_text(&f));
    char cdn_path[160];
    snprintf(cdn_path, sizeof cdn_path, "/repos/org/tiny/%s",
             hub_file_sha256(f.h, FX_REPO, "model.safetensors"));
    ck_assert_msg(fx_count(&f, "GET", HUB_HOST_CDN, cdn_path) == 1,
                  "the model should be fetched once from the CDN at %s; requests:%s", cdn_path,
                  fx_log_text(&f));
    ck_assert_msg(fx_count(&f, "GET", HUB_HOST_HUB, "model.safetensors") == 0,
                  "the model's bytes come from the CDN, never the Hub; requests:%s",
                  fx_log_text(&f));
    ck_assert_msg(fx_count(&f, "GET", HUB_HOST_HUB, config_url) == 1,
                  "config.json is served by the Hub directly, once; requests:%s", fx_log_text(&f));
    free(dir);
    fx_end(&f);
}
END_TEST

/* The default revision is "main", and a repo without a namespace keeps its
 * bare name as the folder. */
START_TEST(test_default_revision_and_namespace_less_repo)
{
    hf_fx f;
    fx_init(&f);
    ck_assert_int_eq(hub_add_file(f.h, "gpt2", "config.json", FX_CONFIG, strlen(FX_CONFIG)), 0);
    fx_start(&f);
    const char *names[] = {"config.json"};
    char *dir = hf_download("gpt2", names, 1, f.cache, NULL, f.endpoint, NULL, FX_TIMEOUT);
    ck_assert_msg(dir != NULL, "hf_download failed: %s", tl_error());
    ck_assert_str_eq(dir, fx_path(&f, "gpt2/main"));
    ck_assert(fx_holds(fx_path(&f, "gpt2/main/config.json"), FX_CONFIG, strlen(FX_CONFIG)));
    ck_assert_msg(fx_count(&f, "GET", HUB_HOST_HUB, "/gpt2/resolve/main/config.json") == 1,
                  "expected one GET of /gpt2/resolve/main/config.json; requests:%s",
                  fx_log_text(&f));
    free(dir);
    fx_end(&f);
}
END_TEST

/* Files in subfolders of the repo get the same subfolders in the cache;
 * the Hub's relative 307 for small files (to /api/resolve-cache/...) is
 * followed; an empty file is a file too; zero files is a valid request. */
START_TEST(test_subfolders_small_redirects_and_empty_files)
{
    hf_fx f;
    fx_init(&f);
    const char *nested = "{\"merges\": []}\n";
    ck_assert_int_eq(hub_add_file(f.h, FX_REPO, "tokenizer/tokenizer.json", nested, strlen(nested)),
                     0);
    ck_assert_int_eq(hub_add_file(f.h, FX_REPO, "empty.txt", "", 0), 0);
    hub_set_small_redirect(f.h, true);
    fx_start(&f);
    const char *names[] = {"tokenizer/tokenizer.json", "empty.txt", "config.json"};
    char *dir = fx_download(&f, "main", names, 3, NULL);
    ck_assert_msg(dir != NULL, "hf_download failed: %s\nrequests:%s", tl_error(), fx_log_text(&f));
    ck_assert(
        fx_holds(fx_path(&f, "org--tiny/main/tokenizer/tokenizer.json"), nested, strlen(nested)));
    ck_assert_int_eq(fx_size(fx_path(&f, "org--tiny/main/empty.txt")), 0);
    ck_assert(fx_holds(fx_path(&f, "org--tiny/main/config.json"), FX_CONFIG, strlen(FX_CONFIG)));
    ck_assert_msg(fx_count(&f, NULL, HUB_HOST_HUB, NULL) > 0 &&
                  fx_count(&f, "GET", HUB_HOST_HUB, "/tokenizer/tokenizer.json") == 1,
                  "requests:%s", fx_log_text(&f));
    free(dir);

    dir = fx_download(&f, "main", NULL, 0, NULL);
    ck_assert_msg(dir != NULL, "hf_download of no file failed: %s", tl_error());
    ck_assert_str_eq(dir, fx_path(&f, "org--tiny/main"));
    free(dir);
    fx_end(&f);
}
END_TEST

/* What the real Hub also sends must not confuse the downloader: weak ETags
 * (W/"..."), which name the same bytes, and Xet's headers on LFS redirects,
 * which a plain HTTP client ignores. */
START_TEST(test_weak_etags_and_xet_headers)
{
    hf_fx f;
    fx_init(&f);
    hub_set_xet_headers(f.h, true);
    fx_start(&f);
    int weak = hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_WEAK_ETAG});
    const char *names[] = {"config.json", "model.safetensors"};
    char *dir = fx_download(&f, "main", names, 2, NULL);
    ck_assert_msg(dir != NULL, "hf_download failed: %s\nrequests:%s", tl_error(), fx_log_text(&f));
    ck_assert_int_ge(hub_fault_hits(f.h, weak), 2);
    ck_assert(fx_holds(fx_path(&f, "org--tiny/main/config.json"), FX_CONFIG, strlen(FX_CONFIG)));
    ck_assert(fx_holds(fx_path(&f, "org--tiny/main/model.safetensors"), f.model, f.model_size));
    free(dir);

    /* weak or not, the hash is still checked */
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_FLIP_BYTE, .n = 9, .on = HUB_HOST_CDN});
    remove(fx_path(&f, "org--tiny/main/model.safetensors"));
    dir = fx_download(&f, "main", names, 2, NULL);
    fx_assert_failed_cleanly(&f, dir, "model.safetensors", "org--tiny/main/model.safetensors");
    fx_assert_error_mentions("sha256 mismatch");
    fx_end(&f);
}
END_TEST
