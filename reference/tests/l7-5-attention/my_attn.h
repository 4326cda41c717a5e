/* my_attn.h: helpers my attention tests share. */
#ifndef MY_ATTN_H
#define MY_ATTN_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "tinyllm/autograd.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"
#include "tinyllm/modern/attention.h"
#include "tinyllm/modern/rope.h"

#define MY_ST "L7.5/attention.safetensors"
#define MY_JSON "L7.5/attention.json"

static double my_tol(const char *test, const char *which) {
    char key[160];
    snprintf(key, sizeof key, "tolerances.%s.%s", test, which);
    return tl_fixture_number(MY_JSON, key);
}

/* The fixture's layers: hidden 16, head_dim 8, theta 10000, half pairing. */
static void my_layer(GQAttention *a, const tl_checkpoint *fx, const char *name, int64_t hq,
                     int64_t hkv, bool qkv_bias, bool o_bias) {
    RopeSpec r;
    ck_assert_int_eq(rope_spec_init(&r, 8, 8, 10000.0, ROPE_HALF), 0);
    GQAConfig cfg = {.hidden = 16, .n_heads = hq, .n_kv_heads = hkv, .head_dim = 8,
                     .qkv_bias = qkv_bias, .o_bias = o_bias};
    ck_assert_msg(gqa_init(a, &cfg, &r, NULL) == 0, "gqa_init: %s", tl_error());
    /* Every parameter by its HF name; the fixture must have each one. */
    tl_state_dict sd = tl_module_state_dict(a->module);
    int expected = 4 + (qkv_bias ? 3 : 0) + (o_bias ? 1 : 0);
    ck_assert_msg(sd.count == expected, "%s: %d parameters, expected %d", name, sd.count,
                  expected);
    for (int i = 0; i < sd.count; i++) {
        char key[96];
        snprintf(key, sizeof key, "%s.%s", name, sd.items[i].name);
        ck_assert_msg(tl_copy_into(sd.items[i].tensor, tl_fixture_tensor(fx, key)) == 0,
                      "%s: %s", key, tl_error());
    }
    tl_state_dict_free(&sd);
}

static tl_tensor *my_positions(const tl_checkpoint *fx) {
    return tl_cast(tl_fixture_tensor(fx, "positions"), TL_I64);
}

#endif
