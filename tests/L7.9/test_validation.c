/* Where requests go and where files land: HF_ENDPOINT, URL encoding, and
 * the validation that keeps every write inside the cache folder (repo ids,
 * filenames and revisions from the caller; etags and commits from the
 * server). A rejected value is rejected before any request. */
#include "hf_fixture.h"

static const char *const BAD_REPO_IDS[] = {
    "",
    "org/",
    "/tiny",
    "org//tiny",
    "a/b/c",
    "../tiny",
    "org/..",
    "org/a..b",
    "org--x/tiny",
    "org/tiny.git",
    "org/-tiny",
    "org/tiny-",
    ".org/tiny",
    "org/ti ny",
    "org/ti\nny",
    "org\\tiny",
    "org/tin%2fy",
    "org/a23456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456z",
};
static const char *const BAD_FILENAMES[] = {
    "", "/etc/passwd", "../x", "a/../../x", "a/..", "..", ".", "./x", "a/./b", "a//b", "a/",
    "a\\b", "..\\x", "C:x", "c:/x", "x\x01y", "x\ny",
};
static const char *const BAD_REVISIONS[] = {
    "", "..", "../main", "main/..", "a/../../b", "/main", "a//b", "a\\b", "main\n", ".",
};
static const char *const GOOD_REVISIONS[] = {
    "main", "v1.0", "refs/pr/1", "feature-x_2", "0123456789abcdef0123456789abcdef01234567",
};

