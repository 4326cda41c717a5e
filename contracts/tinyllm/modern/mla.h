/* tinyllm/modern/mla.h: multi-head latent attention (L7.6).
 *
 * DeepSeek-V2/V3's attention (transformers 5, models/deepseek_v3/
 * modeling_deepseek_v3.py: DeepseekV3Attention; models/deepseek_v2/
 * modeling_deepseek_v2.py: DeepseekV2Attention, apply_rotary_emb). Every head
 * reads its keys and values from ONE small latent per token instead of its own
 * key and value. For x [B, T, H], n heads, and the widths
 *     dn = qk_nope_head_dim, dr = qk_rope_head_dim, dv = v_head_dim,
 *     r_kv = kv_lora_rank, r_q = q_lora_rank (0: none):
 *
 *   q      = q_proj(x)                                  q_lora_rank null
 *          = q_b_proj(RMS_qa(q_a_proj(x)))              else            -> [B, T, n, dn + dr]
 *   q_nope, q_rope = q[..., :dn], q[..., dn:]           per head
 *   ckv    = kv_a_proj_with_mqa(x)                      [B, T, r_kv + dr]
 *   c      = RMS_kva(ckv[..., :r_kv])                   the latent, [B, T, r_kv]
 *   k_rope = ckv[..., r_kv:]                            ONE rope key per token, shared by
 *                                                        every head (the "mqa")
 *   q_rope, k_rope = RoPE(q_rope), RoPE(k_rope)        rotary dim dr, at the position ids
 *   k_nope_h, v_h  = per head h, kv_b_proj(c) as [n, dn + dv]: rows h*(dn+dv) ..
 *                    + dn - 1 are k_nope_h, the next dv are v_h
 *   S_h    = (q_nope_h . k_nope_h + q_rope_h . k_rope) * scale + mask   over the keys
 *   o_h    = softmax(S_h) . v_h,    y = o_proj(concat_h o_h)           -> [B, T, H]
 *
 * RMS_qa and RMS_kva are q_a_layernorm and kv_a_layernorm: L7.1's RMSNorm with
 * eps 1e-6 always (DeepseekV3RMSNorm's default; rms_norm_eps is not theirs).
 * num_key_value_heads plays no part: every head has its own k_nope and v
 * (DeepSeek's configs set it to num_attention_heads).
 *
 * Only the last dr features of a query head rotate, and only the shared k_rope
 * of a key: the nope parts carry no position. The scale is
 *     scale = (dn + dr)^-1/2 * m^2,   m = 0.1 * mscale_all_dim * ln(factor) + 1
 * where m applies only when the rope is scaled (rope_type not "default"), its
 * mscale_all_dim is set (non-zero) and factor > 1 (HF's yarn_get_mscale; 1
 * otherwise). The width is the query/key head's dn + dr, never dv.
 *
 * RoPE pairing. The RopeSpec says which features pair (L7.3) and
 * rope_interleave says whether they are first de-interleaved:
 *   DeepSeek-V3, rope_interleave true (its default): the checkpoint's rope
 *     features are pairs (x0, x1), (x2, x3), ...; HF first permutes each
 *     rope part to [x0, x2, x4, ..., x1, x3, x5, ...] (view [dr/2, 2],
 *     transpose, flatten: apply_rotary_pos_emb_interleave), then rotates by
 *     halves (ROPE_HALF). Rotated q_rope and k_rope stay in that order.
 *   DeepSeek-V3, rope_interleave false: ROPE_HALF on the features as they are.
 *   DeepSeek-V2: pairs rotate in place as complex numbers (ROPE_INTERLEAVED,
 *     rope_interleave false).
 * ROPE_INTERLEAVED with rope_interleave true is refused (it would pair twice).
 *
 * The latent cache. Per token and layer it stores the normalised latent c
 * [r_kv] and the ROTATED k_rope [dr] (in the order the rotation leaves it):
 * r_kv + dr floats, against n * (dn + dr + dv) for the keys and values it
 * stands for (DeepSeek-V3: 576 against 40,960). It is L7.5's KVCache with one
 * "kv head", key_dim = r_kv (c goes in as the key) and value_dim = dr (k_rope
 * as the value): mla_cache_init makes it, and a model passes that one cache
 * to every layer, as for GQA.
 *
 * Two ways to attend over the latents, equal up to rounding:
 *   naive (HF's order): expand every cached c through kv_b_proj into per-head
 *     k_nope and v, concatenate the keys [k_nope_h ; k_rope], attend as MHA.
 *   absorbed: with W = kv_b_proj.weight as [n, dn + dv, r_kv], W_UK_h its first
 *     dn rows and W_UV_h its last dv rows,
 *       q_lat_h = W_UK_h^T q_nope_h                                   [r_kv]
 *       S_h[t]  = (q_lat_h . c_t + q_rope_h . k_rope_t) * scale + mask
 *       o_h     = W_UV_h (sum_t softmax(S_h)[t] c_t)                   [dv]
 *     W_UK is folded into the query and W_UV applied after the weighted sum,
 *     so the latents are read as they are, once for all heads: no per-token
 *     expansion. That is what makes decoding through the latent cache cheap.
 *
 * Memory and autograd follow tensor.h, nn.h and autograd.h: the module tree
 * (MLAttention.module) owns every parameter, the norms' weights included;
 * forward results belong to the current scope and, without a cache, are built
 * from recorded ops on either path, so gradients reach x and every parameter.
 * A forward never writes into a parameter and accepts F32 or BF16 parameters
 * and inputs (BF16 widened exactly). Cached forwards are inference: run them
 * under tl_no_grad_push(), as for gqa_forward.
 *
 * Errors: a function that fails returns NULL (or -1) with a message from
 * tl_error() naming the function, what was wrong (shapes as "[2, 5, 12]") and
 * what to do. A NULL tensor input keeps the message of the call that made it.
 * A call that fails leaves the cache as it was.
 */
