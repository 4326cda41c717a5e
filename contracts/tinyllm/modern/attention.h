/* tinyllm/modern/attention.h: grouped-query attention and the KV cache (L7.5).
 *
 * Hugging Face's LlamaAttention / Qwen2Attention, eager path (transformers 5,
 * models/llama/modeling_llama.py: eager_attention_forward, repeat_kv). For x
 * [B, T, H] with Hq query heads, Hkv key/value heads and head width D:
 *
 *     q = q_proj(x) -> [B, T, Hq, D],  k = k_proj(x), v = v_proj(x) -> [B, T, Hkv, D]
 *     q, k = RoPE(q, positions), RoPE(k, positions)          (L7.3's rope_apply)
 *     k, v = the cache's keys and values after appending these  (append, THEN attend)
 *     S_h  = (q_h . K_g^T) * scale + mask                       scale = D^-1/2 by default
 *     P_h  = softmax(S_h) over the keys (the last axis), in float32
 *     o_h  = P_h . V_g,   y = o_proj(concat_h o_h)              -> [B, T, H]
 *
 * where query head h reads kv head g = h / (Hq / Hkv): each kv head serves a
 * contiguous GROUP of Hq / Hkv query heads (repeat_kv repeats each kv head in
 * place). MHA is Hkv = Hq, MQA is Hkv = 1. D is the config's head_dim, which
 * need not be H / Hq (when a config has none, the model passes H / Hq). Output
 * feature h * D + d of q_proj belongs to head h (the same for k, v, o's input).
 * Biases: Qwen2 biases q, k and v, never o; Llama's attention_bias biases all
 * four; Mistral and most Llamas have none.
 *
 * The mask is additive: 0 where a key is visible, fp32 min
 * (-3.4028234663852886e38) where it is not, never -inf, so a query that sees
 * nothing gets a uniform average instead of NaN. With mask NULL the attention
 * is causal over CACHE positions: the key at cache position j is visible to
 * the query at cache position i iff j <= i. A token's cache position is its
 * index in the stream the cache has seen (0, 1, 2, ... across every call);
 * its position id (`positions`, for RoPE) is usually the same number but need
 * not be (left padding, packed sequences). Masks use cache positions; RoPE
 * uses position ids.
 *
 * Performance: this is the decode hot path. K and V are read in place from the
 * cache (views, never copied per step); the grouping is a reshape of the
 * queries to [B, Hkv, (Hq / Hkv) * T, D], so one product per kv head reads its
 * keys once; nothing is allocated outside the current scope's arena.
 *
 * Memory and autograd follow tensor.h, nn.h and autograd.h: parameters are owned
 * by the module tree (GQAttention.module); forward results belong to the current
 * scope and, without a cache, are built from recorded ops, so gradients reach x
 * and every weight and bias. A forward never writes into a parameter and
 * accepts F32 or BF16 parameters and inputs (BF16 widened exactly).
 *
 * Errors: a function that fails returns NULL (or -1) with a message from
 * tl_error() naming the function, what was wrong (shapes as "[2, 5, 12]") and
 * what to do. A NULL tensor input keeps the message of the call that made it.
 * A call that fails leaves the cache as it was.
 */
#ifndef TINYLLM_MODERN_ATTENTION_H
#define TINYLLM_MODERN_ATTENTION_H

#include <stdbool.h>
#include <stdint.h>
#include "tinyllm/nn.h"
#include "tinyllm/pcg32.h"
#include "tinyllm/tensor.h"
#include "tinyllm/modern/rope.h"

/* ==== the KV cache interface ============================================
 *
 * ONE cache object serves every layer of a model: each layer passes its own
 * index. A layer's update appends the new tokens' keys and values and hands
 * back what its queries attend over. Every kind of cache sits behind the same
 * interface: a KVCache carries an ops table, and a cache of another kind
 * (L7.7's bounded SinkWindowCache, L7.6's latent cache) is a struct whose
 * FIRST member is a KVCache with its own ops; pass &that.base where a
 * KVCache * is asked for.
 *
 * Storage is preallocated: per layer, keys [B, Hkv, capacity, key_dim] and
 * values [B, Hkv, capacity, value_dim] (F32, owned), filled slot by slot. This
 * file's plain cache (kv_cache_init) keeps everything: slot i holds cache
 * position i, capacity is the maximum length, keys are stored AFTER RoPE, and
 * appending past the capacity is an error that says the size.
 *
 * Cached forwards are inference: the cache stores values without their
 * autograd history, so gqa_forward refuses a cache while gradients are being
 * recorded. Run cached forwards inside tl_no_grad_push() / tl_no_grad_pop();
 * train with cache NULL.
 */

