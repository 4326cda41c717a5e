/* L7.2 property: the gated product's structure, y = W_d (act(g) * u) + b_d
 * with g = W_g x + b_g and u = W_u x + b_u. Zeroing up's output (its weight
 * and bias) leaves only the down bias; y - b_d is linear in u, so scaling
 * up's weight and bias by 2 doubles it; scaling down's weight by 2 doubles
 * y - b_d; and the gate is the only nonlinear path, so scaling the gate's
 * weight by 2 does NOT double it. Powers of two keep every product exact. */
#include <check.h>
#include "mlp_fixture.h"
#include "tinyllm/ops.h"

static void scale_param(const GatedMLP *m, const char *name, double c) {
    tl_tensor *p = tl_module_param(m->module, name);
    ck_assert_msg(p != NULL, "no parameter %s: %s", name, tl_error());
    ck_assert_int_eq(tl_copy_into(p, tl_mul_scalar(p, c)), 0);
}

/* y - b_d for the fixture's MLP after the scalings given (NULL: none). */
static tl_tensor *without_down_bias(const tl_checkpoint *fx, tl_activation act,
                                    const char *const *names, const double *scales, int n) {
    GatedMLP m;
    fx_mlp(&m, fx, act, true);
    for (int i = 0; i < n; i++) scale_param(&m, names[i], scales[i]);
    tl_tensor *y = gated_mlp_forward(&m, tl_fixture_tensor(fx, "x"));
    tl_assert_ok(y);
    y = tl_sub(y, tl_clone(tl_module_param(m.module, "down_proj.bias")));
    gated_mlp_free(&m);
    return y;
}

START_TEST(test_gated_product_structure)
{
    tl_scope_push();
    double rtol = fx_tol("test_gated_product_structure", "rtol");
    double atol = fx_tol("test_gated_product_structure", "atol");
    tl_checkpoint *fx = tl_fixture_load(MLP_ST);
    const tl_activation acts[3] = {TL_ACT_SILU, TL_ACT_GELU_PYTORCH_TANH, TL_ACT_RELU2};
    for (int k = 0; k < 3; k++) {
        tl_activation a = acts[k];
        const char *an = activation_name(a);
        char what[128];
        tl_tensor *base = without_down_bias(fx, a, NULL, NULL, 0);
        tl_assert_ok(base);

        const char *up[2] = {"up_proj.weight", "up_proj.bias"};
        tl_tensor *zero_up = without_down_bias(fx, a, up, (const double[]){0.0, 0.0}, 2);
        snprintf(what, sizeof what, "%s: up's output zeroed leaves only the down bias", an);
        fx_assert_close(zero_up, tl_zeros_like(base), 0.0, 0.0, what);

        tl_tensor *up2 = without_down_bias(fx, a, up, (const double[]){2.0, 2.0}, 2);
        snprintf(what, sizeof what, "%s: up (weight and bias) x2 doubles y - b_d", an);
        fx_assert_close(up2, tl_mul_scalar(base, 2.0), rtol, atol, what);

        const char *down[1] = {"down_proj.weight"};
        tl_tensor *down2 = without_down_bias(fx, a, down, (const double[]){2.0}, 1);
        snprintf(what, sizeof what, "%s: down's weight x2 doubles y - b_d", an);
        fx_assert_close(down2, tl_mul_scalar(base, 2.0), rtol, atol, what);

        /* Only the gate goes through the activation: doubling it changes y by
         * another factor than 2 (relu2 would give 4 with a zero gate bias, but
         * the bias is not zero here). */
        const char *gate[1] = {"gate_proj.weight"};
        tl_tensor *gate2 = without_down_bias(fx, a, gate, (const double[]){2.0}, 1);
        char msg[768];
        snprintf(what, sizeof what, "%s: the gate must be the nonlinear path", an);
        ck_assert_msg(!tl_close_report(gate2, tl_mul_scalar(base, 2.0), 1e-3, 1e-3, msg,
                                       sizeof msg), "%s: doubling the gate's weight doubled y",
                      what);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
