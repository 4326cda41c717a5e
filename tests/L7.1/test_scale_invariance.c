/* L7.1 property: RMSNorm is invariant to a positive scale of each row,
 * RMSNorm(c x) = RMSNorm(x), up to eps (negligible for rows of rms ~1). Each
 * row gets its own power-of-two factor, so c x is exact in float32 and only
 * a norm that mixes rows (a wrong axis, the whole tensor) breaks it. */
#include <check.h>
#include <math.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"

enum { SI_B = 3, SI_T = 4, SI_D = 32 };

static void check_variant(bool unit_offset, double rtol, double atol) {
    tl_pcg32 rng = tl_test_rng(7101);
    RMSNorm n;
    ck_assert_msg(rmsnorm_init(&n, SI_D, 1e-6, unit_offset) == 0, "rmsnorm_init: %s", tl_error());
    ck_assert_int_eq(tl_copy_into(n.weight, tl_randn(&rng, TL_SHAPE(SI_D))), 0);

    tl_tensor *x = tl_add_scalar(tl_randn(&rng, TL_SHAPE(SI_B, SI_T, SI_D)), 0.3);
    float c[SI_B * SI_T];
    for (int i = 0; i < SI_B * SI_T; i++)            /* 2^k, k in -1..6 */
        c[i] = ldexpf(1.0f, (int)tl_pcg32_bounded(&rng, 8) - 1);
    tl_tensor *scaled = tl_mul(x, tl_from_f32(c, TL_SHAPE(SI_B, SI_T, 1)));

    tl_tensor *y = rmsnorm_forward(&n, x);
    tl_tensor *y_scaled = rmsnorm_forward(&n, scaled);
    tl_assert_ok(y);
    tl_assert_ok(y_scaled);
    char msg[768];
    ck_assert_msg(tl_close_report(y_scaled, y, rtol, atol, msg, sizeof msg),
                  "%s: RMSNorm(c x) != RMSNorm(x) with one factor per row: %s",
                  unit_offset ? "Gemma" : "Llama", msg);
    rmsnorm_free(&n);
}

START_TEST(test_scale_invariance_per_row)
{
    tl_scope_push();
    const char *json = "L7.1/rmsnorm.json";
    double rtol = tl_fixture_number(json, "tolerances.test_scale_invariance_per_row.rtol");
    double atol = tl_fixture_number(json, "tolerances.test_scale_invariance_per_row.atol");
    check_variant(false, rtol, atol);
    check_variant(true, rtol, atol);
    tl_scope_pop();
}
END_TEST
