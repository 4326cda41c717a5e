/* L7.3 section 3, by hand: one head of d = 4, theta = 10000, x = [1, 2, 3, 4]
 * at position 1. The inverse frequencies are 10000^0 = 1 and 10000^(-2/4) =
 * 0.01, so the angles are 1 and 0.01 rad:
 *
 *   cos 1 = 0.5403023, sin 1 = 0.8414710, cos 0.01 = 0.9999500, sin 0.01 = 0.0099998
 *   half pairs (x0, x2) = (1, 3) by 1 rad and (x1, x3) = (2, 4) by 0.01 rad
 *   interleaved pairs (x0, x1) = (1, 2) by 1 rad and (x2, x3) = (3, 4) by 0.01 rad
 *
 * and with attention_scaling a = 0.5 every value halves (a power of two:
 * exact in float32). */
#include <check.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rope.h"

static const float HAND_X[4] = {1, 2, 3, 4};

static void check_hand(rope_pairing pairing, double a, const float *want, const char *what) {
    const char *json = "L7.3/rope.json";
    double rtol = tl_fixture_number(json, "tolerances.test_hand_example_d4_one_position.rtol");
    double atol = tl_fixture_number(json, "tolerances.test_hand_example_d4_one_position.atol");
    RopeSpec spec;
    ck_assert_msg(rope_spec_init(&spec, 4, 4, 10000.0, pairing) == 0, "rope_spec_init: %s",
                  tl_error());
    spec.attention_scaling = a;
    int64_t one = 1;
    tl_tensor *y = rope_apply(&spec, tl_from_f32(HAND_X, TL_SHAPE(1, 1, 1, 4)),
                              tl_from_i64(&one, TL_SHAPE(1)));
    ck_assert_msg(y != NULL, "%s: rope_apply returned NULL: %s", what, tl_error());
    char msg[768];
    ck_assert_msg(tl_close_report(y, tl_from_f32(want, TL_SHAPE(1, 1, 1, 4)), rtol, atol, msg,
                                  sizeof msg), "%s: %s", what, msg);
}

START_TEST(test_hand_example_d4_one_position)
{
    tl_scope_push();
    /* The frequencies themselves: 1 and 0.01 (the exponent is 2i/d). */
    RopeSpec spec;
    ck_assert_msg(rope_spec_init(&spec, 4, 4, 10000.0, ROPE_HALF) == 0, "rope_spec_init: %s",
                  tl_error());
    ck_assert_msg(spec.inv_freq[0] == 1.0f && spec.inv_freq[1] == 0.01f,
                  "inv_freq = [%.9g, %.9g]; by hand 10000^0 = 1 and 10000^(-2/4) = 0.01",
                  spec.inv_freq[0], spec.inv_freq[1]);
    ck_assert_msg(spec.attention_scaling == 1.0, "a fresh spec scales by %g, not 1",
                  spec.attention_scaling);

    /* Half: [1 c0 - 3 s0, 2 c1 - 4 s1, 3 c0 + 1 s0, 4 c1 + 2 s1] */
    const float half[4] = {-1.9841106f, 1.9599007f, 2.4623779f, 4.0197997f};
    /* Interleaved: [1 c0 - 2 s0, 2 c0 + 1 s0, 3 c1 - 4 s1, 4 c1 + 3 s1] */
    const float interleaved[4] = {-1.1426397f, 1.9220756f, 2.9598507f, 4.0297995f};
    const float half_scaled[4] = {-0.9920553f, 0.97995035f, 1.23118895f, 2.00989985f};
    check_hand(ROPE_HALF, 1.0, half, "half pairing at position 1");
    check_hand(ROPE_INTERLEAVED, 1.0, interleaved, "interleaved pairing at position 1");
    check_hand(ROPE_HALF, 0.5, half_scaled, "half pairing with attention_scaling 0.5");
    tl_scope_pop();
}
END_TEST
