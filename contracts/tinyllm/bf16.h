/* tinyllm/bf16.h: bfloat16 and IEEE half conversions (M09.1).
 *
 * bf16 -> f32 is exact (the bits shifted left by 16); f32 -> bf16 rounds to
 * nearest, ties to even, and maps every NaN to the quiet NaN 0x7FC0, as
 * PyTorch and safetensors do (values from 0x7F7F8000 up round to infinity).
 * Values are passed as their bit patterns (uint16_t). Nothing here allocates
 * or fails; the _n versions convert n values between caller-owned arrays,
 * which must not overlap (NULL with n > 0 is a caller's bug).
 */
#ifndef TINYLLM_BF16_H
#define TINYLLM_BF16_H

#include <stddef.h>
#include <stdint.h>

static inline float tl_bf16_to_f32(uint16_t h) {
    union { uint32_t u; float f; } v = { (uint32_t)h << 16 };
    return v.f;
}

uint16_t tl_f32_to_bf16(float f);
float tl_f16_to_f32(uint16_t h);   /* IEEE half, exact: subnormals, inf and NaN payloads */
void tl_bf16_to_f32_n(const uint16_t *in, float *out, size_t n);
void tl_f32_to_bf16_n(const float *in, uint16_t *out, size_t n);

#endif
