/* Masks, windows, sinks and the bounded SinkWindowCache (L7.7): the reference.
 *
 * The mask is plain C over positions (masks carry no gradient); the cache is
 * L7.5's storage with its own ops: a ring after the sink slots. Learned sinks
 * are HF's concatenate-then-softmax, from recorded ops.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/mask.h"

/* ==== the mask =========================================================== */

static bool visible(int64_t key, int64_t query, int64_t window, int64_t sink_tokens) {
    if (key > query) return false;                        /* causal: j <= i */
    if (window == ATTN_NO_WINDOW) return true;
    return key > query - window || key < sink_tokens;      /* the last W, or a sink */
}

/* 0 when p is I64 [n] of positions >= 0. */
static int check_positions(const char *what, const tl_tensor *p) {
    char ps[64];
    if (p->dtype != TL_I64 || p->ndim != 1)
        return tl_fail_status("attention_mask: %s %s are %s; they must be I64 of shape [n]", what,
                              tl_shape_str(p, ps, sizeof ps), tl_dtype_name(p->dtype));
    const int64_t *v = tl_data(p);
    for (int64_t i = 0; i < p->shape[0]; i++)
        if (v[i] < 0)
            return tl_fail_status("attention_mask: %s[%lld] is %lld; cache positions count from 0",
                                  what, (long long)i, (long long)v[i]);
    return 0;
}

tl_tensor *attention_mask(tl_tensor *query_positions, tl_tensor *key_positions, int64_t window,
                          int64_t sink_tokens) {
    if (!query_positions || !key_positions)
        return tl_propagate("attention_mask: the query or key positions are NULL");
    if (check_positions("query positions", query_positions) != 0 ||
        check_positions("key positions", key_positions) != 0)
        return NULL;
    if (window < 0)
        return tl_fail("attention_mask: window is %lld; it must be >= 1, or ATTN_NO_WINDOW (0)",
                       (long long)window);
    if (sink_tokens < 0)
        return tl_fail("attention_mask: sink_tokens is %lld; it must be >= 0",
                       (long long)sink_tokens);
    int64_t t = query_positions->shape[0], s = key_positions->shape[0];
    const int64_t *qp = tl_data(query_positions), *kp = tl_data(key_positions);
    tl_tensor *mask = tl_empty(TL_F32, TL_SHAPE(t, s));
    if (!mask) return NULL;
    float *m = tl_f32(mask);
    for (int64_t i = 0; i < t; i++)
        for (int64_t j = 0; j < s; j++)
            m[i * s + j] = visible(kp[j], qp[i], window, sink_tokens) ? 0.0f
                                                                      : (float)ATTN_MASK_MIN;
    return mask;
}

/* ==== the bounded cache =================================================== */

static SinkWindowCache *sink_cache(const KVCache *c) { return (SinkWindowCache *)c; }

/* The slot of the token at cache position p: sinks in place, then a ring. */
static int64_t slot_of(const SinkWindowCache *c, int64_t p) {
    return p < c->sink_tokens ? p : c->sink_tokens + (p - c->sink_tokens) % c->window;
}

/* How an update of n tokens goes: into free slots, over the one slot the new
 * query cannot see (n = 1), or joined to what is held (a longer chunk). */
typedef enum { INTO_FREE_SLOTS, OVER_THE_OLDEST, JOINED } update_kind;

static update_kind kind_of(const KVCache *c, int layer, int64_t n) {
    if (c->held[layer] + n <= c->capacity) return INTO_FREE_SLOTS;
    return n == 1 ? OVER_THE_OLDEST : JOINED;
}

static int sink_positions(const KVCache *c, int layer, int64_t n, tl_tensor **query_pos,
                          tl_tensor **key_pos) {
    const SinkWindowCache *sc = sink_cache(c);
    int64_t held = c->held[layer], seen = c->seen[layer];
    const int64_t *slots = c->slot_positions + layer * c->capacity;
    update_kind kind = kind_of(c, layer, n);
    if (kind == JOINED && sc->rope_mode == SINK_REPOSITION)
        return tl_fail_status("layer %d holds %lld of %lld slots; %lld more tokens would evict "
                              "keys the chunk's earlier tokens still see, and StreamingLLM "
                              "positions every token against the cache it meets: feed them one at "
                              "a time", layer, (long long)held, (long long)c->capacity,
                              (long long)n);
    int64_t s = kind == OVER_THE_OLDEST ? held : held + n;
    *query_pos = tl_arange(seen, seen + n);
    *key_pos = tl_empty(TL_I64, TL_SHAPE(s));
    if (!*query_pos || !*key_pos) return -1;
    int64_t *kp = tl_data(*key_pos);
    memcpy(kp, slots, (size_t)held * sizeof *kp);
    if (kind == OVER_THE_OLDEST) kp[slot_of(sc, seen)] = seen;
    else
        for (int64_t i = 0; i < n; i++) kp[held + i] = seen + i;
    return 0;
}