#ifndef TINYLLM_MODERN_MLA_H
#define TINYLLM_MODERN_MLA_H

#include <stdbool.h>
#include <stdint.h>
#include "tinyllm/nn.h"
#include "tinyllm/pcg32.h"
#include "tinyllm/tensor.h"
#include "tinyllm/modern/attention.h"
#include "tinyllm/modern/rmsnorm.h"
#include "tinyllm/modern/rope.h"

/* The eps of q_a_layernorm and kv_a_layernorm, whatever rms_norm_eps says. */
#define MLA_NORM_EPS 1e-6

/* The shape of one MLA layer, in config.json's terms (keys in brackets). */
typedef struct {
    int64_t hidden;            /* H [hidden_size] */
    int64_t n_heads;           /* n [num_attention_heads] */
    int64_t q_lora_rank;       /* r_q [q_lora_rank]: 0 when null (then q_proj) */
    int64_t kv_lora_rank;      /* r_kv [kv_lora_rank]: the latent's width */
    int64_t qk_nope_head_dim;  /* dn [qk_nope_head_dim] */
    int64_t qk_rope_head_dim;  /* dr [qk_rope_head_dim]: even; the RopeSpec's width */
    int64_t v_head_dim;        /* dv [v_head_dim] */
    bool attention_bias;       /* [attention_bias]: q_a_proj, kv_a_proj_with_mqa and o_proj
                                * biased (never q_proj, q_b_proj or kv_b_proj) */
    bool rope_interleave;      /* [rope_interleave] (DeepSeek-V3: default true): de-interleave
                                * the rope features before a ROPE_HALF rotation */
    double rope_factor;        /* the rope dict's factor when its rope_type is not "default"
                                * (yarn: 40 for DeepSeek-V3), else 0 */
    double mscale_all_dim;     /* the rope dict's mscale_all_dim (DeepSeek-V3: 1), 0 when
                                * absent or when the rope_type is "default" */
} MLAConfig;

/* Which way mla_forward attends over the latents (the header's two paths). */
typedef enum {
    MLA_PATH_AUTO,      /* mla_choose_path decides per call */
    MLA_PATH_NAIVE,     /* HF's order: per-head keys and values from kv_b_proj */
    MLA_PATH_ABSORBED   /* W_UK folded into the query, W_UV after the weighted sum */
} mla_path;

