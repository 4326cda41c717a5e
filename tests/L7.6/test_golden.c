/* L7.6 golden: outputs and gradients against the oracle (oracle/L7.6), which
 * runs transformers 5's DeepseekV3Attention (and DeepseekV2Attention's complex
 * rope pairing) eagerly in float32 on x [2, 6, 16] at position ids
 * [[3..8], [0..5]], for five layers of 3 heads with dn 6, dr 8, dv 5 and a
 * latent of 12: q_lora (rank 10) or q_proj, rope_interleave or not, V2's
 * pairing, and attention_bias with DeepSeek-V3's yarn rope (mscale_all_dim 1,
 * factor 40: the scale times 1.8739). Both attention paths must match. */
#include "mla_fixture.h"

static const mla_path PATHS[2] = {MLA_PATH_NAIVE, MLA_PATH_ABSORBED};

START_TEST(test_golden_outputs_match_hf)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MLA_ST);
    double rtol = mla_tol("test_golden_outputs_match_hf", "rtol");
    double atol = mla_tol("test_golden_outputs_match_hf", "atol");
    tl_tensor *x = tl_fixture_tensor(fx, "x"), *positions = mla_positions(fx);
    for (int i = 0; i < MLA_N_CASES; i++) {
        const mla_case *c = &MLA_CASES[i];
        MLAttention a;
        mla_from_fixture(&a, fx, c);
        char name[64], what[96];
        snprintf(name, sizeof name, "%s.y", c->name);
        for (int p = 0; p < 2; p++) {
            a.path = PATHS[p];
            snprintf(what, sizeof what, "%s (%s path)", name, mla_path_name(a.path));
            mla_assert_close(mla_forward(&a, x, positions, NULL, NULL, 0),
                             tl_fixture_tensor(fx, name), rtol, atol, what);
        }
        mla_free(&a);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_golden_gradients_match_hf)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MLA_ST);
    double rtol = mla_tol("test_golden_gradients_match_hf", "rtol");
    double atol = mla_tol("test_golden_gradients_match_hf", "atol");
    tl_tensor *positions = mla_positions(fx), *upstream = tl_fixture_tensor(fx, "upstream");
    for (int i = 0; i < MLA_N_CASES; i++) {
        const mla_case *c = &MLA_CASES[i];
        MLAttention a;
        mla_from_fixture(&a, fx, c);
        tl_state_dict sd = tl_module_state_dict(a.module);
        for (int p = 0; p < 2; p++) {
            a.path = PATHS[p];
            tl_tensor *x = tl_requires_grad(tl_clone(tl_fixture_tensor(fx, "x")), true);
            tl_tensor *y = mla_forward(&a, x, positions, NULL, NULL, 0);
            ck_assert_msg(y != NULL, "%s: %s", c->name, tl_error());
            ck_assert_msg(tl_backward_with(y, upstream) == 0, "backward: %s", tl_error());
            char name[128], what[160];
            snprintf(name, sizeof name, "%s.grad.x", c->name);
            snprintf(what, sizeof what, "%s (%s path)", name, mla_path_name(a.path));
            ck_assert_msg(x->grad != NULL, "%s: no gradient reached x", what);
            mla_assert_close(x->grad, tl_fixture_tensor(fx, name), rtol, atol, what);
            /* Every parameter, by HF's name. */
            for (int k = 0; k < sd.count; k++) {
                snprintf(name, sizeof name, "%s.grad.%s", c->name, sd.items[k].name);
                snprintf(what, sizeof what, "%s (%s path)", name, mla_path_name(a.path));
                ck_assert_msg(sd.items[k].tensor->grad != NULL, "%s: no gradient", what);
                mla_assert_close(sd.items[k].tensor->grad, tl_fixture_tensor(fx, name), rtol,
                                 atol, what);
                tl_zero_grad(sd.items[k].tensor);
            }
        }
        tl_state_dict_free(&sd);
        mla_free(&a);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* An explicit additive mask [B, 1, T, T]: causal, and row 1 left-padded by 2
 * tokens, so row 1's first two queries see no key at all: with fp32 min
 * (never -inf) such a row averages every value instead of giving NaN. The
 * causal mask passed as [T, T] and [B, n, T, T] equals the default. */
START_TEST(test_golden_explicit_mask)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MLA_ST);
    double rtol = mla_tol("test_golden_explicit_mask", "rtol");
    double atol = mla_tol("test_golden_explicit_mask", "atol");
    MLAttention a;
    mla_from_fixture(&a, fx, mla_case_named("lora_interleave"));
    tl_tensor *x = tl_fixture_tensor(fx, "x"), *positions = mla_positions(fx);
    tl_tensor *mask = tl_fixture_tensor(fx, "masked.mask");
    tl_tensor *causal = tl_narrow(tl_narrow(mask, 0, 0, 1), 1, 0, 1);      /* row 0: causal */
    tl_tensor *shapes[2] = {tl_reshape(causal, TL_SHAPE(FX_T, FX_T)),
                            tl_expand(causal, TL_SHAPE(FX_B, FX_HEADS, FX_T, FX_T))};
    for (int p = 0; p < 2; p++) {
        a.path = PATHS[p];
        char what[96];
        tl_tensor *y = mla_forward(&a, x, positions, mask, NULL, 0);
        tl_assert_ok(y);
        ck_assert_msg(mla_all_finite(y), "a fully masked row must not give NaN or inf (%s path)",
                      mla_path_name(a.path));
        snprintf(what, sizeof what, "lora_interleave.masked.y (%s path)", mla_path_name(a.path));
        mla_assert_close(y, tl_fixture_tensor(fx, "lora_interleave.masked.y"), rtol, atol, what);
        tl_tensor *y_default = mla_forward(&a, x, positions, NULL, NULL, 0);
        tl_assert_ok(y_default);
        for (int i = 0; i < 2; i++) {
            char shape[64];
            snprintf(what, sizeof what, "the causal mask given as %s (%s path)",
                     tl_shape_str(shapes[i], shape, sizeof shape), mla_path_name(a.path));
            mla_assert_close(mla_forward(&a, x, positions, shapes[i], NULL, 0), y_default, rtol,
                             atol, what);
        }
    }
    mla_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
