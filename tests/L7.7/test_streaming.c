/* L7.7: StreamingLLM (SINK_REPOSITION). Keys are cached un-rotated; every
 * step rotates the held keys at their index within the cache (the sinks 0, 1,
 * then the window in stream order) and the query at its own, so positions
 * never exceed the capacity. Each token's output equals the oracle's and a
 * full forward (no cache) over the kept tokens at positions 0 .. n-1. */
#include "mask_fixture.h"

START_TEST(test_streaming_llm_repositions_keys)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MASK_ST);
    double rtol = mask_tol("test_streaming_llm_repositions_keys", "rtol");
    double atol = mask_tol("test_streaming_llm_repositions_keys", "atol");
    GQAttention a;
    mask_layer(&a, fx, "stream");
    tl_tensor *x = tl_fixture_tensor(fx, "stream.x");
    tl_tensor *golden = tl_fixture_tensor(fx, "stream.repos.y");
    SinkWindowCache c;
    ck_assert_msg(sink_window_cache_init(&c, 1, 1, STREAM_HKV, MX_D, STREAM_CAPACITY,
                                         STREAM_SINKS, SINK_REPOSITION) == 0,
                  "sink_window_cache_init: %s", tl_error());
    ck_assert_msg(c.base.rotates_keys, "a StreamingLLM cache rotates keys itself");
    for (int64_t t = 0; t < STREAM_T; t++) {
        tl_no_grad_push();
        tl_tensor *y = gqa_forward(&a, tl_narrow(x, 1, t, 1), NULL, NULL, &c.base, 0);
        tl_no_grad_pop();
        char what[96];
        snprintf(what, sizeof what, "token %lld through the StreamingLLM cache", (long long)t);
        mask_assert_close(y, tl_narrow(golden, 1, t, 1), rtol, atol, what);

        /* The same from scratch: the kept tokens, at positions 0 .. n-1. */
        int64_t idx[STREAM_CAPACITY], n = 0;
        for (int64_t p = 0; p <= t; p++)
            if (p < STREAM_SINKS || p > t - STREAM_WINDOW) idx[n++] = p;
        tl_tensor *rows[STREAM_CAPACITY];
        for (int64_t i = 0; i < n; i++) rows[i] = tl_narrow(x, 1, idx[i], 1);
        tl_tensor *full = gqa_forward(&a, tl_concat(rows, (int)n, 1), NULL, NULL, NULL, 0);
        tl_assert_ok(full);
        snprintf(what, sizeof what, "token %lld vs a full forward over the %lld kept tokens",
                 (long long)t, (long long)n);
        mask_assert_close(y, tl_narrow(full, 1, n - 1, 1), rtol, atol, what);
    }
    /* What the cache holds is un-rotated: k_proj(x) of the kept tokens. */
    tl_tensor *keys, *values;
    ck_assert_int_eq(kv_cache_view(&c.base, 0, &keys, &values), 0);
    tl_tensor *k_all = tl_linear(x, tl_fixture_tensor(fx, "stream.k_proj.weight"), NULL);
    k_all = tl_permute(tl_reshape(k_all, TL_SHAPE(1, STREAM_T, STREAM_HKV, MX_D)),
                       (int[]){0, 2, 1, 3});
    for (int64_t s = 0; s < c.base.held[0]; s++)
        mask_assert_close(tl_narrow(keys, 2, s, 1),
                          tl_narrow(k_all, 2, c.base.slot_positions[s], 1), 1e-5, 1e-6,
                          "a cached key (StreamingLLM caches keys before RoPE)");
    kv_cache_free(&c.base);
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
