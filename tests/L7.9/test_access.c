/* Who gets the token, what the Hub's refusals become, and redirects that go
 * nowhere. */
#include "hf_fixture.h"

#define MODEL_FINAL "org--tiny/main/model.safetensors"
#define CONFIG_FINAL "org--tiny/main/config.json"

/* HF_TOKEN goes to the Hub as a Bearer token and never to the CDN, another
 * host that must not see it. */
START_TEST(test_token_goes_to_the_hub_not_the_cdn)
{
    hf_fx f;
    fx_init(&f);
    ck_assert_int_eq(hub_add_file(f.h, "org/secret", "config.json", FX_CONFIG, strlen(FX_CONFIG)),
                     0);
    ck_assert_int_eq(hub_add_file(f.h, "org/secret", "model.safetensors", f.model, f.model_size),
                     0);
    ck_assert_int_eq(hub_set_private(f.h, "org/secret", "hf_owner"), 0);
    fx_start(&f);
    setenv("HF_TOKEN", "hf_owner", 1);
    const char *names[] = {"config.json", "model.safetensors"};
    tl_clear_error();
    char *dir = hf_download("org/secret", names, 2, f.cache, "main", f.endpoint, NULL, FX_TIMEOUT);
    ck_assert_msg(dir != NULL, "with its token the private repo should download: %s\nrequests:%s",
                  tl_error(), fx_log_text(&f));
    ck_assert(fx_holds(fx_path(&f, "org--secret/main/model.safetensors"), f.model, f.model_size));
    int hub_requests = 0, cdn_requests = 0;
    hub_request r;
    for (int i = 0; hub_log_get(f.h, i, &r); i++) {
        if (r.host == HUB_HOST_HUB) {
            hub_requests++;
            ck_assert_msg(r.authorization, "%s %s reached the Hub without the token", r.method,
                          r.path);
        } else {
            cdn_requests++;
            ck_assert_msg(!r.authorization, "the token leaked to the CDN: %s %s", r.method,
                          r.path);
        }
    }
    ck_assert_int_ge(hub_requests, 2);
    ck_assert_int_ge(cdn_requests, 1);
    free(dir);
    fx_end(&f);
}
END_TEST

/* Refusals say what happened and what to do. */
START_TEST(test_hub_refusals_name_the_cause)
{
    hf_fx f;
    fx_init(&f);
    ck_assert_int_eq(hub_add_file(f.h, "org/secret", "config.json", FX_CONFIG, strlen(FX_CONFIG)),
                     0);
    ck_assert_int_eq(hub_set_private(f.h, "org/secret", "hf_owner"), 0);
    ck_assert_int_eq(hub_add_file(f.h, "org/gated", "config.json", FX_CONFIG, strlen(FX_CONFIG)),
                     0);
    ck_assert_int_eq(hub_set_gated(f.h, "org/gated", "hf_approved"), 0);
    fx_start(&f);
    const char *names[] = {"config.json"};
    struct {
        const char *repo, *token, *revision, *words[3];
    } cases[] = {
        {"org/secret", NULL, "main", {"401", "HF_TOKEN"}},
        {"org/secret", "hf_wrong", "main", {"401", "HF_TOKEN"}},
        {"org/gated", NULL, "main", {"401", "GatedRepo"}},
        {"org/gated", "hf_wrong", "main", {"403", "GatedRepo"}},
        {"org/nothing", NULL, "main", {"404", "RepoNotFound"}},
        {"org/tiny", NULL, "v9", {"404", "RevisionNotFound"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (cases[i].token) setenv("HF_TOKEN", cases[i].token, 1);
        else unsetenv("HF_TOKEN");
        tl_clear_error();
        char *dir = hf_download(cases[i].repo, names, 1, f.cache, cases[i].revision, f.endpoint,
                                NULL, FX_TIMEOUT);
        ck_assert_msg(dir == NULL, "%s should be refused", cases[i].repo);
        const char *e = tl_error();
        ck_assert_msg(e && strstr(e, "config.json"), "the error should name the file: %s", e);
        for (int w = 0; cases[i].words[w]; w++)
            ck_assert_msg(strstr(e, cases[i].words[w]), "%s: the error '%s' should mention '%s'",
                          cases[i].repo, e, cases[i].words[w]);
    }
    unsetenv("HF_TOKEN");
    char tree[1024];
    fx_tree(f.cache, tree, sizeof tree);
    ck_assert_msg(!strstr(tree, "config.json"), "refused downloads left files:\n%s", tree);
    fx_end(&f);
}
END_TEST

START_TEST(test_redirect_loops_and_redirects_without_location)
{
    const struct { hub_fault_kind kind; hub_host on; const char *word; } cases[] = {
        {HUB_FAULT_REDIRECT_LOOP, HUB_HOST_HUB, "redirect"},
        {HUB_FAULT_REDIRECT_NO_LOCATION, HUB_HOST_HUB, "Location"},
        {HUB_FAULT_REDIRECT_LOOP, HUB_HOST_CDN, "redirect"},
        {HUB_FAULT_REDIRECT_NO_LOCATION, HUB_HOST_CDN, "redirect"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        hf_fx f;
        fx_init(&f);
        fx_start(&f);
        hub_add_fault(f.h, &(hub_fault){.kind = cases[i].kind, .on = cases[i].on});
        const char *names[] = {"model.safetensors"};
        char *dir = fx_download(&f, "main", names, 1, NULL);
        fx_assert_failed_cleanly(&f, dir, "model.safetensors", MODEL_FINAL);
        fx_assert_error_mentions(cases[i].word);
        int n = hub_log_count(f.h);
        ck_assert_msg(n <= 12, "%d requests: a redirect loop must be cut short", n);
        fx_end(&f);
    }
}
END_TEST
