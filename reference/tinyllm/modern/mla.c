/* Multi-head latent attention (L7.6): the reference.
 *
 * DeepseekV3Attention's eager path built from recorded ops, so autograd
 * differentiates it. The cache is L7.5's KVCache holding per token the
 * normalised latent (as the key) and the rotated shared rope key (as the
 * value); the absorbed path reads those latents in place for every head.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "tinyllm/autograd.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/mla.h"

static const int TO_HEADS[4] = {0, 2, 1, 3};   /* [B, T, n, d] <-> [B, n, T, d] */

/* HF's yarn_get_mscale: the attention temperature of a stretched rope. */
static double yarn_mscale(double factor, double mscale_all_dim) {
    if (factor <= 1) return 1.0;
    return 0.1 * mscale_all_dim * log(factor) + 1.0;
}

/* 0 when every width of cfg is one mla_init accepts, else -1 naming fn. */
static int check_config(const char *fn, const MLAConfig *cfg) {
    const char *names[6] = {"hidden", "n_heads", "kv_lora_rank", "qk_nope_head_dim",
                            "qk_rope_head_dim", "v_head_dim"};
    int64_t sizes[6] = {cfg->hidden, cfg->n_heads, cfg->kv_lora_rank, cfg->qk_nope_head_dim,
                        cfg->qk_rope_head_dim, cfg->v_head_dim};
    for (int i = 0; i < 6; i++)
        if (sizes[i] < 1)
            return tl_fail_status("%s: %s is %lld; it must be at least 1", fn, names[i],
                                  (long long)sizes[i]);
    if (cfg->q_lora_rank < 0)
        return tl_fail_status("%s: q_lora_rank is %lld; it must be 0 (null: q_proj) or at "
                              "least 1", fn, (long long)cfg->q_lora_rank);
    if (cfg->qk_rope_head_dim % 2 != 0)
        return tl_fail_status("%s: qk_rope_head_dim is %lld; RoPE turns features in pairs, so "
                              "it must be even", fn, (long long)cfg->qk_rope_head_dim);
    if (!(isfinite(cfg->rope_factor) && cfg->rope_factor >= 0) ||
        !(isfinite(cfg->mscale_all_dim) && cfg->mscale_all_dim >= 0))
        return tl_fail_status("%s: rope_factor %g and mscale_all_dim %g must be finite numbers "
                              ">= 0 (0 when the rope is not scaled)", fn, cfg->rope_factor,
                              cfg->mscale_all_dim);
    return 0;
}

int64_t mla_param_count(const MLAConfig *cfg) {
    if (!cfg) return tl_fail_status("mla_param_count: the config is NULL");
    if (check_config("mla_param_count", cfg) != 0) return -1;
    int64_t h = cfg->hidden, n = cfg->n_heads, rq = cfg->q_lora_rank, r = cfg->kv_lora_rank;
    int64_t dqk = cfg->qk_nope_head_dim + cfg->qk_rope_head_dim, dr = cfg->qk_rope_head_dim;
    int64_t dv = cfg->v_head_dim, bias = cfg->attention_bias ? 1 : 0;
    int64_t q = rq == 0 ? n * dqk * h : rq * h + bias * rq + rq + n * dqk * rq;
    int64_t kv = (r + dr) * h + bias * (r + dr) + r + n * (cfg->qk_nope_head_dim + dv) * r;
    int64_t o = h * n * dv + bias * h;
    return q + kv + o;
}

/* A child "RMSNorm" module owning weight [dim] = 1, which *norm borrows. */
static tl_module *norm_module(int64_t dim, RMSNorm *norm) {
    tl_module *m = tl_module_new("RMSNorm");
    tl_tensor *w = m ? tl_module_param_new(m, "weight", 1, &dim) : NULL;
    if (!w) {
        tl_module_free(m);
        return NULL;
    }
    float *wd = tl_f32(w);
    for (int64_t i = 0; i < dim; i++) wd[i] = 1.0f;
    norm->weight = w;
    norm->eps = MLA_NORM_EPS;
    norm->unit_offset = false;
    norm->dim = dim;
    return m;
}

