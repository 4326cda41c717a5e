/* My property tests: structure that must hold for any weights. */
#include <check.h>
#include <math.h>
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"
#include "tinyllm/modern/mlp.h"

static void times(GatedMLP *m, const char *name, double c) {
    tl_tensor *p = tl_module_param(m->module, name);
    ck_assert_int_eq(tl_copy_into(p, tl_mul_scalar(p, c)), 0);
}

/* y - b_down is linear in up's output: doubling up's weight and bias doubles it. */
START_TEST(my_linear_in_up)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(11);
    GatedMLP m;
    ck_assert_int_eq(gated_mlp_init(&m, 6, 10, TL_ACT_GELU_PYTORCH_TANH, true, &rng), 0);
    times(&m, "gate_proj.weight", 4.0);
    tl_tensor *x = tl_randn(&rng, TL_SHAPE(3, 6));
    tl_tensor *b = tl_clone(tl_module_param(m.module, "down_proj.bias"));
    tl_tensor *y1 = tl_sub(gated_mlp_forward(&m, x), b);
    times(&m, "up_proj.weight", 2.0);
    times(&m, "up_proj.bias", 2.0);
    tl_tensor *y2 = tl_sub(gated_mlp_forward(&m, x), b);
    tl_assert_ok(y2);
    tl_assert_close(y2, tl_mul_scalar(y1, 2.0), 1e-5, 1e-6);
    /* and with up zeroed only the down bias is left */
    times(&m, "up_proj.weight", 0.0);
    times(&m, "up_proj.bias", 0.0);
    tl_tensor *only_bias = tl_add(tl_zeros(TL_F32, TL_SHAPE(3, 6)), b);
    tl_assert_close(gated_mlp_forward(&m, x), only_bias, 0.0, 0.0);
    gated_mlp_free(&m);
    tl_scope_pop();
}
END_TEST

START_TEST(my_state_dict_is_hfs)
{
    GatedMLP m;
    ck_assert_int_eq(gated_mlp_init(&m, 4, 6, TL_ACT_SILU, true, NULL), 0);
    tl_state_dict sd = tl_module_state_dict(m.module);
    const char *want[6] = {"gate_proj.weight", "gate_proj.bias", "up_proj.weight",
                           "up_proj.bias", "down_proj.weight", "down_proj.bias"};
    ck_assert_int_eq(sd.count, 6);
    for (int i = 0; i < 6; i++) ck_assert_str_eq(sd.items[i].name, want[i]);
    ck_assert_int_eq(sd.items[0].tensor->shape[0], 6);   /* [I, H] */
    ck_assert_int_eq(sd.items[4].tensor->shape[0], 4);   /* [H, I] */
    tl_state_dict_free(&sd);
    ck_assert_ptr_eq(m.gate_proj, tl_module_child(m.module, "gate_proj"));
    ck_assert_ptr_eq(m.up_proj, tl_module_child(m.module, "up_proj"));
    ck_assert_int_eq(gated_mlp_param_count(&m), 3 * 4 * 6 + 2 * 6 + 4);
    ck_assert_int_eq(gated_mlp_param_count(&m), tl_module_param_count(m.module));
    gated_mlp_free(&m);
}
END_TEST

/* gpt-oss: even columns gate, odd columns up, clamps at 7. The pairs (0, 3),
 * (2, 0) and (-10, 10): 0; (0 + 1) 2 sigmoid(3.404); (7 + 1) (-10) sigmoid(-17.02). */
START_TEST(my_gpt_oss_pairs)
{
    tl_scope_push();
    const float row[6] = {0, 3, 2, 0, -10, 10};
    double s = 1 / (1 + exp(-1.702 * 2)), t = 1 / (1 + exp(1.702 * 10));
    const float want[3] = {0, (float)(1 * 2 * s), (float)(8 * -10 * t)};
    tl_tensor *h = gpt_oss_swiglu(tl_from_f32(row, TL_SHAPE(1, 6)), 1.702, 7.0);
    tl_assert_ok(h);
    tl_assert_close(h, tl_from_f32(want, TL_SHAPE(1, 3)), 1e-5, 1e-7);
    tl_scope_pop();
}
END_TEST
