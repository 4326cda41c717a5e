/* moe_fixture.h: what the L7.8 course tests share: the golden file and its
 * tolerances, the fixture's three configurations, an MoE carrying the
 * fixture's weights (copied by the names the module registers, so a wrong
 * key name fails here), and error assertions. Included by test files only
 * (each is its own translation unit, so these statics stay private to it). */
#ifndef TESTS_L7_8_MOE_FIXTURE_H
#define TESTS_L7_8_MOE_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <string.h>
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"
#include "tinyllm/modern/moe.h"

#define MOE_ST "L7.8/moe.safetensors"
#define MOE_JSON "L7.8/moe.json"
enum { FX_B = 2, FX_T = 5, FX_H = 8, FX_N = FX_B * FX_T };

/* The oracle's cases (oracle/L7.8/make_fixtures.py, CASES). */
static const MoEConfig FX_MIXTRAL = {
    .family = MOE_MIXTRAL, .hidden = FX_H, .n_experts = 4, .expert_intermediate = 6, .top_k = 2,
    .norm_topk_prob = true, .act = TL_ACT_SILU, .routed_scaling_factor = 1.0};
static const MoEConfig FX_QWEN2 = {
    .family = MOE_QWEN2_MOE, .hidden = FX_H, .n_experts = 6, .expert_intermediate = 6, .top_k = 2,
    .norm_topk_prob = false, .act = TL_ACT_SILU, .shared_intermediate = 10,
    .shared_expert_gate = true, .routed_scaling_factor = 1.0};
static const MoEConfig FX_DEEPSEEK = {
    .family = MOE_DEEPSEEK_V3, .hidden = FX_H, .n_experts = 16, .expert_intermediate = 6,
    .top_k = 3, .norm_topk_prob = true, .act = TL_ACT_SILU, .shared_intermediate = 6,
    .n_group = 4, .topk_group = 2, .routed_scaling_factor = 2.5};

/* tolerances.<test>.<which> from the fixture's JSON. */
static double fx_tol(const char *test, const char *which) {
    char key[160];
    snprintf(key, sizeof key, "tolerances.%s.%s", test, which);
    return tl_fixture_number(MOE_JSON, key);
}

/* An MoE for cfg carrying the weights of the fixture's case `name`: every
 * key the module registers must exist in the fixture under
 * "<name>.<module name>.<key>" (HF's checkpoint names). */
static void fx_moe(MoE *m, const tl_checkpoint *fx, const MoEConfig *cfg, const char *name) {
    ck_assert_msg(moe_init(m, cfg, NULL) == 0, "moe_init: %s", tl_error());
    tl_state_dict sd = tl_module_state_dict(m->module);
    ck_assert_msg(sd.count > 0, "the MoE registers no parameter: %s", tl_error());
    for (int i = 0; i < sd.count; i++) {
        char key[160];
        snprintf(key, sizeof key, "%s.%s.%s", name, moe_module_name(cfg->family), sd.items[i].name);
        ck_assert_int_eq(tl_copy_into(sd.items[i].tensor, tl_fixture_tensor(fx, key)), 0);
    }
    tl_state_dict_free(&sd);
}

/* A tensor of the fixture by "<prefix>.<what>". */
static tl_tensor *fx_get(const tl_checkpoint *fx, const char *prefix, const char *what) {
    char key[400];
    snprintf(key, sizeof key, "%s.%s", prefix, what);
    return tl_fixture_tensor(fx, key);
}

/* [N, E] with each token's weight at the experts it chose (0 elsewhere). */
static tl_tensor *dense_routing(const tl_tensor *idx, const tl_tensor *w, int64_t n_experts) {
    int64_t n = idx->shape[0], k = idx->shape[1];
    tl_tensor *dense = tl_zeros(TL_F32, TL_SHAPE(n, n_experts));
    for (int64_t t = 0; t < n; t++)
        for (int64_t j = 0; j < k; j++) {
            int64_t e = (int64_t)tl_item_at(idx, t * k + j);
            ck_assert_msg(e >= 0 && e < n_experts, "token %lld chose expert %lld of %lld",
                          (long long)t, (long long)e, (long long)n_experts);
            int64_t at[2] = {t, e};
            ck_assert_msg(tl_get(dense, at) == 0.0, "token %lld chose expert %lld twice",
                          (long long)t, (long long)e);
            tl_set(dense, at, tl_item_at(w, t * k + j));
        }
    return dense;
}

/* got must be within (rtol, atol) of want; what names the comparison. */
static void fx_assert_close(const tl_tensor *got, const tl_tensor *want, double rtol,
                            double atol, const char *what) {
    char msg[768];
    ck_assert_msg(got != NULL, "%s: NULL (%s)", what, tl_error() ? tl_error() : "no message");
    ck_assert_msg(tl_close_report(got, want, rtol, atol, msg, sizeof msg), "%s: %s", what, msg);
}

/* An int-returning call must return -1 with an error mentioning both needles. */
#define assert_status_error(expr, n1, n2)                                               \
    do {                                                                                \
        tl_clear_error();                                                               \
        int s_ = (int)(expr);                                                           \
        const char *e_ = tl_error() ? tl_error() : "(no message)";                       \
        ck_assert_msg(s_ == -1, "%s returned %d; expected -1", #expr, s_);              \
        ck_assert_msg(strstr(e_, n1) && strstr(e_, n2),                                 \
                      "%s failed with '%s'; expected it to mention '%s' and '%s'", #expr, \
                      e_, n1, n2);                                                      \
        tl_clear_error();                                                               \
    } while (0)

/* expr must return NULL with an error mentioning both needles. */
#define assert_error2(expr, n1, n2)                                                     \
    do {                                                                                \
        tl_clear_error();                                                               \
        const void *r_ = (const void *)(expr);                                          \
        const char *e_ = tl_error() ? tl_error() : "(no message)";                       \
        ck_assert_msg(r_ == NULL, "%s succeeded; expected an error", #expr);             \
        ck_assert_msg(strstr(e_, n1) && strstr(e_, n2),                                 \
                      "%s failed with '%s'; expected it to mention '%s' and '%s'", #expr, \
                      e_, n1, n2);                                                      \
        tl_clear_error();                                                               \
    } while (0)

#endif
