/* L7.1 section 3, by hand: x = [1, -3, 1, 5], weight [1, 2, 0.5, -1], and a
 * toy eps of 7 so that eps visibly moves the result. Every value below is a
 * short binary fraction, so the computation is exact in float32.
 *
 *   mean(x^2) = (1 + 9 + 1 + 25) / 4 = 9,   r = 1 / sqrt(9 + 7) = 1/4
 *   x * r     = [0.25, -0.75, 0.25, 1.25]
 */
#include <check.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"

static const float HAND_X[4] = {1, -3, 1, 5};
static const float HAND_W[4] = {1, 2, 0.5f, -1};

static tl_tensor *twice(tl_tensor *h, void *ctx) {   /* a sublayer f(h) = 2h */
    (void)ctx;
    return tl_mul_scalar(h, 2.0);
}

/* Runs the hand example through the norm (or the residual step with f = 2h)
 * and compares with the values worked in the chapter. */
static void check_hand(bool unit_offset, bool residual, const float *want, const char *what) {
    const char *json = "L7.1/rmsnorm.json";
    double rtol = tl_fixture_number(json, "tolerances.test_hand_example_llama_and_gemma.rtol");
    double atol = tl_fixture_number(json, "tolerances.test_hand_example_llama_and_gemma.atol");
    RMSNorm n;
    ck_assert_msg(rmsnorm_init(&n, 4, 7.0, unit_offset) == 0, "rmsnorm_init: %s", tl_error());
    ck_assert_int_eq(tl_copy_into(n.weight, tl_from_f32(HAND_W, TL_SHAPE(4))), 0);
    tl_tensor *x = tl_from_f32(HAND_X, TL_SHAPE(4));
    tl_tensor *y = residual ? pre_norm_residual(x, &n, twice, NULL) : rmsnorm_forward(&n, x);
    ck_assert_msg(y != NULL, "%s returned NULL: %s", what, tl_error());
    char msg[768];
    ck_assert_msg(tl_close_report(y, tl_from_f32(want, TL_SHAPE(4)), rtol, atol, msg, sizeof msg),
                  "%s: %s", what, msg);
    rmsnorm_free(&n);
}

START_TEST(test_hand_example_llama_and_gemma)
{
    tl_scope_push();
    /* Llama: w * (x r) */
    const float llama[4] = {0.25f, -1.5f, 0.125f, -1.25f};
    /* Gemma: (1 + w) * (x r) = [2, 3, 1.5, 0] * (x r) */
    const float gemma[4] = {0.5f, -2.25f, 0.375f, 0.0f};
    /* The residual step with f(h) = 2h: x + 2 * llama */
    const float residual[4] = {1.5f, -6.0f, 1.25f, 2.5f};
    check_hand(false, false, llama, "Llama RMSNorm, w * (x r)");
    check_hand(true, false, gemma, "Gemma RMSNorm, (1 + w) * (x r)");
    check_hand(false, true, residual, "pre_norm_residual, x + 2 * RMSNorm(x)");
    tl_scope_pop();
}
END_TEST
