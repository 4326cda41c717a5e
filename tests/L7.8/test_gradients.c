/* L7.8 gradients: d sum(y * upstream) for x and every parameter against
 * torch's autograd (golden), and the property behind it: the router and the
 * experts a token chose receive gradient, the others exactly none (an
 * expert that never ran has no .grad, or a zero one), and the correction
 * bias (a buffer in HF) never does. */
#include <check.h>
#include "moe_fixture.h"
#include "tinyllm/autograd.h"

/* The parameter's gradient as a tensor: zeros when none reached it. */
static tl_tensor *grad_or_zero(const tl_tensor *p) {
    return p->grad ? p->grad : tl_zeros(TL_F32, p->ndim, p->shape);
}

START_TEST(test_golden_gradients)
{
    tl_scope_push();
    double rtol = fx_tol("test_golden_gradients", "rtol");
    double atol = fx_tol("test_golden_gradients", "atol");
    tl_checkpoint *fx = tl_fixture_load(MOE_ST);
    const struct { const MoEConfig *cfg; const char *name; } cases[3] = {
        {&FX_MIXTRAL, "mixtral"}, {&FX_QWEN2, "qwen2_moe"}, {&FX_DEEPSEEK, "deepseek_v3"}};
    for (int c = 0; c < 3; c++) {
        MoE m;
        fx_moe(&m, fx, cases[c].cfg, cases[c].name);
        tl_tensor *x = tl_requires_grad(tl_clone(fx_get(fx, cases[c].name, "x")), true);
        tl_tensor *y = moe_forward(&m, x, NULL);
        tl_assert_ok(y);
        ck_assert_msg(tl_backward_with(y, fx_get(fx, cases[c].name, "upstream")) == 0,
                      "backward: %s", tl_error());
        char what[160];
        snprintf(what, sizeof what, "%s: grad x", cases[c].name);
        ck_assert_msg(x->grad != NULL, "%s: no gradient reached x", cases[c].name);
        fx_assert_close(x->grad, fx_get(fx, cases[c].name, "grad_x"), rtol, atol, what);
        tl_state_dict sd = tl_module_state_dict(m.module);
        for (int i = 0; i < sd.count; i++) {
            if (sd.items[i].tensor == m.e_score_correction_bias) continue;
            char key[160];
            snprintf(key, sizeof key, "grad.%s", sd.items[i].name);
            snprintf(what, sizeof what, "%s: grad %s", cases[c].name, sd.items[i].name);
            fx_assert_close(grad_or_zero(sd.items[i].tensor), fx_get(fx, cases[c].name, key), rtol,
                            atol, what);
        }
        tl_state_dict_free(&sd);
        tl_zero_grad(x);
        moe_free(&m);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

static bool all_zero(const tl_tensor *t) {
    for (int64_t i = 0; t && i < tl_numel(t); i++)
        if (tl_item_at(t, i) != 0.0) return false;
    return true;
}

/* One token: exactly its top_k experts (and the router, the shared parts)
 * get gradient; every other expert gets none. */
START_TEST(test_gradients_reach_router_and_only_chosen_experts)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MOE_ST);
    const struct { const MoEConfig *cfg; const char *name; } cases[3] = {
        {&FX_MIXTRAL, "mixtral"}, {&FX_QWEN2, "qwen2_moe"}, {&FX_DEEPSEEK, "deepseek_v3"}};
    for (int c = 0; c < 3; c++) {
        const MoEConfig *cfg = cases[c].cfg;
        MoE m;
        fx_moe(&m, fx, cfg, cases[c].name);
        tl_tensor *x = tl_narrow(tl_reshape(fx_get(fx, cases[c].name, "x"), TL_SHAPE(FX_N, FX_H)),
                                 0, 3, 1);                                   /* token 3 */
        tl_tensor *logits = NULL;
        tl_tensor *y = moe_forward(&m, x, &logits);
        tl_assert_ok(y);
        tl_tensor *idx = NULL, *w = NULL;
        ck_assert_int_eq(moe_route(&m, logits, &idx, &w), 0);
        ck_assert_msg(tl_backward(tl_sum_all(tl_mul(y, y))) == 0, "backward: %s", tl_error());
        ck_assert_msg(!all_zero(tl_module_param(m.gate, "weight")->grad),
                      "%s: no gradient reached the router (the weights must stay in the graph)",
                      cases[c].name);
        for (int64_t e = 0; e < cfg->n_experts; e++) {
            bool chosen = false;
            for (int j = 0; j < cfg->top_k; j++) chosen = chosen || tl_item_at(idx, j) == e;
            tl_tensor *g = tl_module_param(m.experts[e].gate_proj, "weight")->grad;
            tl_tensor *d = tl_module_param(m.experts[e].down_proj, "weight")->grad;
            if (chosen)
                ck_assert_msg(!all_zero(g) && !all_zero(d), "%s: expert %lld was chosen but got "
                              "no gradient", cases[c].name, (long long)e);
            else
                ck_assert_msg(all_zero(g) && all_zero(d), "%s: expert %lld was not chosen but got "
                              "a gradient", cases[c].name, (long long)e);
        }
        if (m.shared.module)
            ck_assert_msg(!all_zero(tl_module_param(m.shared.up_proj, "weight")->grad),
                          "%s: no gradient reached the shared expert", cases[c].name);
        if (m.shared_gate)
            ck_assert_msg(!all_zero(tl_module_param(m.shared_gate, "weight")->grad),
                          "%s: no gradient reached the shared expert gate", cases[c].name);
        if (m.e_score_correction_bias)
            ck_assert_msg(!m.e_score_correction_bias->requires_grad &&
                          all_zero(m.e_score_correction_bias->grad),
                          "deepseek_v3: the correction bias is a buffer: no gradient");
        moe_free(&m);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
