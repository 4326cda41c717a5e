/* L7.2 golden: outputs and gradients against the oracle (oracle/L7.2),
 * which runs transformers 5's LlamaMLP with each of ACT2FN's nine
 * activations, with and without mlp_bias, in float32 on x [2, 3, 8]
 * (hidden 8, intermediate 12, gate pre-activations over about [-8, 10]). */
#include <check.h>
#include "mlp_fixture.h"
#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"

static tl_tensor *golden(const tl_checkpoint *fx, int k, bool bias, const char *what) {
    char name[96];
    snprintf(name, sizeof name, "%s.%s.%s", FX_ACTS[k].name, bias ? "bias" : "nobias", what);
    return tl_fixture_tensor(fx, name);
}

START_TEST(test_golden_outputs_match_hf)
{
    tl_scope_push();
    double rtol = fx_tol("test_golden_outputs_match_hf", "rtol");
    double atol = fx_tol("test_golden_outputs_match_hf", "atol");
    tl_checkpoint *fx = tl_fixture_load(MLP_ST);
    tl_tensor *x = tl_fixture_tensor(fx, "x");
    for (int k = 0; k < FX_N_ACTS; k++) {
        for (int b = 0; b < 2; b++) {
            GatedMLP m;
            fx_mlp(&m, fx, FX_ACTS[k].act, b == 1);
            char what[96];
            snprintf(what, sizeof what, "%s, %s: y", FX_ACTS[k].name, b ? "mlp_bias" : "no bias");
            fx_assert_close(gated_mlp_forward(&m, x), golden(fx, k, b == 1, "y"), rtol, atol, what);
            gated_mlp_free(&m);
        }
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_golden_gradients_match_hf)
{
    tl_scope_push();
    double rtol = fx_tol("test_golden_gradients_match_hf", "rtol");
    double atol = fx_tol("test_golden_gradients_match_hf", "atol");
    tl_checkpoint *fx = tl_fixture_load(MLP_ST);
    tl_tensor *upstream = tl_fixture_tensor(fx, "upstream");
    for (int k = 0; k < FX_N_ACTS; k++) {
        for (int b = 0; b < 2; b++) {
            GatedMLP m;
            fx_mlp(&m, fx, FX_ACTS[k].act, b == 1);
            tl_tensor *x = tl_requires_grad(tl_clone(tl_fixture_tensor(fx, "x")), true);
            tl_tensor *y = gated_mlp_forward(&m, x);
            tl_assert_ok(y);
            ck_assert_msg(tl_backward_with(y, upstream) == 0, "backward: %s", tl_error());
            char what[128];
            snprintf(what, sizeof what, "%s, %s: grad x", FX_ACTS[k].name,
                     b ? "mlp_bias" : "no bias");
            ck_assert_msg(x->grad != NULL, "%s: no gradient reached x", what);
            fx_assert_close(x->grad, golden(fx, k, b == 1, "grad_x"), rtol, atol, what);
            for (int p = 0; p < 6; p++) {
                if (b == 0 && strstr(FX_PARAMS[p], ".bias")) continue;
                tl_tensor *param = tl_module_param(m.module, FX_PARAMS[p]);
                char gname[64];
                snprintf(gname, sizeof gname, "grad.%s", FX_PARAMS[p]);
                snprintf(what, sizeof what, "%s, %s: grad %s", FX_ACTS[k].name,
                         b ? "mlp_bias" : "no bias", FX_PARAMS[p]);
                ck_assert_msg(param && param->grad, "%s: no gradient reached it", what);
                fx_assert_close(param->grad, golden(fx, k, b == 1, gname), rtol, atol, what);
            }
            tl_zero_grad(x);
            gated_mlp_free(&m);
        }
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
