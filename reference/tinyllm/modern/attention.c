/* Grouped-query attention and the KV cache (L7.5): the reference.
 *
 * The forward is HF's eager path built from recorded ops, so autograd
 * differentiates it. K and V come from the cache as views, and the grouping is
 * a reshape of the queries: each kv head's keys are read once per step.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tinyllm/autograd.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/attention.h"

/* ==== the KV cache ====================================================== */

/* Adds "fn: " (and the cache's kind) before the message a lower call set. */
static void add_context(const char *fn, const char *kind) {
    const char *lower = tl_error() ? tl_error() : "failed without a message";
    if (kind) tl_fail("%s: %s: %s", fn, kind, lower);
    else tl_fail("%s: %s", fn, lower);
}

static int layer_ok(const char *fn, const KVCache *c, int layer) {
    if (layer < 0 || layer >= c->n_layers) {
        tl_fail("%s: layer %d is out of range: the cache has layers 0 .. %d", fn, layer,
                c->n_layers - 1);
        return 0;
    }
    return 1;
}

/* The plain cache: slot i holds cache position i, so held == seen. */
static int full_positions(const KVCache *c, int layer, int64_t n_new, tl_tensor **query_pos,
                          tl_tensor **key_pos) {
    int64_t held = c->held[layer];
    if (held + n_new > c->capacity)
        return tl_fail_status("layer %d holds %lld of %lld positions; %lld more do not fit (a "
                              "KVCache of max_len %lld): make it larger with kv_cache_init, or "
                              "kv_cache_reset it", layer, (long long)held, (long long)c->capacity,
                              (long long)n_new, (long long)c->capacity);
    *query_pos = tl_arange(held, held + n_new);
    *key_pos = tl_arange(0, held + n_new);
    return *query_pos && *key_pos ? 0 : -1;
}

static int full_update(KVCache *c, int layer, tl_tensor *k, tl_tensor *v, const RopeSpec *rope,
                       KVCacheUpdate *out) {
    (void)rope;   /* keys arrive rotated */
    int64_t t = k->shape[2], held = c->held[layer];
    if (full_positions(c, layer, t, &out->query_positions, &out->key_positions) != 0) return -1;
    /* Append first: the new tokens attend to themselves. */
    if (tl_copy_into(tl_narrow(c->keys[layer], 2, held, t), k) != 0 ||
        tl_copy_into(tl_narrow(c->values[layer], 2, held, t), v) != 0)
        return -1;
    for (int64_t i = 0; i < t; i++) c->slot_positions[layer * c->capacity + held + i] = held + i;
    c->held[layer] = c->seen[layer] = held + t;
    out->keys = tl_narrow(c->keys[layer], 2, 0, held + t);
    out->values = tl_narrow(c->values[layer], 2, 0, held + t);
    out->query_rope_positions = NULL;
    return out->keys && out->values ? 0 : -1;
}

static const KVCacheOps FULL_CACHE_OPS = {"KVCache", full_positions, full_update};

