/* L7.5 golden: outputs and gradients against the oracle (oracle/L7.5), which
 * runs transformers 5's LlamaAttention / Qwen2Attention eager path in float32
 * on x [2, 6, 16] at position ids [[3..8], [0..5]], for MHA (2 heads), GQA
 * (6 heads, 2 kv heads), MQA (4 heads, 1 kv head), Qwen2's q/k/v biases and
 * Llama's attention_bias (o biased too). head_dim is 8 whatever Hq * 8 is:
 * only MHA has Hq * D = hidden. */
#include "attn_fixture.h"

START_TEST(test_golden_outputs_match_hf)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(ATTN_ST);
    double rtol = attn_tol("test_golden_outputs_match_hf", "rtol");
    double atol = attn_tol("test_golden_outputs_match_hf", "atol");
    tl_tensor *x = tl_fixture_tensor(fx, "x"), *positions = attn_positions(fx);
    for (int i = 0; i < ATTN_N_CASES; i++) {
        const attn_case *c = &ATTN_CASES[i];
        GQAttention a;
        attn_from_fixture(&a, fx, c);
        char name[64];
        snprintf(name, sizeof name, "%s.y", c->name);
        attn_assert_close(gqa_forward(&a, x, positions, NULL, NULL, 0),
                          tl_fixture_tensor(fx, name), rtol, atol, name);
        gqa_free(&a);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_golden_gradients_match_hf)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(ATTN_ST);
    double rtol = attn_tol("test_golden_gradients_match_hf", "rtol");
    double atol = attn_tol("test_golden_gradients_match_hf", "atol");
    tl_tensor *positions = attn_positions(fx), *upstream = tl_fixture_tensor(fx, "upstream");
    for (int i = 0; i < ATTN_N_CASES; i++) {
        const attn_case *c = &ATTN_CASES[i];
        GQAttention a;
        attn_from_fixture(&a, fx, c);
        tl_tensor *x = tl_requires_grad(tl_clone(tl_fixture_tensor(fx, "x")), true);
        tl_tensor *y = gqa_forward(&a, x, positions, NULL, NULL, 0);
        ck_assert_msg(y != NULL, "%s: %s", c->name, tl_error());
        ck_assert_msg(tl_backward_with(y, upstream) == 0, "backward: %s", tl_error());
        char name[96];
        snprintf(name, sizeof name, "%s.grad.x", c->name);
        ck_assert_msg(x->grad != NULL, "%s: no gradient reached x", c->name);
        attn_assert_close(x->grad, tl_fixture_tensor(fx, name), rtol, atol, name);
        /* Every parameter, by HF's name. */
        tl_state_dict sd = tl_module_state_dict(a.module);
        for (int p = 0; p < sd.count; p++) {
            snprintf(name, sizeof name, "%s.grad.%s", c->name, sd.items[p].name);
            ck_assert_msg(sd.items[p].tensor->grad != NULL, "%s: no gradient reached %s",
                          c->name, sd.items[p].name);
            attn_assert_close(sd.items[p].tensor->grad, tl_fixture_tensor(fx, name), rtol,
                              atol, name);
        }
        tl_state_dict_free(&sd);
        tl_zero_grad(x);
        gqa_free(&a);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* An explicit additive mask [B, 1, T, T]: causal, and row 1 left-padded by 2
 * tokens, so row 1's first two queries see no key at all. With fp32 min (not
 * -inf) such a row averages every value uniformly instead of producing NaN,
 * as HF's eager path does. */
START_TEST(test_golden_explicit_mask)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(ATTN_ST);
    double rtol = attn_tol("test_golden_explicit_mask", "rtol");
    double atol = attn_tol("test_golden_explicit_mask", "atol");
    GQAttention a;
    attn_from_fixture(&a, fx, attn_case_named("gqa"));
    tl_tensor *x = tl_fixture_tensor(fx, "x"), *positions = attn_positions(fx);
    tl_tensor *mask = tl_fixture_tensor(fx, "masked.mask");
    tl_tensor *y = gqa_forward(&a, x, positions, mask, NULL, 0);
    tl_assert_ok(y);
    ck_assert_msg(attn_all_finite(y), "a fully masked row must not give NaN or inf");
    attn_assert_close(y, tl_fixture_tensor(fx, "gqa.masked.y"), rtol, atol, "gqa.masked.y");

    /* The causal mask given explicitly, in every shape that broadcasts to
     * [B, Hq, T, S], equals the default (mask NULL). */
    tl_tensor *causal = tl_narrow(tl_narrow(mask, 0, 0, 1), 1, 0, 1);      /* row 0: causal */
    tl_tensor *shapes[3] = {
        tl_reshape(causal, TL_SHAPE(FX_T, FX_T)),
        causal,
        tl_expand(causal, TL_SHAPE(FX_B, 6, FX_T, FX_T)),
    };
    tl_tensor *y_default = gqa_forward(&a, x, positions, NULL, NULL, 0);
    tl_assert_ok(y_default);
    for (int i = 0; i < 3; i++) {
        char what[96], shape[64];
        snprintf(what, sizeof what, "the causal mask given as %s",
                 tl_shape_str(shapes[i], shape, sizeof shape));
        attn_assert_close(gqa_forward(&a, x, positions, shapes[i], NULL, 0), y_default, rtol,
                          atol, what);
    }
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
