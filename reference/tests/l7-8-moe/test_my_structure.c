/* My structural tests: what must hold for any weights. */
#include <check.h>
#include <math.h>
#include "tinyllm/autograd.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"
#include "tinyllm/modern/moe.h"

/* With the shared expert gate's weight at 0, sigmoid(0) = 0.5 scales the
 * shared expert; with the routed experts zeroed, y is 0.5 * shared(x). */
START_TEST(my_shared_gate_is_a_sigmoid)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(21);
    MoEConfig c = {.family = MOE_QWEN2_MOE, .hidden = 4, .n_experts = 2, .expert_intermediate = 3,
                   .top_k = 1, .act = TL_ACT_SILU, .shared_intermediate = 5,
                   .shared_expert_gate = true, .routed_scaling_factor = 1.0};
    MoE m;
    ck_assert_int_eq(moe_init(&m, &c, &rng), 0);
    for (int e = 0; e < 2; e++) {
        tl_tensor *down = tl_module_param(m.experts[e].down_proj, "weight");
        ck_assert_int_eq(tl_copy_into(down, tl_zeros_like(down)), 0);
    }
    tl_tensor *g = tl_module_param(m.shared_gate, "weight");
    ck_assert_int_eq(tl_copy_into(g, tl_zeros_like(g)), 0);
    tl_tensor *x = tl_randn(&rng, TL_SHAPE(3, 4));
    tl_assert_close(moe_forward(&m, x, NULL), tl_mul_scalar(gated_mlp_forward(&m.shared, x), 0.5),
                    1e-6, 1e-7);
    moe_free(&m);
    tl_scope_pop();
}
END_TEST

/* One expert, top-1: the layer is the expert. */
START_TEST(my_single_expert_is_its_mlp)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(22);
    MoEConfig c = {.family = MOE_MIXTRAL, .hidden = 4, .n_experts = 1, .expert_intermediate = 3,
                   .top_k = 1, .norm_topk_prob = true, .act = TL_ACT_SILU,
                   .routed_scaling_factor = 1.0};
    MoE m;
    ck_assert_int_eq(moe_init(&m, &c, &rng), 0);
    tl_tensor *x = tl_randn(&rng, TL_SHAPE(2, 4));
    tl_assert_close(moe_forward(&m, x, NULL), gated_mlp_forward(&m.experts[0], x), 1e-6, 1e-7);
    moe_free(&m);
    tl_scope_pop();
}
END_TEST

/* Experts not chosen get no gradient; the router does. */
START_TEST(my_unchosen_experts_get_no_gradient)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(23);
    MoEConfig c = {.family = MOE_MIXTRAL, .hidden = 4, .n_experts = 4, .expert_intermediate = 3,
                   .top_k = 1, .norm_topk_prob = true, .act = TL_ACT_SILU,
                   .routed_scaling_factor = 1.0};
    MoE m;
    ck_assert_int_eq(moe_init(&m, &c, &rng), 0);
    tl_tensor *r = tl_module_param(m.gate, "weight");   /* logits = 3 x_e */
    ck_assert_int_eq(tl_copy_into(r, tl_mul_scalar(tl_ones_like(r), 0.0)), 0);
    ck_assert_int_eq(tl_set(r, (int64_t[]){2, 0}, 3.0), 0);
    tl_tensor *x = tl_from_f32((const float[]){1, 0, 0, 0}, TL_SHAPE(1, 4));   /* picks expert 2 */
    ck_assert_int_eq(tl_backward(tl_sum_all(moe_forward(&m, x, NULL))), 0);
    for (int e = 0; e < 4; e++) {
        tl_tensor *gw = tl_module_param(m.experts[e].gate_proj, "weight")->grad;
        bool zero = true;
        for (int64_t i = 0; gw && i < tl_numel(gw); i++) zero = zero && tl_item_at(gw, i) == 0;
        ck_assert_msg(zero == (e != 2), "expert %d: gradient %s", e, zero ? "missing" : "present");
    }
    moe_free(&m);
    tl_scope_pop();
}
END_TEST

START_TEST(my_keys_and_counts)
{
    MoEConfig c = {.family = MOE_DEEPSEEK_V3, .hidden = 4, .n_experts = 2, .expert_intermediate = 3,
                   .top_k = 1, .norm_topk_prob = true, .act = TL_ACT_SILU, .shared_intermediate = 3,
                   .routed_scaling_factor = 2.5};
    MoE m;
    ck_assert_int_eq(moe_init(&m, &c, NULL), 0);
    tl_state_dict sd = tl_module_state_dict(m.module);
    ck_assert_str_eq(sd.items[0].name, "experts.0.gate_proj.weight");
    ck_assert_str_eq(sd.items[6].name, "gate.weight");
    ck_assert_str_eq(sd.items[7].name, "gate.e_score_correction_bias");
    ck_assert_str_eq(sd.items[8].name, "shared_experts.gate_proj.weight");
    ck_assert(!sd.items[7].tensor->requires_grad);
    tl_state_dict_free(&sd);
    ck_assert_int_eq(moe_param_count(&m), 2 * 4 + 2 * 3 * 4 * 3 + 3 * 4 * 3);
    moe_free(&m);
    c.family = MOE_MIXTRAL;
    c.shared_intermediate = 0;
    c.routed_scaling_factor = 1.0;
    ck_assert_int_eq(moe_init(&m, &c, NULL), 0);
    ck_assert_ptr_nonnull(tl_module_param(m.module, "experts.1.w3.weight"));
    ck_assert_str_eq(moe_module_name(MOE_MIXTRAL), "block_sparse_moe");
    moe_free(&m);
    ck_assert_int_eq(moe_init(&m, &(MoEConfig){.family = MOE_MIXTRAL, .hidden = 4, .n_experts = 2,
                                               .expert_intermediate = 3, .top_k = 3,
                                               .norm_topk_prob = true, .act = TL_ACT_SILU,
                                               .routed_scaling_factor = 1.0}, NULL), -1);
    tl_clear_error();
}
END_TEST
