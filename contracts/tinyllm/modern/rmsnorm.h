/* tinyllm/modern/rmsnorm.h: RMSNorm and the pre-norm residual step (L7.1).
 *
 * RMSNorm rescales each row x (the last axis, width d) to unit root mean
 * square, then applies a learned per-feature weight:
 *
 *     r = 1 / sqrt(mean(x_i^2) + eps)            (in float32; eps INSIDE the root)
 *     Llama:  y_i = w_i * (x_i * r)              (weight starts at 1)
 *     Gemma:  y_i = (1 + w_i) * (x_i * r)        (unit_offset; weight starts at 0)
 *
 * exactly as Hugging Face's LlamaRMSNorm and GemmaRMSNorm compute it: no mean
 * is subtracted (that would be LayerNorm), and the row is normalised first and
 * weighted last.
 *
 * Memory and autograd follow tensor.h and autograd.h: results belong to the
 * current scope, and every result is built from recorded ops, so gradients
 * reach both x and the weight.
 *
 * Errors: a function that fails returns NULL (or -1) with a message from
 * tl_error() that names the function and what was wrong. A NULL tensor input
 * keeps the message of the call that produced it.
 */
#ifndef TINYLLM_MODERN_RMSNORM_H
#define TINYLLM_MODERN_RMSNORM_H

#include <stdbool.h>
#include <stdint.h>
#include "tinyllm/tensor.h"

typedef struct {
    tl_tensor *weight;   /* F32 [dim], owned, requires_grad: HF's "<prefix>.weight" */
    double eps;          /* >= 0; HF's rms_norm_eps (Llama 1e-6, SmolLM2 1e-5) */
    bool unit_offset;    /* Gemma: scale by (1 + weight) instead of weight */
    int64_t dim;         /* the width d of the normalised (last) axis */
} RMSNorm;

/* Fills *n: a new owned F32 weight [dim] that requires a gradient, all ones
 * (Llama) or all zeros when unit_offset (Gemma), so a fresh norm of either
 * kind multiplies by exactly 1. Returns 0, or -1 with an error naming
 * rmsnorm_init when n is NULL, dim < 1, or eps is negative or NaN or infinite;
 * on error *n holds no weight (rmsnorm_free is still safe). */
int rmsnorm_init(RMSNorm *n, int64_t dim, double eps, bool unit_offset);

/* Frees the weight (and its gradient) and clears *n. NULL, and a norm whose
 * init failed, are no-ops. */
void rmsnorm_free(RMSNorm *n);

/* y = RMSNorm(x) over the last axis.
 *   x: F32 (or BF16, widened exactly) [..., dim], rank >= 1, any strides.
 *   returns: F32 [..., dim], in the current scope.
 * Errors (NULL, the message naming rmsnorm_forward): n NULL or without a
 * weight; x NULL; a weight that is not [dim], even when x's last axis matches
 * it (say, loaded from another checkpoint: the message gives the weight's
 * shape, e.g. "[12]", and "[dim]", e.g. "[16]"); x's last axis != dim (the
 * message gives x's shape, e.g. "[2, 5, 12]", and dim, e.g. 16); eps
 * negative or NaN. */
tl_tensor *rmsnorm_forward(const RMSNorm *n, tl_tensor *x);

/* A sublayer of a decoder block (attention, an MLP): maps h [..., dim] to a
 * tensor of the same shape, or returns NULL with an error set. ctx is
 * whatever the sublayer needs (its weights). */
typedef tl_tensor *(*tl_sublayer_fn)(tl_tensor *x, void *ctx);

/* The pre-norm ("Pre-LN") residual step of every Llama-family block:
 *     y = x + sublayer(RMSNorm(x), ctx)
 * The raw x is added back, not the normalised one, so the residual stream
 * carries x (and its gradient) through unchanged.
 *   x: [..., dim]; returns: F32, x's shape, in the current scope.
 * Errors (NULL): those of rmsnorm_forward; sublayer NULL; the sublayer
 * returning NULL (its own message is kept); the sublayer returning another
 * shape than x's (the message, naming pre_norm_residual, gives both). */
tl_tensor *pre_norm_residual(tl_tensor *x, const RMSNorm *norm, tl_sublayer_fn sublayer,
                             void *ctx);

#endif
