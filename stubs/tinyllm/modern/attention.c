/* Grouped-query attention and the KV cache (L7.5): your implementation.
 *
 * The contract is contracts/tinyllm/modern/attention.h; the math is section 2
 * of the chapter (course/L7.5/README.md). Build the forward from the ops in
 * tinyllm/ops.h (tl_linear_forward, tl_reshape, tl_permute, tl_matmul,
 * tl_transpose, tl_mul_scalar, tl_add, tl_softmax) and L7.3's RoPE, and
 * autograd differentiates it for you. The cache is plain C over owned tensors
 * (tl_tensor_new_owned, tl_narrow, tl_copy_into). Replace each tl_fail below,
 * then run `ol tests L7.5`.
 */
#include "tinyllm/autograd.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/attention.h"

int kv_cache_init(KVCache *c, int n_layers, int64_t batch, int64_t n_kv_heads, int64_t key_dim,
                  int64_t value_dim, int64_t max_len) {
    /* Check every size, then allocate per layer an owned F32 keys tensor
     * [batch, n_kv_heads, max_len, key_dim] and values [.., value_dim], and
     * the arrays slot_positions, held and seen. Set c->ops to a static
     * KVCacheOps of your plain cache's positions and update (section 2.4). */
    (void)c; (void)n_layers; (void)batch; (void)n_kv_heads; (void)key_dim; (void)value_dim;
    (void)max_len;
    return tl_fail_status("not implemented: kv_cache_init (L7.5)");
}

void kv_cache_free(KVCache *c) {
    /* tl_tensor_free every layer's tensors, free the arrays, clear *c.
     * NULL and a cleared struct are no-ops. */
    (void)c;
    tl_fail("not implemented: kv_cache_free (L7.5)");
}

void kv_cache_reset(KVCache *c) {
    /* held = seen = 0 for every layer; keep the storage. */
    (void)c;
    tl_fail("not implemented: kv_cache_reset (L7.5)");
}

int64_t kv_cache_seq_len(const KVCache *c, int layer) {
    /* The tokens the layer has seen: the next cache position. */
    (void)c; (void)layer;
    return tl_fail_status("not implemented: kv_cache_seq_len (L7.5)");
}

int kv_cache_view(const KVCache *c, int layer, tl_tensor **keys, tl_tensor **values) {
    /* tl_narrow the layer's tensors to the slots it holds: views, no copy. */
    (void)c; (void)layer; (void)keys; (void)values;
    return tl_fail_status("not implemented: kv_cache_view (L7.5)");
}

int kv_cache_positions(const KVCache *c, int layer, int64_t n_new, tl_tensor **query_positions,
                       tl_tensor **key_positions) {
    /* Check the arguments, then call c->ops->positions. Your plain cache's
     * version: queries seen .. seen + n_new - 1, keys 0 .. seen + n_new - 1
     * (tl_arange), or the "holds 60 of 64" error when they would not fit. */
    (void)c; (void)layer; (void)n_new; (void)query_positions; (void)key_positions;
    return tl_fail_status("not implemented: kv_cache_positions (L7.5)");
}

int kv_cache_update(KVCache *c, int layer, tl_tensor *k, tl_tensor *v, const RopeSpec *rope,
                    KVCacheUpdate *out) {
    /* Check the arguments and shapes, then call c->ops->update. Your plain
     * cache's version: refuse a full cache, copy k and v into the next slots
     * (tl_copy_into on tl_narrow views), then return views of every slot
     * held: append FIRST, so the new tokens see themselves (section 2.4). */
    (void)c; (void)layer; (void)k; (void)v; (void)rope; (void)out;
    return tl_fail_status("not implemented: kv_cache_update (L7.5)");
}

int gqa_init(GQAttention *a, const GQAConfig *cfg, const RopeSpec *rope, tl_pcg32 *rng) {
    /* Check the config (n_kv_heads must divide n_heads; the RopeSpec's
     * head_dim must be cfg->head_dim). Then a "GQAttention" module with
     * children q_proj, k_proj, v_proj, o_proj (tl_linear_new, in that order,
     * biases as the flags say), the fields, scale = 1/sqrt(head_dim). */
    (void)a; (void)cfg; (void)rope; (void)rng;
    return tl_fail_status("not implemented: gqa_init (L7.5)");
}

void gqa_free(GQAttention *a) {
    /* tl_module_free the module tree, then clear the struct. NULL is a no-op. */
    (void)a;
    tl_fail("not implemented: gqa_free (L7.5)");
}

int64_t gqa_param_count(const GQAttention *a) {
    /* From the fields: four weights, the biases the flags ask for, the sinks. */
    (void)a;
    return tl_fail_status("not implemented: gqa_param_count (L7.5)");
}

tl_tensor *gqa_forward(const GQAttention *a, tl_tensor *x, tl_tensor *positions,
                       tl_tensor *mask, KVCache *cache, int layer) {
    /* Section 2.6 step by step: validate everything BEFORE touching the cache;
     * the cache positions (kv_cache_positions, or 0 .. T-1); project and
     * reshape q, k, v to [B, T, heads, D]; RoPE at positions (or the cache
     * positions); k, v to [B, Hkv, T, D]; append and take the cache's views;
     * the causal mask over cache positions when mask is NULL; group the queries
     * as [B, Hkv, g*T, D] (head h uses kv head h / g); scores * scale + mask;
     * softmax over the keys; P.V; back to [B, T, Hq*D]; o_proj. */
    (void)a; (void)x; (void)positions; (void)mask; (void)cache; (void)layer;
    return tl_fail("not implemented: gqa_forward (L7.5)");
}