typedef struct KVCache KVCache;

/* What one layer's update leaves for its attention. keys and values are views
 * of the cache (or, for a kind that must build them, tensors in the current
 * scope); the position tensors are in the current scope. Valid until the
 * layer's next update, kv_cache_reset or kv_cache_free. */
typedef struct {
    tl_tensor *keys;                 /* F32 [B, Hkv, S, key_dim]: every key to attend over */
    tl_tensor *values;               /* F32 [B, Hkv, S, value_dim], in the keys' order */
    tl_tensor *key_positions;        /* I64 [S]: the cache position of each key */
    tl_tensor *query_positions;      /* I64 [T]: the cache positions of the new tokens */
    tl_tensor *query_rope_positions; /* I64 [T]: where to rotate the queries, when the
                                      * cache rotates keys itself (rotates_keys); else NULL */
} KVCacheUpdate;

/* How one kind of cache plans and performs an update. kv_cache_positions and
 * kv_cache_update check the layer and the shapes against the KVCache fields
 * first, then call these; an implementation fails with its own message. */
typedef struct {
    const char *kind;   /* the struct's name, for messages: "KVCache", "SinkWindowCache" */
    /* The cache positions of the next n_new tokens, I64 [n_new], and of every key
     * an update of n_new tokens will return, I64 [S], in that update's order. */
    int (*positions)(const KVCache *cache, int layer, int64_t n_new,
                     tl_tensor **query_positions, tl_tensor **key_positions);
    /* Appends k [B, Hkv, T, key_dim] and v [B, Hkv, T, value_dim] to the layer,
     * then fills *out. rope is what a rotates_keys cache rotates with. */
    int (*update)(KVCache *cache, int layer, tl_tensor *k, tl_tensor *v, const RopeSpec *rope,
                  KVCacheUpdate *out);
} KVCacheOps;

struct KVCache {
    const KVCacheOps *ops;   /* the kind: kv_cache_init sets the plain cache's */
    int n_layers;            /* layers 0 .. n_layers - 1 */
    int64_t batch;           /* B of every x the cache serves */
    int64_t n_kv_heads;      /* Hkv */
    int64_t key_dim;         /* the width of a cached key (D for GQA) */
    int64_t value_dim;       /* the width of a cached value (D for GQA; may differ) */
    int64_t capacity;        /* slots per layer (the plain cache: its max_len) */
    bool rotates_keys;       /* true: update takes keys BEFORE RoPE and returns them
                              * rotated (StreamingLLM, L7.7); false: keys arrive rotated */
    tl_tensor **keys;        /* [n_layers] owned F32 [B, Hkv, capacity, key_dim] */
    tl_tensor **values;      /* [n_layers] owned F32 [B, Hkv, capacity, value_dim] */
    int64_t *slot_positions; /* [n_layers * capacity]: the cache position held by slot s
                              * of layer l at [l * capacity + s] */
    int64_t *held;           /* [n_layers]: slots in use (keys the layer holds) */
    int64_t *seen;           /* [n_layers]: tokens ever appended = the next cache position */
};

/* Fills *c with the plain keep-everything cache: n_layers layers of max_len
 * slots, zero-filled, held = seen = 0, rotates_keys false. Memory:
 * n_layers * batch * n_kv_heads * max_len * (key_dim + value_dim) * 4 bytes,
 * allocated now, never again.
 * Returns 0, or -1 with an error naming kv_cache_init when c is NULL; n_layers,
 * batch, n_kv_heads, key_dim, value_dim or max_len < 1 (the message names it);
 * or memory runs out (the message gives the bytes asked for). On error *c holds
 * nothing (kv_cache_free is still safe). */
int kv_cache_init(KVCache *c, int n_layers, int64_t batch, int64_t n_kv_heads, int64_t key_dim,
                  int64_t value_dim, int64_t max_len);

/* Frees the storage of a cache of any kind and clears *c. NULL, a cleared
 * struct and a cache whose init failed are no-ops. */
void kv_cache_free(KVCache *c);

/* Forgets every token of every layer (held = seen = 0), keeping the storage:
 * the next update starts again at cache position 0. NULL is a no-op. */
void kv_cache_reset(KVCache *c);

/* The number of tokens the layer has been given so far: the cache position of
 * the next token (HF's get_seq_length; for a bounded cache more than it holds).
 * A model without explicit positions starts its next forward there.
 * Returns -1 (with an error naming kv_cache_seq_len) when c is NULL or the
 * layer is out of range (the message gives the range). */