/* StreamingLLM: each held key's index within the cache, in stream order. */
static tl_tensor *index_in_cache(const KVCache *c, int layer) {
    const SinkWindowCache *sc = sink_cache(c);
    int64_t held = c->held[layer], seen = c->seen[layer];
    int64_t oldest = seen - sc->window > sc->sink_tokens ? seen - sc->window : sc->sink_tokens;
    tl_tensor *index = tl_empty(TL_I64, TL_SHAPE(held));
    if (!index) return NULL;
    int64_t *ix = tl_data(index);
    const int64_t *slots = c->slot_positions + layer * c->capacity;
    for (int64_t s = 0; s < held; s++)
        ix[s] = slots[s] < sc->sink_tokens ? slots[s] : sc->sink_tokens + slots[s] - oldest;
    return index;
}

static int sink_update(KVCache *c, int layer, tl_tensor *k, tl_tensor *v, const RopeSpec *rope,
                       KVCacheUpdate *out) {
    const SinkWindowCache *sc = sink_cache(c);
    int64_t n = k->shape[2], held = c->held[layer], seen = c->seen[layer];
    update_kind kind = kind_of(c, layer, n);
    if (sink_positions(c, layer, n, &out->query_positions, &out->key_positions) != 0) return -1;
    if (kind == JOINED) {   /* the chunk sees what it is about to evict: join first */
        tl_tensor *ks[2] = {tl_narrow(c->keys[layer], 2, 0, held), k};
        tl_tensor *vs[2] = {tl_narrow(c->values[layer], 2, 0, held), v};
        out->keys = tl_concat(ks, 2, 2);
        out->values = tl_concat(vs, 2, 2);
        if (!out->keys || !out->values) return -1;
    }
    /* Each new token into its slot; later ones overwrite earlier ones. */
    for (int64_t i = 0; i < n; i++) {
        int64_t slot = slot_of(sc, seen + i);
        if (tl_copy_into(tl_narrow(c->keys[layer], 2, slot, 1), tl_narrow(k, 2, i, 1)) != 0 ||
            tl_copy_into(tl_narrow(c->values[layer], 2, slot, 1), tl_narrow(v, 2, i, 1)) != 0)
            return -1;
        c->slot_positions[layer * c->capacity + slot] = seen + i;
    }
    c->seen[layer] = seen + n;
    c->held[layer] = held + n < c->capacity ? held + n : c->capacity;
    if (kind == JOINED) return 0;
    out->keys = tl_narrow(c->keys[layer], 2, 0, c->held[layer]);
    out->values = tl_narrow(c->values[layer], 2, 0, c->held[layer]);
    if (!out->keys || !out->values) return -1;
    if (sc->rope_mode == SINK_REPOSITION) {   /* rotate at the index within the cache */
        tl_tensor *index = index_in_cache(c, layer), *cos, *sin;
        if (!index || rope_cos_sin(rope, index, &cos, &sin) != 0) return -1;
        out->keys = rope_apply_cos_sin(rope, out->keys, cos, sin, ROPE_BHTD);
        /* The new tokens' indexes: their slots (the last ones, or the ring slot). */
        int64_t first = kind == OVER_THE_OLDEST ? slot_of(sc, seen) : c->held[layer] - n;
        out->query_rope_positions = tl_narrow(index, 0, first, n);
        if (!out->keys || !out->query_rope_positions) return -1;
    }
    return 0;
}

static const KVCacheOps SINK_WINDOW_OPS = {"SinkWindowCache", sink_positions, sink_update};

