/* tinyllm/modern/mask.h: causal masks, sliding windows, attention sinks, the
 * bounded SinkWindowCache and gpt-oss's learned sinks (L7.7).
 *
 * Which keys a query sees, in CACHE positions (a token's index in the stream:
 * 0, 1, 2, ... across every call; not its position id, which is RoPE's):
 *
 *     visible(i, j) = j <= i                                  (causal)
 *                     and (W == 0 or j > i - W or j < S)      (window W, S sink tokens)
 *
 * so a window of W shows exactly W keys, the query's own included (i - j = W
 * is NOT visible), and the first S tokens of the stream (the "attention sinks"
 * of StreamingLLM, Xiao et al. 2023) stay visible forever. The mask is
 * additive float32: 0 where visible, fp32 min (-3.4028234663852886e38, HF's
 * torch.finfo(float32).min) where not, never -inf: a query that sees nothing
 * then averages every value uniformly instead of producing NaN. This is
 * transformers 5's masking_utils (causal_mask_function, sliding_window_overlay:
 * kv_idx > q_idx - sliding_window, eager_mask), plus the sink tokens.
 *
 * Which layers slide is the model's business (L7.9), from HF's config.json:
 *   - Mistral and Mixtral: "sliding_window" at the top level applies to EVERY
 *     layer (null: none; absent: the config class's default, 4096 for "mistral",
 *     none for "mixtral").
 *   - Qwen2 (model_type "qwen2"): layer l slides only when "use_sliding_window"
 *     is true AND l >= "max_window_layers" (transformers 5: layer_types[l] ==
 *     "sliding_attention"); the window is "sliding_window".
 *   - gpt-oss: "layer_types" lists "sliding_attention" / "full_attention" per
 *     layer, and every layer has learned sinks.
 *   - The course's extensions: "tl_sliding_window", "tl_sink_tokens",
 *     "tl_learned_sinks".
 * A sliding layer may keep every token (a plain KVCache: the mask hides the
 * old ones) or only what its window can see (a SinkWindowCache: bounded
 * memory, the same outputs).
 *
 * Learned sinks (gpt-oss, `self_attn.sinks` [Hq]): per head a logit s_h joins
 * each row of scores z_j (already masked) and takes probability mass without
 * contributing a value:
 *
 *     m = max(max_j z_j, s_h),   p_j = e^(z_j - m) / (sum_k e^(z_k - m) + e^(s_h - m))
 *
 * so each row of p sums to 1 - p_sink < 1, and out = sum_j p_j v_j.
 *
 * Memory and errors follow attention.h: results in the current scope, caches
 * and parameters owned; a failing call returns NULL (or -1) with a message
 * naming the function, and leaves a cache as it was.
 */
#ifndef TINYLLM_MODERN_MASK_H
#define TINYLLM_MODERN_MASK_H

#include <stdbool.h>
#include <stdint.h>
#include "tinyllm/pcg32.h"
#include "tinyllm/tensor.h"
#include "tinyllm/modern/attention.h"
#include "tinyllm/modern/rope.h"

/* The value of a hidden entry: torch.finfo(torch.float32).min. */
#define ATTN_MASK_MIN (-3.4028234663852886e38)
/* window = ATTN_NO_WINDOW: causal only. */
#define ATTN_NO_WINDOW 0

/* The additive mask of the rule above.
 *   query_positions: I64 [T], the queries' cache positions (>= 0).
 *   key_positions: I64 [S], the keys' cache positions (>= 0), in any order
 *     (a bounded cache returns its slots in ring order): kv_cache_positions
 *     gives both for the next update.
 *   window: W >= 1, or ATTN_NO_WINDOW (0) for none. sink_tokens: S >= 0 (they
 *     matter only with a window).
 *   returns: F32 [T, S] of 0 and ATTN_MASK_MIN, in the current scope (it
 *     broadcasts to gqa_forward's [B, Hq, T, S]); not differentiable.
 * Errors (NULL, naming attention_mask): a positions tensor NULL (its message
 * kept), not I64 of rank 1 (its shape and dtype named), or holding a negative
 * position (index and value named); window < 0; sink_tokens < 0. */
tl_tensor *attention_mask(tl_tensor *query_positions, tl_tensor *key_positions, int64_t window,
                          int64_t sink_tokens);

/* ---- the bounded cache ---------------------------------------------------- */

/* Where a SinkWindowCache rotates keys. */
typedef enum {
    /* Keys arrive rotated at their position ids and are cached so (as the plain
     * KVCache): evicting a key changes nothing else, and the attention equals a
     * keep-everything KVCache under attention_mask(window, sink_tokens). */
    SINK_KEEP_POSITIONS,
    /* StreamingLLM: keys are cached UN-rotated; every update rotates the held
     * keys at their index within the cache (sinks 0 .. S-1, then the window in
     * stream order) and the new queries at theirs, so a position never exceeds
     * the capacity. The attention equals a full forward over the kept tokens at
     * positions 0 .. n-1. gqa_forward must then be given positions NULL. */
    SINK_REPOSITION
} sink_rope;

