/* The fake Hub's content: hashes, commits, validation, loading a folder. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tinyllm/testing.h"
#include "client.h"

static bool is_hex(const char *s, size_t n) {
    return s && strlen(s) == n && strspn(s, "0123456789abcdef") == n;
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

START_TEST(test_blob_sha1_is_gits_object_id) {
    /* `printf 'hello\n' | git hash-object --stdin` and the empty blob. */
    hub *h = hub_new();
    ck_assert_int_eq(hub_add_file(h, "org/r", "hello.txt", "hello\n", 6), 0);
    ck_assert_int_eq(hub_add_file(h, "org/r", "empty", NULL, 0), 0);
    ck_assert_str_eq(hub_file_blob_sha1(h, "org/r", "hello.txt"),
                     "ce013625030ba8dba906f756967f9e9ca394464a");
    ck_assert_str_eq(hub_file_blob_sha1(h, "org/r", "empty"),
                     "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
    hub_free(h);
}
END_TEST

START_TEST(test_sha256_matches_known_values_and_an_independent_hash) {
    hub *h = hub_new();
    unsigned char *big = test_bytes(300000, 3);
    char want[65];
    test_sha256_hex(big, 300000, want);
    ck_assert_int_eq(hub_add_file(h, "org/r", "abc", "abc", 3), 0);
    ck_assert_int_eq(hub_add_file(h, "org/r", "big.bin", big, 300000), 0);
    ck_assert_str_eq(hub_file_sha256(h, "org/r", "abc"),
                     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    ck_assert_str_eq(hub_file_sha256(h, "org/r", "big.bin"), want);
    ck_assert_ptr_null(hub_file_sha256(h, "org/r", "missing"));
    ck_assert_ptr_null(hub_file_sha256(h, "org/none", "abc"));
    free(big);
    hub_free(h);
}
END_TEST

START_TEST(test_commit_is_deterministic_per_content_and_ref) {
    hub *a = hub_new(), *b = hub_new();
    ck_assert_int_eq(hub_add_file(a, "org/r", "x", "1", 1), 0);
    ck_assert_int_eq(hub_add_file(b, "org/r", "x", "1", 1), 0);
    ck_assert_int_eq(hub_add_ref(a, "org/r", "refs/pr/1"), 0);
    char main_a[41];
    strcpy(main_a, hub_commit(a, "org/r", "main"));
    ck_assert_msg(is_hex(main_a, 40), "commit %s is not 40 hex digits", main_a);
    ck_assert_str_eq(main_a, hub_commit(b, "org/r", "main"));            /* same files */
    ck_assert_str_ne(main_a, hub_commit(a, "org/r", "refs/pr/1"));       /* another ref */
    ck_assert_ptr_null(hub_commit(a, "org/r", "dev"));
    ck_assert_int_eq(hub_add_file(b, "org/r", "x", "2", 1), 0);          /* new content */
    ck_assert_str_ne(main_a, hub_commit(b, "org/r", "main"));
    hub_free(a);
    hub_free(b);
}
END_TEST

START_TEST(test_bad_repo_ids_paths_and_refs_are_refused_with_a_message) {
    static const char *bad_repos[] = {"", "a/b/c", "a--b/x", "org/..x", "org/x.git", "-org/x",
                                      "org/x-", "org/", "/x", "o r g/x", "datasets/", NULL};
    static const char *bad_paths[] = {"", "/abs", "a/../b", "..", "a//b", "./a", "a\\b",
                                      "a/\n", NULL};
    hub *h = hub_new();
    for (int i = 0; bad_repos[i]; i++) {
        ck_assert_msg(hub_add_file(h, bad_repos[i], "f", "x", 1) == -1,
                      "repo id \"%s\" was accepted", bad_repos[i]);
        ck_assert_msg(strstr(hub_error(h), "not a valid repo id"), "message: %s", hub_error(h));
    }
    for (int i = 0; bad_paths[i]; i++) {
        ck_assert_msg(hub_add_file(h, "org/r", bad_paths[i], "x", 1) == -1,
                      "path \"%s\" was accepted", bad_paths[i]);
        ck_assert_msg(strstr(hub_error(h), "not a valid path"), "message: %s", hub_error(h));
    }
    ck_assert_int_eq(hub_add_ref(h, "org/r", "../main"), -1);
    ck_assert_int_eq(hub_add_ref(h, "org/r", "0123456789abcdef0123456789abcdef01234567"), -1);
    ck_assert_int_eq(hub_add_file(h, "org/r", "f", NULL, 3), -1);
    ck_assert_int_eq(hub_repo_count(h), 0);
    /* The accepted forms. */
    ck_assert_int_eq(hub_add_file(h, "gpt2", "f", "x", 1), 0);
    ck_assert_int_eq(hub_add_file(h, "datasets/org/d", "data/train.csv", "x", 1), 0);
    ck_assert_int_eq(hub_add_file(h, "spaces/org/s", "app.py", "x", 1), 0);
    ck_assert_int_eq(hub_repo_count(h), 3);
    hub_free(h);
}
END_TEST

START_TEST(test_add_dir_serves_org_name_folders_and_skips_dot_git) {
    char root[] = "/tmp/hubtest-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(root));
    const char *dirs[] = {"org", "org/tiny", "org/tiny/sub", "org/tiny/.git", "other",
                          "other/m", NULL};
    for (int i = 0; dirs[i]; i++) ck_assert_int_eq(mkdir(urlf("%s/%s", root, dirs[i]), 0755), 0);
    write_file(urlf("%s/org/tiny/config.json", root), "{}", 2);
    write_file(urlf("%s/org/tiny/sub/w.bin", root), "abcd", 4);
    write_file(urlf("%s/org/tiny/.git/HEAD", root), "ref", 3);
    write_file(urlf("%s/other/m/empty", root), "", 0);
    write_file(urlf("%s/README.md", root), "not a repo", 10);

    hub *h = hub_new();
    ck_assert_msg(hub_add_dir(h, root) == 0, "%s", hub_error(h));
    ck_assert_int_eq(hub_repo_count(h), 2);
    ck_assert_int_eq(hub_file_count(h), 3);
    char want[41];
    test_blob_sha1_hex("abcd", 4, want);
    ck_assert_str_eq(hub_file_blob_sha1(h, "org/tiny", "sub/w.bin"), want);
    ck_assert_ptr_null(hub_file_blob_sha1(h, "org/tiny", ".git/HEAD"));
    ck_assert_ptr_nonnull(hub_file_sha256(h, "other/m", "empty"));
    hub_free(h);

    h = hub_new();   /* a folder that is not there, and one without repos */
    ck_assert_int_eq(hub_add_dir(h, urlf("%s/nope", root)), -1);
    ck_assert_msg(strstr(hub_error(h), "is not a folder"), "%s", hub_error(h));
    ck_assert_int_eq(hub_add_dir(h, urlf("%s/org/tiny/sub", root)), -1);
    ck_assert_msg(strstr(hub_error(h), "no repository"), "%s", hub_error(h));
    hub_free(h);
    ck_assert_int_eq(system(urlf("rm -rf '%s'", root)), 0);
}
END_TEST

START_TEST(test_content_is_frozen_while_running) {
    hub *h = start_tiny_hub(NULL);
    ck_assert_int_eq(hub_add_file(h, "org/tiny", "late.txt", "x", 1), -1);
    ck_assert_msg(strstr(hub_error(h), "running"), "%s", hub_error(h));
    ck_assert_int_eq(hub_set_private(h, "org/tiny", "t"), -1);
    hub_stop(h);
    ck_assert_ptr_null(hub_endpoint(h));
    ck_assert_int_eq(hub_add_file(h, "org/tiny", "late.txt", "x", 1), 0);
    ck_assert_int_eq(hub_start(h, NULL), 0);   /* and it restarts */
    http_reply *r = http_fetch(urlf("%s/org/tiny/resolve/main/late.txt", hub_endpoint(h)), NULL);
    ck_assert_int_eq(r->status, 200);
    http_reply_free(r);
    hub_free(h);
}
END_TEST

START_TEST(test_start_on_a_busy_port_names_it) {
    hub *a = start_tiny_hub(NULL);
    unsigned port = 0;
    ck_assert_int_eq(sscanf(hub_endpoint(a), "http://127.0.0.1:%u", &port), 1);
    ck_assert_uint_ne(port, 0);
    hub *b = hub_new();
    hub_set_ports(b, port, 0);
    ck_assert_int_eq(hub_start(b, NULL), -1);
    ck_assert_msg(strstr(hub_error(b), urlf("127.0.0.1:%u", port)), "%s", hub_error(b));
    ck_assert_ptr_null(hub_endpoint(b));
    hub_free(b);
    hub_free(a);
}
END_TEST
