/* My hand examples: numbers I worked on paper (section 3 of the chapter, and
 * one of my own), and the identity at position 0. */
#include <check.h>
#include <math.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rope.h"

static tl_tensor *rotate_one(rope_pairing pairing, double a, const float *x, int64_t pos) {
    RopeSpec s;
    ck_assert_int_eq(rope_spec_init(&s, 4, 4, 10000.0, pairing), 0);
    s.attention_scaling = a;
    return rope_apply(&s, tl_from_f32(x, TL_SHAPE(1, 1, 1, 4)), tl_from_i64(&pos, TL_SHAPE(1)));
}

/* x = [1, 2, 3, 4] at position 1: angles 1 and 0.01 rad. */
START_TEST(my_hand_example_from_the_chapter)
{
    tl_scope_push();
    const float x[4] = {1, 2, 3, 4};
    double c0 = cos(1.0), s0 = sin(1.0), c1 = cos(0.01), s1 = sin(0.01);
    const float half[4] = {(float)(1 * c0 - 3 * s0), (float)(2 * c1 - 4 * s1),
                           (float)(3 * c0 + 1 * s0), (float)(4 * c1 + 2 * s1)};
    const float inter[4] = {(float)(1 * c0 - 2 * s0), (float)(2 * c0 + 1 * s0),
                            (float)(3 * c1 - 4 * s1), (float)(4 * c1 + 3 * s1)};
    tl_assert_close(rotate_one(ROPE_HALF, 1.0, x, 1), tl_from_f32(half, TL_SHAPE(1, 1, 1, 4)),
                    1e-6, 1e-6);
    tl_assert_close(rotate_one(ROPE_INTERLEAVED, 1.0, x, 1),
                    tl_from_f32(inter, TL_SHAPE(1, 1, 1, 4)), 1e-6, 1e-6);
    /* a = 2 doubles everything. */
    float twice[4];
    for (int i = 0; i < 4; i++) twice[i] = 2 * half[i];
    tl_assert_close(rotate_one(ROPE_HALF, 2.0, x, 1), tl_from_f32(twice, TL_SHAPE(1, 1, 1, 4)),
                    1e-6, 1e-6);
    tl_scope_pop();
}
END_TEST

/* theta = 10000, d = 4: frequencies 1 and 0.01. */
START_TEST(my_frequencies_by_hand)
{
    RopeSpec s;
    ck_assert_int_eq(rope_spec_init(&s, 4, 4, 10000.0, ROPE_HALF), 0);
    ck_assert_float_eq_tol(s.inv_freq[0], 1.0f, 1e-7);
    ck_assert_float_eq_tol(s.inv_freq[1], 0.01f, 1e-9);
    /* rotary_dim 4 of head_dim 8: the same two frequencies (the exponent is 2i/4). */
    ck_assert_int_eq(rope_spec_init(&s, 8, 4, 10000.0, ROPE_HALF), 0);
    ck_assert_float_eq_tol(s.inv_freq[1], 0.01f, 1e-9);
    /* d = 6, theta = 1000: 1, 0.1, 0.01. */
    ck_assert_int_eq(rope_spec_init(&s, 6, 6, 1000.0, ROPE_INTERLEAVED), 0);
    ck_assert_float_eq_tol(s.inv_freq[1], 0.1f, 1e-8);
    ck_assert_float_eq_tol(s.inv_freq[2], 0.01f, 1e-9);
    ck_assert_double_eq(s.attention_scaling, 1.0);
}
END_TEST

/* At position 0 every angle is 0: x comes back unchanged. */
START_TEST(my_position_zero_is_the_identity)
{
    tl_scope_push();
    const float x[4] = {0.5f, -1, 2, 3};
    tl_tensor *want = tl_from_f32(x, TL_SHAPE(1, 1, 1, 4));
    tl_assert_close(rotate_one(ROPE_HALF, 1.0, x, 0), want, 0.0, 0.0);
    tl_assert_close(rotate_one(ROPE_INTERLEAVED, 1.0, x, 0), want, 0.0, 0.0);
    tl_scope_pop();
}
END_TEST
