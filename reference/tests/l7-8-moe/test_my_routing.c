/* My routing tests, worked by hand: moe_route on logits I choose. */
#include <check.h>
#include <math.h>
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"
#include "tinyllm/modern/moe.h"

static MoE make(MoEConfig c) {
    MoE m;
    ck_assert_msg(moe_init(&m, &c, NULL) == 0, "moe_init: %s", tl_error());
    return m;
}

/* The weight the route gave expert e for token 0 (0 when not chosen). */
static double weight_of(const tl_tensor *idx, const tl_tensor *w, int64_t e) {
    for (int64_t j = 0; j < idx->shape[1]; j++)
        if ((int64_t)tl_item_at(idx, j) == e) return tl_item_at(w, j);
    return 0.0;
}

static void route(const MoE *m, const float *logits, int64_t e, tl_tensor **idx, tl_tensor **w) {
    ck_assert_msg(moe_route(m, tl_from_f32(logits, TL_SHAPE(1, e)), idx, w) == 0, "%s",
                  tl_error());
}

/* logits [2, 1, 0, -1]: p = e^l / S. Mixtral keeps experts 0 and 1 and
 * renormalises: w0 = e^2 / (e^2 + e), w1 = e / (e^2 + e). Qwen2-MoE without
 * norm_topk_prob keeps the raw probabilities. */
START_TEST(my_softmax_top2_by_hand)
{
    tl_scope_push();
    const float l[4] = {2, 1, 0, -1};
    double s = exp(2) + exp(1) + exp(0) + exp(-1);
    MoEConfig c = {.family = MOE_MIXTRAL, .hidden = 4, .n_experts = 4, .expert_intermediate = 2,
                   .top_k = 2, .norm_topk_prob = true, .act = TL_ACT_SILU,
                   .routed_scaling_factor = 1.0};
    MoE m = make(c);
    tl_tensor *idx, *w;
    route(&m, l, 4, &idx, &w);
    ck_assert_int_eq((int)tl_item_at(idx, 0), 0);
    ck_assert_int_eq((int)tl_item_at(idx, 1), 1);
    ck_assert_msg(fabs(weight_of(idx, w, 0) - exp(2) / (exp(2) + exp(1))) < 1e-6, "mixtral w0");
    ck_assert_msg(fabs(weight_of(idx, w, 1) - exp(1) / (exp(2) + exp(1))) < 1e-6, "mixtral w1");
    moe_free(&m);
    c.family = MOE_QWEN2_MOE;
    c.norm_topk_prob = false;
    m = make(c);
    route(&m, l, 4, &idx, &w);
    ck_assert_msg(fabs(weight_of(idx, w, 0) - exp(2) / s) < 1e-6, "qwen2 w0 is p0");
    ck_assert_msg(fabs(weight_of(idx, w, 1) - exp(1) / s) < 1e-6, "qwen2 w1 is p1");
    moe_free(&m);
    tl_scope_pop();
}
END_TEST

static float logit(double p) { return (float)log(p / (1 - p)); }

/* DeepSeek-V3, 4 experts in 2 groups ({0, 1}, {2, 3}), one group kept, top 2,
 * scaling 2. Scores s = [0.9, 0.1, 0.7, 0.6]:
 *   no bias: groups 1.0 vs 1.3 -> group 1 -> experts 2, 3 -> w = 2 [0.7, 0.6] / 1.3
 *   bias [0, 0.5, 0, 0]: c = [0.9, 0.6, 0.7, 0.6], groups 1.5 vs 1.3 -> group 0 ->
 *   experts 0, 1 with the UNbiased s: w = 2 [0.9, 0.1] / 1.0 */
START_TEST(my_deepseek_groups_and_bias_by_hand)
{
    tl_scope_push();
    const float l[4] = {logit(0.9), logit(0.1), logit(0.7), logit(0.6)};
    MoEConfig c = {.family = MOE_DEEPSEEK_V3, .hidden = 4, .n_experts = 4,
                   .expert_intermediate = 2, .top_k = 2, .norm_topk_prob = true,
                   .act = TL_ACT_SILU, .n_group = 2, .topk_group = 1,
                   .routed_scaling_factor = 2.0};
    MoE m = make(c);
    tl_tensor *idx, *w;
    route(&m, l, 4, &idx, &w);
    ck_assert_msg(fabs(weight_of(idx, w, 2) - 2 * 0.7 / 1.3) < 1e-5, "expert 2: %g",
                  weight_of(idx, w, 2));
    ck_assert_msg(fabs(weight_of(idx, w, 3) - 2 * 0.6 / 1.3) < 1e-5, "expert 3");
    ck_assert_msg(weight_of(idx, w, 0) == 0.0, "expert 0 is in the dropped group");
    ck_assert_int_eq(tl_copy_into(m.e_score_correction_bias,
                                  tl_from_f32((const float[]){0, 0.5f, 0, 0}, TL_SHAPE(4))), 0);
    route(&m, l, 4, &idx, &w);
    ck_assert_msg(fabs(weight_of(idx, w, 0) - 2 * 0.9) < 1e-5, "expert 0: %g",
                  weight_of(idx, w, 0));
    ck_assert_msg(fabs(weight_of(idx, w, 1) - 2 * 0.1) < 1e-5, "expert 1: %g (no bias in the "
                  "weight)", weight_of(idx, w, 1));
    moe_free(&m);
    /* without the renormalisation: w = 2 s */
    c.norm_topk_prob = false;
    m = make(c);
    route(&m, l, 4, &idx, &w);
    ck_assert_msg(fabs(weight_of(idx, w, 2) - 2 * 0.7) < 1e-5, "no norm: expert 2");
    moe_free(&m);
    tl_scope_pop();
}
END_TEST
