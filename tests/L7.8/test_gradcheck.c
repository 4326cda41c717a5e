/* L7.8 gradcheck: autograd's gradients of x, the router and every expert
 * agree with central differences, for Qwen2-MoE (shared expert and gate)
 * and DeepSeek-V3 (sigmoid, groups, scaling). The routing is a discrete
 * choice: the inputs are set by hand so that every margin (about 1) dwarfs
 * the step (1e-3) and no perturbation changes it. */
#include <check.h>
#include "moe_fixture.h"
#include "tinyllm/autograd.h"

/* inputs[0] = x; the rest are the MoE's own parameters, perturbed in place. */
static tl_tensor *moe_of_inputs(tl_tensor *const *inputs, void *ctx) {
    return moe_forward((const MoE *)ctx, inputs[0], NULL);
}

/* x [2, 4], and a router whose logits are 2 x_e (one expert per axis). */
static void check_family(const MoEConfig *cfg, tl_pcg32 *rng, double tol) {
    MoE m;
    ck_assert_msg(moe_init(&m, cfg, rng) == 0, "moe_init: %s", tl_error());
    const float router[16] = {2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2};
    tl_tensor *w = tl_module_param(m.gate, "weight");
    ck_assert_int_eq(tl_copy_into(w, tl_from_f32(router, TL_SHAPE(cfg->n_experts, 4))), 0);
    const float xs[8] = {1.5f, 0.5f, -0.5f, -1.5f, -1.0f, 1.0f, 2.0f, 0.0f};
    tl_tensor *inputs[64] = {tl_requires_grad(tl_from_f32(xs, TL_SHAPE(2, 4)), true)};
    tl_state_dict sd = tl_module_state_dict(m.module);
    int n = 1;
    for (int i = 0; i < sd.count && n < 64; i++)
        if (sd.items[i].tensor->requires_grad) inputs[n++] = sd.items[i].tensor;
    tl_state_dict_free(&sd);
    tl_assert_gradcheck(moe_of_inputs, &m, inputs, n, tol);
    tl_zero_grad(inputs[0]);
    moe_free(&m);
}

START_TEST(test_gradcheck_router_and_experts)
{
    tl_scope_push();
    double tol = fx_tol("test_gradcheck_router_and_experts", "max_rel_error");
    tl_pcg32 rng = tl_test_rng(7803);
    MoEConfig qwen = {.family = MOE_QWEN2_MOE, .hidden = 4, .n_experts = 4,
                      .expert_intermediate = 3, .top_k = 2, .norm_topk_prob = true,
                      .act = TL_ACT_SILU, .shared_intermediate = 3, .shared_expert_gate = true,
                      .routed_scaling_factor = 1.0};
    check_family(&qwen, &rng, tol);
    qwen.norm_topk_prob = false;
    check_family(&qwen, &rng, tol);
    MoEConfig ds = {.family = MOE_DEEPSEEK_V3, .hidden = 4, .n_experts = 4,
                    .expert_intermediate = 3, .top_k = 2, .norm_topk_prob = true,
                    .act = TL_ACT_SILU, .shared_intermediate = 3, .n_group = 2, .topk_group = 1,
                    .routed_scaling_factor = 2.5};
    check_family(&ds, &rng, tol);
    tl_scope_pop();
}
END_TEST
