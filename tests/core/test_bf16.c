/* BF16 and F16 conversions (M09.1): PyTorch's rounding, bit for bit. */
#include <check.h>
#include <math.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "tinyllm/bf16.h"

static float from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t to_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* bf16(x) for bits u, in the form "expected 0x%04x". */
#define ck_bf16(u, expected)                                                         \
    do {                                                                             \
        uint16_t got_ = tl_f32_to_bf16(from_bits(u));                                \
        ck_assert_msg(got_ == (expected), "f32 0x%08x -> bf16 0x%04x, expected 0x%04x", \
                      (unsigned)(u), (unsigned)got_, (unsigned)(expected));          \
    } while (0)

/* An independent oracle: the nearer of the two bf16 neighbours, compared in
 * double; a tie goes to the even one. Infinity counts as 2^128 there, the
 * value IEEE rounding uses for the step past the largest finite number. */
static uint16_t bf16_oracle(uint32_t u) {
    uint32_t sign = u & 0x80000000u, mag = u & 0x7FFFFFFFu;
    uint32_t lo = mag & 0xFFFF0000u, hi = lo + 0x10000u;
    double x = fabs((double)from_bits(mag));
    double vlo = (double)from_bits(lo);
    double vhi = hi == 0x7F800000u ? ldexp(1.0, 128) : (double)from_bits(hi);
    uint32_t pick;
    if (x - vlo < vhi - x) pick = lo;
    else if (x - vlo > vhi - x) pick = hi;
    else pick = ((lo >> 16) & 1u) ? hi : lo;
    return (uint16_t)((sign | pick) >> 16);
}

/* A small xorshift so these tests need nothing but the code under test. */
static uint32_t next_u32(uint64_t *s) {
    *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
    return (uint32_t)(*s >> 32);
}

START_TEST(test_bf16_every_nan_becomes_quiet_7fc0)
{
    ck_bf16(0x7FC00000u, 0x7FC0);   /* the canonical quiet NaN */
    ck_bf16(0xFFC00000u, 0x7FC0);   /* negative NaN loses its sign, as in PyTorch */
    ck_bf16(0x7F800001u, 0x7FC0);   /* signalling, payload only in the low half */
    ck_bf16(0x7FFFFFFFu, 0x7FC0);   /* would carry into the sign if rounded blindly */
    ck_bf16(0xFF80FFFFu, 0x7FC0);
}
END_TEST

START_TEST(test_bf16_infinities_and_zeros_keep_their_sign)
{
    ck_bf16(0x7F800000u, 0x7F80);
    ck_bf16(0xFF800000u, 0xFF80);
    ck_bf16(0x00000000u, 0x0000);
    ck_bf16(0x80000000u, 0x8000);
}
END_TEST

START_TEST(test_bf16_overflow_carries_into_infinity)
{
    ck_bf16(0x7F7FFFFFu, 0x7F80);   /* FLT_MAX rounds up to inf */
    ck_bf16(0xFF7FFFFFu, 0xFF80);
    ck_bf16(0x7F7F8000u, 0x7F80);   /* a tie from odd 0x7F7F goes up: inf */
    ck_bf16(0x7F7F7FFFu, 0x7F7F);   /* just under the tie stays finite */
    ck_bf16(0x7F7F0000u, 0x7F7F);   /* the largest bf16 itself */
    ck_bf16(0x3F80FFFFu, 0x3F81);
    ck_bf16(0x3FFFFFFFu, 0x4000);   /* mantissa carry bumps the exponent */
}
END_TEST

START_TEST(test_bf16_ties_round_to_even_both_ways)
{
    ck_bf16(0x3F808000u, 0x3F80);   /* 1 + 2^-8: tie, kept part even: down */
    ck_bf16(0x3F818000u, 0x3F82);   /* tie, kept part odd: up */
    ck_bf16(0xBF808000u, 0xBF80);   /* the same for negatives */
    ck_bf16(0xBF818000u, 0xBF82);
    ck_bf16(0x3F808001u, 0x3F81);   /* just above a tie: up */
    ck_bf16(0x3F817FFFu, 0x3F81);   /* just below a tie: down */
}
END_TEST

