/* My property tests: what must hold for any input. */
#include <check.h>
#include <math.h>
#include "tinyllm/autograd.h"
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"

/* Scaling one row changes no row: the rms is per row, over the last axis. */
START_TEST(my_each_row_is_scale_invariant)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(1);
    RMSNorm n;
    ck_assert_int_eq(rmsnorm_init(&n, 8, 1e-6, false), 0);
    tl_tensor *x = tl_add_scalar(tl_randn(&rng, TL_SHAPE(2, 3, 8)), 1.0);
    const float c[6] = {1, 4, 0.5f, 8, 2, 16};   /* powers of two: c x is exact */
    tl_tensor *y = rmsnorm_forward(&n, x);
    tl_tensor *yc = rmsnorm_forward(&n, tl_mul(x, tl_from_f32(c, TL_SHAPE(2, 3, 1))));
    tl_assert_ok(y);
    tl_assert_close(yc, y, 1e-5, 1e-6);
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST

static tl_tensor *zero(tl_tensor *h, void *ctx) { (void)ctx; return tl_mul_scalar(h, 0.0); }

/* A zero sublayer leaves the stream alone, and passes a gradient of 1. */
START_TEST(my_zero_sublayer_returns_x)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(2);
    RMSNorm n;
    ck_assert_int_eq(rmsnorm_init(&n, 8, 1e-5, false), 0);
    tl_tensor *x = tl_requires_grad(tl_mul_scalar(tl_randn(&rng, TL_SHAPE(4, 8)), 3.0), true);
    tl_tensor *y = pre_norm_residual(x, &n, zero, NULL);
    tl_assert_ok(y);
    tl_assert_close(y, x, 0.0, 0.0);
    ck_assert_int_eq(tl_backward(tl_sum_all(y)), 0);
    ck_assert_ptr_nonnull(x->grad);
    tl_assert_close(x->grad, tl_ones_like(x), 0.0, 0.0);
    tl_zero_grad(x);
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST

/* The sublayer gets RMSNorm(x): with weight 1, every row it sees has rms 1. */
static tl_tensor *spy(tl_tensor *h, void *seen) {
    *(tl_tensor **)seen = h;
    return tl_zeros_like(h);
}

START_TEST(my_sublayer_sees_unit_rms_rows)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(3);
    RMSNorm n;
    ck_assert_int_eq(rmsnorm_init(&n, 16, 1e-6, false), 0);
    tl_tensor *x = tl_mul_scalar(tl_randn(&rng, TL_SHAPE(3, 16)), 7.0);
    tl_tensor *seen = NULL;
    tl_assert_ok(pre_norm_residual(x, &n, spy, &seen));
    ck_assert_ptr_nonnull(seen);
    for (int i = 0; i < 3; i++) {
        double ms = 0;
        for (int j = 0; j < 16; j++) {
            double v = tl_item_at(seen, i * 16 + j);
            ms += v * v;
        }
        ck_assert_msg(fabs(ms / 16 - 1.0) < 1e-4, "row %d: mean square %g, expected 1", i, ms / 16);
    }
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST

typedef struct { bool gemma; } spec;
static tl_tensor *norm_fn(tl_tensor *const *in, void *ctx) {
    RMSNorm n = {.weight = in[1], .eps = 1e-5, .unit_offset = ((spec *)ctx)->gemma, .dim = 6};
    return rmsnorm_forward(&n, in[0]);
}

/* Gradients reach x and the weight, and agree with finite differences. */
START_TEST(my_gradients_reach_x_and_weight)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(4);
    double max_err = tl_fixture_number("L7.1/rmsnorm.json",
                                       "tolerances.test_gradcheck_x_and_weight.max_rel_error");
    for (int g = 0; g < 2; g++) {
        spec s = {g == 1};
        tl_tensor *in[2] = {tl_requires_grad(tl_randn(&rng, TL_SHAPE(3, 6)), true),
                            tl_requires_grad(tl_randn(&rng, TL_SHAPE(6)), true)};
        tl_assert_gradcheck(norm_fn, &s, in, 2, max_err);
        tl_zero_grad(in[0]);
        tl_zero_grad(in[1]);
    }
    tl_scope_pop();
}
END_TEST
