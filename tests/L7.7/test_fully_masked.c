/* L7.7 property: a query that sees no key at all (a padded token, a query
 * before every key it is given) gets finite outputs: with fp32 min its
 * scores are all equal and the softmax averages the values uniformly, where
 * -inf would give e^(-inf + inf) = NaN. With a learned sink the row gives
 * (almost) all its mass to the sink instead. */
#include "mask_fixture.h"

START_TEST(test_fully_masked_row_gives_no_nan)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MASK_ST);
    /* Queries at cache positions 0 and 1 against keys 2 .. 7: nothing visible
     * for either, by causality. */
    tl_tensor *mask = attention_mask(tl_arange(0, 2), tl_arange(2, 8), ATTN_NO_WINDOW, 0);
    tl_assert_ok(mask);
    for (int64_t i = 0; i < tl_numel(mask); i++)
        ck_assert_msg(isfinite(tl_item_at(mask, i)), "mask[%lld] is %g: use fp32 min, not -inf",
                      (long long)i, tl_item_at(mask, i));
    tl_pcg32 rng = tl_test_rng(7701);
    tl_tensor *scores = tl_add(tl_randn(&rng, TL_SHAPE(1, 2, 2, 6)), mask);
    tl_tensor *p = tl_softmax(scores, -1);
    ck_assert_msg(mask_all_finite(p), "a fully masked row must not give NaN");
    for (int64_t i = 0; i < tl_numel(p); i++)
        ck_assert_msg(fabs(tl_item_at(p, i) - 1.0 / 6) < 1e-6,
                      "a fully masked row averages uniformly: p = %g, expected 1/6",
                      tl_item_at(p, i));
    const float sk[2] = {0.5f, -1.0f};
    tl_tensor *ps = softmax_with_sink(scores, tl_from_f32(sk, TL_SHAPE(2)));
    tl_assert_ok(ps);
    ck_assert_msg(mask_all_finite(ps), "softmax_with_sink on a fully masked row gave NaN");
    for (int64_t i = 0; i < tl_numel(ps); i++)
        ck_assert_msg(tl_item_at(ps, i) < 1e-30, "with a sink a fully masked row gives its mass "
                      "to the sink: p = %g", tl_item_at(ps, i));

    /* Through a whole attention layer (with and without its sinks). */
    GQAttention a;
    mask_layer(&a, fx, "sinks");
    tl_tensor *x = tl_fixture_tensor(fx, "sinks.x");
    tl_tensor *none = tl_full(TL_F32, TL_SHAPE(SINK_T, SINK_T), ATTN_MASK_MIN);
    tl_tensor *y = gqa_forward(&a, x, NULL, none, NULL, 0);
    tl_assert_ok(y);
    ck_assert_msg(mask_all_finite(y), "an attention whose every key is masked gave NaN");
    gqa_free(&a);
    mask_layer(&a, fx, "stream");
    tl_tensor *xs = tl_narrow(tl_fixture_tensor(fx, "stream.x"), 1, 0, SINK_T);
    y = gqa_forward(&a, xs, NULL, none, NULL, 0);
    tl_assert_ok(y);
    ck_assert_msg(mask_all_finite(y), "an attention whose every key is masked gave NaN");
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