int kv_cache_init(KVCache *c, int n_layers, int64_t batch, int64_t n_kv_heads, int64_t key_dim,
                  int64_t value_dim, int64_t max_len) {
    if (!c)
        return tl_fail_status("kv_cache_init: the KVCache pointer is NULL");
    memset(c, 0, sizeof *c);
    const char *names[6] = {"n_layers", "batch", "n_kv_heads", "key_dim", "value_dim", "max_len"};
    int64_t sizes[6] = {n_layers, batch, n_kv_heads, key_dim, value_dim, max_len};
    for (int i = 0; i < 6; i++)
        if (sizes[i] < 1)
            return tl_fail_status("kv_cache_init: %s is %lld; it must be at least 1", names[i],
                                  (long long)sizes[i]);
    c->ops = &FULL_CACHE_OPS;
    c->n_layers = n_layers;
    c->batch = batch;
    c->n_kv_heads = n_kv_heads;
    c->key_dim = key_dim;
    c->value_dim = value_dim;
    c->capacity = max_len;
    c->keys = calloc((size_t)n_layers, sizeof *c->keys);
    c->values = calloc((size_t)n_layers, sizeof *c->values);
    c->slot_positions = calloc((size_t)(n_layers * max_len), sizeof *c->slot_positions);
    c->held = calloc((size_t)n_layers, sizeof *c->held);
    c->seen = calloc((size_t)n_layers, sizeof *c->seen);
    bool ok = c->keys && c->values && c->slot_positions && c->held && c->seen;
    for (int l = 0; ok && l < n_layers; l++) {
        c->keys[l] = tl_tensor_new_owned(TL_F32, TL_SHAPE(batch, n_kv_heads, max_len, key_dim));
        c->values[l] = tl_tensor_new_owned(TL_F32,
                                           TL_SHAPE(batch, n_kv_heads, max_len, value_dim));
        ok = c->keys[l] && c->values[l];
    }
    if (!ok) {
        tl_fail("kv_cache_init: out of memory for %d layers of [%lld, %lld, %lld, %lld + %lld] "
                "floats (%.0f bytes)", n_layers, (long long)batch, (long long)n_kv_heads,
                (long long)max_len, (long long)key_dim, (long long)value_dim,
                4.0 * n_layers * batch * n_kv_heads * max_len * (key_dim + value_dim));
        kv_cache_free(c);
        return -1;
    }
    return 0;
}

void kv_cache_free(KVCache *c) {
    if (!c) return;
    for (int l = 0; l < c->n_layers; l++) {
        if (c->keys) tl_tensor_free(c->keys[l]);
        if (c->values) tl_tensor_free(c->values[l]);
    }
    free(c->keys);
    free(c->values);
    free(c->slot_positions);
    free(c->held);
    free(c->seen);
    memset(c, 0, sizeof *c);
}

void kv_cache_reset(KVCache *c) {
    if (!c) return;
    for (int l = 0; l < c->n_layers; l++) c->held[l] = c->seen[l] = 0;
}

int64_t kv_cache_seq_len(const KVCache *c, int layer) {
    if (!c) return tl_fail_status("kv_cache_seq_len: the cache is NULL");
    return layer_ok("kv_cache_seq_len", c, layer) ? c->seen[layer] : -1;
}

int kv_cache_view(const KVCache *c, int layer, tl_tensor **keys, tl_tensor **values) {
    if (!c || !keys || !values)
        return tl_fail_status("kv_cache_view: the cache or an output pointer is NULL");
    if (!layer_ok("kv_cache_view", c, layer)) return -1;
    if (c->held[layer] == 0)
        return tl_fail_status("kv_cache_view: layer %d holds nothing yet (update it first)", layer);
    *keys = tl_narrow(c->keys[layer], 2, 0, c->held[layer]);
    *values = tl_narrow(c->values[layer], 2, 0, c->held[layer]);
    return *keys && *values ? 0 : -1;
}

int kv_cache_positions(const KVCache *c, int layer, int64_t n_new, tl_tensor **query_positions,
                       tl_tensor **key_positions) {
    if (!c || !c->ops || !query_positions || !key_positions)
        return tl_fail_status("kv_cache_positions: the cache (or its ops) or an output pointer is "
                              "NULL");
    if (!layer_ok("kv_cache_positions", c, layer)) return -1;
    if (n_new < 1)
        return tl_fail_status("kv_cache_positions: n_new is %lld; an update appends at least 1 "
                              "token", (long long)n_new);
    if (c->ops->positions(c, layer, n_new, query_positions, key_positions) == 0) return 0;
    add_context("kv_cache_positions", c->ops->kind);
    return -1;
}

