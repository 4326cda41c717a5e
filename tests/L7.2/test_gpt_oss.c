/* L7.2: gpt-oss's clamped SwiGLU over an interleaved gate_up. Even columns
 * are the gate, odd ones the up projection; the gate is clamped from above
 * at limit, up to [-limit, limit]; h = (up + 1) * g * sigmoid(alpha g).
 * By hand on one row, then against the oracle (GptOssExperts._apply_gate)
 * with values up to +-13, so both clamps act, output and gradient. */
#include <check.h>
#include <math.h>
#include "mlp_fixture.h"
#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"

static double sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }

START_TEST(test_gpt_oss_interleave_and_clamps)
{
    tl_scope_push();
    /* (gate, up) pairs: (0, 5) gives 0 whatever up is; (100, -100) clamps to
     * (7, -7); (-9, 9) keeps the gate (no lower clamp) and clamps up to 7;
     * (1, 0.5) is inside both. */
    const float row[8] = {0, 5, 100, -100, -9, 9, 1, 0.5f};
    const double g[4] = {0, 7, -9, 1}, u[4] = {5, -7, 7, 0.5};
    float want[4];
    for (int i = 0; i < 4; i++) want[i] = (float)((u[i] + 1) * g[i] * sigmoid(1.702 * g[i]));
    tl_tensor *h = gpt_oss_swiglu(tl_from_f32(row, TL_SHAPE(1, 8)), 1.702, 7.0);
    fx_assert_close(h, tl_from_f32(want, TL_SHAPE(1, 4)), 1e-6, 1e-6,
                    "gpt_oss_swiglu on (gate, up) pairs (0, 5), (100, -100), (-9, 9), (1, 0.5)");
    tl_scope_pop();
}
END_TEST

START_TEST(test_golden_gpt_oss_swiglu)
{
    tl_scope_push();
    double rtol = fx_tol("test_golden_gpt_oss_swiglu", "rtol");
    double atol = fx_tol("test_golden_gpt_oss_swiglu", "atol");
    double alpha = tl_fixture_number(MLP_JSON, "gpt_oss.alpha");
    double limit = tl_fixture_number(MLP_JSON, "gpt_oss.limit");
    tl_checkpoint *fx = tl_fixture_load(MLP_ST);
    tl_tensor *gate_up = tl_requires_grad(tl_clone(tl_fixture_tensor(fx, "gpt_oss.gate_up")), true);
    tl_tensor *h = gpt_oss_swiglu(gate_up, alpha, limit);
    fx_assert_close(h, tl_fixture_tensor(fx, "gpt_oss.y"), rtol, atol, "gpt-oss h");
    ck_assert_msg(tl_backward_with(h, tl_fixture_tensor(fx, "gpt_oss.upstream")) == 0,
                  "backward: %s", tl_error());
    ck_assert_msg(gate_up->grad != NULL, "no gradient reached gate_up");
    fx_assert_close(gate_up->grad, tl_fixture_tensor(fx, "gpt_oss.grad_gate_up"), rtol, atol,
                    "gpt-oss d h / d gate_up (zero where a clamp acts)");
    tl_zero_grad(gate_up);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