int mla_init(MLAttention *a, const MLAConfig *cfg, const RopeSpec *rope, tl_pcg32 *rng) {
    if (!a) return tl_fail_status("mla_init: the MLAttention pointer is NULL");
    memset(a, 0, sizeof *a);
    if (!cfg || !rope) return tl_fail_status("mla_init: the config or the RopeSpec is NULL");
    if (check_config("mla_init", cfg) != 0) return -1;
    int64_t dr = cfg->qk_rope_head_dim;
    if (rope->head_dim != dr || rope->rotary_dim != dr)
        return tl_fail_status("mla_init: the RopeSpec rotates %lld of %lld features but "
                              "qk_rope_head_dim is %lld; make it with head_dim = rotary_dim = "
                              "qk_rope_head_dim", (long long)rope->rotary_dim,
                              (long long)rope->head_dim, (long long)dr);
    if (cfg->rope_interleave && rope->pairing != ROPE_HALF)
        return tl_fail_status("mla_init: rope_interleave de-interleaves the rope features for a "
                              "ROPE_HALF rotation, but the RopeSpec pairs ROPE_INTERLEAVED; "
                              "DeepSeek-V2 pairs in place: set rope_interleave false");
    int64_t h = cfg->hidden, n = cfg->n_heads, rq = cfg->q_lora_rank, r = cfg->kv_lora_rank;
    int64_t dqk = cfg->qk_nope_head_dim + dr, dkv = cfg->qk_nope_head_dim + cfg->v_head_dim;
    bool bias = cfg->attention_bias;
    tl_module *m = tl_module_new("MLAttention");
    a->module = m;
    bool ok = m != NULL;
    if (ok && rq == 0) {
        a->q_proj = tl_module_add(m, "q_proj", tl_linear_new(h, n * dqk, false, rng));
        ok = a->q_proj != NULL;
    } else if (ok) {
        a->q_a_proj = tl_module_add(m, "q_a_proj", tl_linear_new(h, rq, bias, rng));
        ok = a->q_a_proj && tl_module_add(m, "q_a_layernorm", norm_module(rq, &a->q_a_layernorm));
        a->q_b_proj = ok ? tl_module_add(m, "q_b_proj", tl_linear_new(rq, n * dqk, false, rng))
                         : NULL;
        ok = a->q_b_proj != NULL;
    }
    if (ok) {
        a->kv_a_proj_with_mqa = tl_module_add(m, "kv_a_proj_with_mqa",
                                              tl_linear_new(h, r + dr, bias, rng));
        ok = a->kv_a_proj_with_mqa &&
             tl_module_add(m, "kv_a_layernorm", norm_module(r, &a->kv_a_layernorm));
        a->kv_b_proj = ok ? tl_module_add(m, "kv_b_proj", tl_linear_new(r, n * dkv, false, rng))
                          : NULL;
        a->o_proj = a->kv_b_proj ? tl_module_add(m, "o_proj",
                                                 tl_linear_new(n * cfg->v_head_dim, h, bias, rng))
                                 : NULL;
        ok = a->o_proj != NULL;
    }
    if (!ok) {
        tl_fail("mla_init: could not build the projections: %s", tl_error());
        mla_free(a);
        return -1;
    }
    a->hidden = h;
    a->n_heads = n;
    a->q_lora_rank = rq;
    a->kv_lora_rank = r;
    a->qk_nope_head_dim = cfg->qk_nope_head_dim;
    a->qk_rope_head_dim = dr;
    a->v_head_dim = cfg->v_head_dim;
    a->attention_bias = bias;
    a->rope_interleave = cfg->rope_interleave;
    /* The query/key head is dn + dr wide; a stretched rope sharpens it by m^2. */
    double m_all = cfg->mscale_all_dim > 0 ? yarn_mscale(cfg->rope_factor, cfg->mscale_all_dim)
                                           : 1.0;
    a->scale = 1.0 / sqrt((double)dqk) * m_all * m_all;
    a->rope = *rope;
    a->path = MLA_PATH_AUTO;
    return 0;
}

