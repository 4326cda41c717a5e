/* Body faults (hub-protocol.md, "Faults it can inject"): each one's effect
 * as a client sees it, on the CDN (LFS) and on the Hub (small files). */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "client.h"

static const char *model_url(const hub *h) {
    return urlf("%s/org/tiny/resolve/main/model.safetensors", hub_endpoint(h));
}

static http_reply *get_model(const hub *h, const char *range) {
    return http_fetch(model_url(h), &(http_opts){.follow = true, .range = range});
}

/* Bytes after the blank line of a raw answer. */
static long body_of_raw(const char *raw, long n, const char **body) {
    const char *end = strstr(raw, "\r\n\r\n");
    ck_assert_ptr_nonnull(end);
    *body = end + 4;
    return n - (long)(*body - raw);
}

START_TEST(test_close_after_n_with_content_length_is_a_partial_transfer) {
    unsigned char *model;
    hub *h = start_tiny_hub(&model);
    int id = hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_CLOSE_AFTER, .n = 20000,
                                           .times = 1});
    ck_assert_int_ge(id, 0);
    http_reply *r = get_model(h, NULL);
    ck_assert_int_eq(r->code, CURLE_PARTIAL_FILE);
    ck_assert_str_eq(http_header(r, "Content-Length"), urlf("%d", MODEL_SIZE));
    ck_assert_uint_eq(r->body_len, 20000);
    ck_assert_mem_eq(r->body, model, 20000);
    http_reply_free(r);
    ck_assert_int_eq(hub_fault_hits(h, id), 1);
    /* times = 1: the next request is whole again. */
    r = get_model(h, NULL);
    ck_assert_int_eq(r->code, CURLE_OK);
    ck_assert_uint_eq(r->body_len, MODEL_SIZE);
    http_reply_free(r);
    ck_assert_int_eq(hub_fault_hits(h, id), 1);
    free(model);
    hub_free(h);
}
END_TEST

START_TEST(test_close_after_n_without_content_length_looks_complete) {
    unsigned char *model;
    hub *h = start_tiny_hub(&model);
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_CLOSE_AFTER, .n = 12345,
                                  .no_content_length = true});
    http_reply *r = get_model(h, NULL);
    ck_assert_int_eq(r->code, CURLE_OK);   /* only the size tells it is cut */
    ck_assert_int_eq(r->status, 200);
    ck_assert_ptr_null(http_header(r, "Content-Length"));
    ck_assert_uint_eq(r->body_len, 12345);
    ck_assert_mem_eq(r->body, model, 12345);
    http_reply_free(r);
    free(model);
    hub_free(h);
}
END_TEST

START_TEST(test_close_after_counts_from_the_range_start_and_hits_small_files_too) {
    unsigned char *model;
    hub *h = start_tiny_hub(&model);
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_CLOSE_AFTER, .n = 100,
                                  .path = "model.safetensors"});
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_CLOSE_AFTER, .n = 5, .path = "config.json"});
    http_reply *r = get_model(h, "30000-");
    ck_assert_int_eq(r->code, CURLE_PARTIAL_FILE);
    ck_assert_int_eq(r->status, 206);
    ck_assert_uint_eq(r->body_len, 100);
    ck_assert_mem_eq(r->body, model + 30000, 100);
    http_reply_free(r);
    r = http_fetch(urlf("%s/org/tiny/resolve/main/config.json", hub_endpoint(h)), NULL);
    ck_assert_int_eq(r->code, CURLE_PARTIAL_FILE);
    ck_assert_uint_eq(r->body_len, 5);
    http_reply_free(r);
    free(model);
    hub_free(h);
}
END_TEST

