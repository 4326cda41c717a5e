/* mask_fixture.h: what the L7.7 course tests share: the oracle's masks, its
 * gpt-oss layer with learned sinks, its stream layer (fixtures/L7.7,
 * oracle/L7.7/make_fixtures.py), and small helpers. */
#ifndef TESTS_L7_7_MASK_FIXTURE_H
#define TESTS_L7_7_MASK_FIXTURE_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "tinyllm/autograd.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"
#include "tinyllm/modern/attention.h"
#include "tinyllm/modern/mask.h"
#include "tinyllm/modern/rope.h"

#define MASK_ST "L7.7/mask.safetensors"
#define MASK_JSON "L7.7/mask.json"

/* The fixture's sizes (oracle/L7.7/make_fixtures.py). */
enum { MX_HIDDEN = 16, MX_D = 8, SINK_HQ = 4, SINK_HKV = 2, SINK_B = 2, SINK_T = 6,
       SINK_WINDOW = 3, STREAM_T = 14, STREAM_SINKS = 2, STREAM_WINDOW = 4,
       STREAM_CAPACITY = 6, STREAM_HQ = 4, STREAM_HKV = 2 };

static double mask_tol(const char *test, const char *which) {
    char key[160];
    snprintf(key, sizeof key, "tolerances.%s.%s", test, which);
    return tl_fixture_number(MASK_JSON, key);
}

/* I64 [n] from a list. */
static tl_tensor *i64s(const int64_t *v, int64_t n) {
    tl_tensor *t = tl_from_i64(v, 1, (int64_t[]){n});
    tl_assert_ok(t);
    return t;
}

/* A layer of the fixture: "sinks" (gpt-oss: biased, learned sinks) or "stream". */
static void mask_layer(GQAttention *a, const tl_checkpoint *fx, const char *prefix) {
    bool gpt_oss = strcmp(prefix, "sinks") == 0;
    RopeSpec r;
    ck_assert_msg(rope_spec_init(&r, MX_D, MX_D, 10000.0, ROPE_HALF) == 0, "rope: %s",
                  tl_error());
    GQAConfig cfg = {.hidden = MX_HIDDEN, .n_heads = gpt_oss ? SINK_HQ : STREAM_HQ,
                     .n_kv_heads = gpt_oss ? SINK_HKV : STREAM_HKV, .head_dim = MX_D,
                     .qkv_bias = gpt_oss, .o_bias = gpt_oss};
    ck_assert_msg(gqa_init(a, &cfg, &r, NULL) == 0, "gqa_init: %s", tl_error());
    if (gpt_oss)
        ck_assert_msg(gqa_add_learned_sinks(a, NULL) == 0, "gqa_add_learned_sinks: %s",
                      tl_error());
    tl_state_dict sd = tl_module_state_dict(a->module);
    for (int i = 0; i < sd.count; i++) {
        char name[96];
        snprintf(name, sizeof name, "%s.%s", prefix, sd.items[i].name);
        ck_assert_msg(tl_copy_into(sd.items[i].tensor, tl_fixture_tensor(fx, name)) == 0,
                      "%s: %s", name, tl_error());
    }
    tl_state_dict_free(&sd);
}

static void mask_assert_close(const tl_tensor *actual, const tl_tensor *expected, double rtol,
                              double atol, const char *what) {
    char msg[768];
    ck_assert_msg(actual != NULL, "%s: NULL (%s)", what,
                  tl_error() ? tl_error() : "no error message");
    ck_assert_msg(tl_close_report(actual, expected, rtol, atol, msg, sizeof msg), "%s: %s",
                  what, msg);
}

static bool mask_all_finite(const tl_tensor *t) {
    for (int64_t i = 0, n = tl_numel(t); i < n; i++)
        if (!isfinite(tl_item_at(t, i))) return false;
    return true;
}

#endif