void mla_free(MLAttention *a) {
    if (!a) return;
    tl_module_free(a->module);   /* the norms' weights are the module's */
    memset(a, 0, sizeof *a);
}

int mla_cache_init(KVCache *c, const MLAConfig *cfg, int n_layers, int64_t batch,
                   int64_t max_len) {
    if (!c || !cfg) return tl_fail_status("mla_cache_init: the cache or the config is NULL");
    if (cfg->kv_lora_rank < 1 || cfg->qk_rope_head_dim < 1)
        return tl_fail_status("mla_cache_init: kv_lora_rank %lld and qk_rope_head_dim %lld must "
                              "be at least 1", (long long)cfg->kv_lora_rank,
                              (long long)cfg->qk_rope_head_dim);
    /* One kv head: the latent is the key, the rotated rope key the value. */
    if (kv_cache_init(c, n_layers, batch, 1, cfg->kv_lora_rank, cfg->qk_rope_head_dim,
                      max_len) != 0)
        return tl_fail_status("mla_cache_init: %s", tl_error());
    return 0;
}

/* ==== the forward ======================================================== */

/* A parameter must have the shape the config implies. */
static int check_param(const char *name, const tl_tensor *w, int ndim, const int64_t *shape) {
    bool ok = w && w->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = w->shape[i] == shape[i];
    if (ok) return 0;
    char ws[64], want[64];
    if (ndim == 2) snprintf(want, sizeof want, "[%lld, %lld]", (long long)shape[0],
                            (long long)shape[1]);
    else snprintf(want, sizeof want, "[%lld]", (long long)shape[0]);
    return tl_fail_status("mla_forward: %s has shape %s; expected %s (a checkpoint of another "
                          "config?)", name, w ? tl_shape_str(w, ws, sizeof ws) : "(none)", want);
}

static int check_linear(const char *name, const tl_module *lin, int64_t out, int64_t in) {
    char full[64];
    snprintf(full, sizeof full, "%s.weight", name);
    return check_param(full, lin ? tl_module_param(lin, "weight") : NULL, 2,
                       (int64_t[]){out, in});
}

static int check_weights(const MLAttention *a) {
    int64_t h = a->hidden, n = a->n_heads, rq = a->q_lora_rank, r = a->kv_lora_rank;
    int64_t dqk = a->qk_nope_head_dim + a->qk_rope_head_dim, dr = a->qk_rope_head_dim;
    if (rq == 0 && check_linear("q_proj", a->q_proj, n * dqk, h) != 0) return -1;
    if (rq > 0 && (check_linear("q_a_proj", a->q_a_proj, rq, h) != 0 ||
                   check_param("q_a_layernorm.weight", a->q_a_layernorm.weight, 1, &rq) != 0 ||
                   check_linear("q_b_proj", a->q_b_proj, n * dqk, rq) != 0))
        return -1;
    if (check_linear("kv_a_proj_with_mqa", a->kv_a_proj_with_mqa, r + dr, h) != 0 ||
        check_param("kv_a_layernorm.weight", a->kv_a_layernorm.weight, 1, &r) != 0 ||
        check_linear("kv_b_proj", a->kv_b_proj, n * (a->qk_nope_head_dim + a->v_head_dim),
                     r) != 0 ||
        check_linear("o_proj", a->o_proj, h, n * a->v_head_dim) != 0)
        return -1;
    return 0;
}