START_TEST(test_ignore_range_answers_200_with_the_whole_body) {
    unsigned char *model;
    hub *h = start_tiny_hub(&model);
    int id = hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_IGNORE_RANGE});
    /* Without a Range it has nothing to ignore: not counted. */
    http_reply *r = get_model(h, NULL);
    ck_assert_int_eq(r->status, 200);
    http_reply_free(r);
    ck_assert_int_eq(hub_fault_hits(h, id), 0);
    r = get_model(h, "1000-");
    ck_assert_int_eq(r->status, 200);
    ck_assert_ptr_null(http_header(r, "Content-Range"));
    ck_assert_uint_eq(r->body_len, MODEL_SIZE);
    ck_assert_mem_eq(r->body, model, MODEL_SIZE);
    http_reply_free(r);
    /* Past the end, a server that ignores ranges still sends it all. */
    r = get_model(h, urlf("%d-", MODEL_SIZE));
    ck_assert_int_eq(r->status, 200);
    ck_assert_uint_eq(r->body_len, MODEL_SIZE);
    http_reply_free(r);
    ck_assert_int_eq(hub_fault_hits(h, id), 2);
    free(model);
    hub_free(h);
}
END_TEST

START_TEST(test_wrong_range_start_sends_a_206_from_another_offset) {
    unsigned char *model;
    hub *h = start_tiny_hub(&model);
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_WRONG_RANGE_START, .times = 1});
    http_reply *r = get_model(h, "1000-");
    ck_assert_int_eq(r->status, 206);
    ck_assert_str_eq(http_header(r, "Content-Range"), urlf("bytes 1001-%d/%d", MODEL_SIZE - 1,
                                                           MODEL_SIZE));
    ck_assert_uint_eq(r->body_len, MODEL_SIZE - 1001);
    ck_assert_mem_eq(r->body, model + 1001, MODEL_SIZE - 1001);   /* consistent with it */
    http_reply_free(r);
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_WRONG_RANGE_START, .n = -600});
    r = get_model(h, "1000-1999");
    ck_assert_int_eq(r->status, 206);
    ck_assert_str_eq(http_header(r, "Content-Range"), urlf("bytes 400-1999/%d", MODEL_SIZE));
    ck_assert_mem_eq(r->body, model + 400, 1600);
    http_reply_free(r);
    free(model);
    hub_free(h);
}
END_TEST

START_TEST(test_flip_byte_changes_one_byte_and_keeps_the_length) {
    unsigned char *model;
    hub *h = start_tiny_hub(&model);
    int id = hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_FLIP_BYTE, .n = 31337});
    /* A range that misses the byte is untouched and not counted. */
    http_reply *r = get_model(h, "40000-");
    ck_assert_mem_eq(r->body, model + 40000, MODEL_SIZE - 40000);
    http_reply_free(r);
    ck_assert_int_eq(hub_fault_hits(h, id), 0);

    r = get_model(h, NULL);
    ck_assert_int_eq(r->code, CURLE_OK);
    ck_assert_uint_eq(r->body_len, MODEL_SIZE);
    ck_assert_str_eq(http_header(r, "Content-Length"), urlf("%d", MODEL_SIZE));
    int differ = 0, at = -1;
    for (int i = 0; i < MODEL_SIZE; i++)
        if (r->body[i] != model[i]) differ++, at = i;
    ck_assert_int_eq(differ, 1);
    ck_assert_int_eq(at, 31337);
    char got[65], want[65];
    test_sha256_hex(r->body, r->body_len, got);
    test_sha256_hex(model, MODEL_SIZE, want);
    ck_assert_str_ne(got, want);
    http_reply_free(r);
    ck_assert_int_eq(hub_fault_hits(h, id), 1);
    free(model);
    hub_free(h);
}
END_TEST

START_TEST(test_body_longer_than_content_length_sends_junk_after_it) {
    unsigned char *model;
    hub *h = start_tiny_hub(&model);
    char *location = NULL;
    http_reply *r = http_fetch(model_url(h), NULL);
    location = strdup(strstr(http_header(r, "Location"), "/repos/"));
    http_reply_free(r);

    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_BODY_LONGER, .n = 7, .times = 1});
    char *raw = NULL;
    long n = raw_get(hub_cdn_endpoint(h), location, &raw);
    ck_assert_int_gt(n, 0);
    ck_assert_msg(strstr(raw, urlf("Content-Length: %d\r\n", MODEL_SIZE)), "%.300s", raw);
    const char *body;
    long len = body_of_raw(raw, n, &body);
    ck_assert_int_eq(len, MODEL_SIZE + 7);   /* on the wire: 7 bytes more than announced */
    ck_assert_mem_eq(body, model, MODEL_SIZE);
    free(raw);

    /* Without Content-Length the client has no way to stop early. */
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_BODY_LONGER, .n = 7,
                                  .no_content_length = true});
    r = get_model(h, NULL);
    ck_assert_int_eq(r->code, CURLE_OK);
    ck_assert_ptr_null(http_header(r, "Content-Length"));
    ck_assert_uint_eq(r->body_len, MODEL_SIZE + 7);
    ck_assert_mem_eq(r->body, model, MODEL_SIZE);
    http_reply_free(r);
    free(location);
    free(model);
    hub_free(h);
}
END_TEST

