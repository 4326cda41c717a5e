/* Recovery (issue 10): the downloader gets the file wherever it can still
 * be had, and refuses only where it cannot. A 206 that carries the whole
 * file from byte 0 is a restart; a 206 starting elsewhere, or a 416 for a
 * range below the size, makes it fetch the whole file without Range, once;
 * a .part that does not verify gives way to the whole file, once. Every
 * rerun after a failure either finishes the file or fails for the same
 * reason: never a loop of "run again" that cannot succeed. */
#include "hf_fixture.h"

#define MODEL_PART "org--tiny/main/model.safetensors.part"
#define MODEL_FINAL "org--tiny/main/model.safetensors"
#define CONFIG_PART "org--tiny/main/config.json.part"
#define CONFIG_FINAL "org--tiny/main/config.json"

/* The i-th GET on host: its Range ("" when none) and status; false when
 * there are fewer. */
static bool nth_get(const hf_fx *f, hub_host host, int n, char *range, int *status) {
    hub_request r;
    for (int i = 0; hub_log_get(f->h, i, &r); i++)
        if (r.host == host && !strcmp(r.method, "GET") && n-- == 0) {
            strcpy(range, r.range);
            *status = r.status;
            return true;
        }
    return false;
}

/* Asserts the GETs on host: each "RANGE STATUS" ("- 200" for none), in order. */
static void expect_gets(const hf_fx *f, hub_host host, const char *const *want, int n) {
    char range[128];
    int status, i = 0;
    for (; nth_get(f, host, i, range, &status); i++) {
        char got[160];
        snprintf(got, sizeof got, "%s %d", *range ? range : "-", status);
        ck_assert_msg(i < n && !strcmp(got, want[i]), "GET %d was '%s', expected '%s'; "
                      "requests:%s", i, got, i < n ? want[i] : "(none)", fx_log_text(f));
    }
    ck_assert_msg(i == n, "%d GETs, expected %d; requests:%s", i, n, fx_log_text(f));
}

static void seed_part(hf_fx *f, const char *rel, bool right_bytes, size_t n) {
    unsigned char *wrong = fx_bytes(n, 31);
    fx_write(fx_path(f, rel), right_bytes ? f->model : wrong, n);
    free(wrong);
}

/* A 206 with "Content-Range: bytes 0-(N-1)/N" to "Range: bytes=k-": the whole
 * file, honestly labelled. It is a restart (the .part emptied, then this
 * answer written), whatever the .part held: once refused forever. */
START_TEST(test_206_with_the_whole_file_is_a_restart)
{
    const char *names[] = {"model.safetensors"};
    for (int right = 0; right < 2; right++) {
        hf_fx f;
        fx_init(&f);
        fx_start(&f);
        seed_part(&f, MODEL_PART, right, 70000);
        int id = hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_WHOLE_AS_206,
                                                 .on = HUB_HOST_CDN});
        char *dir = fx_download(&f, "main", names, 1, NULL);
        ck_assert_msg(dir != NULL, "a 206 of the whole file should restart it: %s\nrequests:%s",
                      tl_error(), fx_log_text(&f));
        ck_assert_int_eq(hub_fault_hits(f.h, id), 1);
        ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
        ck_assert(!fx_exists(fx_path(&f, MODEL_PART)));
        expect_gets(&f, HUB_HOST_CDN, (const char *[]){"bytes=70000- 206"}, 1);
        free(dir);
        fx_end(&f);
    }
    /* a small file from the Hub itself */
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    fx_write(fx_path(&f, CONFIG_PART), FX_CONFIG, 10);
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_WHOLE_AS_206, .path = "config.json"});
    const char *config[] = {"config.json"};
    char *dir = fx_download(&f, "main", config, 1, NULL);
    ck_assert_msg(dir != NULL, "%s\nrequests:%s", tl_error(), fx_log_text(&f));
    ck_assert(fx_holds(fx_path(&f, CONFIG_FINAL), FX_CONFIG, strlen(FX_CONFIG)));
    free(dir);
    fx_end(&f);
}
END_TEST

/* A 206 starting 1 late, 1 early or 500 late would put bytes in the wrong
 * place: the .part is emptied and the whole file asked for without Range,
 * once. When that fails too, the error gives both reasons, and a rerun
 * fails the same way. */
