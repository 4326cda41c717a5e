/* L7.1 hidden unit test: values exact by construction. A row of d equal
 * entries k (a power of two) has rms |k|, so with eps = 0 RMSNorm gives
 * sign(k) times the weight exactly (Llama) or (1 + weight) (Gemma); a row of
 * zeros with eps > 0 gives zeros, not NaN. No float rounding is involved:
 * k * (1 / sqrt(k^2)) is exact for k = 2^j. Graded, never shipped in the
 * student release (lesson.json "hidden_tests"). */
#include <check.h>
#include <math.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"

enum { HV_D = 8 };

START_TEST(test_hidden_constant_rows_give_the_weight) {
    tl_scope_push();
    const float w[HV_D] = {0.5f, -2.0f, 1.0f, 0.25f, 3.0f, -1.0f, 0.0f, 8.0f};
    const float k[3] = {4.0f, -0.125f, 64.0f};
    for (int offset = 0; offset < 2; offset++) {
        RMSNorm n;
        ck_assert_msg(rmsnorm_init(&n, HV_D, 0.0, offset) == 0, "rmsnorm_init: %s", tl_error());
        ck_assert_int_eq(tl_copy_into(n.weight, tl_from_f32(w, TL_SHAPE(HV_D))), 0);
        float x[3 * HV_D], want[3 * HV_D];
        for (int r = 0; r < 3; r++)
            for (int i = 0; i < HV_D; i++) {
                x[r * HV_D + i] = k[r];
                want[r * HV_D + i] = (k[r] > 0 ? 1.0f : -1.0f) * (offset ? 1.0f + w[i] : w[i]);
            }
        tl_tensor *y = rmsnorm_forward(&n, tl_from_f32(x, TL_SHAPE(3, HV_D)));
        tl_assert_ok(y);
        tl_assert_close(y, tl_from_f32(want, TL_SHAPE(3, HV_D)), 0.0, 0.0);
        rmsnorm_free(&n);
    }
    tl_scope_pop();
}
END_TEST

START_TEST(test_hidden_zero_row_stays_zero) {
    tl_scope_push();
    RMSNorm n;
    ck_assert_msg(rmsnorm_init(&n, HV_D, 1e-6, false) == 0, "rmsnorm_init: %s", tl_error());
    tl_tensor *y = rmsnorm_forward(&n, tl_zeros(TL_F32, TL_SHAPE(2, HV_D)));
    tl_assert_ok(y);
    tl_assert_close(y, tl_zeros(TL_F32, TL_SHAPE(2, HV_D)), 0.0, 0.0);
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST
