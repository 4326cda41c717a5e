/* L7.1 hidden property: the contract's promises about inputs hold.
 * rmsnorm_forward accepts x "F32 (or BF16, widened exactly), rank >= 1, any
 * strides": a BF16 x gives bit for bit what its F32 widening gives, a
 * transposed (strided) view gives what its contiguous copy gives, and a
 * rank-1 x is one row. Each expected value is the same computation on an
 * equal input, so the comparisons are exact (rtol = atol = 0), but for the
 * strided view: a correct forward may sum its row in another order there (a
 * BLAS dot product, wheat w02), so it agrees within F32 rounding (rtol 1e-6,
 * a few ulps), while reading the view as if contiguous is off by O(1).
 * Graded, never shipped in the student release (lesson.json "hidden_tests"). */
#include <check.h>
#include <math.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"

enum { HI_T = 5, HI_D = 24 };

static void random_weight(RMSNorm *n, tl_pcg32 *rng) {
    ck_assert_int_eq(tl_copy_into(n->weight, tl_randn(rng, TL_SHAPE(n->dim))), 0);
}

START_TEST(test_hidden_bf16_input_is_widened_exactly) {
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(71901);
    for (int offset = 0; offset < 2; offset++) {
        RMSNorm n;
        ck_assert_msg(rmsnorm_init(&n, HI_D, 1e-5, offset) == 0, "rmsnorm_init: %s", tl_error());
        random_weight(&n, &rng);
        tl_tensor *x16 = tl_cast(tl_randn(&rng, TL_SHAPE(2, HI_T, HI_D)), TL_BF16);
        tl_tensor *y16 = rmsnorm_forward(&n, x16);
        tl_tensor *y32 = rmsnorm_forward(&n, tl_cast(x16, TL_F32));
        tl_assert_ok(y16);
        tl_assert_ok(y32);
        ck_assert_msg(y16->dtype == TL_F32, "a BF16 input must give an F32 result");
        tl_assert_close(y16, y32, 0.0, 0.0);
        rmsnorm_free(&n);
    }
    tl_scope_pop();
}
END_TEST

START_TEST(test_hidden_strided_input_equals_its_copy) {
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(71902);
    RMSNorm n;
    ck_assert_msg(rmsnorm_init(&n, HI_D, 1e-6, false) == 0, "rmsnorm_init: %s", tl_error());
    random_weight(&n, &rng);
    /* [D, T] transposed to [T, D]: each row's elements are HI_T apart in memory */
    tl_tensor *view = tl_transpose(tl_randn(&rng, TL_SHAPE(HI_D, HI_T)), 0, 1);
    tl_tensor *y_view = rmsnorm_forward(&n, view);
    tl_tensor *y_copy = rmsnorm_forward(&n, tl_contiguous(view));
    tl_assert_ok(y_view);
    tl_assert_ok(y_copy);
    tl_assert_close(y_view, y_copy, 1e-6, 1e-7);
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST

START_TEST(test_hidden_rank1_is_one_row) {
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(71903);
    RMSNorm n;
    ck_assert_msg(rmsnorm_init(&n, HI_D, 1e-6, true) == 0, "rmsnorm_init: %s", tl_error());
    random_weight(&n, &rng);
    tl_tensor *row = tl_randn(&rng, TL_SHAPE(HI_D));
    tl_tensor *y1 = rmsnorm_forward(&n, row);
    tl_tensor *y2 = rmsnorm_forward(&n, tl_reshape(row, TL_SHAPE(1, 1, HI_D)));
    tl_assert_ok(y1);
    tl_assert_ok(y2);
    ck_assert_int_eq(y1->ndim, 1);
    tl_assert_close(tl_reshape(y2, TL_SHAPE(HI_D)), y1, 0.0, 0.0);
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST
