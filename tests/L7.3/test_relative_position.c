/* L7.3 property: after RoPE, the score q(i) . k(j) depends only on i - j.
 * Rotations compose, R(i)^T R(j) = R(j - i), so shifting both positions by
 * the same s leaves every score unchanged; that is why a model trained on
 * short windows can read any offset, and why a cache may hold rotated keys.
 * Checked over many (i, j, s), both pairings, and with attention_scaling a,
 * which scales every score by a^2. A rotation that is not applied at all
 * would also be "relative", so the scores must change with i - j too. */
#include <check.h>
#include <math.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rope.h"

enum { RP_D = 16, RP_N = 24 };

/* score[n] = rope(q, i[n]) . rope(k, j[n]) for one q and one k vector. */
static void scores(const RopeSpec *spec, tl_tensor *q, tl_tensor *k, const int64_t *i,
                   const int64_t *j, double *out) {
    tl_tensor *qs = tl_expand(tl_reshape(q, TL_SHAPE(1, 1, 1, RP_D)), TL_SHAPE(1, RP_N, 1, RP_D));
    tl_tensor *ks = tl_expand(tl_reshape(k, TL_SHAPE(1, 1, 1, RP_D)), TL_SHAPE(1, RP_N, 1, RP_D));
    tl_tensor *qr = rope_apply(spec, qs, tl_from_i64(i, TL_SHAPE(RP_N)));
    tl_tensor *kr = rope_apply(spec, ks, tl_from_i64(j, TL_SHAPE(RP_N)));
    tl_assert_ok(qr);
    tl_assert_ok(kr);
    tl_tensor *dots = tl_sum(tl_mul(qr, kr), -1, false);        /* [1, N, 1] */
    tl_assert_ok(dots);
    for (int n = 0; n < RP_N; n++) out[n] = tl_item_at(dots, n);
}

static void check_relative(rope_pairing pairing, double a, double rtol, double atol) {
    tl_pcg32 rng = tl_test_rng(7301 + (uint64_t)pairing);
    RopeSpec spec;
    ck_assert_msg(rope_spec_init(&spec, RP_D, RP_D, 100.0, pairing) == 0, "rope_spec_init: %s",
                  tl_error());
    spec.attention_scaling = a;
    tl_tensor *q = tl_randn(&rng, TL_SHAPE(RP_D)), *k = tl_randn(&rng, TL_SHAPE(RP_D));
    int64_t i[RP_N], j[RP_N], i_shift[RP_N], j_shift[RP_N];
    static const int64_t SHIFTS[] = {1, 5, 37, 1000};
    for (int n = 0; n < RP_N; n++) {
        i[n] = (int64_t)tl_pcg32_bounded(&rng, 64);
        j[n] = (int64_t)tl_pcg32_bounded(&rng, 64);
    }
    double base[RP_N], shifted[RP_N];
    scores(&spec, q, k, i, j, base);
    for (size_t s = 0; s < sizeof SHIFTS / sizeof SHIFTS[0]; s++) {
        for (int n = 0; n < RP_N; n++) {
            i_shift[n] = i[n] + SHIFTS[s];
            j_shift[n] = j[n] + SHIFTS[s];
        }
        scores(&spec, q, k, i_shift, j_shift, shifted);
        for (int n = 0; n < RP_N; n++)
            ck_assert_msg(fabs(shifted[n] - base[n]) <= atol + rtol * fabs(base[n]),
                          "%s pairing, a = %g: q(%lld) . k(%lld) = %.7g but q(%lld) . k(%lld) "
                          "= %.7g; the same i - j must give the same score",
                          pairing == ROPE_HALF ? "half" : "interleaved", a, (long long)i[n],
                          (long long)j[n], base[n], (long long)i_shift[n], (long long)j_shift[n],
                          shifted[n]);
    }
    /* The scores do move with i - j (the rotation is there), and scale by a^2. */
    int64_t zero[RP_N] = {0}, lag[RP_N];
    for (int n = 0; n < RP_N; n++) lag[n] = n;
    double by_lag[RP_N];
    scores(&spec, q, k, zero, lag, by_lag);
    double spread = 0;
    for (int n = 1; n < RP_N; n++) spread = fmax(spread, fabs(by_lag[n] - by_lag[0]));
    ck_assert_msg(spread > 0.1 * fabs(by_lag[0]) + 0.1,
                  "q(0) . k(j) hardly changes with j (spread %g): is the rotation applied?",
                  spread);
    double plain = 0;
    for (int d = 0; d < RP_D; d++) plain += tl_item_at(q, d) * tl_item_at(k, d);
    ck_assert_msg(fabs(by_lag[0] - a * a * plain) <= atol + rtol * fabs(plain) * a * a,
                  "q(0) . k(0) = %.7g; at equal positions it must be a^2 q . k = %.7g (a = %g)",
                  by_lag[0], a * a * plain, a);
}

START_TEST(test_relative_position_property)
{
    tl_scope_push();
    const char *json = "L7.3/rope.json";
    double rtol = tl_fixture_number(json, "tolerances.test_relative_position_property.rtol");
    double atol = tl_fixture_number(json, "tolerances.test_relative_position_property.atol");
    check_relative(ROPE_HALF, 1.0, rtol, atol);
    check_relative(ROPE_INTERLEAVED, 1.0, rtol, atol);
    check_relative(ROPE_HALF, 1.25, rtol, atol);
    tl_scope_pop();
}
END_TEST
