/* attn_fixture.h: what the L7.5 course tests share. The oracle's five
 * attention layers (fixtures/L7.5, oracle/L7.5/make_fixtures.py), each loaded
 * into a GQAttention by HF's parameter names, the fixture's inputs, and the
 * tolerances of attention.json.
 *
 *   tl_checkpoint *fx = tl_fixture_load(ATTN_ST);
 *   GQAttention a;
 *   attn_from_fixture(&a, fx, attn_case_named("gqa"));
 *   tl_tensor *y = gqa_forward(&a, tl_fixture_tensor(fx, "x"), attn_positions(fx), NULL,
 *                              NULL, 0);
 *   ...
 *   gqa_free(&a);
 *   tl_checkpoint_free(fx);
 */
#ifndef TESTS_L7_5_ATTN_FIXTURE_H
#define TESTS_L7_5_ATTN_FIXTURE_H

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

#define ATTN_ST "L7.5/attention.safetensors"
#define ATTN_JSON "L7.5/attention.json"

/* The fixture's shapes: x [B, T, HIDDEN]; every case has head_dim D. */
enum { FX_B = 2, FX_T = 6, FX_HIDDEN = 16, FX_D = 8 };
#define FX_THETA 10000.0

typedef struct {
    const char *name;     /* the fixture's tensor prefix */
    int64_t n_heads, n_kv_heads;
    bool qkv_bias, o_bias;
} attn_case;

/* As oracle/L7.5/make_fixtures.py's CASES. */
static const attn_case ATTN_CASES[] = {
    {"mha", 2, 2, false, false},
    {"gqa", 6, 2, false, false},
    {"mqa", 4, 1, false, false},
    {"qwen2", 4, 2, true, false},       /* Qwen2: q, k, v biased, o not */
    {"llama_bias", 4, 2, true, true},   /* Llama's attention_bias: all four */
};
#define ATTN_N_CASES ((int)(sizeof ATTN_CASES / sizeof ATTN_CASES[0]))

static const attn_case *attn_case_named(const char *name) {
    for (int i = 0; i < ATTN_N_CASES; i++)
        if (strcmp(ATTN_CASES[i].name, name) == 0) return &ATTN_CASES[i];
    ck_abort_msg("no attention case named %s", name);
    return NULL;
}

static double attn_tol(const char *test, const char *which) {
    char key[160];
    snprintf(key, sizeof key, "tolerances.%s.%s", test, which);
    return tl_fixture_number(ATTN_JSON, key);
}

/* The fixture's RoPE: default frequencies, theta 10000, half pairing. */
static RopeSpec attn_rope(int64_t head_dim) {
    RopeSpec r;
    ck_assert_msg(rope_spec_init(&r, head_dim, head_dim, FX_THETA, ROPE_HALF) == 0,
                  "rope_spec_init: %s", tl_error());
    return r;
}

static GQAConfig attn_config(const attn_case *c) {
    GQAConfig cfg = {.hidden = FX_HIDDEN, .n_heads = c->n_heads, .n_kv_heads = c->n_kv_heads,
                     .head_dim = FX_D, .qkv_bias = c->qkv_bias, .o_bias = c->o_bias};
    return cfg;
}

/* Copies the fixture's "<case>.<proj>.<weight|bias>" into the module's own. */
static void attn_copy_param(tl_module *proj, const tl_checkpoint *fx, const attn_case *c,
                            const char *proj_name, const char *param) {
    char name[96];
    snprintf(name, sizeof name, "%s.%s.%s", c->name, proj_name, param);
    tl_tensor *dst = tl_module_param(proj, param);
    ck_assert_msg(dst != NULL, "%s: %s has no %s: %s", c->name, proj_name, param, tl_error());
    ck_assert_msg(tl_copy_into(dst, tl_fixture_tensor(fx, name)) == 0, "%s: %s", name,
                  tl_error());
}

/* A GQAttention of the case's config carrying the oracle's weights. */
static void attn_from_fixture(GQAttention *a, const tl_checkpoint *fx, const attn_case *c) {
    GQAConfig cfg = attn_config(c);
    RopeSpec rope = attn_rope(FX_D);
    ck_assert_msg(gqa_init(a, &cfg, &rope, NULL) == 0, "gqa_init (%s): %s", c->name, tl_error());
    tl_module *projs[4] = {a->q_proj, a->k_proj, a->v_proj, a->o_proj};
    const char *names[4] = {"q_proj", "k_proj", "v_proj", "o_proj"};
    for (int i = 0; i < 4; i++) {
        attn_copy_param(projs[i], fx, c, names[i], "weight");
        if (i < 3 ? c->qkv_bias : c->o_bias) attn_copy_param(projs[i], fx, c, names[i], "bias");
    }
}

/* The fixture's position ids [B, T] (stored as F32), as I64. */
static tl_tensor *attn_positions(const tl_checkpoint *fx) {
    tl_tensor *p = tl_cast(tl_fixture_tensor(fx, "positions"), TL_I64);
    tl_assert_ok(p);
    return p;
}

/* actual vs expected within the tolerances, or a failure naming what. */
static void attn_assert_close(const tl_tensor *actual, const tl_tensor *expected, double rtol,
                              double atol, const char *what) {
    char msg[768];
    ck_assert_msg(actual != NULL, "%s: NULL (%s)", what,
                  tl_error() ? tl_error() : "no error message");
    ck_assert_msg(tl_close_report(actual, expected, rtol, atol, msg, sizeof msg), "%s: %s",
                  what, msg);
}

/* True when every element of t is a finite number. */
static bool attn_all_finite(const tl_tensor *t) {
    for (int64_t i = 0, n = tl_numel(t); i < n; i++)
        if (!isfinite(tl_item_at(t, i))) return false;
    return true;
}

#endif
