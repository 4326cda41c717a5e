/* My golden tests against the course's oracle (HF's DeepseekV3Attention). */
#include "my_mla.h"

START_TEST(my_golden_every_layer_both_paths)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    double rt = my_tol("test_golden_outputs_match_hf", "rtol");
    double at = my_tol("test_golden_outputs_match_hf", "atol");
    tl_tensor *x = tl_fixture_tensor(fx, "x");
    for (int i = 0; i < 5; i++) {
        MLAttention a;
        my_layer(&a, fx, &MY_CASES[i]);
        char key[64];
        snprintf(key, sizeof key, "%s.y", MY_CASES[i].name);
        for (int p = 0; p < 2; p++) {
            a.path = p ? MLA_PATH_ABSORBED : MLA_PATH_NAIVE;
            tl_tensor *y = mla_forward(&a, x, my_positions(fx), NULL, NULL, 0);
            tl_assert_ok(y);
            tl_assert_close(y, tl_fixture_tensor(fx, key), rt, at);
        }
        mla_free(&a);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(my_golden_gradients_yarn_with_biases)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    double rt = my_tol("test_golden_gradients_match_hf", "rtol");
    double at = my_tol("test_golden_gradients_match_hf", "atol");
    MLAttention a;
    my_layer(&a, fx, &MY_CASES[4]);
    tl_tensor *x = tl_requires_grad(tl_clone(tl_fixture_tensor(fx, "x")), true);
    tl_tensor *y = mla_forward(&a, x, my_positions(fx), NULL, NULL, 0);
    tl_assert_ok(y);
    ck_assert_int_eq(tl_backward_with(y, tl_fixture_tensor(fx, "upstream")), 0);
    tl_assert_close(x->grad, tl_fixture_tensor(fx, "yarn_bias.grad.x"), rt, at);
    tl_state_dict sd = tl_module_state_dict(a.module);
    for (int i = 0; i < sd.count; i++) {
        char key[128];
        snprintf(key, sizeof key, "yarn_bias.grad.%s", sd.items[i].name);
        ck_assert_msg(sd.items[i].tensor->grad != NULL, "no gradient for %s", sd.items[i].name);
        tl_assert_close(sd.items[i].tensor->grad, tl_fixture_tensor(fx, key), rt, at);
    }
    tl_state_dict_free(&sd);
    mla_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(my_padding_mask_gives_no_nan)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    double rt = my_tol("test_golden_explicit_mask", "rtol");
    double at = my_tol("test_golden_explicit_mask", "atol");
    MLAttention a;
    my_layer(&a, fx, &MY_CASES[0]);
    tl_tensor *y = mla_forward(&a, tl_fixture_tensor(fx, "x"), my_positions(fx),
                               tl_fixture_tensor(fx, "masked.mask"), NULL, 0);
    tl_assert_ok(y);
    for (int64_t i = 0; i < tl_numel(y); i++) ck_assert(isfinite(tl_item_at(y, i)));
    tl_assert_close(y, tl_fixture_tensor(fx, "lora_interleave.masked.y"), rt, at);
    mla_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