/* Positions must be I64/I32 [T] or [B, T] (B may be 1). */
static int check_positions(const tl_tensor *p, int64_t b, int64_t t) {
    if ((p->dtype == TL_I64 || p->dtype == TL_I32) &&
        ((p->ndim == 1 && p->shape[0] == t) ||
         (p->ndim == 2 && p->shape[1] == t && (p->shape[0] == b || p->shape[0] == 1))))
        return 0;
    char ps[64];
    return tl_fail_status("mla_forward: positions %s (%s) must be I64 [T] or [B, T] with B = "
                          "%lld, T = %lld", tl_shape_str(p, ps, sizeof ps), tl_dtype_name(p->dtype),
                          (long long)b, (long long)t);
}

/* The mask must be F32 and broadcast to the scores [B, n, T, S]. */
static int check_mask(const tl_tensor *mask, const int64_t *scores) {
    bool ok = mask->dtype == TL_F32 && mask->ndim >= 1 && mask->ndim <= 4;
    for (int i = 0; ok && i < mask->ndim; i++) {
        int64_t m = mask->shape[mask->ndim - 1 - i], s = scores[3 - i];
        ok = m == s || m == 1;
    }
    if (ok) return 0;
    char ms[64];
    return tl_fail_status("mla_forward: the mask %s (%s) does not broadcast to the scores [B, "
                          "n_heads, T, S] = [%lld, %lld, %lld, %lld] (S keys after this update: "
                          "kv_cache_positions gives them); it must be F32",
                          tl_shape_str(mask, ms, sizeof ms), tl_dtype_name(mask->dtype),
                          (long long)scores[0], (long long)scores[1], (long long)scores[2],
                          (long long)scores[3]);
}

/* Everything mla_forward can refuse before it touches the cache. */
static int check_forward(const MLAttention *a, const tl_tensor *x, const tl_tensor *positions,
                         const KVCache *cache, int layer) {
    MLAConfig cfg = {.hidden = a->hidden, .n_heads = a->n_heads, .q_lora_rank = a->q_lora_rank,
                     .kv_lora_rank = a->kv_lora_rank, .qk_nope_head_dim = a->qk_nope_head_dim,
                     .qk_rope_head_dim = a->qk_rope_head_dim, .v_head_dim = a->v_head_dim};
    if (check_config("mla_forward", &cfg) != 0) return -1;
    if (!(isfinite(a->scale) && a->scale > 0))
        return tl_fail_status("mla_forward: scale is %g; it must be a finite number > 0", a->scale);
    if (a->path != MLA_PATH_AUTO && a->path != MLA_PATH_NAIVE && a->path != MLA_PATH_ABSORBED)
        return tl_fail_status("mla_forward: path %d is not an mla_path", (int)a->path);
    char xs[64];
    if (x->ndim != 3 || x->shape[1] < 1 || x->shape[2] != a->hidden)
        return tl_fail_status("mla_forward: x has shape %s; it must be [B, T, hidden] with T >= 1 "
                              "and hidden %lld", tl_shape_str(x, xs, sizeof xs),
                              (long long)a->hidden);
    if (check_weights(a) != 0) return -1;
    if (positions && check_positions(positions, x->shape[0], x->shape[1]) != 0) return -1;
    if (!cache) return 0;
    if (tl_grad_enabled())
        return tl_fail_status("mla_forward: a KV cache stores latents without their autograd "
                              "history, so gradients would be wrong: run cached forwards under "
                              "tl_no_grad_push(), or pass cache NULL to train");
    if (layer < 0 || layer >= cache->n_layers)
        return tl_fail_status("mla_forward: layer %d is out of range: the cache has layers 0 .. "
                              "%d", layer, cache->n_layers - 1);
    if (cache->batch != x->shape[0] || cache->n_kv_heads != 1 ||
        cache->key_dim != a->kv_lora_rank || cache->value_dim != a->qk_rope_head_dim)
        return tl_fail_status("mla_forward: the cache holds [B, Hkv, key_dim, value_dim] = [%lld, "
                              "%lld, %lld, %lld] but this attention's latent cache is [B, 1, "
                              "kv_lora_rank, qk_rope_head_dim] = [%lld, 1, %lld, %lld]: make it "
                              "with mla_cache_init", (long long)cache->batch,
                              (long long)cache->n_kv_heads, (long long)cache->key_dim,
                              (long long)cache->value_dim, (long long)x->shape[0],
                              (long long)a->kv_lora_rank, (long long)a->qk_rope_head_dim);
    if (cache->rotates_keys)
        return tl_fail_status("mla_forward: a %s rotates its keys itself, but MLA caches latents "
                              "as keys, which never rotate: use a cache that stores keys as "
                              "given (mla_cache_init)", cache->ops ? cache->ops->kind : "cache");
    return 0;
}

