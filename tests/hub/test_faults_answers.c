/* Answer faults: redirect loops, a 3xx without Location, N errors before
 * success, and a stall before the headers. */
#include <check.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include "tinyllm/testing.h"
#include "client.h"

static const char *config_url(const hub *h) {
    return urlf("%s/org/tiny/resolve/main/config.json", hub_endpoint(h));
}

START_TEST(test_redirect_loop_points_back_at_the_same_url) {
    hub *h = start_tiny_hub(NULL);
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_REDIRECT_LOOP});
    http_reply *r = http_fetch(urlf("%s?x=1", config_url(h)), NULL);
    ck_assert_int_eq(r->status, 302);
    ck_assert_str_eq(http_header(r, "Location"), "/org/tiny/resolve/main/config.json?x=1");
    http_reply_free(r);
    r = http_fetch(config_url(h), &(http_opts){.follow = true, .max_redirs = 5});
    ck_assert_int_eq(r->code, CURLE_TOO_MANY_REDIRECTS);
    http_reply_free(r);
    ck_assert_int_eq(log_count_where(h, HUB_HOST_HUB, "config.json"), 1 + 6);
    hub_free(h);
}
END_TEST

START_TEST(test_redirect_loop_on_the_cdn_and_with_another_status) {
    hub *h = start_tiny_hub(NULL);
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_REDIRECT_LOOP, .status = 307,
                                  .on = HUB_HOST_CDN});
    http_reply *r = http_fetch(urlf("%s/org/tiny/resolve/main/model.safetensors",
                                    hub_endpoint(h)),
                               &(http_opts){.follow = true, .max_redirs = 4});
    ck_assert_int_eq(r->code, CURLE_TOO_MANY_REDIRECTS);
    ck_assert_int_eq(log_count_where(h, HUB_HOST_CDN, NULL), 4);
    hub_request e;
    ck_assert(hub_log_get(h, 1, &e));
    ck_assert_int_eq(e.status, 307);
    http_reply_free(r);
    hub_free(h);
}
END_TEST

START_TEST(test_redirect_without_location) {
    hub *h = start_tiny_hub(NULL);
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_REDIRECT_NO_LOCATION, .times = 1});
    http_reply *r = http_fetch(config_url(h), &(http_opts){.follow = true});
    ck_assert_int_eq(r->code, CURLE_OK);
    ck_assert_int_eq(r->status, 302);   /* nowhere to follow */
    ck_assert_ptr_null(http_header(r, "Location"));
    ck_assert_int_eq(r->redirects, 0);
    http_reply_free(r);
    r = http_fetch(config_url(h), NULL);
    ck_assert_int_eq(r->status, 200);
    http_reply_free(r);
    hub_free(h);
}
END_TEST

START_TEST(test_n_errors_then_success) {
    const int statuses[] = {500, 502, 503, 408, 429};
    for (int i = 0; i < 5; i++) {
        hub *h = start_tiny_hub(NULL);
        int id = hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_STATUS,
                                               .status = statuses[i], .times = 2});
        for (int k = 0; k < 3; k++) {
            http_reply *r = http_fetch(config_url(h), NULL);
            long want = k < 2 ? statuses[i] : 200;
            ck_assert_msg(r->status == want, "status %d, request %d: got %ld, expected %ld",
                          statuses[i], k + 1, r->status, want);
            if (k == 2) ck_assert_str_eq((char *)r->body, CONFIG_JSON);
            http_reply_free(r);
        }
        ck_assert_int_eq(hub_fault_hits(h, id), 2);
        hub_free(h);
    }
}
END_TEST

START_TEST(test_status_fault_sends_retry_after_when_asked) {
    hub *h = start_tiny_hub(NULL);
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_STATUS, .status = 429, .retry_after = 7,
                                  .times = 1});
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_STATUS, .times = 1});
    http_reply *r = http_fetch(config_url(h), NULL);
    ck_assert_int_eq(r->status, 429);
    ck_assert_str_eq(http_header(r, "Retry-After"), "7");
    ck_assert_str_eq(http_header(r, "RateLimit"), "\"api\";r=0;t=7");
    http_reply_free(r);
    r = http_fetch(config_url(h), NULL);
    ck_assert_int_eq(r->status, 500);   /* the default status */
    ck_assert_ptr_null(http_header(r, "Retry-After"));
    http_reply_free(r);
    hub_free(h);
}
END_TEST

START_TEST(test_stall_outlasts_a_client_timeout_and_is_logged_unanswered) {
    hub *h = start_tiny_hub(NULL);
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_STALL, .ms = 60000});
    http_reply *r = http_fetch(config_url(h), &(http_opts){.timeout_ms = 300});
    ck_assert_int_eq(r->code, CURLE_OPERATION_TIMEDOUT);
    ck_assert_int_eq(r->status, 0);   /* not even a status line */
    http_reply_free(r);
    hub_request e;
    ck_assert(hub_log_get(h, 0, &e));
    ck_assert_int_eq(e.status, 0);
    ck_assert_uint_eq(e.faults, 1u << HUB_FAULT_STALL);
    hub_free(h);   /* returns although the stall has a minute to go */
}
END_TEST

START_TEST(test_stall_is_bounded_and_then_answers) {
    hub *h = start_tiny_hub(NULL);
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_STALL, .ms = 200});
    http_reply *r = http_fetch(config_url(h), NULL);
    ck_assert_int_eq(r->code, CURLE_OK);
    ck_assert_int_eq(r->status, 200);
    ck_assert_str_eq((char *)r->body, CONFIG_JSON);
    http_reply_free(r);
    hub_free(h);
}
END_TEST

/* A stalled request in another thread does not hold up the others. */
static void *fetch_stalled(void *url) {
    return http_fetch(url, &(http_opts){.timeout_ms = 20000});
}

START_TEST(test_a_stall_blocks_only_its_own_connection) {
    hub *h = start_tiny_hub(NULL);
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_STALL, .ms = 60000,
                                  .path = "model.safetensors"});
    char url[256];
    snprintf(url, sizeof url, "%s/org/tiny/resolve/main/model.safetensors", hub_endpoint(h));
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, fetch_stalled, url), 0);
    while (hub_log_count(h) == 0) nanosleep(&(struct timespec){0, 5000000}, NULL);
    http_reply *r = http_fetch(config_url(h), NULL);
    ck_assert_int_eq(r->status, 200);
    http_reply_free(r);
    hub_stop(h);   /* ends the stall: the stalled client sees the connection close */
    void *stalled = NULL;
    pthread_join(t, &stalled);
    ck_assert_int_ne(((http_reply *)stalled)->code, CURLE_OK);
    http_reply_free(stalled);
    hub_free(h);
}
END_TEST
