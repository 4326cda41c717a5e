/* Private and gated repos: Bearer tokens, 401 and 403 (hub-protocol.md,
 * "Errors carry X-Error-Code"). */
#include <check.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "client.h"

static hub *start_locked_hub(void) {
    hub *h = hub_new();
    ck_assert_int_eq(hub_add_file(h, "org/private", "a.txt", "P", 1), 0);
    ck_assert_int_eq(hub_set_private(h, "org/private", "hf_owner"), 0);
    ck_assert_int_eq(hub_add_file(h, "org/gated", "a.txt", "G", 1), 0);
    ck_assert_int_eq(hub_set_gated(h, "org/gated", "hf_approved"), 0);
    ck_assert_int_eq(hub_add_file(h, "org/closed", "a.txt", "C", 1), 0);
    ck_assert_int_eq(hub_set_gated(h, "org/closed", NULL), 0);
    ck_assert_int_eq(hub_start(h, NULL), 0);
    return h;
}

/* Status and X-Error-Code (NULL: none) of a GET with token (NULL: none). */
static void expect(hub *h, const char *repo, const char *token, long status, const char *code) {
    http_reply *r = http_fetch(urlf("%s/%s/resolve/main/a.txt", hub_endpoint(h), repo),
                               &(http_opts){.token = token});
    const char *got = http_header(r, "X-Error-Code");
    ck_assert_msg(r->status == status, "%s with token %s: %ld, expected %ld", repo,
                  token ? token : "(none)", r->status, status);
    if (code) ck_assert_msg(got && !strcmp(got, code), "%s: X-Error-Code %s, expected %s",
                            repo, got ? got : "(none)", code);
    else ck_assert_msg(!got, "%s: unexpected X-Error-Code %s", repo, got);
    if (status == 200) ck_assert_uint_eq(r->body_len, 1);
    else ck_assert_ptr_nonnull(http_header(r, "X-Error-Message"));
    http_reply_free(r);
}

START_TEST(test_private_repo_needs_its_bearer_token) {
    hub *h = start_locked_hub();
    expect(h, "org/private", NULL, 401, NULL);
    expect(h, "org/private", "hf_other", 401, NULL);
    expect(h, "org/private", "hf_owner", 200, NULL);
    hub_free(h);
}
END_TEST

START_TEST(test_private_repo_refuses_non_bearer_authorization) {
    hub *h = start_locked_hub();
    CURL *c = curl_easy_init();
    struct curl_slist *hdrs = curl_slist_append(NULL, "Authorization: Basic aGZfb3duZXI=");
    long status = 0;
    FILE *devnull = fopen("/dev/null", "w");
    curl_easy_setopt(c, CURLOPT_URL, urlf("%s/org/private/resolve/main/a.txt", hub_endpoint(h)));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, devnull);
    ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    ck_assert_int_eq(status, 401);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    fclose(devnull);
    hub_free(h);
}
END_TEST

START_TEST(test_gated_repo_is_401_anonymous_403_unapproved_200_approved) {
    hub *h = start_locked_hub();
    expect(h, "org/gated", NULL, 401, "GatedRepo");
    expect(h, "org/gated", "hf_someone", 403, "GatedRepo");
    expect(h, "org/gated", "hf_approved", 200, NULL);
    expect(h, "org/closed", "hf_approved", 403, "GatedRepo");   /* nobody approved */
    hub_free(h);
}
END_TEST

START_TEST(test_public_repo_ignores_tokens) {
    hub *h = start_tiny_hub(NULL);
    http_reply *r = http_fetch(urlf("%s/org/tiny/resolve/main/config.json", hub_endpoint(h)),
                               &(http_opts){.token = "hf_whatever"});
    ck_assert_int_eq(r->status, 200);
    http_reply_free(r);
    hub_free(h);
}
END_TEST
