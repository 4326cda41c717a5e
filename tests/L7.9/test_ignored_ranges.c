/* A server (a mirror, a proxy) that ignores Range answers 200 with the whole
 * file: the download must start over, file and hash, never append. */
#include "hf_fixture.h"

#define MODEL_PART "org--tiny/main/model.safetensors.part"
#define MODEL_FINAL "org--tiny/main/model.safetensors"

/* True when some GET carried a Range and was answered 200. */
static bool range_answered_200(const hf_fx *f) {
    hub_request r;
    for (int i = 0; hub_log_get(f->h, i, &r); i++)
        if (!strcmp(r.method, "GET") && r.has_range && r.status == 200) return true;
    return false;
}

START_TEST(test_server_that_ignores_ranges)
{
    const char *names[] = {"model.safetensors"};

    /* 1. Dropped after 50000 bytes, then the resume gets the whole file. */
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_CLOSE_AFTER, .n = 50000,
                                    .on = HUB_HOST_CDN, .times = 1});
    int ignore =
        hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_IGNORE_RANGE, .on = HUB_HOST_CDN});
    char *dir = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(dir != NULL, "a 200 to a range request should restart the file: %s\nrequests:%s",
                  tl_error(), fx_log_text(&f));
    ck_assert_int_eq(hub_fault_hits(f.h, ignore), 1);
    ck_assert(range_answered_200(&f));
    ck_assert_msg(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size),
                  "the result is not the file (size %lld, expected %zu)",
                  fx_size(fx_path(&f, MODEL_FINAL)), f.model_size);
    ck_assert(!fx_exists(fx_path(&f, MODEL_PART)));
    free(dir);
    fx_end(&f);

    /* 2. A .part left by an earlier run, right bytes: still restarted. */
    fx_init(&f);
    fx_start(&f);
    fx_write(fx_path(&f, MODEL_PART), f.model, 70000);
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_IGNORE_RANGE, .on = HUB_HOST_CDN});
    dir = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(dir != NULL, "hf_download failed: %s\nrequests:%s", tl_error(), fx_log_text(&f));
    ck_assert(range_answered_200(&f));
    ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
    free(dir);
    fx_end(&f);

    /* 3. A .part of wrong bytes: the restart replaces them and the hash
     * starts over too, so the result verifies. */
    fx_init(&f);
    fx_start(&f);
    unsigned char *wrong = fx_bytes(70000, 42);
    fx_write(fx_path(&f, MODEL_PART), wrong, 70000);
    free(wrong);
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_IGNORE_RANGE, .on = HUB_HOST_CDN});
    dir = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(dir != NULL, "a restart should drop the old bytes and their hash: %s",
                  tl_error());
    ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
    free(dir);
    fx_end(&f);
}
END_TEST

/* The same for a small file served by the Hub. */
START_TEST(test_small_file_from_a_server_that_ignores_ranges)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    fx_write(fx_path(&f, "org--tiny/main/config.json.part"), "XXXXXXXXXXXX", 12);
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_IGNORE_RANGE});
    const char *names[] = {"config.json"};
    char *dir = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(dir != NULL, "hf_download failed: %s\nrequests:%s", tl_error(), fx_log_text(&f));
    ck_assert(range_answered_200(&f));
    ck_assert(fx_holds(fx_path(&f, "org--tiny/main/config.json"), FX_CONFIG, strlen(FX_CONFIG)));
    free(dir);
    fx_end(&f);
}
END_TEST
