/* Verification: a file is renamed into place only when its size and hash
 * check out (sha256 from X-Linked-Etag or the caller, git blob sha1 from a
 * small file's ETag). Otherwise: NULL, an error naming the file, the hash
 * expected and the hash found, and nothing under the final name. */
#include "hf_fixture.h"

#define MODEL_PART "org--tiny/main/model.safetensors.part"
#define MODEL_FINAL "org--tiny/main/model.safetensors"
#define CONFIG_FINAL "org--tiny/main/config.json"
#define FLIP_AT 12345

/* The hashes of `data` with one byte inverted, as the hub computes them
 * (a second repo holds the corrupt copy). Call before fx_start. */
static void add_flipped_copy(hf_fx *f, const void *data, size_t n, size_t at) {
    unsigned char *copy = malloc(n);
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, data, n);
    copy[at] = (unsigned char)~copy[at];
    ck_assert_int_eq(hub_add_file(f->h, "test/flipped", "copy", copy, n), 0);
    free(copy);
}

START_TEST(test_corrupt_bytes_are_rejected)
{
    hf_fx f;
    fx_init(&f);
    add_flipped_copy(&f, f.model, f.model_size, FLIP_AT);
    fx_start(&f);
    int flip = hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_FLIP_BYTE, .n = FLIP_AT,
                                               .on = HUB_HOST_CDN});
    const char *names[] = {"config.json", "model.safetensors"};
    char *dir = fx_download(&f, "main", names, 2, NULL);
    fx_assert_failed_cleanly(&f, dir, "model.safetensors", MODEL_FINAL);
    ck_assert_int_eq(hub_fault_hits(f.h, flip), 1);
    /* the cause, the hash expected (the Hub's) and the hash found */
    fx_assert_error_mentions("sha256 mismatch", "expected", "found",
                             hub_file_sha256(f.h, FX_REPO, "model.safetensors"),
                             hub_file_sha256(f.h, "test/flipped", "copy"));
    ck_assert_msg(!fx_exists(fx_path(&f, MODEL_PART)), "corrupt bytes must not stay in .part");
    /* the file before it was fine and stays */
    ck_assert(fx_holds(fx_path(&f, CONFIG_FINAL), FX_CONFIG, strlen(FX_CONFIG)));
    fx_end(&f);
}
END_TEST

/* Small files have no sha256 from the Hub: their ETag is the git blob sha1,
 * sha1("blob <size>\0" + bytes), and it is checked the same way. */
START_TEST(test_small_file_verified_by_git_blob_sha1)
{
    hf_fx f;
    fx_init(&f);
    add_flipped_copy(&f, FX_CONFIG, strlen(FX_CONFIG), 3);
    fx_start(&f);
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_FLIP_BYTE, .n = 3, .path = "config.json"});
    const char *names[] = {"config.json"};
    char *dir = fx_download(&f, "main", names, 1, NULL);
    fx_assert_failed_cleanly(&f, dir, "config.json", CONFIG_FINAL);
    fx_assert_error_mentions("sha1", "mismatch",
                             hub_file_blob_sha1(f.h, FX_REPO, "config.json"),
                             hub_file_blob_sha1(f.h, "test/flipped", "copy"));
    ck_assert(!fx_exists(fx_path(&f, "org--tiny/main/config.json.part")));
    fx_end(&f);
}
END_TEST

/* The caller's sha256 is checked as well as the server's hash. */
START_TEST(test_callers_sha256_is_checked)
{
    hf_fx f;
    fx_init(&f);
    ck_assert_int_eq(hub_add_file(f.h, "test/other", "x", "other bytes", 11), 0);
    fx_start(&f);
    const char *names[] = {"config.json", "model.safetensors"};
    const char *model_sha = hub_file_sha256(f.h, FX_REPO, "model.safetensors");
    const char *config_sha = hub_file_sha256(f.h, FX_REPO, "config.json");
    const char *other_sha = hub_file_sha256(f.h, "test/other", "x");

    /* right for both: fine */
    char *dir = fx_download(&f, "main", names, 2, (const char *[]){config_sha, model_sha});
    ck_assert_msg(dir != NULL, "the right sha256s should pass: %s", tl_error());
    free(dir);
    fx_end(&f);

    /* wrong for the small file, whose own sha1 is fine: refused */
    fx_init(&f);
    ck_assert_int_eq(hub_add_file(f.h, "test/other", "x", "other bytes", 11), 0);
    fx_start(&f);
    other_sha = hub_file_sha256(f.h, "test/other", "x");
    dir = fx_download(&f, "main", names, 2, (const char *[]){other_sha, NULL});
    fx_assert_failed_cleanly(&f, dir, "config.json", CONFIG_FINAL);
    fx_assert_error_mentions("sha256 mismatch", other_sha);
    ck_assert(!fx_exists(fx_path(&f, MODEL_FINAL)));

    /* wrong for the large file: refused, though X-Linked-Etag agrees */
    dir = fx_download(&f, "main", names, 2, (const char *[]){NULL, other_sha});
    fx_assert_failed_cleanly(&f, dir, "model.safetensors", MODEL_FINAL);
    fx_assert_error_mentions("sha256 mismatch", other_sha);

    /* not a sha256 at all: refused before any request */
    hub_log_clear(f.h);
    const char *bad[] = {"abc", "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789"};
    for (int i = 0; i < 2; i++) {
        dir = fx_download(&f, "main", names, 2, (const char *[]){NULL, bad[i]});
        ck_assert_ptr_null(dir);
        fx_assert_error_mentions("model.safetensors", "sha256");
        tl_clear_error();
    }
    ck_assert_int_eq(hub_log_count(f.h), 0);
    fx_end(&f);
}
END_TEST