typedef struct {
    tl_module *module;             /* owned: the "MLAttention" node, children in HF's order:
                                    * q_proj | q_a_proj, q_a_layernorm, q_b_proj; then
                                    * kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj */
    tl_module *q_proj;             /* borrowed: Linear(H -> n(dn + dr)), no bias; NULL with
                                    * q_lora */
    tl_module *q_a_proj;           /* borrowed: Linear(H -> r_q, attention_bias); NULL without */
    RMSNorm q_a_layernorm;         /* weight [r_q] borrowed from module (never rmsnorm_free
                                    * it), eps MLA_NORM_EPS; weight NULL without q_lora */
    tl_module *q_b_proj;           /* borrowed: Linear(r_q -> n(dn + dr)), no bias; or NULL */
    tl_module *kv_a_proj_with_mqa; /* borrowed: Linear(H -> r_kv + dr, attention_bias) */
    RMSNorm kv_a_layernorm;        /* weight [r_kv] borrowed from module, eps MLA_NORM_EPS */
    tl_module *kv_b_proj;          /* borrowed: Linear(r_kv -> n(dn + dv)), no bias */
    tl_module *o_proj;             /* borrowed: Linear(n dv -> H, attention_bias) */
    int64_t hidden, n_heads, q_lora_rank, kv_lora_rank;
    int64_t qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
    bool attention_bias, rope_interleave;
    double scale;                  /* multiplies the scores: (dn + dr)^-1/2 * m^2 after init */
    RopeSpec rope;                 /* a copy; head_dim == rotary_dim == dr */
    mla_path path;                 /* MLA_PATH_AUTO after init; set it to choose */
} MLAttention;

/* The number of parameters of a layer of cfg, from cfg alone (no weights):
 *     q:  n(dn+dr)H                              q_lora_rank 0
 *         r_q H (+ r_q) + r_q + n(dn+dr) r_q     else (the bias with attention_bias)
 *     kv: (r_kv+dr)H (+ (r_kv+dr)) + r_kv + n(dn+dv) r_kv
 *     o:  H n dv (+ H)
 * (DeepSeek-V3: 187,107,328 per layer; DeepSeek-V2-Lite: 13,763,072.) Equals
 * tl_module_param_count(a->module) for a built from cfg. Returns -1 (with an
 * error naming mla_param_count) when cfg is NULL or a width is out of range
 * (as mla_init refuses it). */
int64_t mla_param_count(const MLAConfig *cfg);

/* Fills *a with a new module tree whose parameters are registered in HF's
 * order, so that a parent attaching a->module as "self_attn" has HF's keys:
 *     q_lora_rank 0:  q_proj.weight [n(dn+dr), H]
 *     else:           q_a_proj.weight [r_q, H], (q_a_proj.bias [r_q],)
 *                     q_a_layernorm.weight [r_q], q_b_proj.weight [n(dn+dr), r_q]
 *     then:           kv_a_proj_with_mqa.weight [r_kv+dr, H], (kv_a_proj_with_mqa.bias,)
 *                     kv_a_layernorm.weight [r_kv], kv_b_proj.weight [n(dn+dv), r_kv],
 *                     o_proj.weight [H, n dv] (, o_proj.bias [H])
 * (biases in brackets only with attention_bias). Parameters are F32 and
 * require a gradient. With rng, each Linear draws its weight and then its
 * bias from U(-1/sqrt(in), 1/sqrt(in)) (nn.h), in the order above; with rng
 * NULL (init=false) every Linear parameter is zero and no number is drawn. The
 * norms' weights are 1 either way (HF's init; no number drawn). scale as the
 * header says; rope copied; path MLA_PATH_AUTO.
 * Returns 0, or -1 with an error naming mla_init when a, cfg or rope is NULL;
 * hidden, n_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim or
 * v_head_dim < 1, or q_lora_rank < 0 (the message names it); qk_rope_head_dim
 * odd (its features rotate in pairs); rope_factor or mscale_all_dim negative
 * or not finite; the RopeSpec not of head_dim == rotary_dim == qk_rope_head_dim
 * (both widths named: "the RopeSpec rotates 8 of 8 features but
 * qk_rope_head_dim is 4"); rope_interleave with a ROPE_INTERLEAVED spec;
 * memory runs out. On error *a holds no module (mla_free is still safe). */
int mla_init(MLAttention *a, const MLAConfig *cfg, const RopeSpec *rope, tl_pcg32 *rng);

/* Frees the module tree (detaching it from a parent first, nn.h), which owns
 * the norms' weights too, and clears *a. NULL, a cleared struct and one whose
 * init failed are no-ops. Free the attention before the module it is attached
 * to (the parts before the whole). */
