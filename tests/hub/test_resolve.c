/* The Hub's resolve URLs for small files, revisions and errors
 * (hub-protocol.md, "URLs" and "What the real Hub answers"). */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "client.h"

static const char *ep(const hub *h) { return hub_endpoint(h); }

START_TEST(test_small_file_is_200_with_blob_etag_length_and_commit) {
    hub *h = start_tiny_hub(NULL);
    http_reply *r = http_fetch(urlf("%s/org/tiny/resolve/main/config.json", ep(h)), NULL);
    char sha1[41], etag[44];
    test_blob_sha1_hex(CONFIG_JSON, strlen(CONFIG_JSON), sha1);
    snprintf(etag, sizeof etag, "\"%s\"", sha1);
    ck_assert_int_eq(r->code, CURLE_OK);
    ck_assert_int_eq(r->status, 200);
    ck_assert_str_eq((char *)r->body, CONFIG_JSON);
    ck_assert_str_eq(http_header(r, "ETag"), etag);
    ck_assert_str_eq(http_header(r, "Content-Length"), urlf("%zu", strlen(CONFIG_JSON)));
    ck_assert_str_eq(http_header(r, "X-Repo-Commit"), hub_commit(h, "org/tiny", "main"));
    ck_assert_str_eq(http_header(r, "Accept-Ranges"), "bytes");
    ck_assert_ptr_null(http_header(r, "X-Linked-Etag"));
    http_reply_free(r);
    hub_free(h);
}
END_TEST

START_TEST(test_head_gives_the_same_headers_without_a_body) {
    hub *h = start_tiny_hub(NULL);
    http_reply *r = http_fetch(urlf("%s/org/tiny/resolve/main/config.json", ep(h)),
                               &(http_opts){.head = true});
    char sha1[41];
    test_blob_sha1_hex(CONFIG_JSON, strlen(CONFIG_JSON), sha1);
    ck_assert_int_eq(r->status, 200);
    ck_assert_uint_eq(r->body_len, 0);
    ck_assert_str_eq(http_header(r, "Content-Length"), urlf("%zu", strlen(CONFIG_JSON)));
    ck_assert_str_eq(http_header(r, "ETag"), urlf("\"%s\"", sha1));
    ck_assert_str_eq(http_header(r, "X-Repo-Commit"), hub_commit(h, "org/tiny", "main"));
    http_reply_free(r);
    hub_free(h);
}
END_TEST

START_TEST(test_revision_may_be_the_reported_commit_or_an_encoded_pr_ref) {
    hub *h = hub_new();
    ck_assert_int_eq(hub_add_file(h, "org/r", "a.txt", "A", 1), 0);
    ck_assert_int_eq(hub_add_ref(h, "org/r", "refs/pr/1"), 0);
    ck_assert_int_eq(hub_start(h, NULL), 0);
    const char *main_commit = hub_commit(h, "org/r", "main");
    const char *pr_commit = hub_commit(h, "org/r", "refs/pr/1");

    http_reply *r = http_fetch(urlf("%s/org/r/resolve/%s/a.txt", ep(h), main_commit), NULL);
    ck_assert_int_eq(r->status, 200);
    ck_assert_str_eq(http_header(r, "X-Repo-Commit"), main_commit);
    http_reply_free(r);

    r = http_fetch(urlf("%s/org/r/resolve/refs%%2Fpr%%2F1/a.txt", ep(h)), NULL);
    ck_assert_int_eq(r->status, 200);
    ck_assert_str_eq(http_header(r, "X-Repo-Commit"), pr_commit);
    ck_assert_str_eq((char *)r->body, "A");
    http_reply_free(r);

    r = http_fetch(urlf("%s/org/r/resolve/%s/a.txt", ep(h), pr_commit), NULL);
    ck_assert_int_eq(r->status, 200);
    ck_assert_str_eq(http_header(r, "X-Repo-Commit"), pr_commit);
    http_reply_free(r);

    /* Unencoded, the slashes split the revision: "refs" is no revision. */
    r = http_fetch(urlf("%s/org/r/resolve/refs/pr/1/a.txt", ep(h)), NULL);
    ck_assert_int_eq(r->status, 404);
    ck_assert_str_eq(http_header(r, "X-Error-Code"), "RevisionNotFound");
    http_reply_free(r);
    hub_free(h);
}
END_TEST

