/* Large (LFS) files: the Hub's 302 and the CDN listener behind it. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "client.h"

static const char *model_url(const hub *h) {
    return urlf("%s/org/tiny/resolve/main/model.safetensors", hub_endpoint(h));
}

/* The CDN URL the Hub redirects to. */
static char *location_of(const hub *h) {
    http_reply *r = http_fetch(model_url(h), NULL);
    ck_assert_int_eq(r->status, 302);
    char *loc = strdup(http_header(r, "Location"));
    http_reply_free(r);
    return loc;
}

START_TEST(test_lfs_file_is_a_302_to_the_cdn_with_linked_etag_size_and_commit) {
    unsigned char *model;
    hub *h = start_tiny_hub(&model);
    char sha256[65];
    test_sha256_hex(model, MODEL_SIZE, sha256);
    for (int head = 0; head <= 1; head++) {
        http_reply *r = http_fetch(model_url(h), &(http_opts){.head = head});
        ck_assert_int_eq(r->status, 302);
        const char *loc = http_header(r, "Location");
        const char *cdn = hub_cdn_endpoint(h);
        ck_assert_msg(loc && !strncmp(loc, cdn, strlen(cdn)) && loc[strlen(cdn)] == '/',
                      "Location %s is not on the CDN %s", loc ? loc : "(none)", cdn);
        ck_assert_str_ne(cdn, hub_endpoint(h));
        ck_assert_str_eq(http_header(r, "X-Linked-Etag"), urlf("\"%s\"", sha256));
        ck_assert_str_eq(http_header(r, "X-Linked-Size"), urlf("%d", MODEL_SIZE));
        ck_assert_str_eq(http_header(r, "X-Repo-Commit"), hub_commit(h, "org/tiny", "main"));
        /* The 302's own Content-Length is its short body's, not the file's. */
        const char *length = http_header(r, "Content-Length");
        ck_assert_ptr_nonnull(length);
        ck_assert_int_lt(atol(length), 1000);
        if (!head) ck_assert_uint_eq(r->body_len, (size_t)atol(length));
        http_reply_free(r);
    }
    free(model);
    hub_free(h);
}
END_TEST

START_TEST(test_lfs_threshold_is_inclusive) {
    hub *h = hub_new();
    unsigned char *b = test_bytes(100, 1);
    ck_assert_int_eq(hub_add_file(h, "org/r", "at", b, 100), 0);
    ck_assert_int_eq(hub_add_file(h, "org/r", "below", b, 99), 0);
    hub_set_lfs_threshold(h, 100);
    ck_assert_int_eq(hub_start(h, NULL), 0);
    http_reply *r = http_fetch(urlf("%s/org/r/resolve/main/at", hub_endpoint(h)), NULL);
    ck_assert_int_eq(r->status, 302);
    http_reply_free(r);
    r = http_fetch(urlf("%s/org/r/resolve/main/below", hub_endpoint(h)), NULL);
    ck_assert_int_eq(r->status, 200);
    ck_assert_uint_eq(r->body_len, 99);
    http_reply_free(r);
    free(b);
    hub_free(h);
}
END_TEST

START_TEST(test_default_lfs_threshold_is_one_mib) {
    hub *h = hub_new();
    unsigned char *b = test_bytes(1 << 20, 2);
    ck_assert_int_eq(hub_add_file(h, "org/r", "mib", b, 1 << 20), 0);
    ck_assert_int_eq(hub_add_file(h, "org/r", "less", b, (1 << 20) - 1), 0);
    ck_assert_int_eq(hub_start(h, NULL), 0);
    http_reply *r = http_fetch(urlf("%s/org/r/resolve/main/mib", hub_endpoint(h)),
                               &(http_opts){.head = true});
    ck_assert_int_eq(r->status, 302);
    http_reply_free(r);
    r = http_fetch(urlf("%s/org/r/resolve/main/less", hub_endpoint(h)),
                   &(http_opts){.head = true});
    ck_assert_int_eq(r->status, 200);
    http_reply_free(r);
    free(b);
    hub_free(h);
}
END_TEST

