/* L7.3 property: RoPE rotates pairs, so each pair keeps its length,
 * u'^2 + v'^2 = a^2 (u^2 + v^2), with the pairs the pairing names: (i, i + d/2)
 * for half, (2i, 2i + 1) for interleaved. The features past rotary_dim pass
 * through bit for bit. A rotation that pairs the wrong features, rotates the
 * pass-through part, or forgets attention_scaling breaks one of these. */
#include <check.h>
#include <math.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rope.h"

enum { NP_B = 2, NP_T = 5, NP_H = 3, NP_D = 10, NP_ROT = 6 };

static void check_pairs(rope_pairing pairing, double a, double rtol, double atol) {
    tl_pcg32 rng = tl_test_rng(7311 + (uint64_t)pairing);
    RopeSpec spec;
    ck_assert_msg(rope_spec_init(&spec, NP_D, NP_ROT, 10000.0, pairing) == 0,
                  "rope_spec_init: %s", tl_error());
    spec.attention_scaling = a;
    tl_tensor *x = tl_randn(&rng, TL_SHAPE(NP_B, NP_T, NP_H, NP_D));
    int64_t pos[NP_T] = {3, 50, 400, 2024, 9999};
    tl_tensor *y = rope_apply(&spec, x, tl_from_i64(pos, TL_SHAPE(NP_T)));
    tl_assert_ok(y);
    const char *name = pairing == ROPE_HALF ? "half" : "interleaved";
    for (int64_t row = 0; row < NP_B * NP_T * NP_H; row++) {
        int64_t at = row * NP_D;
        for (int p = 0; p < NP_ROT / 2; p++) {
            int64_t u = pairing == ROPE_HALF ? p : 2 * p;
            int64_t v = pairing == ROPE_HALF ? p + NP_ROT / 2 : 2 * p + 1;
            double xu = tl_item_at(x, at + u), xv = tl_item_at(x, at + v);
            double yu = tl_item_at(y, at + u), yv = tl_item_at(y, at + v);
            double before = a * a * (xu * xu + xv * xv), after = yu * yu + yv * yv;
            ck_assert_msg(fabs(after - before) <= atol + rtol * before,
                          "%s pairing, a = %g, row %lld: pair (%lld, %lld) had squared length "
                          "%.7g * a^2 = %.7g and has %.7g", name, a, (long long)row,
                          (long long)u, (long long)v, xu * xu + xv * xv, before, after);
        }
        for (int64_t d = NP_ROT; d < NP_D; d++)
            ck_assert_msg(tl_item_at(y, at + d) == tl_item_at(x, at + d),
                          "%s pairing, row %lld: feature %lld is past rotary_dim %d and must "
                          "pass through unchanged (%.9g became %.9g)", name, (long long)row,
                          (long long)d, NP_ROT, tl_item_at(x, at + d), tl_item_at(y, at + d));
    }
}

START_TEST(test_norm_preserved_per_pair)
{
    tl_scope_push();
    const char *json = "L7.3/rope.json";
    double rtol = tl_fixture_number(json, "tolerances.test_norm_preserved_per_pair.rtol");
    double atol = tl_fixture_number(json, "tolerances.test_norm_preserved_per_pair.atol");
    check_pairs(ROPE_HALF, 1.0, rtol, atol);
    check_pairs(ROPE_INTERLEAVED, 1.0, rtol, atol);
    check_pairs(ROPE_HALF, 1.5, rtol, atol);
    check_pairs(ROPE_INTERLEAVED, 0.75, rtol, atol);
    tl_scope_pop();
}
END_TEST
