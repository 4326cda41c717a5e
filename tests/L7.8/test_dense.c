/* L7.8 property and differential: with one expert and top_k = 1 the layer
 * is that expert's MLP (the weight is 1: softmax of one logit, or a
 * renormalised sigmoid; a DeepSeek-V3 router without renormalisation scales
 * by sigmoid(logit) instead, never by a softmax's 1). And the sparse
 * dispatch (gather, expert, scatter-add) equals the dense sum
 * sum_e w[n, e] * Expert_e(x_n) with every expert run on every token. */
#include <check.h>
#include "moe_fixture.h"

START_TEST(test_one_expert_top1_is_a_dense_mlp)
{
    tl_scope_push();
    double rtol = fx_tol("test_one_expert_top1_is_a_dense_mlp", "rtol");
    double atol = fx_tol("test_one_expert_top1_is_a_dense_mlp", "atol");
    tl_pcg32 rng = tl_test_rng(7801);
    tl_tensor *x = tl_randn(&rng, TL_SHAPE(2, 3, FX_H));
    const moe_family families[3] = {MOE_MIXTRAL, MOE_QWEN2_MOE, MOE_DEEPSEEK_V3};
    for (int f = 0; f < 4; f++) {
        MoEConfig cfg = {.family = families[f < 3 ? f : 2], .hidden = FX_H, .n_experts = 1,
                         .expert_intermediate = 5, .top_k = 1, .norm_topk_prob = f != 3,
                         .act = TL_ACT_SILU, .routed_scaling_factor = 1.0};
        MoE m;
        ck_assert_msg(moe_init(&m, &cfg, &rng) == 0, "moe_init: %s", tl_error());
        tl_tensor *logits = NULL;
        tl_tensor *y = moe_forward(&m, x, &logits);
        tl_tensor *dense = gated_mlp_forward(&m.experts[0], x);
        tl_assert_ok(y);
        tl_assert_ok(dense);
        char what[96];
        if (f < 3) {
            snprintf(what, sizeof what, "%s, one expert, top-1: the expert's MLP",
                     moe_module_name(cfg.family));
        } else {   /* DeepSeek-V3 without renormalisation: sigmoid(logit) * MLP */
            dense = tl_mul(dense, tl_reshape(tl_sigmoid(logits), TL_SHAPE(2, 3, 1)));
            snprintf(what, sizeof what, "DeepSeek-V3, one expert, no renormalisation: "
                     "sigmoid(logit) * MLP");
        }
        fx_assert_close(y, dense, rtol, atol, what);
        moe_free(&m);
    }
    tl_scope_pop();
}
END_TEST

/* y = sum_e w[n, e] Expert_e(x_n) (+ shared), every expert on every token. */
static tl_tensor *dense_reference(const MoE *m, tl_tensor *flat, tl_tensor *weights) {
    tl_tensor *y = tl_zeros(TL_F32, TL_SHAPE(flat->shape[0], FX_H));
    for (int64_t e = 0; e < m->cfg.n_experts; e++) {
        tl_tensor *we = tl_narrow(weights, 1, e, 1);                          /* [N, 1] */
        y = tl_add(y, tl_mul(gated_mlp_forward(&m->experts[e], flat), we));
    }
    if (m->shared.module) {
        tl_tensor *s = gated_mlp_forward(&m->shared, flat);
        if (m->shared_gate) s = tl_mul(tl_sigmoid(tl_linear_forward(m->shared_gate, flat)), s);
        y = tl_add(y, s);
    }
    return y;
}

START_TEST(test_sparse_dispatch_equals_dense_weighted_sum)
{
    tl_scope_push();
    double rtol = fx_tol("test_golden_mixtral", "rtol");
    double atol = fx_tol("test_golden_mixtral", "atol");
    tl_checkpoint *fx = tl_fixture_load(MOE_ST);
    const struct { const MoEConfig *cfg; const char *name; } cases[3] = {
        {&FX_MIXTRAL, "mixtral"}, {&FX_QWEN2, "qwen2_moe"}, {&FX_DEEPSEEK, "deepseek_v3"}};
    for (int c = 0; c < 3; c++) {
        MoE m;
        fx_moe(&m, fx, cases[c].cfg, cases[c].name);
        tl_tensor *flat = tl_reshape(fx_get(fx, cases[c].name, "x"), TL_SHAPE(FX_N, FX_H));
        tl_tensor *logits = NULL;
        tl_tensor *y = moe_forward(&m, flat, &logits);
        tl_tensor *idx = NULL, *w = NULL;
        tl_assert_ok(y);
        ck_assert_int_eq(moe_route(&m, logits, &idx, &w), 0);
        char what[96];
        snprintf(what, sizeof what, "%s: sparse dispatch vs the dense weighted sum", cases[c].name);
        tl_tensor *dense = dense_routing(idx, w, cases[c].cfg->n_experts);
        fx_assert_close(y, dense_reference(&m, flat, dense), rtol, atol, what);
        moe_free(&m);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
