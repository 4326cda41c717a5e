/* The range faults a downloader must recover from (issue 10): a 206 that
 * honestly carries the whole file, a 416 for a satisfiable range, and
 * faults aimed only at requests with (or without) a Range header. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "client.h"

static const char *cdn_model_url(hub *h) {
    http_reply *r = http_fetch(urlf("%s/org/tiny/resolve/main/model.safetensors", hub_endpoint(h)),
                               &(http_opts){.head = true});
    static char url[2048];
    snprintf(url, sizeof url, "%s", http_header(r, "Location"));
    http_reply_free(r);
    return url;
}

START_TEST(test_whole_file_as_206) {
    unsigned char *m;
    hub *h = start_tiny_hub(&m);
    int id = hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_WHOLE_AS_206});
    const char *url = cdn_model_url(h);
    http_reply *r = http_fetch(url, &(http_opts){.range = "30000-"});
    ck_assert_int_eq(r->status, 206);
    ck_assert_str_eq(http_header(r, "Content-Range"), urlf("bytes 0-%d/%d", MODEL_SIZE - 1,
                                                          MODEL_SIZE));
    ck_assert_uint_eq(r->body_len, MODEL_SIZE);
    ck_assert(!memcmp(r->body, m, MODEL_SIZE));
    http_reply_free(r);
    r = http_fetch(url, &(http_opts){0});   /* without Range: an ordinary 200 */
    ck_assert_int_eq(r->status, 200);
    http_reply_free(r);
    ck_assert_int_eq(hub_fault_hits(h, id), 1);
    /* small files on the Hub too */
    r = http_fetch(urlf("%s/org/tiny/resolve/main/config.json", hub_endpoint(h)),
                   &(http_opts){.range = "10-"});
    ck_assert_int_eq(r->status, 206);
    ck_assert_uint_eq(r->body_len, strlen(CONFIG_JSON));
    http_reply_free(r);
    free(m);
    hub_free(h);
}
END_TEST

START_TEST(test_satisfiable_range_refused) {
    hub *h = start_tiny_hub(NULL);
    hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_REFUSE_RANGE, .on = HUB_HOST_CDN});
    const char *url = cdn_model_url(h);
    http_reply *r = http_fetch(url, &(http_opts){.range = "100-"});
    ck_assert_int_eq(r->status, 416);
    ck_assert_str_eq(http_header(r, "Content-Range"), urlf("bytes */%d", MODEL_SIZE));
    http_reply_free(r);
    r = http_fetch(url, &(http_opts){0});
    ck_assert_int_eq(r->status, 200);
    ck_assert_uint_eq(r->body_len, MODEL_SIZE);
    http_reply_free(r);
    hub_free(h);
}
END_TEST

/* .range = HUB_UNRANGED hits only a request without Range; HUB_RANGED the others. */
START_TEST(test_faults_aimed_by_range) {
    hub *h = start_tiny_hub(NULL);
    int unranged = hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_STATUS, .status = 503,
                                                 .range = HUB_UNRANGED, .on = HUB_HOST_CDN});
    int ranged = hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_STATUS, .status = 502,
                                               .range = HUB_RANGED, .on = HUB_HOST_CDN});
    const char *url = cdn_model_url(h);
    http_reply *r = http_fetch(url, &(http_opts){0});
    ck_assert_int_eq(r->status, 503);
    http_reply_free(r);
    r = http_fetch(url, &(http_opts){.range = "5-"});
    ck_assert_int_eq(r->status, 502);
    http_reply_free(r);
    ck_assert_int_eq(hub_fault_hits(h, unranged), 1);
    ck_assert_int_eq(hub_fault_hits(h, ranged), 1);
    ck_assert_int_eq(hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_STALL, .range = 7}), -1);
    ck_assert_ptr_nonnull(strstr(hub_error(h), "HUB_RANGED"));
    hub_free(h);
}
END_TEST