START_TEST(test_paths_are_percent_decoded) {
    hub *h = hub_new();
    const char *name = "sub dir/\xc3\xbc+b%.txt";   /* UTF-8 'ü', '+' and '%' */
    ck_assert_int_eq(hub_add_file(h, "org/r", name, "U", 1), 0);
    ck_assert_int_eq(hub_start(h, NULL), 0);
    http_reply *r =
        http_fetch(urlf("%s/org/r/resolve/main/sub%%20dir/%%C3%%BC%%2Bb%%25.txt", ep(h)), NULL);
    ck_assert_int_eq(r->status, 200);
    ck_assert_str_eq((char *)r->body, "U");
    http_reply_free(r);
    /* A malformed escape is a bad request, not a lookup. */
    r = http_fetch(urlf("%s/org/r/resolve/main/sub%%2", ep(h)), NULL);
    ck_assert_int_eq(r->status, 400);
    http_reply_free(r);
    r = http_fetch(urlf("%s/org/r/resolve/main/a%%00b", ep(h)), NULL);
    ck_assert_int_eq(r->status, 400);
    http_reply_free(r);
    hub_free(h);
}
END_TEST

START_TEST(test_datasets_spaces_and_namespaceless_repos_have_their_own_urls) {
    hub *h = hub_new();
    ck_assert_int_eq(hub_add_file(h, "datasets/org/d", "train.csv", "a,b\n", 4), 0);
    ck_assert_int_eq(hub_add_file(h, "spaces/org/s", "app.py", "print()\n", 8), 0);
    ck_assert_int_eq(hub_add_file(h, "gpt2", "config.json", "{}", 2), 0);
    ck_assert_int_eq(hub_start(h, NULL), 0);
    struct { const char *path; long status; } cases[] = {
        {"/datasets/org/d/resolve/main/train.csv", 200},
        {"/spaces/org/s/resolve/main/app.py", 200},
        {"/gpt2/resolve/main/config.json", 200},
        {"/org/d/resolve/main/train.csv", 404},        /* a dataset is not a model */
        {"/datasets/org/s/resolve/main/app.py", 404},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        http_reply *r = http_fetch(urlf("%s%s", ep(h), cases[i].path), NULL);
        ck_assert_msg(r->status == cases[i].status, "%s: %ld, expected %ld", cases[i].path,
                      r->status, cases[i].status);
        if (r->status == 404) ck_assert_str_eq(http_header(r, "X-Error-Code"), "RepoNotFound");
        http_reply_free(r);
    }
    hub_free(h);
}
END_TEST

