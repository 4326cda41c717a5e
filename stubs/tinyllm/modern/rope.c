/* Rotary position embedding (L7.3): your implementation.
 *
 * The contract is contracts/tinyllm/modern/rope.h; the math is section 2 of
 * the chapter (course/L7.3/README.md) and the worked example section 3. Build
 * the tables and the rotation from the ops in tinyllm/ops.h (tl_cast, tl_mul,
 * tl_concat, tl_cos, tl_sin, tl_mul_scalar, tl_narrow, tl_neg, tl_reshape,
 * tl_transpose) and autograd differentiates rope_apply for you: never write to
 * a tensor's data. Replace each tl_fail below, then run `ol tests L7.3`.
 */
#include "tinyllm/ops.h"
#include "tinyllm/modern/rope.h"

int rope_spec_init(RopeSpec *spec, int64_t head_dim, int64_t rotary_dim, double theta,
                   rope_pairing pairing) {
    /* Check every argument first (the contract lists the refusals), zeroing
     * *spec. Then inv_freq[i] = 1 / theta^(2i / rotary_dim) in float32 (powf),
     * for i < rotary_dim / 2: the exponent divides by rotary_dim, not head_dim.
     * attention_scaling starts at 1. */
    (void)spec; (void)head_dim; (void)rotary_dim; (void)theta; (void)pairing;
    return tl_fail_status("not implemented: rope_spec_init (L7.3)");
}

int rope_cos_sin(const RopeSpec *spec, tl_tensor *positions, tl_tensor **cos_out,
                 tl_tensor **sin_out) {
    /* angles = fp32(positions) (unsqueezed) * inv_freq: one float32 product each
     * (tl_cast, tl_unsqueeze, tl_from_f32, tl_mul). Widen to rotary_dim in the
     * pairing's layout: [f, f] for ROPE_HALF, [f0, f0, f1, f1, ...] for
     * ROPE_INTERLEAVED. Then tl_cos / tl_sin, each times attention_scaling. */
    (void)spec; (void)positions;
    if (cos_out) *cos_out = NULL;
    if (sin_out) *sin_out = NULL;
    return tl_fail_status("not implemented: rope_cos_sin (L7.3)");
}

tl_tensor *rope_apply(const RopeSpec *spec, tl_tensor *x, tl_tensor *positions) {
    /* Check x and positions against each other, make the tables with
     * rope_cos_sin, then rotate as rope_apply_cos_sin does (ROPE_BTHD). */
    (void)spec; (void)x; (void)positions;
    return tl_fail("not implemented: rope_apply (L7.3)");
}

tl_tensor *rope_apply_cos_sin(const RopeSpec *spec, tl_tensor *x, tl_tensor *cos_table,
                              tl_tensor *sin_table, rope_layout layout) {
    /* Reshape the tables so they broadcast over the heads axis, rotate only
     * the first rotary_dim features: y = x * cos + rotate(x) * sin, where
     * rotate pairs by halves ([-x2, x1]) or neighbours ([-x1, x0, -x3, x2, ..]).
     * Concatenate the untouched features after them. */
    (void)spec; (void)x; (void)cos_table; (void)sin_table; (void)layout;
    return tl_fail("not implemented: rope_apply_cos_sin (L7.3)");
}

tl_tensor *rope_permute_for_half(tl_tensor *w, int64_t n_heads, int64_t rotary_dim) {
    /* HF's converter: per head, rows [d/2, 2] become [2, d/2] (tl_reshape,
     * tl_transpose, tl_reshape); rows past rotary_dim stay where they are. */
    (void)w; (void)n_heads; (void)rotary_dim;
    return tl_fail("not implemented: rope_permute_for_half (L7.3)");
}

tl_tensor *rope_permute_for_interleaved(tl_tensor *w, int64_t n_heads, int64_t rotary_dim) {
    /* The inverse: per head, rows [2, d/2] become [d/2, 2]. */
    (void)w; (void)n_heads; (void)rotary_dim;
    return tl_fail("not implemented: rope_permute_for_interleaved (L7.3)");
}
