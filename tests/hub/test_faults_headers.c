/* Header faults: wrong or missing metadata, path traversal in an etag or a
 * commit; and how a fault is aimed (repo, path, method, listener, times). */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "client.h"

static http_reply *get_file(const hub *h, const char *file) {
    return http_fetch(urlf("%s/org/tiny/resolve/main/%s", hub_endpoint(h), file), NULL);
}

START_TEST(test_wrong_linked_size_changes_only_x_linked_size) {
    hub *h = start_tiny_hub(NULL);
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_WRONG_LINKED_SIZE, .times = 1});
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_WRONG_LINKED_SIZE, .n = -5000, .times = 1});
    http_reply *r = get_file(h, "model.safetensors");
    ck_assert_int_eq(r->status, 302);
    ck_assert_str_eq(http_header(r, "X-Linked-Size"), urlf("%d", MODEL_SIZE + 1));
    http_reply_free(r);
    r = get_file(h, "model.safetensors");
    ck_assert_str_eq(http_header(r, "X-Linked-Size"), urlf("%d", MODEL_SIZE - 5000));
    http_reply_free(r);
    /* The CDN still serves the true size. */
    r = http_fetch(urlf("%s/org/tiny/resolve/main/model.safetensors", hub_endpoint(h)),
                   &(http_opts){.follow = true});
    ck_assert_uint_eq(r->body_len, MODEL_SIZE);
    http_reply_free(r);
    hub_free(h);
}
END_TEST

START_TEST(test_omit_header_leaves_out_each_named_header) {
    struct { const char *file, *header; } cases[] = {
        {"model.safetensors", "X-Linked-Etag"},
        {"model.safetensors", "X-Linked-Size"},
        {"model.safetensors", "X-Repo-Commit"},
        {"config.json", "ETag"},
        {"config.json", "X-Repo-Commit"},
    };
    const char *all[] = {"X-Linked-Etag", "X-Linked-Size", "X-Repo-Commit", "ETag"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hub *h = start_tiny_hub(NULL);
        hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_OMIT_HEADER, .header = cases[i].header,
                                      .on = HUB_HOST_HUB});
        http_reply *r = get_file(h, cases[i].file);
        bool lfs = !strcmp(cases[i].file, "model.safetensors");
        for (int k = 0; k < 4; k++) {
            bool expected = !strcmp(all[k], cases[i].header) ? false
                            : !strcmp(all[k], "ETag") ? !lfs
                            : !strcmp(all[k], "X-Repo-Commit") ? true : lfs;
            ck_assert_msg((http_header(r, all[k]) != NULL) == expected,
                          "omitting %s from %s: %s is %s", cases[i].header, cases[i].file,
                          all[k], expected ? "missing" : "present");
        }
        http_reply_free(r);
        hub_free(h);
    }
}
END_TEST

START_TEST(test_evil_etag_and_commit_attempt_path_traversal) {
    hub *h = start_tiny_hub(NULL);
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_EVIL_ETAG});
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_EVIL_COMMIT});
    http_reply *r = get_file(h, "model.safetensors");
    ck_assert_str_eq(http_header(r, "X-Linked-Etag"), "\"../../evil\"");
    ck_assert_str_eq(http_header(r, "X-Repo-Commit"), "../../evil");
    http_reply_free(r);
    r = get_file(h, "config.json");
    ck_assert_str_eq(http_header(r, "ETag"), "\"../../evil\"");
    ck_assert_str_eq(http_header(r, "X-Repo-Commit"), "../../evil");
    ck_assert_str_eq((char *)r->body, CONFIG_JSON);
    http_reply_free(r);
    hub_clear_faults(h);
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_EVIL_COMMIT, .value = "/etc/passwd"});
    r = get_file(h, "config.json");
    ck_assert_str_eq(http_header(r, "X-Repo-Commit"), "/etc/passwd");
    http_reply_free(r);
    hub_free(h);
}
END_TEST

START_TEST(test_weak_etag_is_sent_as_w_slash_quoted) {
    hub *h = start_tiny_hub(NULL);
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_WEAK_ETAG});
    http_reply *r = get_file(h, "model.safetensors");
    const char *sha256 = hub_file_sha256(h, "org/tiny", "model.safetensors");
    ck_assert_str_eq(http_header(r, "X-Linked-Etag"), urlf("W/\"%s\"", sha256));
    http_reply_free(r);
    r = get_file(h, "config.json");
    ck_assert_str_eq(http_header(r, "ETag"),
                     urlf("W/\"%s\"", hub_file_blob_sha1(h, "org/tiny", "config.json")));
    http_reply_free(r);
    hub_free(h);
}
END_TEST

START_TEST(test_faults_are_aimed_by_repo_path_method_and_listener) {
    hub *h = start_tiny_hub(NULL);
    hub_stop(h);
    ck_assert_int_eq(hub_add_file(h, "org/other", "config.json", "{}", 2), 0);
    ck_assert_int_eq(hub_start(h, NULL), 0);
    int by_repo = hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_EVIL_COMMIT,
                                                .repo = "org/other"});
    int by_method = hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_STATUS, .status = 503,
                                                  .method = "HEAD"});
    int by_host = hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_STATUS, .status = 502,
                                                .on = HUB_HOST_CDN});
    http_reply *r = get_file(h, "config.json");   /* org/tiny, GET, Hub: none apply */
    ck_assert_int_eq(r->status, 200);
    ck_assert_str_eq(http_header(r, "X-Repo-Commit"), hub_commit(h, "org/tiny", "main"));
    http_reply_free(r);
    r = http_fetch(urlf("%s/org/other/resolve/main/config.json", hub_endpoint(h)), NULL);
    ck_assert_str_eq(http_header(r, "X-Repo-Commit"), "../../evil");
    http_reply_free(r);
    r = http_fetch(urlf("%s/org/tiny/resolve/main/config.json", hub_endpoint(h)),
                   &(http_opts){.head = true});
    ck_assert_int_eq(r->status, 503);
    http_reply_free(r);
    r = http_fetch(urlf("%s/org/tiny/resolve/main/model.safetensors", hub_endpoint(h)),
                   &(http_opts){.follow = true});
    ck_assert_int_eq(r->status, 502);   /* the Hub's 302 went through, the CDN failed */
    http_reply_free(r);
    ck_assert_int_eq(hub_fault_hits(h, by_repo), 1);
    ck_assert_int_eq(hub_fault_hits(h, by_method), 1);
    ck_assert_int_eq(hub_fault_hits(h, by_host), 1);
    hub_free(h);
}
END_TEST

START_TEST(test_bad_fault_specs_are_refused) {
    hub *h = hub_new();
    ck_assert_int_eq(hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_NONE}), -1);
    ck_assert_int_eq(hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_KIND_COUNT}), -1);
    ck_assert_int_eq(hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_OMIT_HEADER}), -1);
    ck_assert_msg(strstr(hub_error(h), ".header"), "%s", hub_error(h));
    ck_assert_int_eq(hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_STATUS, .status = 99}), -1);
    ck_assert_int_eq(hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_STALL, .method = "PUT"}),
                     -1);
    ck_assert_int_eq(hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_STALL, .times = -1}), -1);
    ck_assert_int_eq(hub_fault_hits(h, 0), -1);
    ck_assert_str_eq(hub_fault_name(HUB_FAULT_FLIP_BYTE), "flip_byte");
    hub_free(h);
}
END_TEST
