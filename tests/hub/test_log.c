/* The request log: what it records, under concurrent requests too, and a
 * limited one starting over. */
#include <check.h>
#include <pthread.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "client.h"

START_TEST(test_log_records_method_path_query_range_token_host_status_faults) {
    hub *h = start_tiny_hub(NULL);
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_OMIT_HEADER, .header = "ETag",
                                  .on = HUB_HOST_HUB});
    http_reply *r = http_fetch(urlf("%s/org/tiny/resolve/refs%%2Fpr%%2F1/a%%20b.json?x=1",
                                    hub_endpoint(h)),
                               &(http_opts){.head = true, .range = "5-", .token = "t"});
    http_reply_free(r);
    r = http_fetch(urlf("%s/org/tiny/resolve/main/config.json", hub_endpoint(h)),
                   &(http_opts){.range = "5-"});
    http_reply_free(r);
    r = http_fetch(urlf("%s/org/tiny/resolve/main/model.safetensors", hub_endpoint(h)),
                   &(http_opts){.follow = true});
    http_reply_free(r);

    ck_assert_int_eq(hub_log_count(h), 4);
    hub_request e;
    ck_assert(hub_log_get(h, 0, &e));
    ck_assert_int_eq(e.host, HUB_HOST_HUB);
    ck_assert_str_eq(e.method, "HEAD");
    ck_assert_str_eq(e.path, "/org/tiny/resolve/refs%2Fpr%2F1/a%20b.json");   /* as sent */
    ck_assert_str_eq(e.query, "x=1");
    ck_assert(e.has_range);
    ck_assert_str_eq(e.range, "bytes=5-");
    ck_assert(e.authorization);
    ck_assert_int_eq(e.status, 404);   /* no ref refs/pr/1 in this repo */
    ck_assert_uint_eq(e.faults, 0);

    ck_assert(hub_log_get(h, 1, &e));
    ck_assert_str_eq(e.method, "GET");
    ck_assert_int_eq(e.status, 206);
    ck_assert(!e.authorization);
    ck_assert_uint_eq(e.faults, 1u << HUB_FAULT_OMIT_HEADER);

    ck_assert(hub_log_get(h, 2, &e));
    ck_assert_int_eq(e.host, HUB_HOST_HUB);
    ck_assert_int_eq(e.status, 302);
    ck_assert(!e.has_range);
    ck_assert_str_eq(e.range, "");
    ck_assert(hub_log_get(h, 3, &e));
    ck_assert_int_eq(e.host, HUB_HOST_CDN);
    ck_assert_int_eq(e.status, 200);
    ck_assert_ptr_nonnull(strstr(e.query, "filename=model.safetensors"));

    ck_assert(!hub_log_get(h, 4, &e));
    ck_assert(!hub_log_get(h, -1, &e));
    hub_log_clear(h);
    ck_assert_int_eq(hub_log_count(h), 0);
    hub_free(h);
}
END_TEST

typedef struct {
    const hub *h;
    int ok;
} worker;

static void *fetch_many(void *arg) {
    worker *w = arg;
    for (int i = 0; i < 10; i++) {
        const char *file = i % 2 ? "config.json" : "model.safetensors";
        char url[256];
        snprintf(url, sizeof url, "%s/org/tiny/resolve/main/%s", hub_endpoint(w->h), file);
        http_reply *r = http_fetch(url, &(http_opts){.follow = true});
        w->ok += r->code == CURLE_OK && r->status == 200;
        http_reply_free(r);
    }
    return NULL;
}

START_TEST(test_log_is_complete_under_concurrent_requests) {
    hub *h = start_tiny_hub(NULL);
    enum { THREADS = 8 };
    pthread_t t[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){h, 0};
        ck_assert_int_eq(pthread_create(&t[i], NULL, fetch_many, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++) ck_assert_int_eq(w[i].ok, 10);
    /* 5 small GETs, and 5 Hub + 5 CDN requests for the model, per thread. */
    ck_assert_int_eq(hub_log_count(h), THREADS * 15);
    ck_assert_int_eq(log_count_where(h, HUB_HOST_CDN, NULL), THREADS * 5);
    hub_request e;
    for (int i = 0; i < THREADS * 15; i++) {
        ck_assert(hub_log_get(h, i, &e));
        ck_assert_msg(e.status == 200 || e.status == 302, "entry %d: %s %s -> %d", i,
                      e.method, e.path, e.status);
    }
    hub_free(h);
}
END_TEST

/* A limited log (a long-running `ol hub serve`) starts over when full: it
 * never holds more entries than the limit, and the newest is the last made. */
START_TEST(test_log_limit_starts_over) {
    hub *h = start_tiny_hub(NULL);
    hub_set_log_limit(h, 3);
    for (int i = 0; i < 7; i++) {
        http_reply *r = http_fetch(urlf("%s/org/tiny/resolve/main/config.json?n=%d",
                                        hub_endpoint(h), i), NULL);
        ck_assert_int_eq(r->status, 200);
        http_reply_free(r);
        ck_assert_int_le(hub_log_count(h), 3);
    }
    hub_request e;
    ck_assert_int_eq(hub_log_count(h), 1);   /* 3, 3 and then the seventh */
    ck_assert(hub_log_get(h, 0, &e));
    ck_assert_str_eq(e.query, "n=6");
    hub_free(h);
}
END_TEST