START_TEST(test_range_that_starts_elsewhere_fetches_the_whole_file)
{
    const char *names[] = {"model.safetensors"};
    const long long deltas[] = {1, -1, 500};
    for (int k = 0; k < 3; k++) {
        hf_fx f;
        fx_init(&f);
        fx_start(&f);
        fx_write(fx_path(&f, MODEL_PART), f.model, 70000);
        int id = hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_WRONG_RANGE_START,
                                                 .n = deltas[k], .on = HUB_HOST_CDN});
        char *dir = fx_download(&f, "main", names, 1, NULL);
        ck_assert_msg(dir != NULL, "delta %lld: the whole file should be fetched: %s", deltas[k],
                      tl_error());
        ck_assert_int_eq(hub_fault_hits(f.h, id), 1);
        ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
        expect_gets(&f, HUB_HOST_CDN, (const char *[]){"bytes=70000- 206", "- 200"}, 2);
        free(dir);
        fx_end(&f);
    }

    /* the whole-file GET is cut short too: refused with both reasons */
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    fx_write(fx_path(&f, MODEL_PART), f.model, 70000);
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_WRONG_RANGE_START, .n = 1,
                                    .on = HUB_HOST_CDN});
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_CLOSE_AFTER, .n = 30000,
                                    .range = HUB_UNRANGED, .on = HUB_HOST_CDN});
    char errors[3][2048];
    for (int run = 0; run < 3; run++) {
        char *dir = fx_download(&f, "main", names, 1, NULL);
        fx_assert_failed_cleanly(&f, dir, "model.safetensors", MODEL_FINAL);
        fx_assert_error_mentions("206", "Content-Range starting at", "whole file",
                                 "failed too");
        snprintf(errors[run], sizeof errors[run], "%s", tl_error());
        ck_assert_msg(!strstr(tl_error(), "run again"), "a rerun cannot help: %s", tl_error());
    }
    ck_assert_msg(!strcmp(errors[1], errors[2]), "reruns fail differently:\n%s\n%s", errors[1],
                  errors[2]);
    ck_assert_msg(fx_holds(fx_path(&f, MODEL_PART), f.model, 30000),
                  "the .part should hold the whole-file GET's first 30000 bytes");
    fx_end(&f);
}
END_TEST

/* A 416 for "bytes=70000-" of a 200000-byte file is wrong (the range is
 * satisfiable): the whole file is fetched instead. A 416 even without
 * Range cannot be recovered from: refused at once, the same on a rerun. */
START_TEST(test_416_for_a_range_below_the_size_restarts)
{
    const char *names[] = {"model.safetensors"};
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    fx_write(fx_path(&f, MODEL_PART), f.model, 70000);
    int id = hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_REFUSE_RANGE, .on = HUB_HOST_CDN});
    char *dir = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(dir != NULL, "a wrong 416 should restart the file: %s\nrequests:%s",
                  tl_error(), fx_log_text(&f));
    ck_assert_int_eq(hub_fault_hits(f.h, id), 1);
    ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
    expect_gets(&f, HUB_HOST_CDN, (const char *[]){"bytes=70000- 416", "- 200"}, 2);
    free(dir);
    fx_end(&f);

    fx_init(&f);
    fx_start(&f);
    fx_write(fx_path(&f, MODEL_PART), f.model, 70000);
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_STATUS, .status = 416, .on = HUB_HOST_CDN});
    char last[2048];
    for (int run = 0; run < 3; run++) {
        dir = fx_download(&f, "main", names, 1, NULL);
        fx_assert_failed_cleanly(&f, dir, "model.safetensors", MODEL_FINAL);
        fx_assert_error_mentions("416", "without Range");
        ck_assert_msg(!strstr(tl_error(), "run again"), "a rerun cannot help: %s", tl_error());
        if (run == 2) ck_assert_str_eq(tl_error(), last);
        snprintf(last, sizeof last, "%s", tl_error());
    }
    fx_end(&f);
}
END_TEST

/* A .part already of full size is verified without a request (where a 416
 * would come from); one that does not verify is replaced by the whole
 * file, fetched once. */
START_TEST(test_complete_part_is_verified_else_restarted)
{
    const char *names[] = {"model.safetensors"};
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    seed_part(&f, MODEL_PART, false, f.model_size);
    char *dir = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(dir != NULL, "a complete .part of wrong bytes should be replaced: %s\n"
                  "requests:%s", tl_error(), fx_log_text(&f));
    ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
    ck_assert(!fx_exists(fx_path(&f, MODEL_PART)));
    expect_gets(&f, HUB_HOST_CDN, (const char *[]){"- 200"}, 1);
    free(dir);
    fx_end(&f);

    /* and when the server corrupts the file itself: refused, not looped */
    fx_init(&f);
    fx_start(&f);
    seed_part(&f, MODEL_PART, false, f.model_size);
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_FLIP_BYTE, .n = 5, .on = HUB_HOST_CDN});
    dir = fx_download(&f, "main", names, 1, NULL);
    fx_assert_failed_cleanly(&f, dir, "model.safetensors", MODEL_FINAL);
    fx_assert_error_mentions("sha256 mismatch");
    ck_assert_int_eq(fx_count(&f, "GET", HUB_HOST_CDN, NULL), 1);
    ck_assert(!fx_exists(fx_path(&f, MODEL_PART)));
    fx_end(&f);
}
END_TEST

