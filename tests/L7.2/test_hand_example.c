/* L7.2 section 3, by hand: hidden 2, intermediate 3, x = [1, 2],
 *
 *   W_gate = [[2, 0], [-1, 1], [1, -1]]  ->  g = W_gate x = [2, 1, -1]
 *   W_up   = [[2, 0], [0, 1], [1, 1]]    ->  u = W_up x   = [2, 2, 3]
 *   W_down = [[1, 1, 1], [1, -1, 0.5]]
 *
 *   relu:  act(g) = [2, 1, 0], h = act(g) * u = [4, 2, 0], y = W_down h = [6, 2]
 *   relu2: act(g) = [4, 1, 0], h = [8, 2, 0],              y = [10, 6]
 *   with the down bias [0.5, -0.5], relu gives [6.5, 1.5]
 *
 * relu and relu2 are exact in float32. For silu and the two gelus the
 * expected values are computed here, in double, from the formulas. */
#include <check.h>
#include <math.h>
#include "mlp_fixture.h"
#include "tinyllm/ops.h"

static const float HAND_X[2] = {1, 2};
static const float W_GATE[6] = {2, 0, -1, 1, 1, -1};
static const float W_UP[6] = {2, 0, 0, 1, 1, 1};
static const float W_DOWN[6] = {1, 1, 1, 1, -1, 0.5f};
static const float B_DOWN[2] = {0.5f, -0.5f};

static double sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }
static double act_double(tl_activation act, double v) {
    switch (act) {
    case TL_ACT_SILU: return v * sigmoid(v);
    case TL_ACT_GELU: return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    case TL_ACT_GELU_PYTORCH_TANH:
        return 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    default: return NAN;
    }
}

/* The hand MLP with the given activation, the down bias when asked. */
static tl_tensor *hand_forward(tl_activation act, bool down_bias) {
    GatedMLP m;
    ck_assert_msg(gated_mlp_init(&m, 2, 3, act, down_bias, NULL) == 0, "gated_mlp_init: %s",
                  tl_error());
    ck_assert_int_eq(tl_copy_into(tl_module_param(m.module, "gate_proj.weight"),
                                  tl_from_f32(W_GATE, TL_SHAPE(3, 2))), 0);
    ck_assert_int_eq(tl_copy_into(tl_module_param(m.module, "up_proj.weight"),
                                  tl_from_f32(W_UP, TL_SHAPE(3, 2))), 0);
    ck_assert_int_eq(tl_copy_into(tl_module_param(m.module, "down_proj.weight"),
                                  tl_from_f32(W_DOWN, TL_SHAPE(2, 3))), 0);
    if (down_bias)   /* the gate and up biases stay zero */
        ck_assert_int_eq(tl_copy_into(tl_module_param(m.module, "down_proj.bias"),
                                      tl_from_f32(B_DOWN, TL_SHAPE(2))), 0);
    tl_tensor *y = gated_mlp_forward(&m, tl_from_f32(HAND_X, TL_SHAPE(2)));
    ck_assert_msg(y != NULL, "%s: gated_mlp_forward returned NULL: %s", activation_name(act),
                  tl_error());
    y = tl_clone(y);   /* still valid after the module is gone */
    gated_mlp_free(&m);
    return y;
}

START_TEST(test_hand_example_gated_product)
{
    tl_scope_push();
    double rtol = fx_tol("test_hand_example_gated_product", "rtol");
    double atol = fx_tol("test_hand_example_gated_product", "atol");
    fx_assert_close(hand_forward(TL_ACT_RELU, false),
                    tl_from_f32((const float[]){6, 2}, TL_SHAPE(2)), rtol, atol,
                    "relu: W_down (relu(g) * u)");
    fx_assert_close(hand_forward(TL_ACT_RELU2, false),
                    tl_from_f32((const float[]){10, 6}, TL_SHAPE(2)), rtol, atol,
                    "relu2: W_down (relu(g)^2 * u)");
    fx_assert_close(hand_forward(TL_ACT_RELU, true),
                    tl_from_f32((const float[]){6.5f, 1.5f}, TL_SHAPE(2)), rtol, atol,
                    "relu with the down bias [0.5, -0.5]");

    const double g[3] = {2, 1, -1}, u[3] = {2, 2, 3};
    const tl_activation smooth[3] = {TL_ACT_SILU, TL_ACT_GELU, TL_ACT_GELU_PYTORCH_TANH};
    for (int k = 0; k < 3; k++) {
        double h[3];
        for (int i = 0; i < 3; i++) h[i] = act_double(smooth[k], g[i]) * u[i];
        const float want[2] = {(float)(h[0] + h[1] + h[2]), (float)(h[0] - h[1] + 0.5 * h[2])};
        char what[96];
        snprintf(what, sizeof what, "%s: W_down (act(g) * u), act on the gate only",
                 activation_name(smooth[k]));
        fx_assert_close(hand_forward(smooth[k], false), tl_from_f32(want, TL_SHAPE(2)), rtol,
                        atol, what);
    }
    tl_scope_pop();
}
END_TEST