void mla_free(MLAttention *a);

/* Fills *c with a latent cache for layers of cfg: L7.5's plain KVCache
 * (kv_cache_init) of n_layers layers, batch rows, ONE kv head, key_dim
 * kv_lora_rank (the normalised latents) and value_dim qk_rope_head_dim (the
 * rotated k_rope), max_len positions: n_layers * batch * max_len *
 * (kv_lora_rank + qk_rope_head_dim) floats, allocated now. Free it with
 * kv_cache_free; every function of attention.h works on it (kv_cache_view
 * shows the latents as keys and the k_rope as values).
 * Returns 0, or -1 with an error naming mla_cache_init when c or cfg is NULL,
 * a width of cfg is < 1, or kv_cache_init refuses the sizes (its message
 * kept). */
int mla_cache_init(KVCache *c, const MLAConfig *cfg, int n_layers, int64_t batch,
                   int64_t max_len);

/* The path mla_forward takes for n_new tokens attending over n_keys keys,
 * through a cache (cached) or not: a->path when it is NAIVE or ABSORBED; for
 * MLA_PATH_AUTO, naive without a cache (training and full forwards keep HF's
 * order), and with one the path of fewer multiply-adds in the attention
 * (T = n_new, S = n_keys; the projections both paths share left out):
 *     absorbed iff  n T (r_kv (dn + dv) + S (2 r_kv + dr))
 *                     < S r_kv n (dn + dv) + n T S (dn + dr + dv)
 * So a decode step over a cache absorbs; a prefill into an empty cache does
 * not (DeepSeek-V3: chunks of up to 163 new tokens over 4096 latents absorb).
 * Returns MLA_PATH_NAIVE or MLA_PATH_ABSORBED, or MLA_PATH_AUTO with an error
 * naming mla_choose_path when a is NULL, or n_new or n_keys < 1. */
mla_path mla_choose_path(const MLAttention *a, int64_t n_new, int64_t n_keys, bool cached);

/* y = o_proj(attention(x)) as the header describes, on the path
 * mla_choose_path(a, T, S, cache != NULL) gives.
 *   x: F32 or BF16 [B, T, hidden], T >= 1, any strides.
 *   positions: the position ids RoPE rotates q_rope and k_rope at: I64 (or
 *     I32) [T], shared by the batch, or [B, T]; any values. NULL means the
 *     cache positions of the new tokens (kv_cache_seq_len(cache, layer) +
 *     0 .. T - 1; 0 .. T - 1 without a cache).
 *   mask: NULL (causal over cache positions: key j visible to query i iff
 *     j <= i), or an additive F32 mask broadcastable to [B, n_heads, T, S]
 *     (0 or fp32 min, never -inf), S being the keys the update attends over
 *     (kv_cache_positions tells S and their positions; without a cache S = T).
 *     It replaces the causal default, so it must hide future keys itself.
 *   cache, layer: NULL (attend over this call's tokens only), or the model's
 *     latent cache (mla_cache_init, or any KVCache of that shape that stores
 *     keys as given) and this layer's index: each new token's c and rotated
 *     k_rope are appended (kv_cache_update), then attended over with every
 *     latent the layer holds (append, then attend).
 *   returns: F32 [B, T, hidden], in the current scope.
 * Errors (NULL, naming mla_forward; the cache is left unchanged): a NULL or
 * without a module; x NULL (its message kept); x not [B, T, hidden] (x's
 * shape and hidden named); a parameter of the wrong shape (named with both
 * shapes: a checkpoint of another config); a width, scale or path out of
 * range; positions not I64/I32 [T] or [B, T] matching x (both shapes named);
 * a mask not F32 or not broadcastable to [B, n_heads, T, S] (both shapes
 * named); with a cache: gradients enabled (run under tl_no_grad_push), layer
 * out of range, a cache whose [B, Hkv, key_dim, value_dim] is not
 * [B, 1, kv_lora_rank, qk_rope_head_dim] (both named: make it with
 * mla_cache_init), a cache that rotates keys itself (rotates_keys: its keys
 * are latents, which never rotate), and every refusal of kv_cache_update
 * (a full cache says its size). */
tl_tensor *mla_forward(const MLAttention *a, tl_tensor *x, tl_tensor *positions,
                       tl_tensor *mask, KVCache *cache, int layer);

#endif