/* 0 when t is a float [B, Hkv, T, width] of the cache's B and Hkv. */
static int fits(const KVCache *c, const char *what, const tl_tensor *t, int64_t width) {
    if (t->ndim == 4 && tl_dtype_is_float(t->dtype) && t->shape[0] == c->batch &&
        t->shape[1] == c->n_kv_heads && t->shape[2] >= 1 && t->shape[3] == width)
        return 0;
    char ts[64];
    return tl_fail_status("kv_cache_update: %s %s (%s) does not fit a cache of [B, Hkv, T, %s] = "
                          "[%lld, %lld, T, %lld] with T >= 1", what, tl_shape_str(t, ts, sizeof ts),
                          tl_dtype_name(t->dtype), what[0] == 'k' ? "key_dim" : "value_dim",
                          (long long)c->batch, (long long)c->n_kv_heads, (long long)width);
}

int kv_cache_update(KVCache *c, int layer, tl_tensor *k, tl_tensor *v, const RopeSpec *rope,
                    KVCacheUpdate *out) {
    if (!c || !c->ops || !out)
        return tl_fail_status("kv_cache_update: the cache (or its ops) or the output is NULL");
    if (!k || !v)
        return tl_propagate_status("kv_cache_update: k or v is NULL");
    if (!layer_ok("kv_cache_update", c, layer)) return -1;
    if (fits(c, "k", k, c->key_dim) != 0 || fits(c, "v", v, c->value_dim) != 0) return -1;
    if (k->shape[2] != v->shape[2])
        return tl_fail_status("kv_cache_update: k has %lld tokens but v has %lld",
                              (long long)k->shape[2], (long long)v->shape[2]);
    if (c->rotates_keys && !rope)
        return tl_fail_status("kv_cache_update: a %s rotates keys itself and needs the layer's "
                              "RopeSpec", c->ops->kind);
    memset(out, 0, sizeof *out);
    if (c->ops->update(c, layer, k, v, rope, out) == 0) return 0;
    add_context("kv_cache_update", c->ops->kind);
    return -1;
}

/* ==== GQAttention ======================================================== */

int gqa_init(GQAttention *a, const GQAConfig *cfg, const RopeSpec *rope, tl_pcg32 *rng) {
    if (!a)
        return tl_fail_status("gqa_init: the GQAttention pointer is NULL");
    memset(a, 0, sizeof *a);
    if (!cfg || !rope)
        return tl_fail_status("gqa_init: the config or the RopeSpec is NULL");
    if (cfg->hidden < 1 || cfg->n_heads < 1 || cfg->n_kv_heads < 1 || cfg->head_dim < 1)
        return tl_fail_status("gqa_init: hidden %lld, n_heads %lld, n_kv_heads %lld and head_dim "
                              "%lld must all be at least 1", (long long)cfg->hidden,
                              (long long)cfg->n_heads, (long long)cfg->n_kv_heads,
                              (long long)cfg->head_dim);
    if (cfg->n_heads % cfg->n_kv_heads != 0)
        return tl_fail_status("gqa_init: %lld heads are not a multiple of %lld kv heads; each kv "
                              "head must serve the same number of query heads",
                              (long long)cfg->n_heads, (long long)cfg->n_kv_heads);
    if (rope->head_dim != cfg->head_dim)
        return tl_fail_status("gqa_init: the RopeSpec is for head_dim %lld but the heads have "
                              "head_dim %lld", (long long)rope->head_dim, (long long)cfg->head_dim);
    int64_t h = cfg->hidden, q_out = cfg->n_heads * cfg->head_dim;
    int64_t kv_out = cfg->n_kv_heads * cfg->head_dim;
    tl_module *m = tl_module_new("GQAttention");
    a->module = m;
    a->q_proj = tl_module_add(m, "q_proj", tl_linear_new(h, q_out, cfg->qkv_bias, rng));
    a->k_proj = tl_module_add(m, "k_proj", tl_linear_new(h, kv_out, cfg->qkv_bias, rng));
    a->v_proj = tl_module_add(m, "v_proj", tl_linear_new(h, kv_out, cfg->qkv_bias, rng));
    a->o_proj = tl_module_add(m, "o_proj", tl_linear_new(q_out, h, cfg->o_bias, rng));
    if (!m || !a->q_proj || !a->k_proj || !a->v_proj || !a->o_proj) {
        tl_fail("gqa_init: could not build the projections: %s", tl_error());
        gqa_free(a);
        return -1;
    }
    a->hidden = h;
    a->n_heads = cfg->n_heads;
    a->n_kv_heads = cfg->n_kv_heads;
    a->head_dim = cfg->head_dim;
    a->qkv_bias = cfg->qkv_bias;
    a->o_bias = cfg->o_bias;
    a->scale = 1.0 / sqrt((double)cfg->head_dim);
    a->rope = *rope;
    return 0;
}

