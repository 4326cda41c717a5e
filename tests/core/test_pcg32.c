/* PCG32 (M06.3): the reference stream, bounded draws, floats and normals.
 *
 * The expected values are the published output of the PCG paper's demo,
 * sample/pcg32-demo.c in github.com/imneme/pcg-c, as recorded in that
 * repository's test-high/expected/check-pcg32.out: seed (initstate 42,
 * initseq 54), round 1, then the first numbers of round 2.
 */
#include <check.h>
#include <math.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "tinyllm/pcg32.h"

static const uint32_t DEMO_ROUND1[6] = {0xa15c02b7, 0x7b47f409, 0xba1d3330,
                                        0x83d2f293, 0xbfa4784b, 0xcbed606e};
static const uint32_t DEMO_ROUND2[6] = {0x74ab93ad, 0x1c1da000, 0x494ff896,
                                        0x34462f2f, 0xd308a3e5, 0x0fa83bab};
/* Round 1's rows after its six numbers: 65 coins (bounded 2, nonzero = H),
 * 33 dice (bounded 6, plus 1), and a Fisher-Yates deal of 52 cards. */
static const char DEMO_COINS[] =
    "HHTTTHTHHHTHTTTHHHHHTTTHHHTHTHTHTTHTTTHHHHHHTTTTHHTTTTTHTTTTTTTHT";
static const char DEMO_ROLLS[] = "341122324324335231315141564662633";
static const char DEMO_CARDS[] =
    "Qd Ks 6d 3s 3d 4c 3h Td Kc 5c Jh Kd Jd As 4s 4h Ad Th Ac Jc 7s Qs "
    "2s 7h Kh 2d 6c Ah 4d Qh 9h 6s 5s 2c 9c Ts 8d 9s 3c 8c Js 5d 2h 6h "
    "7d 8s 9d 5h 8h Qc 7c Tc";

static tl_pcg32 seeded(uint64_t seed) {
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, seed, 0);
    return rng;
}

static tl_pcg32 demo_rng(void) {
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 42u, 54u);
    return rng;
}

START_TEST(pcg32_first_outputs_match_reference_demo)
{
    tl_pcg32 rng = demo_rng();
    for (int i = 0; i < 6; i++) {
        uint32_t got = tl_pcg32_next(&rng);
        ck_assert_msg(got == DEMO_ROUND1[i], "output %d: 0x%08x, expected 0x%08x", i, got,
                      DEMO_ROUND1[i]);
    }
}
END_TEST

/* Coins, dice and cards use bounded draws of 2, 6 and 2..52; round 2's numbers
 * only match if every rejection consumed exactly the draws the reference did. */
START_TEST(pcg32_bounded_matches_reference_coins_rolls_cards)
{
    tl_pcg32 rng = demo_rng();
    for (int i = 0; i < 6; i++) tl_pcg32_next(&rng);

    char coins[66] = {0};
    for (int i = 0; i < 65; i++) coins[i] = tl_pcg32_bounded(&rng, 2) ? 'H' : 'T';
    ck_assert_str_eq(coins, DEMO_COINS);

    char rolls[34] = {0};
    for (int i = 0; i < 33; i++) rolls[i] = (char)('1' + tl_pcg32_bounded(&rng, 6));
    ck_assert_str_eq(rolls, DEMO_ROLLS);

    int cards[52];
    for (int i = 0; i < 52; i++) cards[i] = i;
    for (int i = 52; i > 1; i--) {
        int chosen = (int)tl_pcg32_bounded(&rng, (uint32_t)i);
        int card = cards[chosen];
        cards[chosen] = cards[i - 1];
        cards[i - 1] = card;
    }
    static const char number[] = "A23456789TJQK", suit[] = "hcds";
    char dealt[52 * 3] = {0};
    for (int i = 0; i < 52; i++) {
        dealt[3 * i] = number[cards[i] / 4];
        dealt[3 * i + 1] = suit[cards[i] % 4];
        dealt[3 * i + 2] = i < 51 ? ' ' : '\0';
    }
    ck_assert_str_eq(dealt, DEMO_CARDS);

    for (int i = 0; i < 6; i++) {
        uint32_t got = tl_pcg32_next(&rng);
        ck_assert_msg(got == DEMO_ROUND2[i], "round 2 output %d: 0x%08x, expected 0x%08x", i,
                      got, DEMO_ROUND2[i]);
    }
}
END_TEST

START_TEST(pcg32_same_seed_same_stream_other_seq_other_stream)
{
    tl_pcg32 a = demo_rng(), b = demo_rng(), c;
    tl_pcg32_seed(&c, 42u, 55u);
    int same_c = 0;
    for (int i = 0; i < 100; i++) {
        uint32_t x = tl_pcg32_next(&a);
        ck_assert_uint_eq(x, tl_pcg32_next(&b));
        same_c += x == tl_pcg32_next(&c);
    }
    ck_assert_int_lt(same_c, 3);
    ck_assert(a.inc & 1u);
}
END_TEST

/* A range of 3 * 2^30: plain r % bound would hit [0, 2^30) twice as often
 * (probability 1/2 instead of 1/3). */
START_TEST(pcg32_bounded_has_no_modulo_bias)
{
    tl_pcg32 rng = seeded(7);
    const uint32_t bound = 3u << 30;
    const int n = 30000;
    int low = 0;
    for (int i = 0; i < n; i++) {
        uint32_t r = tl_pcg32_bounded(&rng, bound);
        ck_assert_uint_lt(r, bound);
        low += r < (1u << 30);
    }
    double p = (double)low / n;   /* 1/3, standard error 0.0027 */
    ck_assert_msg(fabs(p - 1.0 / 3.0) < 0.02, "P(r < 2^30) = %.4f, expected 1/3", p);
}
END_TEST