START_TEST(test_following_the_redirect_gets_the_whole_file_from_the_cdn) {
    unsigned char *model;
    hub *h = start_tiny_hub(&model);
    http_reply *r = http_fetch(model_url(h), &(http_opts){.follow = true});
    ck_assert_int_eq(r->code, CURLE_OK);
    ck_assert_int_eq(r->status, 200);
    ck_assert_int_eq(r->redirects, 1);
    ck_assert_uint_eq(r->body_len, MODEL_SIZE);
    ck_assert_mem_eq(r->body, model, MODEL_SIZE);
    ck_assert_msg(!strncmp(r->effective_url, hub_cdn_endpoint(h), strlen(hub_cdn_endpoint(h))),
                  "ended at %s", r->effective_url);
    ck_assert_int_eq(log_count_where(h, HUB_HOST_HUB, "model.safetensors"), 1);
    ck_assert_int_eq(log_count_where(h, HUB_HOST_CDN, "/repos/org/tiny/"), 1);
    http_reply_free(r);
    free(model);
    hub_free(h);
}
END_TEST

START_TEST(test_cdn_ranges_give_206_with_content_range) {
    unsigned char *model;
    hub *h = start_tiny_hub(&model);
    char *cdn = location_of(h);
    struct { const char *range; size_t first, last; } cases[] = {
        {"1000-", 1000, MODEL_SIZE - 1},
        {"10-19", 10, 19},
        {"49990-60000", 49990, MODEL_SIZE - 1},   /* an end past the file is cut */
        {"-25", MODEL_SIZE - 25, MODEL_SIZE - 1}, /* the last 25 bytes */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        http_reply *r = http_fetch(cdn, &(http_opts){.range = cases[i].range});
        size_t n = cases[i].last - cases[i].first + 1;
        ck_assert_msg(r->status == 206, "Range %s: %ld", cases[i].range, r->status);
        ck_assert_str_eq(http_header(r, "Content-Range"),
                         urlf("bytes %zu-%zu/%d", cases[i].first, cases[i].last, MODEL_SIZE));
        ck_assert_uint_eq(r->body_len, n);
        ck_assert_mem_eq(r->body, model + cases[i].first, n);
        http_reply_free(r);
    }
    free(cdn);
    free(model);
    hub_free(h);
}
END_TEST

START_TEST(test_cdn_answers_416_past_the_end) {
    hub *h = start_tiny_hub(NULL);
    char *cdn = location_of(h);
    const char *ranges[] = {urlf("%d-", MODEL_SIZE), urlf("%d-%d", MODEL_SIZE + 5, MODEL_SIZE + 9)};
    for (int i = 0; i < 2; i++) {
        http_reply *r = http_fetch(cdn, &(http_opts){.range = ranges[i]});
        ck_assert_int_eq(r->status, 416);
        ck_assert_str_eq(http_header(r, "Content-Range"), urlf("bytes */%d", MODEL_SIZE));
        http_reply_free(r);
    }
    /* The same request via the Hub's redirect, as a resuming client sends it. */
    http_reply *r = http_fetch(model_url(h), &(http_opts){.follow = true, .range = ranges[0]});
    ck_assert_int_eq(r->status, 416);
    http_reply_free(r);
    free(cdn);
    hub_free(h);
}
END_TEST

START_TEST(test_cdn_etag_is_not_the_content_hash) {
    unsigned char *model;
    hub *h = start_tiny_hub(&model);
    char sha256[65];
    test_sha256_hex(model, MODEL_SIZE, sha256);
    http_reply *r = http_fetch(model_url(h), &(http_opts){.follow = true});
    const char *etag = http_header(r, "ETag");
    ck_assert_ptr_nonnull(etag);
    ck_assert_msg(!strstr(etag, sha256) && !strstr(sha256, etag + 1),
                  "the CDN's ETag %s should be unrelated to the sha256 %s", etag, sha256);
    ck_assert_ptr_null(http_header(r, "X-Linked-Etag"));
    http_reply_free(r);
    free(model);
    hub_free(h);
}
END_TEST