/* Without X-Linked-Etag (or a small file's ETag) there is nothing to check
 * the bytes against: refused, unless the caller gives the sha256. */
START_TEST(test_missing_hash_needs_callers_sha256)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_OMIT_HEADER, .header = "X-Linked-Etag"});
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_OMIT_HEADER, .header = "ETag",
                                    .on = HUB_HOST_HUB});
    const char *names[] = {"model.safetensors"};
    char *dir = fx_download(&f, "main", names, 1, NULL);
    fx_assert_failed_cleanly(&f, dir, "model.safetensors", MODEL_FINAL);
    fx_assert_error_mentions("sha256");
    ck_assert_msg(fx_count(&f, "GET", HUB_ANY, NULL) == 0,
                  "an unverifiable file should not be downloaded; requests:%s", fx_log_text(&f));
    tl_clear_error();

    const char *small[] = {"config.json"};
    dir = fx_download(&f, "main", small, 1, NULL);
    fx_assert_failed_cleanly(&f, dir, "config.json", CONFIG_FINAL);
    tl_clear_error();

    /* with the caller's sha256: downloaded and checked against it */
    const char *sha[] = {hub_file_sha256(f.h, FX_REPO, "model.safetensors")};
    dir = fx_download(&f, "main", names, 1, sha);
    ck_assert_msg(dir != NULL, "the caller's sha256 should be enough: %s", tl_error());
    ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
    free(dir);
    fx_end(&f);

    fx_init(&f);
    fx_start(&f);
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_OMIT_HEADER, .header = "X-Linked-Etag"});
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_FLIP_BYTE, .n = 7, .on = HUB_HOST_CDN});
    sha[0] = hub_file_sha256(f.h, FX_REPO, "model.safetensors");
    dir = fx_download(&f, "main", names, 1, sha);
    fx_assert_failed_cleanly(&f, dir, "model.safetensors", MODEL_FINAL);
    fx_assert_error_mentions("sha256 mismatch", sha[0]);
    fx_end(&f);
}
END_TEST

/* The announced size is a promise: a file of any other length is refused,
 * whether X-Linked-Size lies or the body runs long. A body cut short is a
 * dropped connection: resumed, or refused once the retries run out. */
START_TEST(test_size_must_match_the_announced_size)
{
    const char *names[] = {"model.safetensors"};
    const long long deltas[] = {1, -1, 1000};
    for (int k = 0; k < 3; k++) {
        hf_fx f;
        fx_init(&f);
        fx_start(&f);
        hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_WRONG_LINKED_SIZE, .n = deltas[k]});
        char *dir = fx_download(&f, "main", names, 1, NULL);
        fx_assert_failed_cleanly(&f, dir, "model.safetensors", MODEL_FINAL);
        char announced[32];
        snprintf(announced, sizeof announced, "%lld", (long long)f.model_size + deltas[k]);
        fx_assert_error_mentions(announced);
        fx_end(&f);
    }

    /* longer: 10 junk bytes after the content, no Content-Length */
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_BODY_LONGER, .n = 10, .on = HUB_HOST_CDN,
                                    .no_content_length = true});
    char *dir = fx_download(&f, "main", names, 1, NULL);
    fx_assert_failed_cleanly(&f, dir, "model.safetensors", MODEL_FINAL);
    fx_end(&f);

    /* shorter once, with or without Content-Length, or cut after 90000 bytes
     * in a body that looks complete: resumed to the right file */
    const hub_fault once[] = {
        {.kind = HUB_FAULT_BODY_SHORTER, .n = 1000, .times = 1, .on = HUB_HOST_CDN},
        {.kind = HUB_FAULT_BODY_SHORTER, .n = 1000, .times = 1, .on = HUB_HOST_CDN,
         .no_content_length = true},
        {.kind = HUB_FAULT_CLOSE_AFTER, .n = 90000, .times = 1, .on = HUB_HOST_CDN,
         .no_content_length = true},
    };
    for (int k = 0; k < 3; k++) {
        fx_init(&f);
        fx_start(&f);
        hub_add_fault(f.h, &once[k]);
        dir = fx_download(&f, "main", names, 1, NULL);
        ck_assert_msg(dir != NULL, "a short body should be resumed: %s\nrequests:%s", tl_error(),
                      fx_log_text(&f));
        ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
        free(dir);
        fx_end(&f);
    }

    /* shorter every time: refused, nothing under the final name */
    fx_init(&f);
    fx_start(&f);
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_BODY_SHORTER, .n = 1000, .on = HUB_HOST_CDN,
                                    .no_content_length = true});
    dir = fx_download(&f, "main", names, 1, NULL);
    fx_assert_failed_cleanly(&f, dir, "model.safetensors", MODEL_FINAL);
    int gets = fx_count(&f, "GET", HUB_HOST_CDN, NULL);
    ck_assert_msg(gets >= 2 && gets <= 10, "%d GETs: retries should be bounded", gets);
    fx_end(&f);
}
END_TEST
