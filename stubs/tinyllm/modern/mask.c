/* Masks, windows, sinks and the bounded SinkWindowCache (L7.7): your
 * implementation.
 *
 * The contract is contracts/tinyllm/modern/mask.h; the rules are section 2 of
 * the chapter (course/L7.7/README.md). The mask is plain C over positions; the
 * cache is L7.5's KVCache storage (kv_cache_init) with an ops table of your
 * own; the learned sinks are ops (tl_concat, tl_softmax, tl_narrow). Replace
 * each tl_fail below, then run `ol tests L7.7 --ref-deps`.
 */
#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/mask.h"

tl_tensor *attention_mask(tl_tensor *query_positions, tl_tensor *key_positions, int64_t window,
                          int64_t sink_tokens) {
    /* Check the positions (I64 [n], >= 0), window and sink_tokens. Then an F32
     * [T, S] of 0 where key j is visible to query i (j <= i, and with a window
     * j > i - W or j < S), ATTN_MASK_MIN elsewhere: never -INFINITY. */
    (void)query_positions; (void)key_positions; (void)window; (void)sink_tokens;
    return tl_fail("not implemented: attention_mask (L7.7)");
}

int sink_window_cache_init(SinkWindowCache *c, int n_layers, int64_t batch, int64_t n_kv_heads,
                           int64_t head_dim, int64_t capacity, int64_t sink_tokens,
                           sink_rope rope_mode) {
    /* Check capacity and sink_tokens, then kv_cache_init(&c->base, ...) and
     * point c->base.ops at a static KVCacheOps of your positions and update
     * (section 2.4: sinks in slots 0 .. S-1, the window as a ring after
     * them); rotates_keys for SINK_REPOSITION. */
    (void)c; (void)n_layers; (void)batch; (void)n_kv_heads; (void)head_dim; (void)capacity;
    (void)sink_tokens; (void)rope_mode;
    return tl_fail_status("not implemented: sink_window_cache_init (L7.7)");
}

tl_tensor *gqa_window_forward(const GQAttention *a, tl_tensor *x, tl_tensor *positions,
                              int64_t window, int64_t sink_tokens, KVCache *cache, int layer) {
    /* The cache positions of this update (kv_cache_positions, or 0 .. T-1),
     * attention_mask over THEM (not over positions: those are RoPE's), then
     * gqa_forward with that mask. */
    (void)a; (void)x; (void)positions; (void)window; (void)sink_tokens; (void)cache;
    (void)layer;
    return tl_fail("not implemented: gqa_window_forward (L7.7)");
}

tl_tensor *softmax_with_sink(tl_tensor *scores, tl_tensor *sinks) {
    /* HF's way: a column of sink logits [B, H, T, 1] joined after the scores,
     * tl_softmax over the last axis, and the sink's column dropped. */
    (void)scores; (void)sinks;
    return tl_fail("not implemented: softmax_with_sink (L7.7)");
}

int gqa_add_learned_sinks(GQAttention *a, tl_pcg32 *rng) {
    /* tl_module_param_new(a->module, "sinks", [n_heads]), N(0, 0.02^2) with
     * rng; then a->sinks and a->sink_softmax = softmax_with_sink. */
    (void)a; (void)rng;
    return tl_fail_status("not implemented: gqa_add_learned_sinks (L7.7)");
}