START_TEST(test_missing_repo_revision_and_entry_have_error_codes) {
    hub *h = start_tiny_hub(NULL);
    struct { const char *path, *code; } cases[] = {
        {"/org/none/resolve/main/config.json", "RepoNotFound"},
        {"/org/tiny/resolve/v9/config.json", "RevisionNotFound"},
        {"/org/tiny/resolve/main/nothing.json", "EntryNotFound"},
        {"/org/tiny/resolve/main/../tiny/config.json", "EntryNotFound"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        /* curl would squash "/../": send it raw. */
        char *raw = NULL;
        ck_assert_int_gt(raw_get(ep(h), cases[i].path, &raw), 0);
        ck_assert_msg(!strncmp(raw, "HTTP/1.1 404", 12), "%s: %.40s", cases[i].path, raw);
        ck_assert_msg(strstr(raw, urlf("X-Error-Code: %s\r\n", cases[i].code)),
                      "%s: no X-Error-Code %s in\n%s", cases[i].path, cases[i].code, raw);
        ck_assert_msg(strstr(raw, "\"error\":"), "%s: no JSON error body", cases[i].path);
        free(raw);
    }
    /* EntryNotFound still tells the commit, as the real Hub does. */
    http_reply *r = http_fetch(urlf("%s/org/tiny/resolve/main/nothing.json", ep(h)), NULL);
    ck_assert_str_eq(http_header(r, "X-Repo-Commit"), hub_commit(h, "org/tiny", "main"));
    http_reply_free(r);
    /* Not a resolve URL at all: 404 without a code. */
    r = http_fetch(urlf("%s/org/tiny/blob/main/config.json", ep(h)), NULL);
    ck_assert_int_eq(r->status, 404);
    ck_assert_ptr_null(http_header(r, "X-Error-Code"));
    http_reply_free(r);
    hub_free(h);
}
END_TEST

START_TEST(test_small_redirect_is_a_relative_307_to_resolve_cache_on_the_same_host) {
    hub *h = hub_new();
    ck_assert_int_eq(hub_add_file(h, "org/r", "dir/a b.txt", "hello", 5), 0);
    hub_set_small_redirect(h, true);
    ck_assert_int_eq(hub_start(h, NULL), 0);
    const char *commit = hub_commit(h, "org/r", "main");
    const char *url = urlf("%s/org/r/resolve/main/dir/a%%20b.txt", ep(h));

    http_reply *r = http_fetch(url, NULL);
    ck_assert_int_eq(r->status, 307);
    const char *loc = http_header(r, "Location");
    const char *want = urlf("/api/resolve-cache/models/org/r/%s/dir/a%%20b.txt?", commit);
    ck_assert_msg(loc && !strncmp(loc, want, strlen(want)), "Location %s, expected %s...",
                  loc ? loc : "(none)", want);
    ck_assert_str_eq(http_header(r, "X-Repo-Commit"), commit);
    http_reply_free(r);

    r = http_fetch(url, &(http_opts){.follow = true});
    char sha1[41];
    test_blob_sha1_hex("hello", 5, sha1);
    ck_assert_int_eq(r->status, 200);
    ck_assert_int_eq(r->redirects, 1);
    ck_assert_str_eq((char *)r->body, "hello");
    ck_assert_str_eq(http_header(r, "ETag"), urlf("\"%s\"", sha1));
    ck_assert_str_eq(http_header(r, "X-Repo-Commit"), commit);
    ck_assert_str_eq(http_header(r, "Content-Length"), "5");
    ck_assert_int_eq(log_count_where(h, HUB_HOST_CDN, NULL), 0);
    ck_assert_int_eq(log_count_where(h, HUB_HOST_HUB, "/api/resolve-cache/"), 1);
    http_reply_free(r);
    hub_free(h);
}
END_TEST

START_TEST(test_small_redirect_spares_private_gated_namespaceless_and_empty_files) {
    hub *h = hub_new();
    ck_assert_int_eq(hub_add_file(h, "org/priv", "a", "x", 1), 0);
    ck_assert_int_eq(hub_set_private(h, "org/priv", "tok"), 0);
    ck_assert_int_eq(hub_add_file(h, "org/gated", "a", "x", 1), 0);
    ck_assert_int_eq(hub_set_gated(h, "org/gated", "tok"), 0);
    ck_assert_int_eq(hub_add_file(h, "gpt2", "a", "x", 1), 0);
    ck_assert_int_eq(hub_add_file(h, "org/r", "empty", NULL, 0), 0);
    hub_set_small_redirect(h, true);
    ck_assert_int_eq(hub_start(h, NULL), 0);
    const char *paths[] = {"/org/priv/resolve/main/a", "/org/gated/resolve/main/a",
                           "/gpt2/resolve/main/a", "/org/r/resolve/main/empty"};
    for (int i = 0; i < 4; i++) {
        http_reply *r = http_fetch(urlf("%s%s", ep(h), paths[i]), &(http_opts){.token = "tok"});
        ck_assert_msg(r->status == 200, "%s: %ld", paths[i], r->status);
        http_reply_free(r);
    }
    hub_free(h);
}
END_TEST

START_TEST(test_small_file_ranges_give_206_and_416) {
    hub *h = start_tiny_hub(NULL);
    const char *url = urlf("%s/org/tiny/resolve/main/config.json", ep(h));
    size_t n = strlen(CONFIG_JSON);
    http_reply *r = http_fetch(url, &(http_opts){.range = "5-"});
    ck_assert_int_eq(r->status, 206);
    ck_assert_str_eq((char *)r->body, CONFIG_JSON + 5);
    ck_assert_str_eq(http_header(r, "Content-Range"), urlf("bytes 5-%zu/%zu", n - 1, n));
    http_reply_free(r);
    r = http_fetch(url, &(http_opts){.range = urlf("%zu-", n)});
    ck_assert_int_eq(r->status, 416);
    ck_assert_str_eq(http_header(r, "Content-Range"), urlf("bytes */%zu", n));
    http_reply_free(r);
    hub_free(h);
}
END_TEST

START_TEST(test_empty_file_is_200_with_length_0) {
    hub *h = hub_new();
    ck_assert_int_eq(hub_add_file(h, "org/r", "empty", NULL, 0), 0);
    ck_assert_int_eq(hub_start(h, NULL), 0);
    http_reply *r = http_fetch(urlf("%s/org/r/resolve/main/empty", ep(h)), NULL);
    ck_assert_int_eq(r->code, CURLE_OK);
    ck_assert_int_eq(r->status, 200);
    ck_assert_uint_eq(r->body_len, 0);
    ck_assert_str_eq(http_header(r, "Content-Length"), "0");
    ck_assert_str_eq(http_header(r, "ETag"), "\"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\"");
    http_reply_free(r);
    hub_free(h);
}
END_TEST

START_TEST(test_other_methods_get_405) {
    hub *h = start_tiny_hub(NULL);
    CURL *c = curl_easy_init();
    long status = 0;
    curl_easy_setopt(c, CURLOPT_URL, urlf("%s/org/tiny/resolve/main/config.json", ep(h)));
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, "data");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fwrite);
    FILE *devnull = fopen("/dev/null", "w");
    curl_easy_setopt(c, CURLOPT_WRITEDATA, devnull);
    ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    ck_assert_int_eq(status, 405);
    curl_easy_cleanup(c);
    fclose(devnull);
    hub_free(h);
}
END_TEST