/* Adds "mla_forward: " before the message a lower call set. */
static void add_context(void) {
    tl_fail("mla_forward: %s", tl_error() ? tl_error() : "failed without a message");
}

/* The causal mask [T, S] over cache positions: 0 where key j <= query i,
 * fp32 min (never -inf) elsewhere; NULL when every key is visible. */
static tl_tensor *causal_mask(tl_tensor *query_pos, tl_tensor *key_pos, bool *needed) {
    int64_t t = query_pos->shape[0], s = key_pos->shape[0];
    const int64_t *qp = tl_data(query_pos), *kp = tl_data(key_pos);
    *needed = false;
    for (int64_t i = 0; i < t; i++)
        for (int64_t j = 0; j < s; j++)
            if (kp[j] > qp[i]) *needed = true;
    if (!*needed) return NULL;
    tl_tensor *mask = tl_empty(TL_F32, TL_SHAPE(t, s));
    if (!mask) return NULL;
    float *m = tl_f32(mask);
    for (int64_t i = 0; i < t; i++)
        for (int64_t j = 0; j < s; j++) m[i * s + j] = kp[j] <= qp[i] ? 0 : -FLT_MAX;
    return mask;
}

/* HF's apply_rotary_pos_emb_interleave: each head's [x0, x1, x2, x3, ...]
 * becomes [x0, x2, ..., x1, x3, ...] (view [d/2, 2], transpose, flatten). */
static tl_tensor *deinterleave(tl_tensor *x) {
    int64_t b = x->shape[0], t = x->shape[1], h = x->shape[2], d = x->shape[3];
    tl_tensor *pairs = tl_reshape(x, TL_SHAPE(b, t, h, d / 2, 2));
    return tl_reshape(tl_transpose(pairs, 3, 4), TL_SHAPE(b, t, h, d));
}

/* HF's order: every latent through kv_b_proj into per-head k_nope and v,
 * keys [k_nope_h ; k_rope], then attention as MHA. [B, n, T, dv]. */
static tl_tensor *attend_naive(const MLAttention *a, tl_tensor *q_nope, tl_tensor *q_rope,
                               tl_tensor *latents, tl_tensor *rope_keys, tl_tensor *mask) {
    int64_t b = q_nope->shape[0], n = a->n_heads, s = latents->shape[2];
    int64_t dn = a->qk_nope_head_dim, dr = a->qk_rope_head_dim, dv = a->v_head_dim;
    tl_tensor *kv = tl_linear_forward(a->kv_b_proj, tl_squeeze(latents, 1));  /* [B, S, n*] */
    kv = tl_permute(tl_reshape(kv, TL_SHAPE(b, s, n, dn + dv)), TO_HEADS);    /* [B, n, S, *] */
    tl_tensor *k_nope = tl_narrow(kv, 3, 0, dn), *v = tl_narrow(kv, 3, dn, dv);
    tl_tensor *k_rope = tl_expand(rope_keys, TL_SHAPE(b, n, s, dr));   /* one, for every head */
    tl_tensor *qs[2] = {q_nope, q_rope}, *ks[2] = {k_nope, k_rope};
    tl_tensor *q = tl_concat(qs, 2, 3), *k = tl_concat(ks, 2, 3);
    tl_tensor *scores = tl_mul_scalar(tl_matmul(q, tl_transpose(k, 2, 3)), a->scale);
    if (mask) scores = tl_add(scores, mask);
    return tl_matmul(tl_softmax(scores, -1), v);
}