START_TEST(test_endpoint_from_environment_and_validation)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    const char *names[] = {"config.json"};

    /* HF_ENDPOINT, with a trailing slash, when the endpoint is NULL */
    char with_slash[128];
    snprintf(with_slash, sizeof with_slash, "%s/", f.endpoint);
    setenv("HF_ENDPOINT", with_slash, 1);
    tl_clear_error();
    char *dir = hf_download(FX_REPO, names, 1, f.cache, "main", NULL, NULL, FX_TIMEOUT);
    ck_assert_msg(dir != NULL, "HF_ENDPOINT=%s: %s", with_slash, tl_error());
    free(dir);
    ck_assert_msg(fx_count(&f, "GET", HUB_HOST_HUB, "/org/tiny/resolve/main/config.json") == 1,
                  "expected GET /org/tiny/resolve/main/config.json; requests:%s", fx_log_text(&f));
    hub_request r;
    for (int i = 0; hub_log_get(f.h, i, &r); i++)
        ck_assert_msg(strncmp(r.path, "//", 2), "a doubled slash in %s", r.path);

    /* an endpoint given explicitly wins over HF_ENDPOINT */
    setenv("HF_ENDPOINT", "http://127.0.0.1:9/nowhere", 1);
    fx_write(fx_path(&f, "org--tiny/main/config.json"), "{}", 2);  /* stale: needs a GET */
    hub_log_clear(f.h);
    dir = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(dir != NULL, "the endpoint argument should win over HF_ENDPOINT: %s",
                  tl_error());
    free(dir);
    ck_assert_int_eq(fx_count(&f, "GET", HUB_HOST_HUB, "config.json"), 1);
    unsetenv("HF_ENDPOINT");

    /* bad values: a clear error naming the value, and no request */
    hub_log_clear(f.h);
    for (size_t i = 0; i < sizeof BAD_REPO_IDS / sizeof *BAD_REPO_IDS; i++) {
        tl_clear_error();
        ck_assert_msg(hf_validate_repo_id(BAD_REPO_IDS[i]) == -1, "repo id '%s' accepted",
                      BAD_REPO_IDS[i]);
        fx_assert_error_mentions("repo id");
        tl_clear_error();
        dir = hf_download(BAD_REPO_IDS[i], names, 1, f.cache, "main", f.endpoint, NULL, 1.0);
        ck_assert_msg(dir == NULL, "hf_download accepted the repo id '%s'", BAD_REPO_IDS[i]);
        fx_assert_error_mentions("repo id");
    }
    for (size_t i = 0; i < sizeof BAD_FILENAMES / sizeof *BAD_FILENAMES; i++) {
        tl_clear_error();
        ck_assert_msg(hf_validate_filename(BAD_FILENAMES[i]) == -1, "filename '%s' accepted",
                      BAD_FILENAMES[i]);
        fx_assert_error_mentions("filename");
        /* a bad name anywhere in the list: nothing is fetched, not even the good ones */
        const char *two[] = {"config.json", BAD_FILENAMES[i]};
        dir = fx_download(&f, "main", two, 2, NULL);
        ck_assert_msg(dir == NULL, "hf_download accepted the filename '%s'", BAD_FILENAMES[i]);
        fx_assert_error_mentions("filename");
    }
    for (size_t i = 0; i < sizeof BAD_REVISIONS / sizeof *BAD_REVISIONS; i++) {
        tl_clear_error();
        ck_assert_msg(hf_validate_revision(BAD_REVISIONS[i]) == -1, "revision '%s' accepted",
                      BAD_REVISIONS[i]);
        fx_assert_error_mentions("revision");
        dir = fx_download(&f, BAD_REVISIONS[i], names, 1, NULL);
        ck_assert_msg(dir == NULL, "hf_download accepted the revision '%s'", BAD_REVISIONS[i]);
        fx_assert_error_mentions("revision");
    }
    tl_clear_error();
    dir = hf_download(FX_REPO, names, 1, f.cache, "main", "ftp://127.0.0.1/", NULL, 1.0);
    ck_assert_ptr_null(dir);
    fx_assert_error_mentions("endpoint");
    ck_assert_msg(hub_log_count(f.h) == 0, "rejected values must not reach the server:%s",
                  fx_log_text(&f));

    /* good values pass */
    ck_assert_int_eq(hf_validate_repo_id("org/tiny"), 0);
    ck_assert_int_eq(hf_validate_repo_id("gpt2"), 0);
    ck_assert_int_eq(hf_validate_repo_id("HuggingFaceTB/SmolLM2-135M-Instruct"), 0);
    ck_assert_int_eq(hf_validate_repo_id("a.b_c-d/e.f_g-h"), 0);
    ck_assert_int_eq(hf_validate_filename("model.safetensors"), 0);
    ck_assert_int_eq(hf_validate_filename("onnx/model..q4.onnx"), 0);
    ck_assert_int_eq(hf_validate_filename("my file \xc3\xbc.txt"), 0);
    for (size_t i = 0; i < sizeof GOOD_REVISIONS / sizeof *GOOD_REVISIONS; i++)
        ck_assert_msg(hf_validate_revision(GOOD_REVISIONS[i]) == 0, "revision '%s': %s",
                      GOOD_REVISIONS[i], tl_error());
    fx_end(&f);
}
END_TEST

/* ".." in the repo id, a filename or a revision never reaches the disk:
 * after the attempts, the folder around the cache holds nothing new. */
START_TEST(test_path_traversal_is_rejected)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    const char *names[] = {"config.json"};
    /* the same call with good values works (and makes the cache folder) */
    char *good = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(good != NULL, "hf_download failed: %s", tl_error());
    free(good);
    hub_log_clear(f.h);
    bool escape_before = fx_exists("/tmp/escape");
    struct { const char *repo, *file, *rev; } cases[] = {
        {"../escape", "config.json", "main"},      {"org/..", "config.json", "main"},
        {"org/tiny", "../../escape", "main"},      {"org/tiny", "../../../escape", "main"},
        {"org/tiny", "a/../../../escape", "main"}, {"org/tiny", "/tmp/escape", "main"},
        {"org/tiny", "config.json", "../.."},      {"org/tiny", "config.json", "../../escape"},
        {"org/tiny", "config.json", "/tmp"},       {"org/tiny", "config.json", "refs/../../.."},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        names[0] = cases[i].file;
        tl_clear_error();
        char *dir = hf_download(cases[i].repo, names, 1, f.cache, cases[i].rev, f.endpoint,
                                NULL, FX_TIMEOUT);
        ck_assert_msg(dir == NULL, "accepted repo '%s', file '%s', revision '%s'",
                      cases[i].repo, cases[i].file, cases[i].rev);
        ck_assert_ptr_nonnull(tl_error());
    }
    char tree[2048];
    fx_tree(f.base, tree, sizeof tree);
    ck_assert_msg(!strcmp(tree, "cache/org--tiny/main/config.json\n"),
                  "files appeared around the cache:\n%s", tree);
    ck_assert_msg(escape_before || !fx_exists("/tmp/escape"), "/tmp/escape was written");
    ck_assert_msg(hub_log_count(f.h) == 0, "requests:%s", fx_log_text(&f));
    fx_end(&f);
}
END_TEST