int sink_window_cache_init(SinkWindowCache *c, int n_layers, int64_t batch, int64_t n_kv_heads,
                           int64_t head_dim, int64_t capacity, int64_t sink_tokens,
                           sink_rope rope_mode) {
    if (!c)
        return tl_fail_status("sink_window_cache_init: the SinkWindowCache pointer is NULL");
    memset(c, 0, sizeof *c);
    if (capacity < 1)
        return tl_fail_status("sink_window_cache_init: capacity is %lld; it must be at least 1 "
                              "(the window holds at least the query itself)", (long long)capacity);
    if (sink_tokens < 0 || sink_tokens >= capacity)
        return tl_fail_status("sink_window_cache_init: %lld sink tokens in a capacity of %lld "
                              "leave no slot for the window; sink_tokens must be 0 .. capacity - 1",
                              (long long)sink_tokens, (long long)capacity);
    if (rope_mode != SINK_KEEP_POSITIONS && rope_mode != SINK_REPOSITION)
        return tl_fail_status("sink_window_cache_init: rope_mode %d is neither "
                              "SINK_KEEP_POSITIONS nor SINK_REPOSITION", (int)rope_mode);
    if (kv_cache_init(&c->base, n_layers, batch, n_kv_heads, head_dim, head_dim, capacity) != 0)
        return -1;
    c->base.ops = &SINK_WINDOW_OPS;
    c->base.rotates_keys = rope_mode == SINK_REPOSITION;
    c->sink_tokens = sink_tokens;
    c->window = capacity - sink_tokens;
    c->rope_mode = rope_mode;
    return 0;
}

/* ==== windowed attention ==================================================== */

tl_tensor *gqa_window_forward(const GQAttention *a, tl_tensor *x, tl_tensor *positions,
                              int64_t window, int64_t sink_tokens, KVCache *cache, int layer) {
    if (!x) return tl_propagate("gqa_window_forward: x is NULL");
    if (cache && cache->ops == &SINK_WINDOW_OPS) {
        const SinkWindowCache *sc = sink_cache(cache);
        if (window < 1 || window > sc->window || sink_tokens > sc->sink_tokens)
            return tl_fail("gqa_window_forward: a window of %lld with %lld sinks asks for keys "
                           "a SinkWindowCache with a window of %lld and %lld sinks has evicted; "
                           "pass a window of 1 .. %lld and at most %lld sinks",
                           (long long)window, (long long)sink_tokens, (long long)sc->window,
                           (long long)sc->sink_tokens, (long long)sc->window,
                           (long long)sc->sink_tokens);
    }
    char xs[64];
    if (x->ndim != 3 || x->shape[1] < 1)
        return tl_fail("gqa_window_forward: x has shape %s; it must be [B, T, hidden], T >= 1",
                       tl_shape_str(x, xs, sizeof xs));
    /* The mask speaks in cache positions, never in position ids. */
    tl_tensor *query_pos, *key_pos;
    if (cache) {
        if (kv_cache_positions(cache, layer, x->shape[1], &query_pos, &key_pos) != 0) return NULL;
    } else {
        query_pos = key_pos = tl_arange(0, x->shape[1]);
    }
    tl_tensor *mask = attention_mask(query_pos, key_pos, window, sink_tokens);
    if (!mask) return NULL;
    return gqa_forward(a, x, positions, mask, cache, layer);
}

/* ==== learned sinks ========================================================= */

tl_tensor *softmax_with_sink(tl_tensor *scores, tl_tensor *sinks) {
    if (!scores || !sinks) return tl_propagate("softmax_with_sink: scores or sinks is NULL");
    char ss[64], ks[64];
    if (scores->ndim != 4 || sinks->ndim != 1 || sinks->shape[0] != scores->shape[1])
        return tl_fail("softmax_with_sink: scores %s must be [B, H, T, S] and sinks %s [H]",
                       tl_shape_str(scores, ss, sizeof ss), tl_shape_str(sinks, ks, sizeof ks));
    int64_t b = scores->shape[0], h = scores->shape[1], t = scores->shape[2];
    int64_t s = scores->shape[3];
    /* HF: cat([scores, sink], -1), softmax (max-subtracted), drop the sink's column. */
    tl_tensor *column = tl_expand(tl_reshape(tl_cast(sinks, TL_F32), TL_SHAPE(1, h, 1, 1)),
                                  TL_SHAPE(b, h, t, 1));
    tl_tensor *parts[2] = {scores, column};
    tl_tensor *p = tl_softmax(tl_concat(parts, 2, 3), 3);
    return tl_narrow(p, 3, 0, s);
}

int gqa_add_learned_sinks(GQAttention *a, tl_pcg32 *rng) {
    if (!a || !a->module)
        return tl_fail_status("gqa_add_learned_sinks: the attention is NULL or has no module "
                              "(gqa_init first)");
    if (a->sinks)
        return tl_fail_status("gqa_add_learned_sinks: the attention already has learned sinks");
    tl_tensor *sinks = tl_module_param_new(a->module, "sinks", TL_SHAPE(a->n_heads));
    if (!sinks) return -1;
    if (rng) {
        float *v = tl_f32(sinks);
        for (int64_t i = 0; i < a->n_heads; i++) v[i] = (float)(0.02 * tl_pcg32_normal(rng));
    }
    a->sinks = sinks;
    a->sink_softmax = softmax_with_sink;
    return 0;
}
