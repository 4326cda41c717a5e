/* Resuming: the bytes already in <file>.part are hashed, then only the rest
 * is asked for with "Range: bytes=<size>-" (section 2.7). A result that
 * verifies after a single resumed GET proves the hash covered the bytes on
 * disk. (Answers that cannot be appended: test_recovery.c.) */
#include "hf_fixture.h"

#define MODEL_PART "org--tiny/main/model.safetensors.part"
#define MODEL_FINAL "org--tiny/main/model.safetensors"

/* The Range header of the n-th GET on the CDN (0-based), or NULL. */
static const char *cdn_get_range(const hf_fx *f, int n) {
    static char range[128];
    hub_request r;
    for (int i = 0; hub_log_get(f->h, i, &r); i++)
        if (r.host == HUB_HOST_CDN && !strcmp(r.method, "GET") && n-- == 0) {
            snprintf(range, sizeof range, "%s", r.range);
            return r.has_range ? range : NULL;
        }
    return NULL;
}

START_TEST(test_resume_from_part_file)
{
    const char *names[] = {"model.safetensors"};

    /* 1. The connection drops after 50000 bytes: the same call resumes. */
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    int drop = hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_CLOSE_AFTER, .n = 50000,
                                               .on = HUB_HOST_CDN, .times = 1});
    char *dir = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(dir != NULL, "a dropped connection should be resumed: %s\nrequests:%s",
                  tl_error(), fx_log_text(&f));
    ck_assert_int_eq(hub_fault_hits(f.h, drop), 1);
    ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
    ck_assert_msg(!fx_exists(fx_path(&f, MODEL_PART)), "the .part file should be gone");
    ck_assert_msg(cdn_get_range(&f, 0) == NULL, "the first GET asks for the whole file");
    const char *range = cdn_get_range(&f, 1);
    ck_assert_msg(range && !strcmp(range, "bytes=50000-"),
                  "the resume should ask for bytes=50000-; requests:%s", fx_log_text(&f));
    ck_assert_int_eq(fx_count(&f, "GET", HUB_HOST_CDN, NULL), 2);
    free(dir);
    fx_end(&f);

    /* 2. A .part left by an earlier run (its first 70000 bytes): one GET
     * for the rest, and the whole file verifies. */
    fx_init(&f);
    fx_start(&f);
    fx_write(fx_path(&f, MODEL_PART), f.model, 70000);
    dir = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(dir != NULL, "a .part from an earlier run should be resumed: %s\nrequests:%s",
                  tl_error(), fx_log_text(&f));
    ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
    ck_assert(!fx_exists(fx_path(&f, MODEL_PART)));
    range = cdn_get_range(&f, 0);
    ck_assert_msg(range && !strcmp(range, "bytes=70000-"),
                  "the download should resume at bytes=70000-; requests:%s", fx_log_text(&f));
    ck_assert_int_eq(fx_count(&f, "GET", HUB_HOST_CDN, NULL), 1);
    free(dir);
    fx_end(&f);

    /* 3. The same, but the .part's bytes are not the file's: only a hash
     * over the bytes on disk can notice; then the file is fetched whole,
     * once, without Range, and verifies. */
    fx_init(&f);
    fx_start(&f);
    unsigned char *wrong = fx_bytes(70000, 99);
    fx_write(fx_path(&f, MODEL_PART), wrong, 70000);
    free(wrong);
    dir = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(dir != NULL, "a .part of wrong bytes should give way to the whole file: %s\n"
                  "requests:%s", tl_error(), fx_log_text(&f));
    ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
    ck_assert(!fx_exists(fx_path(&f, MODEL_PART)));
    range = cdn_get_range(&f, 0);
    ck_assert_msg(range && !strcmp(range, "bytes=70000-") && cdn_get_range(&f, 1) == NULL &&
                      fx_count(&f, "GET", HUB_HOST_CDN, NULL) == 2,
                  "expected the resume, then one GET of the whole file; requests:%s",
                  fx_log_text(&f));
    free(dir);
    fx_end(&f);
}
END_TEST

/* A small file (verified by its git blob sha1) resumes from the Hub itself. */
START_TEST(test_resume_of_a_small_file)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    fx_write(fx_path(&f, "org--tiny/main/config.json.part"), FX_CONFIG, 10);
    const char *names[] = {"config.json"};
    char *dir = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(dir != NULL, "hf_download failed: %s\nrequests:%s", tl_error(), fx_log_text(&f));
    ck_assert(fx_holds(fx_path(&f, "org--tiny/main/config.json"), FX_CONFIG, strlen(FX_CONFIG)));
    hub_request r;
    bool resumed = false;
    for (int i = 0; hub_log_get(f.h, i, &r); i++)
        if (!strcmp(r.method, "GET") && !strcmp(r.range, "bytes=10-")) resumed = true;
    ck_assert_msg(resumed, "expected a GET with Range: bytes=10-; requests:%s", fx_log_text(&f));
    free(dir);
    fx_end(&f);
}
END_TEST

/* A .part of the full size needs no GET; a longer one is useless and is
 * replaced by a fresh download. */
START_TEST(test_part_of_full_size_or_longer)
{
    const char *names[] = {"model.safetensors"};
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    fx_write(fx_path(&f, MODEL_PART), f.model, f.model_size);
    char *dir = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(dir != NULL, "hf_download failed: %s", tl_error());
    ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
    ck_assert_msg(fx_count(&f, "GET", HUB_ANY, NULL) == 0,
                  "a complete .part needs no GET; requests:%s", fx_log_text(&f));
    free(dir);
    fx_end(&f);

    fx_init(&f);
    fx_start(&f);
    unsigned char *longer = fx_bytes(f.model_size + 100, 5);
    fx_write(fx_path(&f, MODEL_PART), longer, f.model_size + 100);
    free(longer);
    dir = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(dir != NULL, "hf_download failed: %s", tl_error());
    ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
    ck_assert_msg(cdn_get_range(&f, 0) == NULL,
                  "a .part longer than the file is discarded, not resumed; requests:%s",
                  fx_log_text(&f));
    free(dir);
    fx_end(&f);
}
END_TEST
