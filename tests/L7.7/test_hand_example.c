/* L7.7 section 3, by hand. A query at cache position 5 with a window of 2
 * and 1 sink token sees key 0 (the sink), 4 and 5 (the window: i - j < 2),
 * and not 1, 2, 3: its mask row is [0, min, min, min, 0, 0]. A learned sink
 * of logit ln 4 beside scores [0, ln 3] takes half the probability:
 * e^0 : e^ln3 : e^ln4 = 1 : 3 : 4, so p = [1/8, 3/8] and the sink keeps 4/8. */
#include "mask_fixture.h"

START_TEST(test_hand_example_window_and_sinks)
{
    tl_scope_push();
    double rtol = mask_tol("test_hand_example_window_and_sinks", "rtol");
    double atol = mask_tol("test_hand_example_window_and_sinks", "atol");
    const int64_t q[1] = {5}, k[6] = {0, 1, 2, 3, 4, 5};
    const float m = (float)ATTN_MASK_MIN;
    const float want[6] = {0, m, m, m, 0, 0};
    tl_tensor *mask = attention_mask(i64s(q, 1), i64s(k, 6), 2, 1);
    tl_assert_ok(mask);
    tl_assert_close(mask, tl_from_f32(want, TL_SHAPE(1, 6)), 0.0, 0.0);

    const float scores[2] = {0.0f, (float)log(3.0)}, sink[1] = {(float)log(4.0)};
    const float probs[2] = {0.125f, 0.375f};
    tl_tensor *p = softmax_with_sink(tl_from_f32(scores, TL_SHAPE(1, 1, 1, 2)),
                                     tl_from_f32(sink, TL_SHAPE(1)));
    tl_assert_ok(p);
    mask_assert_close(p, tl_from_f32(probs, TL_SHAPE(1, 1, 1, 2)), rtol, atol,
                      "softmax_with_sink([0, ln 3], sink ln 4) = [1/8, 3/8]");
    tl_scope_pop();
}
END_TEST