START_TEST(test_body_shorter_than_announced_with_and_without_content_length) {
    unsigned char *model;
    hub *h = start_tiny_hub(&model);
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_BODY_SHORTER, .n = 10, .times = 1});
    http_reply *r = get_model(h, NULL);
    ck_assert_int_eq(r->code, CURLE_PARTIAL_FILE);
    ck_assert_str_eq(http_header(r, "Content-Length"), urlf("%d", MODEL_SIZE));
    ck_assert_uint_eq(r->body_len, MODEL_SIZE - 10);
    http_reply_free(r);

    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_BODY_SHORTER, .n = 10,
                                  .no_content_length = true});
    r = get_model(h, NULL);
    ck_assert_int_eq(r->code, CURLE_OK);
    ck_assert_uint_eq(r->body_len, MODEL_SIZE - 10);
    ck_assert_mem_eq(r->body, model, MODEL_SIZE - 10);
    http_reply_free(r);
    free(model);
    hub_free(h);
}
END_TEST

START_TEST(test_trickle_is_slower_than_a_client_timeout) {
    unsigned char *model;
    hub *h = start_tiny_hub(&model);
    int id = hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_TRICKLE, .n = 100, .ms = 400});
    http_reply *r = http_fetch(model_url(h), &(http_opts){.follow = true, .timeout_ms = 1000});
    ck_assert_int_eq(r->code, CURLE_OPERATION_TIMEDOUT);
    ck_assert_int_eq(r->status, 200);   /* the headers came at once */
    ck_assert_uint_gt(r->body_len, 0);
    ck_assert_uint_lt(r->body_len, MODEL_SIZE);
    ck_assert_mem_eq(r->body, model, r->body_len);
    http_reply_free(r);
    ck_assert_int_eq(hub_fault_hits(h, id), 1);
    free(model);
    hub_free(h);   /* must not wait for the trickle to finish */
}
END_TEST

START_TEST(test_body_faults_leave_head_alone) {
    hub *h = start_tiny_hub(NULL);
    int id = hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_CLOSE_AFTER, .n = 1});
    http_reply *r = http_fetch(urlf("%s/org/tiny/resolve/main/config.json", hub_endpoint(h)),
                               &(http_opts){.head = true});
    ck_assert_int_eq(r->code, CURLE_OK);
    ck_assert_int_eq(r->status, 200);
    http_reply_free(r);
    ck_assert_int_eq(hub_fault_hits(h, id), 0);
    hub_free(h);
}
END_TEST

START_TEST(test_a_resume_after_a_drop_gets_the_rest_and_the_log_shows_its_range) {
    unsigned char *model;
    hub *h = start_tiny_hub(&model);
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_CLOSE_AFTER, .n = 20000, .times = 1,
                                  .path = "model.safetensors"});
    http_reply *first = get_model(h, NULL);
    ck_assert_int_eq(first->code, CURLE_PARTIAL_FILE);
    http_reply *rest = get_model(h, urlf("%zu-", first->body_len));
    ck_assert_int_eq(rest->status, 206);
    ck_assert_uint_eq(first->body_len + rest->body_len, MODEL_SIZE);
    ck_assert_mem_eq(first->body, model, first->body_len);
    ck_assert_mem_eq(rest->body, model + first->body_len, rest->body_len);
    hub_request e;
    ck_assert_int_eq(hub_log_count(h), 4);   /* Hub, CDN, Hub, CDN */
    ck_assert(hub_log_get(h, 3, &e));
    ck_assert_int_eq(e.host, HUB_HOST_CDN);
    ck_assert_str_eq(e.range, "bytes=20000-");
    ck_assert_int_eq(e.status, 206);
    http_reply_free(first);
    http_reply_free(rest);
    free(model);
    hub_free(h);
}
END_TEST