/* W_UK folded into the query, W_UV after the weighted sum: the latents are
 * read in place, all n heads as the n*T rows of one product. [B, n, T, dv]. */
static tl_tensor *attend_absorbed(const MLAttention *a, tl_tensor *q_nope, tl_tensor *q_rope,
                                  tl_tensor *latents, tl_tensor *rope_keys, tl_tensor *mask) {
    int64_t b = q_nope->shape[0], n = a->n_heads, t = q_nope->shape[2], s = latents->shape[2];
    int64_t dn = a->qk_nope_head_dim, dr = a->qk_rope_head_dim, dv = a->v_head_dim;
    int64_t r = a->kv_lora_rank;
    tl_tensor *w = tl_reshape(tl_module_param(a->kv_b_proj, "weight"), TL_SHAPE(n, dn + dv, r));
    tl_tensor *w_uk = tl_narrow(w, 1, 0, dn), *w_uv = tl_narrow(w, 1, dn, dv);
    tl_tensor *q_lat = tl_matmul(q_nope, w_uk);                   /* [B, n, T, r] */
    tl_tensor *lat_rows = tl_reshape(q_lat, TL_SHAPE(b, 1, n * t, r));
    tl_tensor *rope_rows = tl_reshape(q_rope, TL_SHAPE(b, 1, n * t, dr));
    tl_tensor *scores = tl_add(tl_matmul(lat_rows, tl_transpose(latents, 2, 3)),
                               tl_matmul(rope_rows, tl_transpose(rope_keys, 2, 3)));
    scores = tl_reshape(tl_mul_scalar(scores, a->scale), TL_SHAPE(b, n, t, s));
    if (mask) scores = tl_add(scores, mask);
    tl_tensor *p = tl_reshape(tl_softmax(scores, -1), TL_SHAPE(b, 1, n * t, s));
    tl_tensor *o_lat = tl_reshape(tl_matmul(p, latents), TL_SHAPE(b, n, t, r));
    return tl_matmul(o_lat, tl_transpose(w_uv, 1, 2));
}

mla_path mla_choose_path(const MLAttention *a, int64_t n_new, int64_t n_keys, bool cached) {
    if (!a) {
        tl_fail("mla_choose_path: the attention is NULL");
        return MLA_PATH_AUTO;
    }
    if (n_new < 1 || n_keys < 1) {
        tl_fail("mla_choose_path: n_new %lld and n_keys %lld must both be at least 1",
                (long long)n_new, (long long)n_keys);
        return MLA_PATH_AUTO;
    }
    if (a->path != MLA_PATH_AUTO) return a->path;
    if (!cached) return MLA_PATH_NAIVE;      /* training and full forwards keep HF's order */
    /* The multiply-adds of each path's attention (the shared projections left out). */
    double t = (double)n_new, s = (double)n_keys, n = (double)a->n_heads;
    double r = (double)a->kv_lora_rank, dn = (double)a->qk_nope_head_dim;
    double dr = (double)a->qk_rope_head_dim, dv = (double)a->v_head_dim;
    double naive = s * r * n * (dn + dv) + n * t * s * (dn + dr + dv);
    double absorbed = n * t * r * (dn + dv) + n * t * s * (2 * r + dr);
    return absorbed < naive ? MLA_PATH_ABSORBED : MLA_PATH_NAIVE;
}