START_TEST(pcg32_bounded_one_is_zero_and_zero_draws_nothing)
{
    tl_pcg32 rng = demo_rng();
    ck_assert_uint_eq(tl_pcg32_bounded(&rng, 1), 0);
    uint64_t state = rng.state;
    ck_assert_uint_eq(tl_pcg32_bounded(&rng, 0), 0);
    ck_assert(rng.state == state);
}
END_TEST

START_TEST(pcg32_uniform_is_top_24_bits_in_unit_interval)
{
    tl_pcg32 rng = demo_rng(), raw = demo_rng();
    double sum = 0;
    const int n = 100000;
    for (int i = 0; i < n; i++) {
        float u = tl_pcg32_uniform(&rng);
        uint32_t bits = tl_pcg32_next(&raw) >> 8;
        ck_assert_msg(u == (float)bits / 16777216.0f, "draw %d: %.9g from 24 bits %u", i,
                      (double)u, bits);
        ck_assert(u >= 0.0f && u < 1.0f);
        sum += u;
    }
    ck_assert_msg(fabs(sum / n - 0.5) < 0.005, "mean %.5f", sum / n);
}
END_TEST

/* A state whose next raw output is 0xffffffff: rotation 0 (top five bits
 * clear) and bits 41..58 set make ((s >> 18) ^ s) >> 27 all ones. In float,
 * 0xffffffff / 2^32 would round to exactly 1.0; the top 24 bits do not. */
START_TEST(pcg32_uniform_of_the_largest_output_stays_below_one)
{
    tl_pcg32 rng = demo_rng();
    const uint64_t all_ones_state = ((1ull << 18) - 1) << 41;
    rng.state = all_ones_state;
    ck_assert_uint_eq(tl_pcg32_next(&rng), 0xffffffffu);
    rng.state = all_ones_state;
    float u = tl_pcg32_uniform(&rng);
    ck_assert(u < 1.0f);
    ck_assert(u == 1.0f - 0x1.0p-24f);
}
END_TEST

/* The same extreme as u1 = 1 gives r = 0; the other end (raw 0) must stay
 * finite: u1 = 2^-32, r = sqrt(64 ln 2) = 6.66. */
START_TEST(pcg32_normal_is_finite_at_both_extremes_of_u1)
{
    tl_pcg32 rng = demo_rng();
    rng.state = ((1ull << 18) - 1) << 41;
    ck_assert_double_eq(tl_pcg32_normal(&rng), 0.0);
    ck_assert_double_eq(tl_pcg32_normal(&rng), 0.0);
    rng.state = 0;   /* output of state 0 is 0 */
    double a = tl_pcg32_normal(&rng), b = tl_pcg32_normal(&rng);
    ck_assert(isfinite(a) && isfinite(b));
    ck_assert_double_eq_tol(a * a + b * b, 64.0 * log(2.0), 1e-9);
}
END_TEST

START_TEST(pcg32_normal_moments_of_100k_draws)
{
    tl_pcg32 rng = seeded(2024);
    const int n = 100000;
    double sum = 0, sumsq = 0, sum4 = 0;
    int beyond_196 = 0;
    for (int i = 0; i < n; i++) {
        double x = tl_pcg32_normal(&rng);
        ck_assert_msg(isfinite(x), "draw %d is not finite", i);
        sum += x;
        sumsq += x * x;
        sum4 += x * x * x * x;
        beyond_196 += fabs(x) > 1.959964;
    }
    double mean = sum / n, var = sumsq / n - mean * mean, kurt = sum4 / n;
    /* standard errors: mean 0.0032, variance 0.0045, 4th moment 0.031, tail 0.0007 */
    ck_assert_msg(fabs(mean) < 0.02, "mean %.5f", mean);
    ck_assert_msg(fabs(var - 1.0) < 0.03, "variance %.5f", var);
    ck_assert_msg(fabs(kurt - 3.0) < 0.2, "fourth moment %.4f, expected 3", kurt);
    double tail = (double)beyond_196 / n;
    ck_assert_msg(fabs(tail - 0.05) < 0.005, "P(|x| > 1.96) = %.4f, expected 0.05", tail);
}
END_TEST

/* Normals come in pairs: two calls use two raw draws, the second call none. */
START_TEST(pcg32_normal_keeps_the_spare_of_each_pair)
{
    tl_pcg32 rng = demo_rng(), raw = demo_rng();
    double first = tl_pcg32_normal(&rng);
    ck_assert(rng.has_spare);
    uint64_t after_pair = rng.state;
    double second = tl_pcg32_normal(&rng);
    ck_assert(!rng.has_spare);
    ck_assert(rng.state == after_pair);
    ck_assert(first != second);

    /* The pair is (r cos t, r sin t), so first^2 + second^2 = -2 ln u1. */
    double u1 = ((double)tl_pcg32_next(&raw) + 1.0) / 4294967296.0;
    tl_pcg32_next(&raw);
    ck_assert(raw.state == rng.state);
    ck_assert_double_eq_tol(first * first + second * second, -2.0 * log(u1), 1e-9);
}
END_TEST

START_TEST(pcg32_reseeding_drops_the_spare)
{
    tl_pcg32 rng = demo_rng();
    double first = tl_pcg32_normal(&rng);
    tl_pcg32_seed(&rng, 42u, 54u);
    ck_assert(!rng.has_spare);
    ck_assert_double_eq(tl_pcg32_normal(&rng), first);
}
END_TEST
