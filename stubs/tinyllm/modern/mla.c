/* Multi-head latent attention (L7.6): your implementation.
 *
 * The contract is contracts/tinyllm/modern/mla.h; the math is section 2 of
 * the chapter (course/L7.6/README.md). Build the forward from the ops in
 * tinyllm/ops.h (tl_linear_forward, tl_reshape, tl_narrow, tl_permute,
 * tl_transpose, tl_matmul, tl_concat, tl_expand, tl_mul_scalar, tl_add,
 * tl_softmax), L7.1's rmsnorm_forward for the two norms, L7.3's RoPE
 * (rope_cos_sin, rope_apply_cos_sin) and L7.5's KV cache (kv_cache_init,
 * kv_cache_positions, kv_cache_update), and autograd differentiates it for
 * you. Replace each tl_fail below, then run `ol tests L7.6`.
 */
#include "tinyllm/autograd.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/mla.h"

int64_t mla_param_count(const MLAConfig *cfg) {
    /* The chapter's section 2.6, from cfg's fields alone: the query part
     * (q_proj, or q_a_proj + q_a_layernorm + q_b_proj), the kv part
     * (kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj), o_proj, and the
     * biases attention_bias adds. Check the widths as mla_init does. */
    (void)cfg;
    return tl_fail_status("not implemented: mla_param_count (L7.6)");
}

int mla_init(MLAttention *a, const MLAConfig *cfg, const RopeSpec *rope, tl_pcg32 *rng) {
    /* Clear *a, check cfg and the RopeSpec (section 4's refusals), then
     * tl_module_new("MLAttention") and tl_module_add its children in HF's
     * order with tl_linear_new (section 2.1: which Linear has a bias). Each
     * norm is a child module of its own holding one parameter "weight"
     * (tl_module_param_new, filled with 1) that the RMSNorm field borrows,
     * eps MLA_NORM_EPS. Then the fields, the scale (section 2.3) and the
     * rope copy. */
    (void)a; (void)cfg; (void)rope; (void)rng;
    return tl_fail_status("not implemented: mla_init (L7.6)");
}

void mla_free(MLAttention *a) {
    /* tl_module_free the tree (it owns the norms' weights too), then clear
     * the struct. NULL is a no-op. */
    (void)a;
    tl_fail("not implemented: mla_free (L7.6)");
}

int mla_cache_init(KVCache *c, const MLAConfig *cfg, int n_layers, int64_t batch,
                   int64_t max_len) {
    /* L7.5's kv_cache_init with ONE kv head, key_dim kv_lora_rank and
     * value_dim qk_rope_head_dim (section 2.4). */
    (void)c; (void)cfg; (void)n_layers; (void)batch; (void)max_len;
    return tl_fail_status("not implemented: mla_cache_init (L7.6)");
}

mla_path mla_choose_path(const MLAttention *a, int64_t n_new, int64_t n_keys, bool cached) {
    /* a->path unless it is MLA_PATH_AUTO; then naive without a cache, and with
     * one the cheaper path by the multiply-add count of section 2.5. */
    (void)a; (void)n_new; (void)n_keys; (void)cached;
    tl_fail("not implemented: mla_choose_path (L7.6)");
    return MLA_PATH_AUTO;
}

tl_tensor *mla_forward(const MLAttention *a, tl_tensor *x, tl_tensor *positions,
                       tl_tensor *mask, KVCache *cache, int layer) {
    /* Section 2.8 in order: validate everything (before the cache changes);
     * the cache positions (kv_cache_positions, else tl_arange); the queries
     * split into nope and rope parts; the latent (kv_a_layernorm of the first
     * kv_lora_rank features) and the shared k_rope; de-interleave when
     * rope_interleave; RoPE on the rope parts only; append to the cache; the
     * naive or the absorbed attention (section 2.5); o_proj. */
    (void)a; (void)x; (void)positions; (void)mask; (void)cache; (void)layer;
    return tl_fail("not implemented: mla_forward (L7.6)");
}
