/* L7.7: the bounded SinkWindowCache (2 sinks + a window of 4: capacity 6).
 * It holds exactly the sinks and the last W tokens, never evicting a sink;
 * with keys kept at their positions its attention over a stream of 14 tokens
 * equals a keep-everything KVCache under the same window + sinks mask, and the
 * oracle's, token by token and in chunks longer than what is free; each layer
 * of one cache keeps its own tokens (L7.9 passes one cache to every layer). */
#include "mask_fixture.h"

/* Runs the stream layer over x in chunks through cache with the window mask. */
static tl_tensor *stream_chunks(const GQAttention *a, tl_tensor *x, KVCache *cache,
                                const int *chunks, int n) {
    tl_tensor *parts[STREAM_T];
    int64_t start = 0;
    for (int i = 0; i < n; i++) {
        parts[i] = gqa_window_forward(a, tl_narrow(x, 1, start, chunks[i]), NULL, STREAM_WINDOW,
                                      STREAM_SINKS, cache, 0);
        ck_assert_msg(parts[i] != NULL, "chunk %d (tokens %lld .. %lld): %s", i,
                      (long long)start, (long long)(start + chunks[i] - 1), tl_error());
        start += chunks[i];
    }
    return tl_concat(parts, n, 1);
}

START_TEST(test_bounded_cache_equals_keep_everything_under_the_mask)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MASK_ST);
    double rtol = mask_tol("test_bounded_cache_equals_keep_everything_under_the_mask", "rtol");
    double atol = mask_tol("test_bounded_cache_equals_keep_everything_under_the_mask", "atol");
    GQAttention a;
    mask_layer(&a, fx, "stream");
    tl_tensor *x = tl_fixture_tensor(fx, "stream.x");
    tl_tensor *golden = tl_fixture_tensor(fx, "stream.keep.y");
    const int ones[STREAM_T] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const int uneven[4] = {3, 5, 1, 5};   /* 5 tokens into 3 free slots, twice */
    SinkWindowCache bounded;
    KVCache everything;
    ck_assert_msg(sink_window_cache_init(&bounded, 1, 1, STREAM_HKV, MX_D, STREAM_CAPACITY,
                                      STREAM_SINKS, SINK_KEEP_POSITIONS) == 0,
                  "sink_window_cache_init: %s", tl_error());
    ck_assert_msg(bounded.window == STREAM_WINDOW && bounded.sink_tokens == STREAM_SINKS &&
                  bounded.base.capacity == STREAM_CAPACITY && !bounded.base.rotates_keys,
                  "the cache's fields: window = capacity - sinks, keys rotated by the caller");
    ck_assert_int_eq(kv_cache_init(&everything, 1, 1, STREAM_HKV, MX_D, MX_D, STREAM_T), 0);
    tl_no_grad_push();
    tl_tensor *y_bounded = stream_chunks(&a, x, &bounded.base, ones, STREAM_T);
    tl_tensor *y_everything = stream_chunks(&a, x, &everything, ones, STREAM_T);
    mask_assert_close(y_bounded, golden, rtol, atol, "the bounded cache, token by token");
    mask_assert_close(y_everything, golden, rtol, atol, "the keep-everything cache");
    mask_assert_close(y_bounded, y_everything, rtol, atol, "bounded vs keep-everything");
    ck_assert_int_eq(kv_cache_seq_len(&bounded.base, 0), STREAM_T);
    ck_assert_int_eq(bounded.base.held[0], STREAM_CAPACITY);
    kv_cache_reset(&bounded.base);
    mask_assert_close(stream_chunks(&a, x, &bounded.base, uneven, 4), golden, rtol, atol,
                      "the bounded cache in chunks of 3, 5, 1, 5");
    tl_no_grad_pop();
    /* And the full forward under the mask, without any cache. */
    mask_assert_close(gqa_window_forward(&a, x, NULL, STREAM_WINDOW, STREAM_SINKS, NULL, 0),
                      golden, rtol, atol, "no cache, the same mask");
    kv_cache_free(&bounded.base);
    kv_cache_free(&everything);
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* The cache positions held, as a bit set (positions < 64). */
static uint64_t held_set(const KVCache *c) {
    uint64_t set = 0;
    for (int64_t s = 0; s < c->held[0]; s++) set |= 1ull << c->slot_positions[s];
    return set;
}

static uint64_t sinks_and_window(int64_t last) {
    uint64_t set = 0;
    for (int64_t p = 0; p <= last; p++)
        if (p < STREAM_SINKS || p > last - STREAM_WINDOW) set |= 1ull << p;
    return set;
}