/* The server's etag and commit are values too: "../../evil" is refused,
 * and nothing is written anywhere. */
START_TEST(test_evil_etag_and_commit_are_refused)
{
    const char *evil[] = {NULL, "../../evil", "0123456789abcdef0123456789abcdef0123456/",
                          "../../../../../../../../tmp/evil"};
    const char *files[] = {"config.json", "model.safetensors"};
    bool tmp_evil_before = fx_exists("/tmp/evil");
    for (int kind = 0; kind < 2; kind++)
        for (int v = 0; v < 4; v++)
            for (int file = 0; file < 2; file++) {
                hf_fx f;
                fx_init(&f);
                fx_start(&f);
                int id = hub_add_fault(f.h, &(hub_fault){
                    .kind = kind ? HUB_FAULT_EVIL_COMMIT : HUB_FAULT_EVIL_ETAG,
                    .value = evil[v], .on = HUB_HOST_HUB});
                const char *names[] = {files[file]};
                char *dir = fx_download(&f, "main", names, 1, NULL);
                char final[128];
                snprintf(final, sizeof final, "org--tiny/main/%s", files[file]);
                fx_assert_failed_cleanly(&f, dir, files[file], final);
                ck_assert_int_ge(hub_fault_hits(f.h, id), 1);
                char tree[2048];
                fx_tree(f.base, tree, sizeof tree);
                for (const char *line = tree; *line; line = strchr(line, '\n') + 1)
                    ck_assert_msg(!strncmp(line, "cache/org--tiny/main/", 21),
                                  "evil %s '%s': a file outside the repo's cache folder:\n%s",
                                  kind ? "commit" : "etag", evil[v] ? evil[v] : "(default)", tree);
                ck_assert_msg(!strstr(tree, "evil"), "a file named after the value:\n%s", tree);
                fx_end(&f);
            }
    ck_assert_msg(tmp_evil_before || !fx_exists("/tmp/evil"), "/tmp/evil was written");
}
END_TEST

/* The revision is encoded with no safe characters (refs/pr/1 becomes
 * refs%2Fpr%2F1); filenames keep '/' and encode spaces and UTF-8 bytes. */
START_TEST(test_percent_encoding_of_revisions_and_filenames)
{
    hf_fx f;
    fx_init(&f);
    const char *odd = "weights/my file \xc3\xbc+#?.txt";
    ck_assert_int_eq(hub_add_file(f.h, FX_REPO, odd, "odd", 3), 0);
    ck_assert_int_eq(hub_add_ref(f.h, FX_REPO, "refs/pr/1"), 0);
    fx_start(&f);
    const char *names[] = {"config.json", odd, "model.safetensors"};
    char *dir = fx_download(&f, "refs/pr/1", names, 3, NULL);
    ck_assert_msg(dir != NULL, "hf_download failed: %s\nrequests:%s", tl_error(), fx_log_text(&f));
    ck_assert_msg(
        fx_count(&f, "GET", HUB_HOST_HUB, "/org/tiny/resolve/refs%2Fpr%2F1/config.json") == 1,
        "expected /org/tiny/resolve/refs%%2Fpr%%2F1/config.json; requests:%s", fx_log_text(&f));
    ck_assert_msg(
        fx_count(&f, "GET", HUB_HOST_HUB,
                 "/org/tiny/resolve/refs%2Fpr%2F1/weights/my%20file%20%C3%BC%2B%23%3F.txt") == 1,
        "expected weights/my%%20file%%20%%C3%%BC%%2B%%23%%3F.txt; requests:%s", fx_log_text(&f));
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, odd);
    ck_assert_msg(fx_holds(path, "odd", 3), "%s is missing", path);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    ck_assert(fx_holds(path, f.model, f.model_size));
    ck_assert_msg(!strncmp(dir, f.cache, strlen(f.cache)), "%s is not in the cache", dir);
    free(dir);

    /* a 40-hex commit works as a revision */
    const char *commit = hub_commit(f.h, FX_REPO, "main");
    ck_assert_ptr_nonnull(commit);
    dir = fx_download(&f, commit, names, 1, NULL);
    ck_assert_msg(dir != NULL, "revision %s: %s", commit, tl_error());
    free(dir);
    fx_end(&f);
}
END_TEST

