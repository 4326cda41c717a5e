/* tinyllm/modern/rope.h: rotary position embedding (L7.3).
 *
 * RoPE encodes a token's position by rotating pairs of features of its query
 * and key by angles proportional to the position. For a rotary dimension d
 * (rotary_dim, even, <= head_dim) there are d/2 pairs; pair i turns at the
 * inverse frequency inv_freq[i], so at position p its angle is, in float32,
 *
 *     angle[p, i] = fp32(p) * inv_freq[i]                 (one float32 product)
 *     default:    inv_freq[i] = 1 / theta^(fp32(2i) / fp32(d))     (all float32)
 *     cos = fp32(cos(angle)) * a,  sin = fp32(sin(angle)) * a   (a = attention_scaling)
 *
 * and a pair (u, v) becomes (u cos - v sin, v cos + u sin): a rotation by the
 * angle, counter-clockwise, times a. Which features form a pair is the
 * pairing, and it must match the checkpoint:
 *
 *     ROPE_HALF        (HF's rotate_half; GPT-NeoX, Llama, Mistral, Qwen, Gemma in HF):
 *                      pair i = (x[i], x[i + d/2])
 *     ROPE_INTERLEAVED (GPT-J, Meta's original Llama files, DeepSeek-V2):
 *                      pair i = (x[2i], x[2i + 1])
 *
 * Partial rotary (rotary_dim < head_dim; Phi, StableLM, GPT-NeoX): only the
 * first rotary_dim features of each head rotate, the rest pass through, and the
 * exponent divides by rotary_dim, not head_dim.
 *
 * Because rotations compose, q(i) . k(j) after RoPE depends on i - j only
 * (a = 1); a sequence starting at position 100 therefore gets exactly the
 * rotations of the tail of one starting at 0. Positions are always an explicit
 * tensor: an attention layer with a cache passes past_len + arange(T); nothing
 * here assumes they start at 0.
 *
 * The numbers are Hugging Face's (transformers 5, models/llama/modeling_llama.py:
 * LlamaRotaryEmbedding.forward, rotate_half, apply_rotary_pos_emb), computed in
 * float32. A RopeSpec is a plain value (a fixed array, no pointers): a layer
 * holds it by value and copies are free of ownership questions. L7.4
 * (rope_scaling.h) fills inv_freq and attention_scaling for the scaled types
 * (linear, dynamic, yarn, longrope, llama3).
 *
 * Memory and autograd follow tensor.h and autograd.h: results belong to the
 * current scope, and rope_apply is built from recorded ops, so gradients flow
 * back to x (the tables themselves need none: positions are integers).
 *
 * Errors: a function that fails returns NULL (or -1) with a message from
 * tl_error() naming the function, what was wrong and what to do. A NULL tensor
 * input keeps the message of the call that produced it.
 */
#ifndef TINYLLM_MODERN_ROPE_H
#define TINYLLM_MODERN_ROPE_H

#include <stdint.h>
#include "tinyllm/tensor.h"

/* The most frequencies a RopeSpec holds: rotary_dim up to 1024. */
#define TL_ROPE_MAX_FREQS 512

typedef enum {
    ROPE_HALF,          /* pairs (x[i], x[i + d/2]): HF's rotate_half, "NeoX" */
    ROPE_INTERLEAVED    /* pairs (x[2i], x[2i + 1]): "GPT-J", Meta's checkpoints */
} rope_pairing;

typedef struct {
    int64_t head_dim;     /* the width of one head, D */
    int64_t rotary_dim;   /* d: the first d features of a head rotate; even, 2 <= d <= D */
    double theta;         /* the base (HF's rope_theta): 10000 Llama-2, 500000 Llama-3 */
    rope_pairing pairing;
    float inv_freq[TL_ROPE_MAX_FREQS];  /* d/2 used: pair i turns inv_freq[i] rad/position */
    double attention_scaling;           /* a: multiplies cos and sin (1; YaRN, longrope > 1) */
} RopeSpec;

/* The layout of the tensor rope_apply_cos_sin rotates: B batch, T positions,
 * H heads, D head_dim. */
typedef enum {
    ROPE_BTHD,    /* [B, T, H, D]: straight out of q_proj / k_proj, reshaped */
    ROPE_BHTD     /* [B, H, T, D]: HF's layout after transpose(1, 2); a KV cache's */
} rope_layout;

/* Fills *spec with the default (unscaled) frequencies of HF's
 * compute_default_rope_parameters, in float32:
 *     inv_freq[i] = 1 / fp32(theta)^(fp32(2i) / fp32(rotary_dim)),  i < rotary_dim / 2
 * (unused entries 0) and attention_scaling = 1.
 * rotary_dim is int(head_dim * partial_rotary_factor) for partial rotary,
 * else head_dim. Returns 0, or -1 with an error naming rope_spec_init when
 * spec is NULL; head_dim < 2; rotary_dim odd, < 2 or > head_dim (the message
 * gives both); rotary_dim / 2 > TL_ROPE_MAX_FREQS; theta not a finite number > 1
 * (a base <= 1 gives no rotation, or frequencies that grow); pairing unknown.
 * On error *spec is zeroed. */
