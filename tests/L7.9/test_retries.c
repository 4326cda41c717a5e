/* Transient failures: 408, 429 (with Retry-After) and 5xx are retried a
 * bounded number of times; a silent or trickling server runs into the
 * timeout. Each failure ends in an error naming the file and the cause, with
 * nothing under the final name. */
#include "hf_fixture.h"

#define MODEL_FINAL "org--tiny/main/model.safetensors"
#define CONFIG_FINAL "org--tiny/main/config.json"

START_TEST(test_retries_on_408_and_429_with_retry_after)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    /* two 429s (Retry-After: 1) on the Hub's answer about config.json */
    int busy = hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_STATUS, .status = 429,
                                               .retry_after = 1, .times = 2,
                                               .path = "config.json", .on = HUB_HOST_HUB});
    /* two 408s on the CDN */
    int slow = hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_STATUS, .status = 408,
                                               .times = 2, .on = HUB_HOST_CDN});
    const char *names[] = {"config.json", "model.safetensors"};
    double start = fx_now();
    char *dir = fx_download(&f, "main", names, 2, NULL);
    double elapsed = fx_now() - start;
    ck_assert_msg(dir != NULL, "408 and 429 should be retried: %s\nrequests:%s", tl_error(),
                  fx_log_text(&f));
    ck_assert_int_eq(hub_fault_hits(f.h, busy), 2);
    ck_assert_int_eq(hub_fault_hits(f.h, slow), 2);
    ck_assert(fx_holds(fx_path(&f, CONFIG_FINAL), FX_CONFIG, strlen(FX_CONFIG)));
    ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
    /* attempts: the two refused and the one that worked */
    int status_429 = 0, status_408 = 0;
    hub_request r;
    for (int i = 0; hub_log_get(f.h, i, &r); i++) {
        status_429 += r.status == 429;
        status_408 += r.status == 408;
    }
    ck_assert_int_eq(status_429, 2);
    ck_assert_int_eq(status_408, 2);
    ck_assert_int_eq(fx_count(&f, "GET", HUB_HOST_CDN, NULL), 3);
    /* Retry-After was honoured: two waits of a second can only make the
     * call longer (a lower bound, loose, never a speed requirement) */
    ck_assert_msg(elapsed >= 1.5, "two Retry-After: 1 waits, yet the call took %.2f s", elapsed);
    free(dir);
    fx_end(&f);
}
END_TEST

START_TEST(test_retries_on_5xx_then_success)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    int hub_err = hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_STATUS, .status = 500,
                                                  .times = 2, .on = HUB_HOST_HUB});
    int cdn_err = hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_STATUS, .status = 503,
                                                  .times = 2, .on = HUB_HOST_CDN});
    const char *names[] = {"model.safetensors"};
    char *dir = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(dir != NULL, "5xx should be retried: %s\nrequests:%s", tl_error(),
                  fx_log_text(&f));
    ck_assert_int_eq(hub_fault_hits(f.h, hub_err), 2);
    ck_assert_int_eq(hub_fault_hits(f.h, cdn_err), 2);
    ck_assert_int_eq(fx_count(&f, "GET", HUB_HOST_CDN, NULL), 3);
    ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
    free(dir);
    fx_end(&f);
}
END_TEST

START_TEST(test_too_many_failures_is_a_clear_error)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_STATUS, .status = 502, .on = HUB_HOST_CDN});
    const char *names[] = {"model.safetensors"};
    char *dir = fx_download(&f, "main", names, 1, NULL);
    fx_assert_failed_cleanly(&f, dir, "model.safetensors", MODEL_FINAL);
    fx_assert_error_mentions("502");
    int gets = fx_count(&f, "GET", HUB_HOST_CDN, NULL);
    ck_assert_msg(gets >= 2 && gets <= 10, "%d attempts: retries should be a few, and bounded",
                  gets);
    fx_end(&f);

    /* not retried: a 404 is an answer, not a hiccup */
    fx_init(&f);
    fx_start(&f);
    const char *missing[] = {"missing.bin"};
    dir = fx_download(&f, "main", missing, 1, NULL);
    fx_assert_failed_cleanly(&f, dir, "missing.bin", "org--tiny/main/missing.bin");
    fx_assert_error_mentions("404", "EntryNotFound");
    ck_assert_int_eq(fx_count(&f, NULL, HUB_ANY, NULL), 1);
    fx_end(&f);
}
END_TEST

/* A Hub that accepts the connection and never answers. */
START_TEST(test_stalled_server_times_out)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_STALL, .ms = 30000, .on = HUB_HOST_HUB});
    const char *names[] = {"config.json"};
    tl_clear_error();
    char *dir = hf_download(FX_REPO, names, 1, f.cache, "main", f.endpoint, NULL, 1.0);
    fx_assert_failed_cleanly(&f, dir, "config.json", CONFIG_FINAL);
    const char *e = tl_error();
    ck_assert_msg(strstr(e, "timeout") || strstr(e, "timed out") || strstr(e, "Timeout"),
                  "the error should say a timeout happened: %s", e);
    int tries = fx_count(&f, NULL, HUB_HOST_HUB, NULL);
    ck_assert_msg(tries >= 1 && tries <= 10, "%d attempts: should be bounded", tries);
    fx_end(&f);
}
END_TEST

/* A CDN that sends the first bytes, then one byte every 2 s: slower than a
 * 1 s timeout of silence. */
START_TEST(test_trickling_server_times_out)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_TRICKLE, .n = 1, .ms = 2000,
                                    .on = HUB_HOST_CDN});
    const char *names[] = {"model.safetensors"};
    tl_clear_error();
    char *dir = hf_download(FX_REPO, names, 1, f.cache, "main", f.endpoint, NULL, 1.0);
    fx_assert_failed_cleanly(&f, dir, "model.safetensors", MODEL_FINAL);
    const char *e = tl_error();
    ck_assert_msg(strstr(e, "timeout") || strstr(e, "timed out") || strstr(e, "Timeout"),
                  "the error should say a timeout happened: %s", e);
    int gets = fx_count(&f, "GET", HUB_HOST_CDN, NULL);
    ck_assert_msg(gets >= 1 && gets <= 10, "%d attempts: should be bounded", gets);
    fx_end(&f);
}
END_TEST
