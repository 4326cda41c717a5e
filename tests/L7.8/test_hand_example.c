/* L7.8 section 3, routing by hand (moe_route on logits chosen here).
 * Softmax-top-2 over logits [2, 1, 0, -1]: p = [0.6439, 0.2369, 0.0871,
 * 0.0321]; experts 0 and 1; Mixtral renormalises to [e^2, e] / (e^2 + e) =
 * [0.7311, 0.2689]; Qwen2-MoE without norm_topk_prob keeps [0.6439, 0.2369].
 * DeepSeek-V3, 4 experts in groups {0, 1} and {2, 3}, one group kept, top 2,
 * routed_scaling_factor 2.5, scores s = sigmoid(logits) = [0.8, 0.5, 0.9, 0.2]:
 *   no bias: group scores 1.3 and 1.1 -> group 0 -> experts 0 and 1,
 *     w = 2.5 [0.8, 0.5] / 1.3 = [1.538462, 0.961538]
 *     (without the group limit it would be experts 2 and 0)
 *   bias [0, 0, 0, 0.3]: c = [0.8, 0.5, 0.9, 0.5], groups 1.3 and 1.4 ->
 *     experts 2 and 3, weighed by s, not c: w = 2.5 [0.9, 0.2] / 1.1
 *     = [2.045455, 0.454545]
 *   bias [-1.5, -1.5, -1, -1]: c = [-0.7, -1.0, -0.1, -0.8], groups -1.7 and -0.9
 *     -> group {2, 3} kept, but HF sets the dropped experts' c to 0.0, which
 *     beats -0.1 and -0.8: experts 0 and 1, w = [1.538462, 0.961538] (a -inf
 *     fill, DeepSeek's own code, would give experts 2 and 3) */
#include <check.h>
#include <math.h>
#include "moe_fixture.h"

/* Token 0's weight for expert e (0 when e was not chosen). */
static double weight_of(const tl_tensor *idx, const tl_tensor *w, int64_t e) {
    for (int64_t j = 0; j < idx->shape[1]; j++)
        if ((int64_t)tl_item_at(idx, j) == e) return tl_item_at(w, j);
    return 0.0;
}

static void expect_route(const MoE *m, const float *logits, const double *want, const char *what) {
    double tol = fx_tol("test_hand_example_routing", "atol");
    tl_tensor *idx = NULL, *w = NULL;
    ck_assert_msg(moe_route(m, tl_from_f32(logits, TL_SHAPE(1, 4)), &idx, &w) == 0,
                  "%s: moe_route: %s", what, tl_error());
    for (int64_t e = 0; e < 4; e++)
        ck_assert_msg(fabs(weight_of(idx, w, e) - want[e]) <= tol, "%s: expert %lld has weight "
                      "%.7g, expected %.7g (0: not chosen)", what, (long long)e,
                      weight_of(idx, w, e), want[e]);
}

static float logit(double p) { return (float)log(p / (1.0 - p)); }

START_TEST(test_hand_example_routing)
{
    tl_scope_push();
    const float l[4] = {2, 1, 0, -1};
    double z = exp(2.0) + exp(1.0) + exp(0.0) + exp(-1.0);
    MoEConfig c = {.family = MOE_MIXTRAL, .hidden = 4, .n_experts = 4, .expert_intermediate = 2,
                   .top_k = 2, .norm_topk_prob = true, .act = TL_ACT_SILU,
                   .routed_scaling_factor = 1.0};
    MoE m;
    ck_assert_msg(moe_init(&m, &c, NULL) == 0, "moe_init: %s", tl_error());
    const double mixtral[4] = {exp(2.0) / (exp(2.0) + exp(1.0)), exp(1.0) / (exp(2.0) + exp(1.0)),
                               0, 0};
    expect_route(&m, l, mixtral, "Mixtral, top-2 renormalised");
    moe_free(&m);
    c.family = MOE_QWEN2_MOE;
    c.norm_topk_prob = false;
    ck_assert_msg(moe_init(&m, &c, NULL) == 0, "moe_init: %s", tl_error());
    const double qwen[4] = {exp(2.0) / z, exp(1.0) / z, 0, 0};
    expect_route(&m, l, qwen, "Qwen2-MoE, top-2 probabilities, not renormalised");
    moe_free(&m);

    c = (MoEConfig){.family = MOE_DEEPSEEK_V3, .hidden = 4, .n_experts = 4,
                    .expert_intermediate = 2, .top_k = 2, .norm_topk_prob = true,
                    .act = TL_ACT_SILU, .n_group = 2, .topk_group = 1,
                    .routed_scaling_factor = 2.5};
    ck_assert_msg(moe_init(&m, &c, NULL) == 0, "moe_init: %s", tl_error());
    const float ds[4] = {logit(0.8), logit(0.5), logit(0.9), logit(0.2)};
    const double no_bias[4] = {2.5 * 0.8 / 1.3, 2.5 * 0.5 / 1.3, 0, 0};
    expect_route(&m, ds, no_bias, "DeepSeek-V3, group {0, 1} kept");
    ck_assert_int_eq(tl_copy_into(m.e_score_correction_bias,
                                  tl_from_f32((const float[]){0, 0, 0, 0.3f}, TL_SHAPE(4))), 0);
    const double biased[4] = {0, 0, 2.5 * 0.9 / 1.1, 2.5 * 0.2 / 1.1};
    expect_route(&m, ds, biased, "DeepSeek-V3 with bias [0, 0, 0, 0.3]: group {2, 3}, weighed "
                 "by s");
    ck_assert_int_eq(tl_copy_into(m.e_score_correction_bias,
                                  tl_from_f32((const float[]){-1.5f, -1.5f, -1, -1},
                                              TL_SHAPE(4))), 0);
    expect_route(&m, ds, no_bias, "DeepSeek-V3 with bias [-1.5, -1.5, -1, -1]: group {2, 3} is "
                 "kept, but the dropped experts' choice score is HF's 0.0, above the kept -0.1 "
                 "and -0.8");
    moe_free(&m);
    tl_scope_pop();
}
END_TEST