/* Servers that misbehave on every request: each download is run three
 * times. Each run either finishes the file (and the next ones need no GET)
 * or fails; the second and third failures say the same thing, and a
 * message that says "run again" is only given where a rerun makes progress. */
START_TEST(test_reruns_finish_or_fail_the_same_way)
{
    const struct { hub_fault f[2]; bool finishes_by_run; int run; } cases[] = {
        {{{.kind = HUB_FAULT_WHOLE_AS_206, .on = HUB_HOST_CDN}}, true, 0},
        {{{.kind = HUB_FAULT_IGNORE_RANGE, .on = HUB_HOST_CDN}}, true, 0},
        {{{.kind = HUB_FAULT_WRONG_RANGE_START, .n = 3, .on = HUB_HOST_CDN}}, true, 0},
        {{{.kind = HUB_FAULT_REFUSE_RANGE, .on = HUB_HOST_CDN}}, true, 0},
        /* cut after 30000 bytes every time: resumed across two calls */
        {{{.kind = HUB_FAULT_CLOSE_AFTER, .n = 30000, .on = HUB_HOST_CDN}}, true, 1},
        {{{.kind = HUB_FAULT_FLIP_BYTE, .n = 100000, .on = HUB_HOST_CDN}}, false, 0},
        {{{.kind = HUB_FAULT_WRONG_LINKED_SIZE, .n = 7}}, false, 0},
        {{{.kind = HUB_FAULT_BODY_LONGER, .n = 5, .on = HUB_HOST_CDN,
           .no_content_length = true}}, false, 0},
        {{{.kind = HUB_FAULT_STATUS, .status = 416, .on = HUB_HOST_CDN}}, false, 0},
        {{{.kind = HUB_FAULT_WRONG_RANGE_START, .n = 3, .on = HUB_HOST_CDN},
          {.kind = HUB_FAULT_CLOSE_AFTER, .n = 20000, .range = HUB_UNRANGED,
           .on = HUB_HOST_CDN}}, false, 0},
    };
    const char *names[] = {"model.safetensors"};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        hf_fx f;
        fx_init(&f);
        fx_start(&f);
        fx_write(fx_path(&f, MODEL_PART), f.model, 70000);   /* an earlier run's */
        for (int i = 0; i < 2; i++)
            if (cases[k].f[i].kind) ck_assert_int_ge(hub_add_fault(f.h, &cases[k].f[i]), 0);
        char last[2048] = "";
        int finished = -1;
        for (int run = 0; run < 3; run++) {
            int gets_before = fx_count(&f, "GET", HUB_ANY, NULL);
            char *dir = fx_download(&f, "main", names, 1, NULL);
            if (dir) {
                ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
                if (finished >= 0)
                    ck_assert_msg(fx_count(&f, "GET", HUB_ANY, NULL) == gets_before,
                                  "case %zu: a finished file was fetched again", k);
                else finished = run;
                free(dir);
                continue;
            }
            ck_assert_msg(finished < 0, "case %zu: failed after it had finished: %s", k,
                          tl_error());
            ck_assert_msg(!fx_exists(fx_path(&f, MODEL_FINAL)), "case %zu: a final file", k);
            if (strstr(tl_error(), "run again"))
                ck_assert_msg(cases[k].finishes_by_run && run < cases[k].run + 1,
                              "case %zu: says run again, but a rerun cannot help: %s", k,
                              tl_error());
            if (run == 2) ck_assert_msg(!strcmp(last, tl_error()), "case %zu: reruns differ:\n"
                                        "%s\n%s", k, last, tl_error());
            snprintf(last, sizeof last, "%s", tl_error());
        }
        if (cases[k].finishes_by_run)
            ck_assert_msg(finished >= 0 && finished <= cases[k].run, "case %zu (%s): finished "
                          "at run %d, expected by run %d: %s", k,
                          hub_fault_name(cases[k].f[0].kind), finished, cases[k].run, last);
        else ck_assert_msg(finished < 0, "case %zu: a file that cannot be had was accepted", k);
        fx_end(&f);
    }
}
END_TEST