START_TEST(test_bounded_cache_keeps_sinks_and_the_last_window)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(7702);
    SinkWindowCache c;
    ck_assert_msg(sink_window_cache_init(&c, 1, 1, 1, 4, STREAM_CAPACITY, STREAM_SINKS,
                                         SINK_KEEP_POSITIONS) == 0,
                  "sink_window_cache_init: %s", tl_error());
    tl_tensor *first[STREAM_SINKS];
    for (int64_t t = 0; t < 20; t++) {
        /* Before the update: what it will attend over. */
        tl_tensor *qp, *kp;
        ck_assert_int_eq(kv_cache_positions(&c.base, 0, 1, &qp, &kp), 0);
        ck_assert_int_eq((int64_t)tl_item_at(qp, 0), t);
        uint64_t planned = 0;
        for (int64_t j = 0; j < tl_numel(kp); j++) planned |= 1ull << (int)tl_item_at(kp, j);
        ck_assert_msg(planned == sinks_and_window(t), "token %lld: kv_cache_positions plans "
                      "keys %#llx, expected the sinks and the last 4 (%#llx)", (long long)t,
                      (unsigned long long)planned, (unsigned long long)sinks_and_window(t));
        tl_tensor *k = tl_randn(&rng, TL_SHAPE(1, 1, 1, 4));
        tl_tensor *v = tl_randn(&rng, TL_SHAPE(1, 1, 1, 4));
        if (t < STREAM_SINKS) first[t] = v;
        KVCacheUpdate u;
        ck_assert_msg(kv_cache_update(&c.base, 0, k, v, NULL, &u) == 0, "update %lld: %s",
                      (long long)t, tl_error());
        ck_assert_msg(held_set(&c.base) == sinks_and_window(t),
                      "after token %lld the cache holds %#llx; expected the 2 sinks and the "
                      "last 4 tokens (%#llx)", (long long)t,
                      (unsigned long long)held_set(&c.base),
                      (unsigned long long)sinks_and_window(t));
        ck_assert_int_eq(u.keys->shape[2], c.base.held[0]);
        ck_assert_int_eq(tl_numel(u.key_positions), c.base.held[0]);
        ck_assert_int_eq(kv_cache_seq_len(&c.base, 0), t + 1);
        ck_assert(c.base.held[0] == (t + 1 < STREAM_CAPACITY ? t + 1 : STREAM_CAPACITY));
    }
    /* The sinks' own values survived 18 evictions. */
    tl_tensor *keys, *values;
    ck_assert_int_eq(kv_cache_view(&c.base, 0, &keys, &values), 0);
    for (int64_t s = 0; s < c.base.held[0]; s++) {
        int64_t p = c.base.slot_positions[s];
        if (p < STREAM_SINKS) tl_assert_close(tl_narrow(values, 2, s, 1), first[p], 0.0, 0.0);
    }
    kv_cache_free(&c.base);
    tl_scope_pop();
}
END_TEST

/* Two layers of one bounded cache, fed in turn token by token, each equal the oracle: a layer
 * neither writes into nor counts the other's slots. */
START_TEST(test_bounded_cache_layers_are_independent)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MASK_ST);
    double rtol = mask_tol("test_bounded_cache_equals_keep_everything_under_the_mask", "rtol");
    double atol = mask_tol("test_bounded_cache_equals_keep_everything_under_the_mask", "atol");
    GQAttention a;
    mask_layer(&a, fx, "stream");
    tl_tensor *x = tl_fixture_tensor(fx, "stream.x");
    SinkWindowCache c;
    ck_assert_msg(sink_window_cache_init(&c, 2, 1, STREAM_HKV, MX_D, STREAM_CAPACITY,
                                      STREAM_SINKS, SINK_KEEP_POSITIONS) == 0,
                  "sink_window_cache_init: %s", tl_error());
    tl_tensor *parts[2][STREAM_T];
    tl_no_grad_push();
    for (int t = 0; t < STREAM_T; t++)
        for (int layer = 0; layer < 2; layer++) {
            parts[layer][t] = gqa_window_forward(&a, tl_narrow(x, 1, t, 1), NULL,
                                                 STREAM_WINDOW, STREAM_SINKS, &c.base, layer);
            ck_assert_msg(parts[layer][t] != NULL, "layer %d, token %d: %s", layer, t,
                          tl_error());
        }
    tl_no_grad_pop();
    for (int layer = 0; layer < 2; layer++) {
        mask_assert_close(tl_concat(parts[layer], STREAM_T, 1),
                          tl_fixture_tensor(fx, "stream.keep.y"), rtol, atol,
                          layer ? "layer 1 of a two-layer cache" : "layer 0 of a two-layer cache");
        ck_assert_int_eq(kv_cache_seq_len(&c.base, layer), STREAM_T);
        ck_assert_int_eq(c.base.held[layer], STREAM_CAPACITY);
    }
    kv_cache_free(&c.base);
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