int rope_spec_init(RopeSpec *spec, int64_t head_dim, int64_t rotary_dim, double theta,
                   rope_pairing pairing);

/* The cos and sin tables for positions, in the spec's pairing layout:
 *   positions: I64 (or I32) [T] (shared by the batch) or [B, T]; any values
 *              (a cache's offset, gaps, even negative), used as fp32(p).
 *   *cos_out, *sin_out: F32 [T, rotary_dim] or [B, T, rotary_dim], in the current
 *              scope. Column j holds frequency i = j mod d/2 for ROPE_HALF
 *              ([f0 .. f(d/2-1), f0 .. f(d/2-1)], HF's cat((freqs, freqs))) and
 *              i = j / 2 for ROPE_INTERLEAVED ([f0, f0, f1, f1, ...]); both times
 *              attention_scaling.
 * Returns 0, or -1 with an error naming rope_cos_sin (then *cos_out and
 * *sin_out are NULL): spec, positions, cos_out or sin_out NULL; positions not
 * I64/I32 or not of rank 1 or 2; a spec that rope_spec_init would refuse, or
 * whose attention_scaling is not finite. */
int rope_cos_sin(const RopeSpec *spec, tl_tensor *positions, tl_tensor **cos_out,
                 tl_tensor **sin_out);

/* x rotated at positions: the first rotary_dim features of every head in the
 * spec's pairing, the rest unchanged.
 *     ROPE_HALF:        y = x * cos + rotate_half(x) * sin,  rotate_half(x) = [-x2, x1]
 *     ROPE_INTERLEAVED: y = x * cos + rotate_pairs(x) * sin,
 *                       rotate_pairs(x) = [-x1, x0, -x3, x2, ...]
 * (over the rotary part; the tables of rope_cos_sin).
 *   x: F32 or BF16 (widened exactly) [B, T, H, head_dim], any strides.
 *   positions: I64/I32 [T], or [B, T] (or [1, T], shared by the batch).
 *   returns: F32 [B, T, H, head_dim], in the current scope; differentiable in x.
 * Errors (NULL, naming rope_apply): those of rope_cos_sin; x NULL; x not of
 * rank 4 or its last axis not head_dim (the message gives x's shape, e.g.
 * "[2, 5, 4, 12]", and head_dim); positions' T (or B) not x's (both shapes
 * named). */
tl_tensor *rope_apply(const RopeSpec *spec, tl_tensor *x, tl_tensor *positions);

/* As rope_apply with tables already made (rope_cos_sin, once for q and k of
 * every layer), in either layout:
 *   x: F32/BF16 [B, T, H, head_dim] (ROPE_BTHD) or [B, H, T, head_dim] (ROPE_BHTD).
 *   cos_table, sin_table: F32 [T, rotary_dim] or [B, T, rotary_dim] (B may be 1),
 *             from rope_cos_sin with the same spec.
 *   returns: F32, x's shape, in the current scope; differentiable in x (and in
 *            the tables, should they require a gradient).
 * Errors (NULL, naming rope_apply_cos_sin): spec, x or a table NULL;
 * layout unknown; x's rank or last axis wrong; tables of different shapes, not
 * of width rotary_dim, or whose T or B does not match x (shapes named). */
tl_tensor *rope_apply_cos_sin(const RopeSpec *spec, tl_tensor *x, tl_tensor *cos_table,
                              tl_tensor *sin_table, rope_layout layout);

/* HF's checkpoint converter (models/llama/convert_llama_weights_to_hf.py,
 * permute()): Meta's files pair features interleaved, HF's code pairs them by
 * halves, so the converter reorders the output rows of q_proj and k_proj in
 * each head from [r0, r1, r2, r3, ...] to [r0, r2, ..., r1, r3, ...]
 * (view [heads, d/2, 2, in], swap axes 1 and 2, flatten). Then half pairing on
 * the converted weight gives, for every head, the interleaved rotation of the
 * original's features in that same order, and q . k is unchanged.
 * Only the first rotary_dim rows of each head move (rotary_dim = head_dim for
 * Llama); the rest keep their place.
 *   w: F32 or BF16 [n_heads * head_dim, in] (a weight) or [n_heads * head_dim]
 *      (a bias); head_dim = rows / n_heads.
 *   returns: F32, w's shape, in the current scope (copy it into a
 *            parameter to keep it); differentiable; w is not written.
 * Errors (NULL, naming the function): w NULL; w not rank 1 or 2; n_heads < 1
 * or not dividing the rows (rows and n_heads named); rotary_dim odd, < 2 or >
 * head_dim. */
tl_tensor *rope_permute_for_half(tl_tensor *w, int64_t n_heads, int64_t rotary_dim);

/* The inverse of rope_permute_for_half: HF's half-paired rows back to
 * interleaved ones ([r0, r2, ..., r1, r3, ...] -> [r0, r1, r2, r3, ...]),
 * what a GGUF or Meta exporter writes. Same shapes, errors and ownership. */
tl_tensor *rope_permute_for_interleaved(tl_tensor *w, int64_t n_heads, int64_t rotary_dim);

#endif
