/* My hand examples: an MLP small enough to work on paper. hidden 2,
 * intermediate 2, x = [2, 1], W_gate = [[1, 2], [3, 1]], W_up = [[1, 0],
 * [1, 1]], W_down = [[1, 1], [0.5, -1]]:
 *   g = [4, 7], u = [2, 3]
 *   relu:  h = [8, 21],   y = [29, -17]   (+ down bias [1, -1]: [30, -18])
 *   relu2: h = [32, 147], y = [179, -131] */
#include <check.h>
#include <math.h>
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"
#include "tinyllm/modern/mlp.h"

static void set(GatedMLP *m, const char *name, const float *v, int64_t r, int64_t c) {
    tl_tensor *p = tl_module_param(m->module, name);
    ck_assert_ptr_nonnull(p);
    tl_tensor *src = c ? tl_from_f32(v, TL_SHAPE(r, c)) : tl_from_f32(v, TL_SHAPE(r));
    ck_assert_int_eq(tl_copy_into(p, src), 0);
}

static GatedMLP paper_mlp(tl_activation act, bool bias) {
    GatedMLP m;
    ck_assert_msg(gated_mlp_init(&m, 2, 2, act, bias, NULL) == 0, "%s", tl_error());
    set(&m, "gate_proj.weight", (const float[]){1, 2, 3, 1}, 2, 2);
    set(&m, "up_proj.weight", (const float[]){1, 0, 1, 1}, 2, 2);
    set(&m, "down_proj.weight", (const float[]){1, 1, 0.5f, -1}, 2, 2);
    return m;
}

static void expect(tl_activation act, bool bias, const float *want) {
    GatedMLP m = paper_mlp(act, bias);
    if (bias) set(&m, "down_proj.bias", (const float[]){1, -1}, 2, 0);
    tl_tensor *y = gated_mlp_forward(&m, tl_from_f32((const float[]){2, 1}, TL_SHAPE(2)));
    tl_assert_ok(y);
    tl_assert_close(y, tl_from_f32(want, TL_SHAPE(2)), 1e-6, 1e-5);
    gated_mlp_free(&m);
}

START_TEST(my_relu_and_relu2_by_hand)
{
    tl_scope_push();
    expect(TL_ACT_RELU, false, (const float[]){29, -17});
    expect(TL_ACT_RELU2, false, (const float[]){179, -131});
    expect(TL_ACT_RELU, true, (const float[]){30, -18});   /* + the down bias [1, -1] */
    tl_scope_pop();
}
END_TEST

/* silu by hand: h = [4 sigmoid(4) * 2, 7 sigmoid(7) * 3]. */
START_TEST(my_silu_by_hand)
{
    tl_scope_push();
    double s4 = 1 / (1 + exp(-4.0)), s7 = 1 / (1 + exp(-7.0));
    double h0 = 4 * s4 * 2, h1 = 7 * s7 * 3;
    const float want[2] = {(float)(h0 + h1), (float)(0.5 * h0 - h1)};
    expect(TL_ACT_SILU, false, want);
    tl_scope_pop();
}
END_TEST

/* The gate is where the nonlinearity goes: with a negative gate and relu the
 * unit is off whatever up says; with x = [-1, 0]: g = [-1, -3] -> y = 0. */
START_TEST(my_negative_gate_switches_relu_off)
{
    tl_scope_push();
    GatedMLP m = paper_mlp(TL_ACT_RELU, false);
    tl_tensor *y = gated_mlp_forward(&m, tl_from_f32((const float[]){-1, 0}, TL_SHAPE(2)));
    tl_assert_ok(y);
    tl_assert_close(y, tl_zeros(TL_F32, TL_SHAPE(2)), 0.0, 0.0);
    gated_mlp_free(&m);
    tl_scope_pop();
}
END_TEST