/* A renamed repo: the real Hub answers the old name's URLs, files and API
 * alike, with a relative 307 to the same URL on the new name. */
START_TEST(test_renamed_repo_answers_a_relative_307_to_the_same_url_on_its_new_name) {
    hub *h = hub_new();
    ck_assert_int_eq(hub_add_file(h, "org/new", "dir/a.txt", "hello", 5), 0);
    ck_assert_int_eq(hub_add_file(h, "datasets/org/dnew", "a.txt", "data", 4), 0);
    ck_assert_int_eq(hub_add_file(h, "org/kept", "a.txt", "kept", 4), 0);
    ck_assert_int_eq(hub_add_rename(h, "org/old", "org/new"), 0);
    ck_assert_int_eq(hub_add_rename(h, "datasets/org/dold", "datasets/org/dnew"), 0);
    ck_assert_int_eq(hub_add_rename(h, "org/kept", "org/new"), 0);   /* a repo has the name */
    ck_assert_int_ne(hub_add_rename(h, "org/old", "org/other"), 0);
    ck_assert_ptr_nonnull(strstr(hub_error(h), "already renamed"));
    ck_assert_int_ne(hub_add_rename(h, "org/x", "datasets/org/x"), 0);
    ck_assert_int_ne(hub_add_rename(h, "org/../x", "org/y"), 0);
    ck_assert_ptr_nonnull(strstr(hub_error(h), "org/../x"));
    ck_assert_int_eq(hub_start(h, NULL), 0);

    const char *paths[][2] = {
        {"/org/old/resolve/main/dir/a.txt", "/org/new/resolve/main/dir/a.txt"},
        {"/datasets/org/dold/resolve/main/a.txt", "/datasets/org/dnew/resolve/main/a.txt"},
        {"/api/models/org/old/tree/main?recursive=true",
         "/api/models/org/new/tree/main?recursive=true"},
        {"/api/models/org/old/revision/main", "/api/models/org/new/revision/main"},
    };
    for (int i = 0; i < 4; i++) {
        http_reply *r = http_fetch(urlf("%s%s", ep(h), paths[i][0]), NULL);
        ck_assert_int_eq(r->status, 307);
        ck_assert_str_eq(http_header(r, "Location"), paths[i][1]);
        http_reply_free(r);
    }
    http_reply *r = http_fetch(urlf("%s/org/old/resolve/main/dir/a.txt", ep(h)),
                               &(http_opts){.follow = true});
    ck_assert_int_eq(r->status, 200);
    ck_assert_int_eq(r->redirects, 1);
    ck_assert_str_eq((char *)r->body, "hello");
    http_reply_free(r);
    r = http_fetch(urlf("%s/org/kept/resolve/main/a.txt", ep(h)), NULL);
    ck_assert_int_eq(r->status, 200);
    ck_assert_str_eq((char *)r->body, "kept");
    http_reply_free(r);
    hub_free(h);
}
END_TEST