/* Lengths at the limits, and names that only look dangerous: a path
 * segment may have 250 bytes (255, a file system's limit, less ".part"),
 * a repo name 96 characters; "%2e%2e" and trailing dots or spaces are
 * plain characters, sent encoded and stored as they are. */
START_TEST(test_names_at_the_limits)
{
    char seg[300], name[400], repo[256];
    memset(seg, 'a', sizeof seg);
    seg[250] = 0;
    ck_assert_msg(hf_validate_filename(seg) == 0, "250 bytes: %s", tl_error());
    snprintf(name, sizeof name, "dir/%s", seg);
    ck_assert_int_eq(hf_validate_filename(name), 0);
    ck_assert_int_eq(hf_validate_revision(seg), 0);
    seg[250] = 'a', seg[251] = 0;
    tl_clear_error();
    ck_assert_int_eq(hf_validate_filename(seg), -1);
    fx_assert_error_mentions("filename", "250");
    snprintf(name, sizeof name, "%s/x.bin", seg);
    ck_assert_int_eq(hf_validate_filename(name), -1);
    tl_clear_error();
    ck_assert_int_eq(hf_validate_revision(seg), -1);
    fx_assert_error_mentions("revision");
    for (const char *bad = "\x01\x1f\x7f"; *bad; bad++) {
        char rev[8] = {'v', *bad, '1', 0};
        ck_assert_msg(hf_validate_revision(rev) == -1, "a revision with \\x%02x", *bad);
    }
    char name96[97];
    memset(name96, 'n', 96);
    name96[96] = 0;
    snprintf(repo, sizeof repo, "org/%s", name96);
    ck_assert_msg(hf_validate_repo_id(repo) == 0, "a 96-character name: %s", tl_error());
    snprintf(repo, sizeof repo, "%s/tiny", name96);
    ck_assert_msg(hf_validate_repo_id(repo) == 0, "a 96-character namespace: %s", tl_error());
    snprintf(repo, sizeof repo, "org/%sn", name96);
    ck_assert_int_eq(hf_validate_repo_id(repo), -1);
    snprintf(repo, sizeof repo, "%sn/tiny", name96);
    ck_assert_int_eq(hf_validate_repo_id(repo), -1);

    hf_fx f;
    fx_init(&f);
    const char *plain[] = {"%2e%2e/x.bin", "%2F.bin", "dots. . .", "y. "};
    for (int i = 0; i < 4; i++) ck_assert_int_eq(hub_add_file(f.h, FX_REPO, plain[i], "p", 1), 0);
    fx_start(&f);
    char *dir = fx_download(&f, "main", plain, 4, NULL);
    ck_assert_msg(dir != NULL, "%s\nrequests:%s", tl_error(), fx_log_text(&f));
    free(dir);
    ck_assert_msg(fx_count(&f, "GET", HUB_HOST_HUB, "/main/%252e%252e/x.bin") == 1,
                  "'%%' must be sent as %%25; requests:%s", fx_log_text(&f));
    char tree[1024];
    fx_tree(f.base, tree, sizeof tree);
    ck_assert_str_eq(tree, "cache/org--tiny/main/%2F.bin\ncache/org--tiny/main/%2e%2e/x.bin\n"
                           "cache/org--tiny/main/dots. . .\ncache/org--tiny/main/y. \n");
    fx_end(&f);
}
END_TEST
