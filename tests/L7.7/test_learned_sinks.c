/* L7.7 golden: gpt-oss's learned sinks against the oracle (transformers 5's
 * GptOssAttention eager path: cat([scores, sinks]), softmax, drop the sink).
 * softmax_with_sink alone on scores with a fully masked row and a sink of 80;
 * a whole attention layer (q, k, v, o biased, sinks [4]) causal and with a
 * window of 3; the gradients of every parameter, the sinks included. The
 * sink takes probability mass and adds no value: rows sum to 1 - p_sink. */
#include "mask_fixture.h"

START_TEST(test_golden_softmax_with_sink)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MASK_ST);
    double rtol = mask_tol("test_golden_softmax_with_sink", "rtol");
    double atol = mask_tol("test_golden_softmax_with_sink", "atol");
    tl_tensor *scores = tl_requires_grad(tl_clone(tl_fixture_tensor(fx, "sws.scores")), true);
    tl_tensor *sinks = tl_requires_grad(tl_clone(tl_fixture_tensor(fx, "sws.sinks")), true);
    tl_tensor *p = softmax_with_sink(scores, sinks);
    tl_assert_ok(p);
    ck_assert_msg(mask_all_finite(p), "softmax_with_sink gave NaN or inf");
    mask_assert_close(p, tl_fixture_tensor(fx, "sws.probs"), rtol, atol, "the probabilities");
    /* Every row sums to less than 1: the sink kept the rest. */
    tl_tensor *rows = tl_sum(p, -1, false);
    for (int64_t i = 0; i < tl_numel(rows); i++)
        ck_assert_msg(tl_item_at(rows, i) < 1.0 - 1e-6, "row %lld sums to %.9g; with a sink "
                      "it must be below 1", (long long)i, tl_item_at(rows, i));
    ck_assert_int_eq(tl_backward_with(p, tl_fixture_tensor(fx, "sws.upstream")), 0);
    mask_assert_close(scores->grad, tl_fixture_tensor(fx, "sws.grad.scores"), rtol, atol,
                      "d/d scores");
    mask_assert_close(sinks->grad, tl_fixture_tensor(fx, "sws.grad.sinks"), rtol, atol,
                      "d/d sinks");
    tl_zero_grad(scores);
    tl_zero_grad(sinks);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_golden_learned_sinks)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MASK_ST);
    double rtol = mask_tol("test_golden_learned_sinks", "rtol");
    double atol = mask_tol("test_golden_learned_sinks", "atol");
    GQAttention a;
    mask_layer(&a, fx, "sinks");
    tl_tensor *x = tl_fixture_tensor(fx, "sinks.x");
    tl_tensor *positions = tl_cast(tl_fixture_tensor(fx, "sinks.positions"), TL_I64);
    mask_assert_close(gqa_forward(&a, x, positions, NULL, NULL, 0),
                      tl_fixture_tensor(fx, "sinks.full.y"), rtol, atol, "causal, with sinks");
    mask_assert_close(gqa_window_forward(&a, x, positions, SINK_WINDOW, 0, NULL, 0),
                      tl_fixture_tensor(fx, "sinks.window.y"), rtol, atol,
                      "a window of 3, with sinks");
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_golden_learned_sinks_gradients)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MASK_ST);
    double rtol = mask_tol("test_golden_learned_sinks_gradients", "rtol");
    double atol = mask_tol("test_golden_learned_sinks_gradients", "atol");
    GQAttention a;
    mask_layer(&a, fx, "sinks");
    /* HF's names and order: the own parameter "sinks" first, then the projections. */
    tl_state_dict sd = tl_module_state_dict(a.module);
    ck_assert_msg(sd.count == 9 && strcmp(sd.items[0].name, "sinks") == 0,
                  "the state dict must start with \"sinks\" (an own parameter) and hold 9 "
                  "slots; it starts with %s and holds %d", sd.items[0].name, sd.count);
    ck_assert_int_eq(gqa_param_count(&a), tl_module_param_count(a.module));
    tl_tensor *x = tl_requires_grad(tl_clone(tl_fixture_tensor(fx, "sinks.x")), true);
    tl_tensor *positions = tl_cast(tl_fixture_tensor(fx, "sinks.positions"), TL_I64);
    tl_tensor *y = gqa_forward(&a, x, positions, NULL, NULL, 0);
    tl_assert_ok(y);
    ck_assert_int_eq(tl_backward_with(y, tl_fixture_tensor(fx, "sinks.upstream")), 0);
    mask_assert_close(x->grad, tl_fixture_tensor(fx, "sinks.full.grad.x"), rtol, atol, "d/dx");
    for (int i = 0; i < sd.count; i++) {
        char name[96];
        snprintf(name, sizeof name, "sinks.full.grad.%s", sd.items[i].name);
        ck_assert_msg(sd.items[i].tensor->grad != NULL, "no gradient reached %s",
                      sd.items[i].name);
        mask_assert_close(sd.items[i].tensor->grad, tl_fixture_tensor(fx, name), rtol, atol,
                          name);
    }
    tl_state_dict_free(&sd);
    tl_zero_grad(x);
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