void gqa_free(GQAttention *a) {
    if (!a) return;
    tl_module_free(a->module);
    memset(a, 0, sizeof *a);
}

int64_t gqa_param_count(const GQAttention *a) {
    if (!a || a->hidden < 1 || a->n_heads < 1 || a->n_kv_heads < 1 || a->head_dim < 1)
        return tl_fail_status("gqa_param_count: the attention is NULL or not initialised");
    int64_t q = a->n_heads * a->head_dim, kv = a->n_kv_heads * a->head_dim;
    int64_t n = 2 * a->hidden * q + 2 * a->hidden * kv;
    if (a->qkv_bias) n += q + 2 * kv;
    if (a->o_bias) n += a->hidden;
    if (a->sinks) n += a->n_heads;
    return n;
}

/* A projection's weight (and bias) must be the shapes the config implies. */
static int check_proj(const char *name, const tl_module *lin, int64_t out, int64_t in) {
    tl_tensor *w = tl_module_param(lin, "weight");
    char ws[64];
    if (!w || w->ndim != 2 || w->shape[0] != out || w->shape[1] != in)
        return tl_fail_status("gqa_forward: %s's weight has shape %s; expected [%lld, %lld] (a "
                              "checkpoint of another config?)", name,
                              w ? tl_shape_str(w, ws, sizeof ws) : "(none)", (long long)out,
                              (long long)in);
    return 0;
}

/* Positions must be I64/I32 [T] or [B, T] (B may be 1). */
static int check_positions(const tl_tensor *p, int64_t b, int64_t t) {
    if ((p->dtype == TL_I64 || p->dtype == TL_I32) &&
        ((p->ndim == 1 && p->shape[0] == t) ||
         (p->ndim == 2 && p->shape[1] == t && (p->shape[0] == b || p->shape[0] == 1))))
        return 0;
    char ps[64];
    return tl_fail_status("gqa_forward: positions %s (%s) must be I64 [T] or [B, T] with B = "
                          "%lld, T = %lld", tl_shape_str(p, ps, sizeof ps), tl_dtype_name(p->dtype),
                          (long long)b, (long long)t);
}

/* The mask must be F32 and broadcast to the scores [B, Hq, T, S]. */
static int check_mask(const tl_tensor *mask, const int64_t *scores) {
    bool ok = mask->dtype == TL_F32 && mask->ndim >= 1 && mask->ndim <= 4;
    for (int i = 0; ok && i < mask->ndim; i++) {
        int64_t m = mask->shape[mask->ndim - 1 - i], s = scores[3 - i];
        ok = m == s || m == 1;
    }
    if (ok) return 0;
    char ms[64];
    return tl_fail_status("gqa_forward: the mask %s (%s) does not broadcast to the scores [B, Hq, "
                          "T, S] = [%lld, %lld, %lld, %lld] (S keys after this update: "
                          "kv_cache_positions gives them); it must be F32",
                          tl_shape_str(mask, ms, sizeof ms), tl_dtype_name(mask->dtype),
                          (long long)scores[0], (long long)scores[1], (long long)scores[2],
                          (long long)scores[3]);
}

