/* L7.2 gradcheck: autograd's gradients of x and of every weight and bias
 * agree with central differences, for the smooth activations (relu and
 * relu2 have a kink at 0, where differences disagree by design), and for
 * gpt-oss's SwiGLU away from its clamps. */
#include <check.h>
#include "mlp_fixture.h"
#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"

/* inputs[0] = x; inputs[1..6] are the MLP's own parameters, which the
 * gradcheck perturbs in place, so the forward reads them through m. */
static tl_tensor *mlp_of_inputs(tl_tensor *const *inputs, void *ctx) {
    return gated_mlp_forward((const GatedMLP *)ctx, inputs[0]);
}

static tl_tensor *swiglu_of_inputs(tl_tensor *const *inputs, void *ctx) {
    (void)ctx;
    return gpt_oss_swiglu(inputs[0], 1.702, 7.0);
}

START_TEST(test_gradcheck_x_and_every_weight)
{
    tl_scope_push();
    double tol = fx_tol("test_gradcheck_x_and_every_weight", "max_rel_error");
    const tl_activation smooth[6] = {TL_ACT_SILU, TL_ACT_GELU, TL_ACT_GELU_PYTORCH_TANH,
                                     TL_ACT_GELU_FAST, TL_ACT_QUICK_GELU, TL_ACT_SWISH};
    tl_pcg32 rng = tl_test_rng(7202);
    for (int k = 0; k < 6; k++) {
        GatedMLP m;
        ck_assert_msg(gated_mlp_init(&m, 4, 6, smooth[k], true, &rng) == 0, "gated_mlp_init: %s",
                      tl_error());
        tl_tensor *inputs[7] = {tl_requires_grad(tl_randn(&rng, TL_SHAPE(2, 3, 4)), true)};
        for (int p = 0; p < 6; p++) inputs[1 + p] = tl_module_param(m.module, FX_PARAMS[p]);
        /* scale the gate so its pre-activations reach the curved part */
        ck_assert_int_eq(tl_copy_into(inputs[1], tl_mul_scalar(inputs[1], 3.0)), 0);
        tl_assert_gradcheck(mlp_of_inputs, &m, inputs, 7, tol);
        tl_zero_grad(inputs[0]);
        gated_mlp_free(&m);
    }
    /* gpt-oss: values in (-5, 5) keep clear of both clamps (+-7). */
    tl_tensor *gate_up[1] = {tl_requires_grad(tl_rand_uniform(&rng, -5, 5, TL_SHAPE(3, 8)), true)};
    tl_assert_gradcheck(swiglu_of_inputs, NULL, gate_up, 1, tol);
    tl_zero_grad(gate_up[0]);
    tl_scope_pop();
}
END_TEST
