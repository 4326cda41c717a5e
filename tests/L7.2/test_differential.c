/* L7.2 differential: the MLP acts on each row alone, so a [2, 3, 8] batch
 * gives, row for row, what each [8] row gives by itself (L8's batched
 * prefill relies on it); and a BF16 input gives exactly what its widening to
 * F32 gives (checkpoints arrive in BF16; ops widen it exactly). */
#include <check.h>
#include "mlp_fixture.h"
#include "tinyllm/ops.h"

START_TEST(test_batch_equals_rows_one_at_a_time)
{
    tl_scope_push();
    double rtol = fx_tol("test_golden_outputs_match_hf", "rtol");
    double atol = fx_tol("test_golden_outputs_match_hf", "atol");
    tl_checkpoint *fx = tl_fixture_load(MLP_ST);
    tl_tensor *x = tl_fixture_tensor(fx, "x");
    GatedMLP m;
    fx_mlp(&m, fx, TL_ACT_GELU_PYTORCH_TANH, true);
    tl_tensor *y = gated_mlp_forward(&m, x);
    tl_assert_ok(y);
    tl_tensor *rows = tl_reshape(x, TL_SHAPE(6, FX_H));
    tl_tensor *ys = tl_reshape(y, TL_SHAPE(6, FX_H));
    for (int r = 0; r < 6; r++) {
        tl_tensor *one = tl_reshape(tl_narrow(rows, 0, r, 1), TL_SHAPE(FX_H));
        char what[64];
        snprintf(what, sizeof what, "row %d alone vs in the batch", r);
        fx_assert_close(gated_mlp_forward(&m, one),
                        tl_reshape(tl_narrow(ys, 0, r, 1), TL_SHAPE(FX_H)), rtol, atol, what);
    }
    gated_mlp_free(&m);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_bf16_input_equals_its_f32_widening)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MLP_ST);
    tl_tensor *x16 = tl_cast(tl_fixture_tensor(fx, "x"), TL_BF16);
    tl_tensor *x32 = tl_cast(x16, TL_F32);   /* exact */
    tl_assert_ok(x32);
    for (int k = 0; k < FX_N_ACTS; k++) {
        GatedMLP m;
        fx_mlp(&m, fx, FX_ACTS[k].act, true);
        char what[64];
        snprintf(what, sizeof what, "%s: BF16 x vs its F32 widening", FX_ACTS[k].name);
        tl_tensor *y16 = gated_mlp_forward(&m, x16);
        ck_assert_msg(y16 && y16->dtype == TL_F32, "%s: the result must be F32", what);
        fx_assert_close(y16, gated_mlp_forward(&m, x32), 0.0, 0.0, what);
        gated_mlp_free(&m);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