/* Causal over cache positions: a query sees itself and the keys before it. */
static bool causal_visible(int64_t key_pos, int64_t query_pos) { return key_pos <= query_pos; }

/* The causal mask [T, S]: 0 where visible, fp32 min (never -inf) elsewhere;
 * NULL with *needed false when every key is visible (one decoded token). */
static tl_tensor *causal_mask(tl_tensor *query_pos, tl_tensor *key_pos, bool *needed) {
    int64_t t = query_pos->shape[0], s = key_pos->shape[0];
    const int64_t *qp = tl_data(query_pos), *kp = tl_data(key_pos);
    *needed = false;
    for (int64_t i = 0; i < t; i++)
        for (int64_t j = 0; j < s; j++)
            if (!causal_visible(kp[j], qp[i])) *needed = true;
    if (!*needed) return NULL;
    tl_tensor *mask = tl_empty(TL_F32, TL_SHAPE(t, s));
    if (!mask) return NULL;
    float *m = tl_f32(mask);
    for (int64_t i = 0; i < t; i++)
        for (int64_t j = 0; j < s; j++) m[i * s + j] = causal_visible(kp[j], qp[i]) ? 0 : -FLT_MAX;
    return mask;
}

/* Everything gqa_forward can refuse before it touches the cache. */
static int check_forward(const GQAttention *a, const tl_tensor *x, const tl_tensor *positions,
                         const KVCache *cache, int layer) {
    char xs[64];
    if (x->ndim != 3 || x->shape[1] < 1 || x->shape[2] != a->hidden)
        return tl_fail_status("gqa_forward: x has shape %s; it must be [B, T, hidden] with T >= 1 "
                              "and hidden %lld", tl_shape_str(x, xs, sizeof xs),
                              (long long)a->hidden);
    if (a->n_kv_heads < 1 || a->n_heads % a->n_kv_heads != 0)
        return tl_fail_status("gqa_forward: %lld heads are not a multiple of %lld kv heads",
                              (long long)a->n_heads, (long long)a->n_kv_heads);
    if (!(isfinite(a->scale) && a->scale > 0))
        return tl_fail_status("gqa_forward: scale is %g; it must be a finite number > 0", a->scale);
    int64_t q = a->n_heads * a->head_dim, kv = a->n_kv_heads * a->head_dim;
    if (check_proj("q_proj", a->q_proj, q, a->hidden) != 0 ||
        check_proj("k_proj", a->k_proj, kv, a->hidden) != 0 ||
        check_proj("v_proj", a->v_proj, kv, a->hidden) != 0 ||
        check_proj("o_proj", a->o_proj, a->hidden, q) != 0)
        return -1;
    if (positions && check_positions(positions, x->shape[0], x->shape[1]) != 0) return -1;
    if (!cache) return 0;
    if (tl_grad_enabled())
        return tl_fail_status("gqa_forward: a KV cache stores keys and values without their "
                              "autograd history, so gradients would be wrong: run cached forwards "
                              "under tl_no_grad_push(), or pass cache NULL to train");
    if (!layer_ok("gqa_forward", cache, layer)) return -1;
    if (cache->batch != x->shape[0] || cache->n_kv_heads != a->n_kv_heads ||
        cache->key_dim != a->head_dim || cache->value_dim != a->head_dim) {
        return tl_fail_status("gqa_forward: the cache holds [B, Hkv, key_dim, value_dim] = [%lld, "
                              "%lld, %lld, %lld] but this attention needs [%lld, %lld, %lld, %lld]",
                              (long long)cache->batch, (long long)cache->n_kv_heads,
                              (long long)cache->key_dim, (long long)cache->value_dim,
                              (long long)x->shape[0], (long long)a->n_kv_heads,
                              (long long)a->head_dim, (long long)a->head_dim);
    }
    if (cache->rotates_keys && positions)
        return tl_fail_status("gqa_forward: a %s rotates keys at its own positions; pass "
                              "positions NULL", cache->ops->kind);
    return 0;
}

