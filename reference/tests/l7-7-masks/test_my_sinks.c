/* My learned-sink tests: a hand example and the oracle. */
#include "my_masks.h"

/* Scores [ln 2, 0] and a sink of ln 5: 2 : 1 : 5, so p = [2/8, 1/8]. */
START_TEST(my_sink_by_hand)
{
    tl_scope_push();
    const float s[2] = {(float)log(2.0), 0.0f}, k[1] = {(float)log(5.0)};
    const float want[2] = {0.25f, 0.125f};
    tl_tensor *p = softmax_with_sink(tl_from_f32(s, TL_SHAPE(1, 1, 1, 2)),
                                     tl_from_f32(k, TL_SHAPE(1)));
    tl_assert_ok(p);
    tl_assert_close(p, tl_from_f32(want, TL_SHAPE(1, 1, 1, 2)), 1e-5, 1e-7);
    tl_scope_pop();
}
END_TEST

START_TEST(my_golden_sinks)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    tl_assert_close(softmax_with_sink(tl_fixture_tensor(fx, "sws.scores"),
                                      tl_fixture_tensor(fx, "sws.sinks")),
                    tl_fixture_tensor(fx, "sws.probs"),
                    my_tol("test_golden_softmax_with_sink", "rtol"),
                    my_tol("test_golden_softmax_with_sink", "atol"));
    GQAttention a;
    my_layer(&a, fx, "sinks");
    tl_tensor *pos = tl_cast(tl_fixture_tensor(fx, "sinks.positions"), TL_I64);
    double rt = my_tol("test_golden_learned_sinks", "rtol");
    double at = my_tol("test_golden_learned_sinks", "atol");
    tl_assert_close(gqa_forward(&a, tl_fixture_tensor(fx, "sinks.x"), pos, NULL, NULL, 0),
                    tl_fixture_tensor(fx, "sinks.full.y"), rt, at);
    tl_assert_close(gqa_window_forward(&a, tl_fixture_tensor(fx, "sinks.x"), pos, 3, 0, NULL, 0),
                    tl_fixture_tensor(fx, "sinks.window.y"), rt, at);
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