int64_t kv_cache_seq_len(const KVCache *c, int layer);

/* Views of what the layer holds, in slot order (no copy): *keys F32
 * [B, Hkv, held, key_dim] and *values F32 [B, Hkv, held, value_dim], in the
 * current scope, valid until the layer's next update. A rotates_keys cache
 * holds its keys un-rotated. Returns 0, or -1 with an error naming
 * kv_cache_view (c, keys or values NULL; the layer out of range; a layer that
 * holds nothing yet). */
int kv_cache_view(const KVCache *c, int layer, tl_tensor **keys, tl_tensor **values);

/* What an update of n_new tokens WILL attend over, without changing the cache:
 * *query_positions I64 [n_new] (the new tokens' cache positions) and
 * *key_positions I64 [S] (the cache position of each key the update returns, in
 * its order), both in the current scope. Build masks from these before calling
 * gqa_forward (L7.7's attention_mask). The plain cache: queries seen ..
 * seen + n_new - 1, keys 0 .. seen + n_new - 1.
 * Returns 0, or -1 with an error naming kv_cache_positions: c or an output
 * NULL; c without ops; the layer out of range; n_new < 1; the kind's own
 * refusal (the plain cache: the tokens would not fit, "holds 60 of 64"). */
int kv_cache_positions(const KVCache *c, int layer, int64_t n_new, tl_tensor **query_positions,
                       tl_tensor **key_positions);

/* Appends the layer's new keys and values, then fills *out (KVCacheUpdate):
 * the keys and values to attend over INCLUDE the new tokens (append, then
 * attend). The plain cache copies k and v into slots held .. held + T - 1
 * (cache positions seen .. seen + T - 1) and returns views of slots
 * 0 .. held + T - 1; no copy of what it held before.
 *   k: F32 or BF16 [B, Hkv, T, key_dim]; v: [B, Hkv, T, value_dim]; T >= 1;
 *   B, Hkv and the widths must be the cache's. Stored as F32.
 *   rope: the layer's RopeSpec (used only by a rotates_keys cache; may be NULL
 *   otherwise).
 * Returns 0, or -1 with an error naming kv_cache_update and leaving the cache
 * unchanged: c, k, v or out NULL (a NULL k or v keeps its own message); the
 * layer out of range; k or v not of the cache's shape (both shapes named, e.g.
 * "k [1, 2, 3, 8] does not fit a cache of [B, Hkv, T, key_dim] = [1, 4, T, 8]");
 * k and v of different T; a full cache: "layer 3 holds 60 of 64 positions; 8
 * more do not fit (a KVCache of max_len 64): make it larger" (never a silent
 * overwrite); rope NULL for a rotates_keys cache. */
int kv_cache_update(KVCache *c, int layer, tl_tensor *k, tl_tensor *v, const RopeSpec *rope,
                    KVCacheUpdate *out);

/* ==== GQAttention ======================================================== */

/* The shape of one attention layer, from HF's config.json. */
typedef struct {
    int64_t hidden;       /* H: hidden_size, the width of x and y */
    int64_t n_heads;      /* Hq: num_attention_heads */
    int64_t n_kv_heads;   /* Hkv: num_key_value_heads (n_heads when the config has none);
                           * must divide n_heads */
    int64_t head_dim;     /* D: head_dim (hidden / n_heads when the config has none) */
    bool qkv_bias;        /* q_proj, k_proj, v_proj have biases: Qwen2, attention_bias */
    bool o_bias;          /* o_proj has a bias: Llama's attention_bias (never Qwen2) */
} GQAConfig;

typedef struct {
    tl_module *module;      /* owned: the "GQAttention" node; children q_proj, k_proj,
                             * v_proj, o_proj (Linear), in that order */
    tl_module *q_proj;      /* borrowed from module: Linear(H -> Hq * D) */
    tl_module *k_proj;      /* borrowed: Linear(H -> Hkv * D) */
    tl_module *v_proj;      /* borrowed: Linear(H -> Hkv * D) */
    tl_module *o_proj;      /* borrowed: Linear(Hq * D -> H) */
    int64_t hidden, n_heads, n_kv_heads, head_dim;
    bool qkv_bias, o_bias;
    double scale;           /* multiplies q . k: head_dim^-1/2 after init (HF's
                             * self.scaling; Gemma-2/3 set query_pre_attn_scalar^-1/2) */
    RopeSpec rope;          /* a copy; rope.head_dim == head_dim. A model with dynamic
                             * scaling (L7.4) refreshes it before each forward */
    tl_tensor *sinks;       /* NULL, or gpt-oss's learned sinks [Hq] (HF's self_attn.sinks),
                             * registered on module by L7.7's gqa_add_learned_sinks */
    tl_tensor *(*sink_softmax)(tl_tensor *scores, tl_tensor *sinks);
                            /* with sinks: the probabilities, L7.7's softmax_with_sink,
                             * used instead of tl_softmax(scores, -1) */
} GQAttention;

