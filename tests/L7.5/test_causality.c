/* L7.5 property: attention is causal. Changing the inputs at positions
 * t >= 3 leaves every output before t = 3 unchanged (a masked key gets
 * probability exactly 0, so its value cannot leak), and does change the
 * outputs from t = 3 on. A mask that is off by one lets token t see token
 * t + 1 and fails here. */
#include "attn_fixture.h"

START_TEST(test_causality_future_inputs_do_not_matter)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(ATTN_ST);
    double rtol = attn_tol("test_causality_future_inputs_do_not_matter", "rtol");
    double atol = attn_tol("test_causality_future_inputs_do_not_matter", "atol");
    tl_pcg32 rng = tl_test_rng(7502);
    tl_tensor *x = tl_fixture_tensor(fx, "x"), *positions = attn_positions(fx);
    const int64_t cut = 3;
    tl_tensor *parts[2] = {tl_narrow(x, 1, 0, cut),
                           tl_randn(&rng, TL_SHAPE(FX_B, FX_T - cut, FX_HIDDEN))};
    tl_tensor *changed = tl_concat(parts, 2, 1);
    const char *names[2] = {"mha", "gqa"};
    for (int i = 0; i < 2; i++) {
        GQAttention a;
        attn_from_fixture(&a, fx, attn_case_named(names[i]));
        tl_tensor *y = gqa_forward(&a, x, positions, NULL, NULL, 0);
        tl_tensor *y2 = gqa_forward(&a, changed, positions, NULL, NULL, 0);
        tl_assert_ok(y);
        tl_assert_ok(y2);
        char what[96];
        snprintf(what, sizeof what, "%s: outputs at t < 3 after changing the inputs at t >= 3",
                 names[i]);
        attn_assert_close(tl_narrow(y2, 1, 0, cut), tl_narrow(y, 1, 0, cut), rtol, atol, what);
        /* ...and the later outputs do move (the test could otherwise pass on a
         * layer that ignores its input). */
        char msg[768];
        ck_assert_msg(!tl_close_report(tl_narrow(y2, 1, cut, 1), tl_narrow(y, 1, cut, 1), 1e-3,
                                       1e-3, msg, sizeof msg),
                      "%s: the output at t = 3 did not change when its own input did", names[i]);
        gqa_free(&a);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
