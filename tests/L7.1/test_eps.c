/* L7.1: eps belongs inside the square root, r = 1 / sqrt(mean(x^2) + eps).
 * For a row whose mean square is far below eps (rms 1e-4, so 1e-8 against
 * eps = 1e-5) eps dominates: the row is NOT blown up to unit rms, and an
 * all-zero row maps to zeros, not NaN. The expected values are computed here
 * in double, straight from the formula. */
#include <check.h>
#include <math.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"

enum { EPS_ROWS = 3, EPS_D = 16 };

START_TEST(test_eps_inside_the_square_root)
{
    tl_scope_push();
    const char *json = "L7.1/rmsnorm.json";
    double rtol = tl_fixture_number(json, "tolerances.test_eps_inside_the_square_root.rtol");
    double atol = tl_fixture_number(json, "tolerances.test_eps_inside_the_square_root.atol");
    const double eps = 1e-5;
    const double row_rms[EPS_ROWS] = {1e-4, 0.0, 3e-3};   /* tiny, zero, small */

    tl_pcg32 rng = tl_test_rng(71);
    tl_tensor *noise = tl_randn(&rng, TL_SHAPE(EPS_ROWS, EPS_D));
    tl_assert_ok(noise);
    float xs[EPS_ROWS * EPS_D], want[EPS_ROWS * EPS_D];
    for (int i = 0; i < EPS_ROWS; i++) {
        double ms = 0;
        for (int j = 0; j < EPS_D; j++) {
            xs[i * EPS_D + j] = (float)(row_rms[i] * tl_item_at(noise, i * EPS_D + j));
            ms += (double)xs[i * EPS_D + j] * xs[i * EPS_D + j];
        }
        double r = 1.0 / sqrt(ms / EPS_D + eps);
        for (int j = 0; j < EPS_D; j++) want[i * EPS_D + j] = (float)(xs[i * EPS_D + j] * r);
    }

    RMSNorm n;   /* a fresh Llama norm: weight 1 */
    ck_assert_msg(rmsnorm_init(&n, EPS_D, eps, false) == 0, "rmsnorm_init: %s", tl_error());
    tl_tensor *y = rmsnorm_forward(&n, tl_from_f32(xs, TL_SHAPE(EPS_ROWS, EPS_D)));
    tl_assert_ok(y);
    tl_assert_close(y, tl_from_f32(want, TL_SHAPE(EPS_ROWS, EPS_D)), rtol, atol);

    /* The tiny row comes out with rms ~1e-4 / sqrt(1e-5) ~ 0.03, far from 1. */
    double ms0 = 0;
    for (int j = 0; j < EPS_D; j++) ms0 += tl_item_at(y, j) * tl_item_at(y, j);
    ck_assert_msg(sqrt(ms0 / EPS_D) < 0.1,
                  "a row of rms 1e-4 came out with rms %.3g: eps must sit inside the root",
                  sqrt(ms0 / EPS_D));
    /* The zero row maps to exact zeros. */
    for (int j = 0; j < EPS_D; j++)
        ck_assert_msg(tl_item_at(y, EPS_D + j) == 0.0, "zero row, element %d: %g (expected 0)",
                      j, tl_item_at(y, EPS_D + j));
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST
