/* My hand examples for RMSNorm: rows whose answers I can work out on paper. */
#include <check.h>
#include <math.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"

static RMSNorm make_norm(int64_t d, double eps, bool gemma, const float *w) {
    RMSNorm n;
    ck_assert_msg(rmsnorm_init(&n, d, eps, gemma) == 0, "rmsnorm_init: %s", tl_error());
    if (w) ck_assert_int_eq(tl_copy_into(n.weight, tl_from_f32(w, 1, (int64_t[]){d})), 0);
    return n;
}

/* x = [3, 3, 3, 3], eps = 0: mean(x^2) = 9, r = 1/3, so x r = [1, 1, 1, 1] and
 * the output is the weight itself (Llama) or 1 + weight (Gemma). A centring
 * norm would give 0/0 here, and a sum of squares 1/2 instead of 1. */
START_TEST(my_constant_row_gives_the_weight)
{
    tl_scope_push();
    const float x[4] = {3, 3, 3, 3}, w[4] = {1, 2, 3, 4};
    const float llama[4] = {1, 2, 3, 4}, gemma[4] = {2, 3, 4, 5};
    RMSNorm a = make_norm(4, 0.0, false, w), b = make_norm(4, 0.0, true, w);
    tl_assert_close(rmsnorm_forward(&a, tl_from_f32(x, TL_SHAPE(4))),
                    tl_from_f32(llama, TL_SHAPE(4)), 1e-6, 1e-6);
    tl_assert_close(rmsnorm_forward(&b, tl_from_f32(x, TL_SHAPE(4))),
                    tl_from_f32(gemma, TL_SHAPE(4)), 1e-6, 1e-6);
    rmsnorm_free(&a);
    rmsnorm_free(&b);
    tl_scope_pop();
}
END_TEST

/* x = [1e-3] * 4, eps = 3e-6: r = 1 / sqrt(1e-6 + 3e-6) = 500, so y = 0.5.
 * With eps outside the root y would be ~0.997; without eps, 1. */
START_TEST(my_eps_inside_the_root_halves_a_small_row)
{
    tl_scope_push();
    const float x[4] = {1e-3f, 1e-3f, 1e-3f, 1e-3f}, half[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    RMSNorm n = make_norm(4, 3e-6, false, NULL);
    tl_assert_close(rmsnorm_forward(&n, tl_from_f32(x, TL_SHAPE(4))),
                    tl_from_f32(half, TL_SHAPE(4)), 1e-4, 1e-6);
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST

/* A zero row stays zero (and is not NaN) because eps > 0. */
START_TEST(my_zero_row_stays_zero)
{
    tl_scope_push();
    RMSNorm n = make_norm(8, 1e-6, false, NULL);
    tl_tensor *y = rmsnorm_forward(&n, tl_zeros(TL_F32, TL_SHAPE(2, 8)));
    tl_assert_ok(y);
    tl_assert_close(y, tl_zeros(TL_F32, TL_SHAPE(2, 8)), 0.0, 0.0);
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST

/* A fresh norm multiplies by exactly 1, Llama (w = 1) and Gemma (1 + w, w = 0)
 * alike: [3, 4] with eps 0 has rms sqrt(12.5). */
START_TEST(my_fresh_norms_agree)
{
    tl_scope_push();
    const float x[2] = {3, 4};
    const double r = 1.0 / sqrt(12.5);
    const float want[2] = {(float)(3 * r), (float)(4 * r)};
    RMSNorm a = make_norm(2, 0.0, false, NULL), b = make_norm(2, 0.0, true, NULL);
    tl_assert_close(rmsnorm_forward(&a, tl_from_f32(x, TL_SHAPE(2))),
                    tl_from_f32(want, TL_SHAPE(2)), 1e-6, 0.0);
    tl_assert_close(rmsnorm_forward(&b, tl_from_f32(x, TL_SHAPE(2))),
                    tl_from_f32(want, TL_SHAPE(2)), 1e-6, 0.0);
    rmsnorm_free(&a);
    rmsnorm_free(&b);
    tl_scope_pop();
}
END_TEST