/* Fills *a with a new module tree whose children are registered in HF's order,
 * so that a parent attaching a->module as "self_attn" has HF's keys in HF's
 * order:
 *     q_proj.weight [Hq*D, H], (q_proj.bias [Hq*D],) k_proj.weight [Hkv*D, H],
 *     (k_proj.bias,) v_proj.weight [Hkv*D, H], (v_proj.bias,)
 *     o_proj.weight [H, Hq*D] (, o_proj.bias [H])
 * Parameters are F32 and require a gradient. With rng, each Linear draws its
 * weight and then its bias from U(-1/sqrt(in), 1/sqrt(in)) (nn.h), in the
 * order above; with rng NULL (init=false) every parameter is zero and no
 * number is drawn. scale = 1/sqrt(head_dim); rope is copied; sinks NULL.
 * Returns 0, or -1 with an error naming gqa_init when a, cfg or rope is NULL;
 * hidden, n_heads, n_kv_heads or head_dim < 1; n_kv_heads does not divide
 * n_heads (the message names both: "9 heads are not a multiple of 4 kv
 * heads"); rope->head_dim != head_dim (both named); memory runs out. On error
 * *a holds no module (gqa_free is still safe). */
int gqa_init(GQAttention *a, const GQAConfig *cfg, const RopeSpec *rope, tl_pcg32 *rng);

/* Frees the module tree (detaching it from a parent first, nn.h) and clears
 * *a. NULL, a cleared struct and one whose init failed are no-ops. Free the
 * attention before the module it is attached to (the parts before the whole). */
void gqa_free(GQAttention *a);

/* The number of parameters, from a's fields:
 *     H*Hq*D + 2*H*Hkv*D + Hq*D*H,  + (Hq + 2*Hkv)*D with qkv_bias, + H with o_bias,
 *     + Hq with learned sinks
 * (SmolLM2-135M: 2*576*576 + 2*576*192 = 884,736). Equals
 * tl_module_param_count(a->module). Returns -1 (with an error naming
 * gqa_param_count) when a is NULL or a field is < 1. */
int64_t gqa_param_count(const GQAttention *a);

/* y = o_proj(attention(x)) as the header describes.
 *   x: F32 or BF16 [B, T, hidden], T >= 1, any strides.
 *   positions: the position ids RoPE rotates q and k at: I64 (or I32) [T],
 *     shared by the batch, or [B, T]; any values. NULL means the cache
 *     positions of the new tokens (kv_cache_seq_len(cache, layer) + 0 .. T - 1;
 *     0 .. T - 1 without a cache), as HF defaults position_ids to cache_position.
 *     Must be NULL with a rotates_keys cache, which decides where it rotates.
 *   mask: NULL (causal over cache positions), or an additive F32 mask
 *     broadcastable to [B, Hq, T, S] ([T, S], [1, 1, T, S], [B, 1, T, S], ...)
 *     where S is the number of keys the update attends over
 *     (kv_cache_positions tells S and their positions; without a cache S = T).
 *     It replaces the causal default, so it must hide future keys itself.
 *   cache, layer: NULL (attend over this call's tokens only), or the model's one
 *     cache and this layer's index in it: the new keys and values are appended
 *     (kv_cache_update), then attended over with everything the layer holds.
 *   returns: F32 [B, T, hidden], in the current scope.
 * Errors (NULL, naming gqa_forward; the cache is left unchanged): a NULL or
 * without a module; x NULL (its message kept); x not [B, T, hidden] (x's shape
 * and hidden named); a projection's weight of the wrong shape (named with both
 * shapes: a checkpoint of another config); n_kv_heads not dividing n_heads;
 * scale not finite and > 0; positions not I64/I32 [T] or [B, T] matching x
 * (both shapes named); a mask not F32 or not broadcastable to [B, Hq, T, S]
 * (both shapes named); with a cache: gradients enabled (run under
 * tl_no_grad_push), layer out of range, the cache's batch, n_kv_heads or
 * key/value widths not the attention's (both named), positions given to a
 * rotates_keys cache, and every refusal of kv_cache_update (a full cache). */
tl_tensor *gqa_forward(const GQAttention *a, tl_tensor *x, tl_tensor *positions,
                       tl_tensor *mask, KVCache *cache, int layer);

#endif