START_TEST(test_bf16_subnormals_round_like_normals)
{
    ck_bf16(0x00000001u, 0x0000);   /* the smallest f32 subnormal rounds to zero */
    ck_bf16(0x00008000u, 0x0000);   /* tie from even 0 */
    ck_bf16(0x00018000u, 0x0002);   /* tie from odd 1 */
    ck_bf16(0x00010000u, 0x0001);   /* the smallest bf16 subnormal is exact */
    ck_bf16(0x007FFFFFu, 0x0080);   /* carries into the smallest normal */
    ck_bf16(0x80008001u, 0x8001);
    ck_assert(tl_bf16_to_f32(0x0001) == ldexpf(1.0f, -133));
}
END_TEST

START_TEST(test_bf16_widening_is_exact_and_round_trips_all_65536)
{
    for (uint32_t h = 0; h <= 0xFFFF; h++) {
        float f = tl_bf16_to_f32((uint16_t)h);
        ck_assert_uint_eq(to_bits(f), h << 16);
        uint16_t back = tl_f32_to_bf16(f);
        if (isnan(f)) ck_assert_uint_eq(back, 0x7FC0);
        else ck_assert_msg(back == h, "bf16 0x%04x came back as 0x%04x", h, back);
    }
}
END_TEST

START_TEST(test_bf16_matches_an_independent_nearest_even_oracle)
{
    uint64_t state = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 200000; i++) {
        uint32_t u = next_u32(&state);
        if (i % 4 == 0) u = (u & 0xFFFF0000u) | 0x8000u;   /* many exact ties */
        if (isnan(from_bits(u))) continue;
        ck_bf16(u, bf16_oracle(u));
    }
}
END_TEST

START_TEST(test_bf16_array_forms_agree_with_the_scalar_ones)
{
    enum { N = 1000 };
    float in[N], back[N];
    uint16_t mid[N];
    uint64_t state = 12345;
    for (int i = 0; i < N; i++) in[i] = from_bits(next_u32(&state));
    tl_f32_to_bf16_n(in, mid, N);
    tl_bf16_to_f32_n(mid, back, N);
    for (int i = 0; i < N; i++) {
        ck_assert_uint_eq(mid[i], tl_f32_to_bf16(in[i]));
        ck_assert_uint_eq(to_bits(back[i]), (uint32_t)mid[i] << 16);
    }
}
END_TEST

START_TEST(test_f16_known_values)
{
    ck_assert(tl_f16_to_f32(0x3C00) == 1.0f);
    ck_assert(tl_f16_to_f32(0xC000) == -2.0f);
    ck_assert(tl_f16_to_f32(0x7BFF) == 65504.0f);            /* largest half */
    ck_assert(tl_f16_to_f32(0x0400) == ldexpf(1.0f, -14));   /* smallest normal */
    ck_assert(tl_f16_to_f32(0x0001) == ldexpf(1.0f, -24));   /* smallest subnormal */
    ck_assert(tl_f16_to_f32(0x03FF) == ldexpf(1023.0f, -24));/* largest subnormal */
    ck_assert(tl_f16_to_f32(0x8001) == -ldexpf(1.0f, -24));
    ck_assert_uint_eq(to_bits(tl_f16_to_f32(0x8000)), 0x80000000u);   /* -0 */
    ck_assert_uint_eq(to_bits(tl_f16_to_f32(0x7C00)), 0x7F800000u);   /* +inf */
    ck_assert_uint_eq(to_bits(tl_f16_to_f32(0xFC00)), 0xFF800000u);   /* -inf */
    ck_assert(isnan(tl_f16_to_f32(0x7E00)));
    ck_assert(isnan(tl_f16_to_f32(0x7C01)));                 /* signalling stays NaN */
    ck_assert(isnan(tl_f16_to_f32(0xFE00)));
}
END_TEST

START_TEST(test_f16_all_65536_match_the_defining_formula)
{
    for (uint32_t h = 0; h <= 0xFFFF; h++) {
        int sign = (h >> 15) & 1, e = (h >> 10) & 0x1F, m = h & 0x3FF;
        float got = tl_f16_to_f32((uint16_t)h);
        if (e == 0x1F) {
            ck_assert(m ? isnan(got) : isinf(got));
            continue;
        }
        double want = e == 0 ? ldexp(m, -24) : ldexp(1.0 + m / 1024.0, e - 15);
        if (sign) want = -want;
        ck_assert_msg((double)got == want && (signbit(got) != 0) == (sign != 0),
                      "f16 0x%04x -> %a, expected %a", h, (double)got, want);
    }
}
END_TEST
