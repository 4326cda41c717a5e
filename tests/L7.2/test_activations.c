/* L7.2: the activations, by HF's name. Each name maps to its own value and
 * back; each activation matches torch's value and derivative at chosen
 * points (0, +-1e-3, +-0.5, +-1, +-2.7, +-3, +-20, +-100: tiny values where
 * relative accuracy counts, the largest gaps between the erf and tanh forms
 * of gelu, and values where a naive formula overflows, exp(100) being inf in
 * float32), and its formula, computed here in double, on a grid. */
#include <check.h>
#include <math.h>
#include "mlp_fixture.h"
#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"

START_TEST(test_activation_names_round_trip)
{
    for (int k = 0; k < FX_N_ACTS; k++) {
        tl_activation a = TL_ACT_COUNT;
        ck_assert_msg(activation_from_name(FX_ACTS[k].name, &a) == 0, "%s: %s", FX_ACTS[k].name,
                      tl_error());
        ck_assert_msg(a == FX_ACTS[k].act, "activation_from_name(\"%s\") gave %d, expected %d",
                      FX_ACTS[k].name, (int)a, (int)FX_ACTS[k].act);
        const char *name = activation_name(a);
        ck_assert_msg(name && strcmp(name, FX_ACTS[k].name) == 0,
                      "activation_name(%d) is \"%s\", expected \"%s\" (a config written back "
                      "must keep its hidden_act)", (int)a, name ? name : "(NULL)", FX_ACTS[k].name);
    }
    ck_assert_int_eq(TL_ACT_COUNT, FX_N_ACTS);
}
END_TEST

/* Each activation at the fixture's points against torch (the oracle). */
static void check_points(bool gradients) {
    tl_scope_push();
    const char *test = gradients ? "test_activation_gradients_at_chosen_points"
                                 : "test_activation_values_at_chosen_points";
    double rtol = fx_tol(test, "rtol"), atol = fx_tol(test, "atol");
    tl_checkpoint *fx = tl_fixture_load(MLP_ST);
    tl_tensor *pts = tl_fixture_tensor(fx, "points.x");
    for (int k = 0; k < FX_N_ACTS; k++) {
        tl_tensor *x = tl_requires_grad(tl_clone(pts), true);
        tl_tensor *y = activation_forward(FX_ACTS[k].act, x);
        char name[64], what[96];
        snprintf(name, sizeof name, "points.%s.%s", FX_ACTS[k].name, gradients ? "grad" : "y");
        snprintf(what, sizeof what, "%s %s at the chosen points", FX_ACTS[k].name,
                 gradients ? "derivative" : "value");
        if (!gradients) {
            fx_assert_close(y, tl_fixture_tensor(fx, name), rtol, atol, what);
        } else {
            tl_assert_ok(y);
            ck_assert_msg(tl_backward(tl_sum_all(y)) == 0, "backward: %s", tl_error());
            ck_assert_msg(x->grad != NULL, "%s: no gradient reached x", FX_ACTS[k].name);
            fx_assert_close(x->grad, tl_fixture_tensor(fx, name), rtol, atol, what);
        }
        for (int64_t i = 0; y && i < tl_numel(y); i++)
            ck_assert_msg(isfinite(tl_item_at(y, i)), "%s(%g) is %g: it must stay finite",
                          FX_ACTS[k].name, tl_item_at(pts, i), tl_item_at(y, i));
        tl_zero_grad(x);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}

START_TEST(test_activation_values_at_chosen_points) { check_points(false); }
END_TEST

START_TEST(test_activation_gradients_at_chosen_points) { check_points(true); }
END_TEST

static double sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }

/* HF's formula for each activation, in double. */
static double formula(tl_activation act, double v) {
    switch (act) {
    case TL_ACT_SILU:
    case TL_ACT_SWISH: return v * sigmoid(v);
    case TL_ACT_GELU: return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    case TL_ACT_GELU_PYTORCH_TANH:
    case TL_ACT_GELU_NEW:
        return 0.5 * v * (1.0 + tanh(sqrt(2.0 / M_PI) * (v + 0.044715 * pow(v, 3.0))));
    case TL_ACT_GELU_FAST:
        return 0.5 * v * (1.0 + tanh(v * 0.7978845608 * (1.0 + 0.044715 * v * v)));
    case TL_ACT_QUICK_GELU: return v * sigmoid(1.702 * v);
    case TL_ACT_RELU: return v > 0 ? v : 0.0;
    case TL_ACT_RELU2: return v > 0 ? v * v : 0.0;
    default: return NAN;
    }
}

enum { GRID = 401 };   /* -10 to 10 in steps of 0.05 */

START_TEST(test_activation_formulas_in_double)
{
    tl_scope_push();
    double rtol = fx_tol("test_activation_formulas_in_double", "rtol");
    double atol = fx_tol("test_activation_formulas_in_double", "atol");
    float xs[GRID], want[GRID];
    for (int i = 0; i < GRID; i++) xs[i] = (float)(-10.0 + 0.05 * i);
    tl_tensor *x = tl_from_f32(xs, TL_SHAPE(GRID));
    for (int k = 0; k < FX_N_ACTS; k++) {
        for (int i = 0; i < GRID; i++) want[i] = (float)formula(FX_ACTS[k].act, xs[i]);
        char what[96];
        snprintf(what, sizeof what, "%s against its formula in double on [-10, 10]",
                 FX_ACTS[k].name);
        fx_assert_close(activation_forward(FX_ACTS[k].act, x), tl_from_f32(want, TL_SHAPE(GRID)),
                        rtol, atol, what);
    }
    tl_scope_pop();
}
END_TEST