/* A KVCache that keeps the first sink_tokens tokens of the stream and the last
 * window = capacity - sink_tokens, in capacity slots per layer: slots
 * 0 .. S-1 hold the sinks, and the token at cache position p >= S lives in
 * slot S + (p - S) mod W (a ring: the oldest window token is overwritten,
 * never a sink). kv_cache_seq_len keeps counting every token seen.
 * Pass &cache.base where a KVCache * is asked for; free it with
 * kv_cache_free(&cache.base).
 *
 * An update of T tokens at cache positions p .. p+T-1 returns:
 *   - when they fit without evicting (seen + T <= capacity), or T = 1 (the
 *     evicted key is one the new query cannot see): views of the slots held,
 *     in slot order, with their cache positions;
 *   - otherwise (a chunk longer than what is free), the held keys followed by
 *     the T new ones, joined in the current scope (the early queries of the
 *     chunk still see keys its later tokens evict), and only then the ring is
 *     written. Such a chunk needs the window mask (gqa_window_forward builds
 *     it); SINK_REPOSITION refuses it (feed tokens one at a time once full).
 * With SINK_REPOSITION the keys returned are rotated copies in the current
 * scope (rotates_keys is true); the cache itself holds them un-rotated. */
typedef struct {
    KVCache base;           /* FIRST: the interface gqa_forward uses */
    int64_t sink_tokens;    /* S: the first S tokens of the stream, never evicted */
    int64_t window;         /* W = capacity - S: the most recent W tokens */
    sink_rope rope_mode;
} SinkWindowCache;

/* Fills *c with n_layers layers of capacity slots (S + W), keys and values of
 * width head_dim, for batch rows of n_kv_heads heads.
 * Returns 0, or -1 with an error naming sink_window_cache_init when c is NULL;
 * capacity < 1 (the window must hold at least the query itself); sink_tokens
 * < 0 or >= capacity (no slot left for the window: the message names both);
 * rope_mode unknown; or kv_cache_init refuses a size. On error *c holds
 * nothing (kv_cache_free(&c->base) is still safe). */
int sink_window_cache_init(SinkWindowCache *c, int n_layers, int64_t batch, int64_t n_kv_heads,
                           int64_t head_dim, int64_t capacity, int64_t sink_tokens,
                           sink_rope rope_mode);

/* ---- windowed attention ----------------------------------------------------- */

/* gqa_forward with the mask attention_mask(query, key, window, sink_tokens)
 * built from the cache positions of this update (kv_cache_positions; without a
 * cache, 0 .. T-1 for both), never from `positions` (position ids, for RoPE
 * only). window ATTN_NO_WINDOW and sink_tokens 0 give the causal mask.
 * With a SinkWindowCache, window must be >= 1 and at most the cache's, and
 * sink_tokens at most the cache's (it cannot show keys it evicted).
 * Returns gqa_forward's result; errors name gqa_window_forward, or are those
 * of attention_mask, kv_cache_positions and gqa_forward. */
tl_tensor *gqa_window_forward(const GQAttention *a, tl_tensor *x, tl_tensor *positions,
                              int64_t window, int64_t sink_tokens, KVCache *cache, int layer);

/* ---- learned sinks (gpt-oss) ---------------------------------------------- */

/* The probabilities of the formula above.
 *   scores: F32 [B, H, T, S], masked and scaled (what gqa_forward passes).
 *   sinks: F32 or BF16 [H], one logit per head.
 *   returns: F32 [B, H, T, S], in the current scope; differentiable in scores
 *   and sinks. Rows sum to 1 - p_sink. Finite for any finite sinks, even with
 *   a fully masked row (then p_j ~ 0) or sink logits far above the scores.
 * Errors (NULL, naming softmax_with_sink): scores or sinks NULL (their message
 * kept); scores not rank 4; sinks not [H] for scores' H (both shapes named). */
tl_tensor *softmax_with_sink(tl_tensor *scores, tl_tensor *sinks);

/* Gives a the learned sinks of gpt-oss: registers a parameter "sinks" [n_heads]
 * on a->module (HF's key "self_attn.sinks", listed before the projections, as
 * an own parameter), F32, requiring a gradient; with rng drawn from
 * N(0, 0.02^2) (HF's initializer_range), with rng NULL zero. Sets a->sinks and
 * a->sink_softmax = softmax_with_sink, so gqa_forward uses them.
 * Returns 0, or -1 with an error naming gqa_add_learned_sinks when a is NULL
 * or has no module, or already has sinks. gqa_free frees them with the rest. */
int gqa_add_learned_sinks(GQAttention *a, tl_pcg32 *rng);

#endif
