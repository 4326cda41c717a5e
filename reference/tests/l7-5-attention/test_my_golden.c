/* My golden tests against the course's oracle (HF's eager attention). */
#include "my_attn.h"

START_TEST(my_golden_every_layer_kind)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    double rt = my_tol("test_golden_outputs_match_hf", "rtol");
    double at = my_tol("test_golden_outputs_match_hf", "atol");
    struct { const char *name; int64_t hq, hkv; bool qb, ob; } cases[5] = {
        {"mha", 2, 2, false, false}, {"gqa", 6, 2, false, false}, {"mqa", 4, 1, false, false},
        {"qwen2", 4, 2, true, false}, {"llama_bias", 4, 2, true, true}};
    for (int i = 0; i < 5; i++) {
        GQAttention a;
        my_layer(&a, fx, cases[i].name, cases[i].hq, cases[i].hkv, cases[i].qb, cases[i].ob);
        char key[64];
        snprintf(key, sizeof key, "%s.y", cases[i].name);
        tl_tensor *x = tl_fixture_tensor(fx, "x");
        tl_tensor *y = gqa_forward(&a, x, my_positions(fx), NULL, NULL, 0);
        tl_assert_ok(y);
        tl_assert_close(y, tl_fixture_tensor(fx, key), rt, at);
        gqa_free(&a);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(my_golden_gradients_with_biases)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    double rt = my_tol("test_golden_gradients_match_hf", "rtol");
    double at = my_tol("test_golden_gradients_match_hf", "atol");
    GQAttention a;
    my_layer(&a, fx, "llama_bias", 4, 2, true, true);
    tl_tensor *x = tl_requires_grad(tl_clone(tl_fixture_tensor(fx, "x")), true);
    tl_tensor *y = gqa_forward(&a, x, my_positions(fx), NULL, NULL, 0);
    tl_assert_ok(y);
    ck_assert_int_eq(tl_backward_with(y, tl_fixture_tensor(fx, "upstream")), 0);
    tl_assert_close(x->grad, tl_fixture_tensor(fx, "llama_bias.grad.x"), rt, at);
    tl_tensor *ob = tl_module_param(a.o_proj, "bias");
    ck_assert_ptr_nonnull(ob->grad);
    tl_assert_close(ob->grad, tl_fixture_tensor(fx, "llama_bias.grad.o_proj.bias"), rt, at);
    tl_tensor *kw = tl_module_param(a.k_proj, "weight");
    tl_assert_close(kw->grad, tl_fixture_tensor(fx, "llama_bias.grad.k_proj.weight"), rt, at);
    tl_zero_grad(x);
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* The padding mask hides keys the causal mask would show. */
START_TEST(my_golden_padding_mask)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    GQAttention a;
    my_layer(&a, fx, "gqa", 6, 2, false, false);
    tl_tensor *y = gqa_forward(&a, tl_fixture_tensor(fx, "x"), my_positions(fx),
                               tl_fixture_tensor(fx, "masked.mask"), NULL, 0);
    tl_assert_ok(y);
    tl_assert_close(y, tl_fixture_tensor(fx, "gqa.masked.y"),
                    my_tol("test_golden_explicit_mask", "rtol"),
                    my_tol("test_golden_explicit_mask", "atol"));
    for (int64_t i = 0; i < tl_numel(y); i++) ck_assert(isfinite(tl_item_at(y, i)));
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
