/* bf16.c: bfloat16 and IEEE half conversions (M09.1).
 *
 * bfloat16 is the top half of a float32: same sign and 8-bit exponent, 7 of
 * the 23 mantissa bits. Widening is exact (bf16.h, inline). Narrowing must
 * round, and the rule is PyTorch's (c10/util/BFloat16.h), so that our BF16
 * files are byte-identical to theirs: round to nearest, ties to even, every
 * NaN becomes the quiet NaN 0x7FC0.
 */
#include "tinyllm/bf16.h"

#include <math.h>
#include <string.h>

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t tl_f32_to_bf16(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0;   /* any NaN */
    /* Add just under half an ulp of bf16, plus one more when the kept part is
     * odd: a tie then carries only from an odd value, which rounds it to even.
     * A carry out of the mantissa bumps the exponent, which is also right:
     * values at or above 0x7F7F8000 round to infinity. */
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float tl_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1Fu;
    uint32_t mantissa = h & 0x3FFu;

    if (exponent == 0x1F)   /* infinity or NaN: keep the payload */
        return f32_from_bits(sign | 0x7F800000u | (mantissa << 13));
    if (exponent == 0) {    /* zero or subnormal: mantissa * 2^-24, exact in f32 */
        float magnitude = ldexpf((float)mantissa, -24);
        return sign ? -magnitude : magnitude;
    }
    /* Normal: rebias the exponent from 15 to 127, widen the mantissa. */
    return f32_from_bits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

void tl_bf16_to_f32_n(const uint16_t *in, float *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = tl_bf16_to_f32(in[i]);
}

void tl_f32_to_bf16_n(const float *in, uint16_t *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = tl_f32_to_bf16(in[i]);
}