tl_tensor *gqa_forward(const GQAttention *a, tl_tensor *x, tl_tensor *positions,
                       tl_tensor *mask, KVCache *cache, int layer) {
    if (!a || !a->module) return tl_fail("gqa_forward: the attention is NULL or has no module "
                                         "(call gqa_init first)");
    if (!x) return tl_propagate("gqa_forward: x is NULL");
    if (check_forward(a, x, positions, cache, layer) != 0) return NULL;
    int64_t b = x->shape[0], t = x->shape[1], hq = a->n_heads, hkv = a->n_kv_heads;
    int64_t d = a->head_dim, g = hq / hkv;

    /* Cache positions of the new tokens and of every key they will see. */
    tl_tensor *query_pos, *key_pos;
    if (cache) {
        if (kv_cache_positions(cache, layer, t, &query_pos, &key_pos) != 0) {
            add_context("gqa_forward", NULL);
            return NULL;
        }
    } else {
        query_pos = key_pos = tl_arange(0, t);
    }
    int64_t s = key_pos ? key_pos->shape[0] : 0;
    if (mask && check_mask(mask, (int64_t[]){b, hq, t, s}) != 0) return NULL;

    tl_tensor *q = tl_reshape(tl_linear_forward(a->q_proj, x), TL_SHAPE(b, t, hq, d));
    tl_tensor *k = tl_reshape(tl_linear_forward(a->k_proj, x), TL_SHAPE(b, t, hkv, d));
    tl_tensor *v = tl_reshape(tl_linear_forward(a->v_proj, x), TL_SHAPE(b, t, hkv, d));
    if (!cache || !cache->rotates_keys) {    /* one table for q and k */
        tl_tensor *cos, *sin;
        if (rope_cos_sin(&a->rope, positions ? positions : query_pos, &cos, &sin) != 0)
            return NULL;
        q = rope_apply_cos_sin(&a->rope, q, cos, sin, ROPE_BTHD);
        k = rope_apply_cos_sin(&a->rope, k, cos, sin, ROPE_BTHD);
    }
    const int to_heads[4] = {0, 2, 1, 3};
    tl_tensor *keys = tl_permute(k, to_heads), *values = tl_permute(v, to_heads);
    if (!keys || !values || !q) return NULL;
    if (cache) {   /* append, then attend over everything the layer holds */
        KVCacheUpdate u;
        if (kv_cache_update(cache, layer, keys, values, &a->rope, &u) != 0) {
            add_context("gqa_forward", NULL);
            return NULL;
        }
        keys = u.keys;
        values = u.values;
        if (u.query_rope_positions) q = rope_apply(&a->rope, q, u.query_rope_positions);
    }
    if (!mask) {
        bool needed;
        mask = causal_mask(query_pos, key_pos, &needed);
        if (needed && !mask) return NULL;
    }

    /* Query heads g*j .. g*j + g - 1 share kv head j: group them as the rows of
     * one product per kv head, [B, Hkv, g*T, D] against K^T [B, Hkv, D, S]. */
    tl_tensor *qg = tl_reshape(tl_permute(q, to_heads), TL_SHAPE(b, hkv, g * t, d));
    tl_tensor *scores = tl_mul_scalar(tl_matmul(qg, tl_transpose(keys, 2, 3)), a->scale);
    scores = tl_reshape(scores, TL_SHAPE(b, hq, t, s));
    if (mask) scores = tl_add(scores, mask);
    tl_tensor *p = a->sinks ? a->sink_softmax(scores, a->sinks) : tl_softmax(scores, -1);
    tl_tensor *o = tl_matmul(tl_reshape(p, TL_SHAPE(b, hkv, g * t, s)), values);
    o = tl_permute(tl_reshape(o, TL_SHAPE(b, hq, t, d)), to_heads);      /* [B, T, Hq, D] */
    return tl_linear_forward(a->o_proj, tl_reshape(o, TL_SHAPE(b, t, hq * d)));
}