tl_tensor *mla_forward(const MLAttention *a, tl_tensor *x, tl_tensor *positions,
                       tl_tensor *mask, KVCache *cache, int layer) {
    if (!a || !a->module) return tl_fail("mla_forward: the attention is NULL or has no module "
                                         "(call mla_init first)");
    if (!x) return tl_propagate("mla_forward: x is NULL");
    if (check_forward(a, x, positions, cache, layer) != 0) return NULL;
    int64_t b = x->shape[0], t = x->shape[1], n = a->n_heads, r = a->kv_lora_rank;
    int64_t dn = a->qk_nope_head_dim, dr = a->qk_rope_head_dim, dv = a->v_head_dim;

    /* Cache positions of the new tokens and of every key they will see. */
    tl_tensor *query_pos, *key_pos;
    if (cache) {
        if (kv_cache_positions(cache, layer, t, &query_pos, &key_pos) != 0) {
            add_context();
            return NULL;
        }
    } else {
        query_pos = key_pos = tl_arange(0, t);
    }
    int64_t s = key_pos ? key_pos->shape[0] : 0;
    if (mask && check_mask(mask, (int64_t[]){b, n, t, s}) != 0) return NULL;

    /* Queries [B, T, n, dn + dr]: the nope part, then the rope part. */
    tl_tensor *q = a->q_lora_rank > 0
        ? tl_linear_forward(a->q_b_proj, rmsnorm_forward(&a->q_a_layernorm,
                                                         tl_linear_forward(a->q_a_proj, x)))
        : tl_linear_forward(a->q_proj, x);
    q = tl_reshape(q, TL_SHAPE(b, t, n, dn + dr));
    tl_tensor *q_nope = tl_narrow(q, 3, 0, dn), *q_rope = tl_narrow(q, 3, dn, dr);
    /* The latent, normalised, and the ONE rope key every head shares. */
    tl_tensor *ckv = tl_linear_forward(a->kv_a_proj_with_mqa, x);          /* [B, T, r + dr] */
    tl_tensor *latent = rmsnorm_forward(&a->kv_a_layernorm, tl_narrow(ckv, 2, 0, r));
    tl_tensor *k_rope = tl_reshape(tl_narrow(ckv, 2, r, dr), TL_SHAPE(b, t, 1, dr));
    if (a->rope_interleave) {
        q_rope = deinterleave(q_rope);
        k_rope = deinterleave(k_rope);
    }
    tl_tensor *cos, *sin;
    if (!q_rope || !k_rope ||
        rope_cos_sin(&a->rope, positions ? positions : query_pos, &cos, &sin) != 0)
        return NULL;
    q_rope = rope_apply_cos_sin(&a->rope, q_rope, cos, sin, ROPE_BTHD);
    k_rope = rope_apply_cos_sin(&a->rope, k_rope, cos, sin, ROPE_BTHD);

    /* One kv head, the cache's layout: latents [B, 1, T, r], rope keys [B, 1, T, dr]. */
    tl_tensor *latents = tl_unsqueeze(latent, 1), *rope_keys = tl_permute(k_rope, TO_HEADS);
    if (!latents || !rope_keys || !q_nope || !q_rope) return NULL;
    if (cache) {   /* append, then attend over everything the layer holds */
        KVCacheUpdate u;
        if (kv_cache_update(cache, layer, latents, rope_keys, &a->rope, &u) != 0) {
            add_context();
            return NULL;
        }
        latents = u.keys;
        rope_keys = u.values;
    }
    if (!mask) {
        bool needed;
        mask = causal_mask(query_pos, key_pos, &needed);
        if (needed && !mask) return NULL;
    }
    q_nope = tl_permute(q_nope, TO_HEADS);                                 /* [B, n, T, dn] */
    q_rope = tl_permute(q_rope, TO_HEADS);                                 /* [B, n, T, dr] */
    bool absorbed = mla_choose_path(a, t, s, cache != NULL) == MLA_PATH_ABSORBED;
    tl_tensor *o = absorbed ? attend_absorbed(a, q_nope, q_rope, latents, rope_keys, mask)
                            : attend_naive(a, q_nope, q_rope, latents, rope_keys, mask);
    o = tl_reshape(tl_permute(o, TO_HEADS), TL_SHAPE(b, t, n * dv));       /* [B, T, n dv] */
    return tl_linear_forward(a->o_proj, o);
}
