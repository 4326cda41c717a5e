/* mla_fixture.h: what the L7.6 course tests share. The oracle's five MLA
 * layers (fixtures/L7.6, oracle/L7.6/make_fixtures.py), each loaded into an
 * MLAttention by HF's parameter names, the fixture's inputs, and the
 * tolerances of mla.json.
 *
 *   tl_checkpoint *fx = tl_fixture_load(MLA_ST);
 *   MLAttention a;
 *   mla_from_fixture(&a, fx, mla_case_named("lora_interleave"));
 *   tl_tensor *y = mla_forward(&a, tl_fixture_tensor(fx, "x"), mla_positions(fx), NULL,
 *                              NULL, 0);
 *   ...
 *   mla_free(&a);
 *   tl_checkpoint_free(fx);
 */
#ifndef TESTS_L7_6_MLA_FIXTURE_H
#define TESTS_L7_6_MLA_FIXTURE_H

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

#define MLA_ST "L7.6/mla.safetensors"
#define MLA_JSON "L7.6/mla.json"

/* The fixture's widths: x [B, T, HIDDEN]; every case has these heads. */
enum {
    FX_B = 2, FX_T = 6, FX_HIDDEN = 16, FX_HEADS = 3, FX_NOPE = 6, FX_ROPE = 8, FX_V = 5,
    FX_KV_RANK = 12, FX_Q_RANK = 10
};
#define FX_THETA 10000.0

typedef struct {
    const char *name;      /* the fixture's tensor prefix */
    int64_t q_lora_rank;   /* 0: q_proj */
    bool rope_interleave;
    bool attention_bias;
    rope_pairing pairing;  /* DeepSeek-V2 pairs in place; V3 by halves */
    bool yarn;             /* DeepSeek-V3's yarn rope dict (factor 40, mscale_all_dim 1) */
} mla_case;

/* As oracle/L7.6/make_fixtures.py's CASES. */
static const mla_case MLA_CASES[] = {
    {"lora_interleave", FX_Q_RANK, true, false, ROPE_HALF, false},
    {"lora_half", FX_Q_RANK, false, false, ROPE_HALF, false},
    {"noq_interleave", 0, true, false, ROPE_HALF, false},
    {"v2_pairs", 0, false, false, ROPE_INTERLEAVED, false},
    {"yarn_bias", FX_Q_RANK, true, true, ROPE_HALF, true},
};
#define MLA_N_CASES ((int)(sizeof MLA_CASES / sizeof MLA_CASES[0]))

/* DeepSeek-V3's rope dict, as the yarn case's config.json would carry it. */
#define MLA_YARN_CONFIG                                                              \
    "{\"model_type\": \"deepseek_v3\", \"hidden_size\": 16, \"num_attention_heads\": 3," \
    " \"head_dim\": 8, \"max_position_embeddings\": 163840, \"rope_theta\": 10000.0,"    \
    " \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 40, \"beta_fast\": 32,"          \
    " \"beta_slow\": 1, \"mscale\": 1.0, \"mscale_all_dim\": 1.0,"                        \
    " \"original_max_position_embeddings\": 4096}}"

static const mla_case *mla_case_named(const char *name) {
    for (int i = 0; i < MLA_N_CASES; i++)
        if (strcmp(MLA_CASES[i].name, name) == 0) return &MLA_CASES[i];
    ck_abort_msg("no MLA case named %s", name);
    return NULL;
}

static double mla_tol(const char *test, const char *which) {
    char key[160];
    snprintf(key, sizeof key, "tolerances.%s.%s", test, which);
    return tl_fixture_number(MLA_JSON, key);
}

static MLAConfig mla_config(const mla_case *c) {
    MLAConfig cfg = {.hidden = FX_HIDDEN, .n_heads = FX_HEADS, .q_lora_rank = c->q_lora_rank,
                     .kv_lora_rank = FX_KV_RANK, .qk_nope_head_dim = FX_NOPE,
                     .qk_rope_head_dim = FX_ROPE, .v_head_dim = FX_V,
                     .attention_bias = c->attention_bias, .rope_interleave = c->rope_interleave,
                     .rope_factor = c->yarn ? 40.0 : 0.0, .mscale_all_dim = c->yarn ? 1.0 : 0.0};
    return cfg;
}

/* The case's RopeSpec: default frequencies, or yarn's through L7.4. */
static RopeSpec mla_rope(const mla_case *c) {
    RopeSpec r;
    if (c->yarn) {
        RopeConfig rc;
        ck_assert_msg(rope_config_from_json(MLA_YARN_CONFIG, &rc) == 0, "rope_config_from_json: %s",
                      tl_error());
        ck_assert_msg(rope_spec_from_config(&r, &rc, FX_ROPE, c->pairing, 0) == 0,
                      "rope_spec_from_config: %s", tl_error());
    } else {
        ck_assert_msg(rope_spec_init(&r, FX_ROPE, FX_ROPE, FX_THETA, c->pairing) == 0,
                      "rope_spec_init: %s", tl_error());
    }
    return r;
}

/* Copies every parameter of a's state dict from the fixture's "<case>.<name>". */
static void mla_load(MLAttention *a, const tl_checkpoint *fx, const mla_case *c) {
    tl_state_dict sd = tl_module_state_dict(a->module);
    for (int i = 0; i < sd.count; i++) {
        char name[128];
        snprintf(name, sizeof name, "%s.%s", c->name, sd.items[i].name);
        ck_assert_msg(tl_copy_into(sd.items[i].tensor, tl_fixture_tensor(fx, name)) == 0,
                      "%s: %s", name, tl_error());
    }
    tl_state_dict_free(&sd);
}

/* An MLAttention of the case's config carrying the oracle's weights. */
static void mla_from_fixture(MLAttention *a, const tl_checkpoint *fx, const mla_case *c) {
    MLAConfig cfg = mla_config(c);
    RopeSpec rope = mla_rope(c);
    ck_assert_msg(mla_init(a, &cfg, &rope, NULL) == 0, "mla_init (%s): %s", c->name, tl_error());
    mla_load(a, fx, c);
}

/* The fixture's position ids [B, T] (stored as F32), as I64. */
static tl_tensor *mla_positions(const tl_checkpoint *fx) {
    tl_tensor *p = tl_cast(tl_fixture_tensor(fx, "positions"), TL_I64);
    tl_assert_ok(p);
    return p;
}

static const char *mla_path_name(mla_path p) {
    return p == MLA_PATH_NAIVE ? "naive" : p == MLA_PATH_ABSORBED ? "absorbed" : "auto";
}

/* actual vs expected within the tolerances, or a failure naming what. */
static void mla_assert_close(const tl_tensor *actual, const tl_tensor *expected, double rtol,
                             double atol, const char *what) {
    char msg[768];
    ck_assert_msg(actual != NULL, "%s: NULL (%s)", what,
                  tl_error() ? tl_error() : "no error message");
    ck_assert_msg(tl_close_report(actual, expected, rtol, atol, msg, sizeof msg), "%s: %s",
                  what, msg);
}

/* True when every element of t is a finite number. */
static bool mla_all_finite(const tl_tensor *t) {
    for (int64_t i = 0, n = tl_numel(t); i < n; i++)
        if (!isfinite(tl_item_at(t, i))) return false;
    return true;
}

#endif