START_TEST(test_cdn_needs_no_token_and_the_log_shows_whether_one_arrived) {
    unsigned char *model;
    hub *h = hub_new();
    model = test_bytes(MODEL_SIZE, 7);
    ck_assert_int_eq(hub_add_file(h, "org/secret", "model.bin", model, MODEL_SIZE), 0);
    ck_assert_int_eq(hub_set_private(h, "org/secret", "hf_tok"), 0);
    hub_set_lfs_threshold(h, 1000);
    ck_assert_int_eq(hub_start(h, NULL), 0);
    const char *url = urlf("%s/org/secret/resolve/main/model.bin", hub_endpoint(h));

    /* libcurl drops the token when the redirect changes host:port. */
    http_reply *r = http_fetch(url, &(http_opts){.follow = true, .token = "hf_tok"});
    ck_assert_int_eq(r->status, 200);
    ck_assert_mem_eq(r->body, model, MODEL_SIZE);
    http_reply_free(r);
    hub_request hub_e, cdn_e;
    ck_assert_int_eq(hub_log_count(h), 2);
    ck_assert(hub_log_get(h, 0, &hub_e) && hub_log_get(h, 1, &cdn_e));
    ck_assert_int_eq(hub_e.host, HUB_HOST_HUB);
    ck_assert(hub_e.authorization);
    ck_assert_int_eq(cdn_e.host, HUB_HOST_CDN);
    ck_assert(!cdn_e.authorization);
    ck_assert_int_eq(cdn_e.status, 200);

    /* Told to keep it, libcurl sends it on: the CDN's log entry says so. */
    hub_log_clear(h);
    r = http_fetch(url, &(http_opts){.follow = true, .token = "hf_tok", .unrestricted_auth = true});
    ck_assert_int_eq(r->status, 200);
    http_reply_free(r);
    ck_assert(hub_log_get(h, 1, &cdn_e));
    ck_assert_int_eq(cdn_e.host, HUB_HOST_CDN);
    ck_assert(cdn_e.authorization);
    free(model);
    hub_free(h);
}
END_TEST

START_TEST(test_cdn_refuses_an_altered_url) {
    hub *h = start_tiny_hub(NULL);
    char *cdn = location_of(h);
    char *sig = strstr(cdn, "Signature=");
    ck_assert_ptr_nonnull(sig);
    http_reply *r = http_fetch(cdn, NULL);
    ck_assert_int_eq(r->status, 200);
    http_reply_free(r);
    char *tampered = strdup(cdn);
    char *t = tampered + (sig - cdn) + strlen("Signature=");
    *t = *t == '0' ? '1' : '0';
    r = http_fetch(tampered, NULL);
    ck_assert_int_eq(r->status, 403);
    http_reply_free(r);
    *strchr(tampered, '?') = '\0';   /* no query at all */
    r = http_fetch(tampered, NULL);
    ck_assert_int_eq(r->status, 403);
    http_reply_free(r);
    r = http_fetch(urlf("%s/repos/org/tiny/%064d?filename=model.safetensors",
                        hub_cdn_endpoint(h), 0), NULL);
    ck_assert_int_eq(r->status, 403);   /* another object: the signature is wrong */
    http_reply_free(r);
    r = http_fetch(urlf("%s/elsewhere", hub_cdn_endpoint(h)), NULL);
    ck_assert_int_eq(r->status, 404);
    http_reply_free(r);
    free(tampered);
    free(cdn);
    hub_free(h);
}
END_TEST

START_TEST(test_xet_headers_are_extra_and_the_cdn_still_serves_the_file) {
    unsigned char *model;
    hub *h = hub_new();
    model = test_bytes(MODEL_SIZE, 7);
    ck_assert_int_eq(hub_add_file(h, "org/tiny", "model.safetensors", model, MODEL_SIZE), 0);
    hub_set_lfs_threshold(h, LFS_THRESHOLD);
    hub_set_xet_headers(h, true);
    ck_assert_int_eq(hub_start(h, NULL), 0);
    http_reply *r = http_fetch(model_url(h), NULL);
    const char *xet = http_header(r, "X-Xet-Hash"), *link = http_header(r, "Link");
    ck_assert_msg(xet && strlen(xet) == 64, "X-Xet-Hash %s", xet ? xet : "(none)");
    ck_assert_msg(link && strstr(link, "rel=\"xet-auth\""), "Link %s", link ? link : "(none)");
    ck_assert_ptr_nonnull(http_header(r, "X-Linked-Etag"));
    http_reply_free(r);
    r = http_fetch(model_url(h), &(http_opts){.follow = true});
    ck_assert_uint_eq(r->body_len, MODEL_SIZE);
    ck_assert_mem_eq(r->body, model, MODEL_SIZE);
    http_reply_free(r);
    free(model);
    hub_free(h);
}
END_TEST
