/* my_mla.h: helpers my MLA tests share. */
#ifndef MY_MLA_H
#define MY_MLA_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "tinyllm/autograd.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"
#include "tinyllm/modern/attention.h"
#include "tinyllm/modern/mla.h"
#include "tinyllm/modern/rope.h"
#include "tinyllm/modern/rope_scaling.h"

#define MY_ST "L7.6/mla.safetensors"
#define MY_JSON "L7.6/mla.json"

static double my_tol(const char *test, const char *which) {
    char key[160];
    snprintf(key, sizeof key, "tolerances.%s.%s", test, which);
    return tl_fixture_number(MY_JSON, key);
}

/* The fixture's layers (mla.json): hidden 16, 3 heads, dn 6, dr 8, dv 5,
 * kv_lora_rank 12, q_lora_rank 10 or none; theta 10000. */
typedef struct {
    const char *name;
    int64_t q_rank;
    bool interleave, bias, v2, yarn;
} my_case;

static const my_case MY_CASES[5] = {
    {"lora_interleave", 10, true, false, false, false},
    {"lora_half", 10, false, false, false, false},
    {"noq_interleave", 0, true, false, false, false},
    {"v2_pairs", 0, false, false, true, false},
    {"yarn_bias", 10, true, true, false, true},
};

static MLAConfig my_config(const my_case *c) {
    MLAConfig cfg = {.hidden = 16, .n_heads = 3, .q_lora_rank = c->q_rank, .kv_lora_rank = 12,
                     .qk_nope_head_dim = 6, .qk_rope_head_dim = 8, .v_head_dim = 5,
                     .attention_bias = c->bias, .rope_interleave = c->interleave};
    if (c->yarn) {
        cfg.rope_factor = 40;
        cfg.mscale_all_dim = 1;
    }
    return cfg;
}

static RopeSpec my_rope(const my_case *c) {
    RopeSpec r;
    if (c->yarn) {   /* DeepSeek-V3's rope dict (mla.json's "yarn") */
        RopeConfig rc;
        const char *json = "{\"max_position_embeddings\": 163840, \"head_dim\": 8, "
                           "\"rope_theta\": 10000, \"rope_scaling\": {\"type\": \"yarn\", "
                           "\"factor\": 40, \"mscale\": 1, \"mscale_all_dim\": 1, "
                           "\"original_max_position_embeddings\": 4096}}";
        ck_assert_msg(rope_config_from_json(json, &rc) == 0, "%s", tl_error());
        ck_assert_msg(rope_spec_from_config(&r, &rc, 8, ROPE_HALF, 0) == 0, "%s", tl_error());
    } else {
        ck_assert_int_eq(rope_spec_init(&r, 8, 8, 10000.0,
                                        c->v2 ? ROPE_INTERLEAVED : ROPE_HALF), 0);
    }
    return r;
}

/* The fixture's layer c with its weights, loaded by HF's names. */
static void my_layer(MLAttention *a, const tl_checkpoint *fx, const my_case *c) {
    MLAConfig cfg = my_config(c);
    RopeSpec r = my_rope(c);
    ck_assert_msg(mla_init(a, &cfg, &r, NULL) == 0, "mla_init: %s", tl_error());
    tl_state_dict sd = tl_module_state_dict(a->module);
    for (int i = 0; i < sd.count; i++) {
        char key[128];
        snprintf(key, sizeof key, "%s.%s", c->name, sd.items[i].name);
        ck_assert_msg(tl_copy_into(sd.items[i].tensor, tl_fixture_tensor(fx, key)) == 0,
                      "%s: %s", key, tl_error());
    }
    tl_state_dict_free(&sd);
}

static tl_tensor *my_positions(const tl_checkpoint *fx) {
    return tl_cast(tl_fixture_tensor(fx, "positions"), TL_I64);
}

#endif
