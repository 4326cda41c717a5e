/* L7.3 differential: one rotation, three entry points. rope_apply, the
 * shared tables of rope_cos_sin passed to rope_apply_cos_sin (what an
 * attention layer does once for q and k), and the [B, H, T, D] layout of a
 * KV cache all give the same numbers. T and H differ, so tables broadcast
 * along the wrong axis cannot pass by accident. */
#include <check.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rope.h"

enum { LY_B = 2, LY_T = 3, LY_H = 4, LY_D = 12, LY_ROT = 8 };

static void assert_same(const tl_tensor *got, const tl_tensor *want, double rtol, double atol,
                        const char *what) {
    char msg[768];
    ck_assert_msg(got != NULL, "%s: NULL (%s)", what, tl_error() ? tl_error() : "no message");
    ck_assert_msg(tl_close_report(got, want, rtol, atol, msg, sizeof msg), "%s: %s", what, msg);
}

START_TEST(test_layouts_and_shared_tables_agree)
{
    tl_scope_push();
    const char *json = "L7.3/rope.json";
    double rtol = tl_fixture_number(json, "tolerances.test_layouts_and_shared_tables_agree.rtol");
    double atol = tl_fixture_number(json, "tolerances.test_layouts_and_shared_tables_agree.atol");
    tl_pcg32 rng = tl_test_rng(7331);
    const int64_t pos[LY_B * LY_T] = {5, 6, 7, 100, 101, 102};
    for (int pairing = ROPE_HALF; pairing <= ROPE_INTERLEAVED; pairing++) {
        RopeSpec spec;
        ck_assert_msg(rope_spec_init(&spec, LY_D, LY_ROT, 500.0, (rope_pairing)pairing) == 0,
                      "rope_spec_init: %s", tl_error());
        spec.attention_scaling = 1.125;
        tl_tensor *x = tl_randn(&rng, TL_SHAPE(LY_B, LY_T, LY_H, LY_D));
        tl_tensor *positions = tl_from_i64(pos, TL_SHAPE(LY_B, LY_T));
        tl_tensor *want = rope_apply(&spec, x, positions);
        tl_assert_ok(want);

        tl_tensor *cos, *sin;
        ck_assert_msg(rope_cos_sin(&spec, positions, &cos, &sin) == 0, "rope_cos_sin: %s",
                      tl_error());
        assert_same(rope_apply_cos_sin(&spec, x, cos, sin, ROPE_BTHD), want, rtol, atol,
                    "rope_apply_cos_sin(ROPE_BTHD) vs rope_apply");
        tl_tensor *y_bhtd = rope_apply_cos_sin(&spec, tl_transpose(x, 1, 2), cos, sin, ROPE_BHTD);
        tl_assert_ok(y_bhtd);
        assert_same(tl_transpose(y_bhtd, 1, 2), want, rtol, atol,
                    "rope_apply_cos_sin(ROPE_BHTD) on x transposed to [B, H, T, D]");

        /* Tables of the first row's positions [T], shared by the batch. */
        tl_tensor *cos1, *sin1;
        ck_assert_msg(rope_cos_sin(&spec, tl_from_i64(pos, TL_SHAPE(LY_T)), &cos1, &sin1) == 0,
                      "rope_cos_sin: %s", tl_error());
        tl_tensor *row0 = rope_apply_cos_sin(&spec, x, cos1, sin1, ROPE_BTHD);
        tl_assert_ok(row0);
        assert_same(tl_narrow(row0, 0, 0, 1), tl_narrow(want, 0, 0, 1), rtol, atol,
                    "tables [T, d] broadcast over the batch");
    }
    tl_scope_pop();
}
END_TEST
