/* L7.5 differential: decoding through the KV cache equals the full forward.
 * One token at a time and in uneven chunks (3, 1, 2), with position ids given
 * or left to the cache (NULL: they continue from kv_cache_seq_len), with
 * biases, and with two layers sharing one cache object. The oracle's own
 * chunked run through HF's DynamicLayer (gqa.chunked.y) agrees as well. */
#include "attn_fixture.h"

/* Runs a over x in chunks through layer `layer` of cache; positions (or
 * NULL) sliced per chunk. Returns the chunks' outputs joined along T. */
static tl_tensor *run_chunks(const GQAttention *a, tl_tensor *x, tl_tensor *positions,
                             KVCache *cache, int layer, const int *chunks, int n) {
    tl_tensor *parts[FX_T];
    int64_t start = 0;
    for (int i = 0; i < n; i++) {
        tl_tensor *p = positions ? tl_narrow(positions, positions->ndim - 1, start, chunks[i])
                                 : NULL;
        parts[i] = gqa_forward(a, tl_narrow(x, 1, start, chunks[i]), p, NULL, cache, layer);
        ck_assert_msg(parts[i] != NULL, "cached chunk %d (tokens %lld .. %lld): %s", i,
                      (long long)start, (long long)(start + chunks[i] - 1), tl_error());
        start += chunks[i];
    }
    return tl_concat(parts, n, 1);
}

START_TEST(test_cached_decode_one_token_at_a_time)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(ATTN_ST);
    double rtol = attn_tol("test_cached_decode_one_token_at_a_time", "rtol");
    double atol = attn_tol("test_cached_decode_one_token_at_a_time", "atol");
    const int ones[FX_T] = {1, 1, 1, 1, 1, 1};
    const char *names[2] = {"gqa", "llama_bias"};
    tl_tensor *x = tl_fixture_tensor(fx, "x");
    for (int i = 0; i < 2; i++) {
        GQAttention a;
        attn_from_fixture(&a, fx, attn_case_named(names[i]));
        for (int explicit = 0; explicit < 2; explicit++) {
            /* explicit: the fixture's position ids; else NULL (the cache's). */
            tl_tensor *positions = explicit ? attn_positions(fx) : NULL;
            tl_tensor *full = gqa_forward(&a, x, positions, NULL, NULL, 0);
            tl_assert_ok(full);
            KVCache cache;
            ck_assert_msg(kv_cache_init(&cache, 1, FX_B, a.n_kv_heads, FX_D, FX_D, FX_T) == 0,
                          "kv_cache_init: %s", tl_error());
            tl_no_grad_push();
            tl_tensor *cached = run_chunks(&a, x, positions, &cache, 0, ones, FX_T);
            tl_no_grad_pop();
            char what[128];
            snprintf(what, sizeof what, "%s, one token at a time, positions %s", names[i],
                     explicit ? "[[3..8], [0..5]]" : "NULL (from the cache)");
            attn_assert_close(cached, full, rtol, atol, what);
            ck_assert_int_eq(kv_cache_seq_len(&cache, 0), FX_T);
            kv_cache_free(&cache);
        }
        gqa_free(&a);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_cached_decode_uneven_chunks)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(ATTN_ST);
    double rtol = attn_tol("test_cached_decode_uneven_chunks", "rtol");
    double atol = attn_tol("test_cached_decode_uneven_chunks", "atol");
    const int chunks[3] = {3, 1, 2};
    tl_tensor *x = tl_fixture_tensor(fx, "x"), *positions = attn_positions(fx);
    GQAttention gqa, qwen2;
    attn_from_fixture(&gqa, fx, attn_case_named("gqa"));
    attn_from_fixture(&qwen2, fx, attn_case_named("qwen2"));   /* also 2 kv heads of 8 */

    /* Against the oracle's DynamicLayer run and against our own full forward. */
    KVCache cache;
    ck_assert_msg(kv_cache_init(&cache, 2, FX_B, 2, FX_D, FX_D, 8) == 0, "kv_cache_init: %s",
                  tl_error());
    tl_no_grad_push();
    tl_tensor *cached = run_chunks(&gqa, x, positions, &cache, 0, chunks, 3);
    tl_no_grad_pop();
    attn_assert_close(cached, tl_fixture_tensor(fx, "gqa.chunked.y"), rtol, atol,
                      "gqa in chunks of 3, 1, 2 vs HF's DynamicLayer");
    attn_assert_close(cached, gqa_forward(&gqa, x, positions, NULL, NULL, 0), rtol, atol,
                      "gqa in chunks of 3, 1, 2 vs the full forward");

    /* Two layers of one cache, interleaved chunk by chunk, do not interfere. */
    kv_cache_reset(&cache);
    tl_tensor *parts[2][3];
    int64_t start = 0;
    tl_no_grad_push();
    for (int i = 0; i < 3; i++) {
        tl_tensor *xi = tl_narrow(x, 1, start, chunks[i]);
        tl_tensor *pi = tl_narrow(positions, 1, start, chunks[i]);
        parts[0][i] = gqa_forward(&gqa, xi, pi, NULL, &cache, 0);
        parts[1][i] = gqa_forward(&qwen2, xi, pi, NULL, &cache, 1);
        ck_assert_msg(parts[0][i] && parts[1][i], "chunk %d: %s", i, tl_error());
        start += chunks[i];
    }
    tl_no_grad_pop();
    attn_assert_close(tl_concat(parts[0], 3, 1), tl_fixture_tensor(fx, "gqa.y"), rtol, atol,
                      "layer 0 (gqa) of a shared cache");
    attn_assert_close(tl_concat(parts[1], 3, 1), tl_fixture_tensor(fx, "qwen2.y"), rtol, atol,
                      "layer 1 (qwen2) of a shared cache");
    ck_assert_int_eq(kv_cache_seq_len(&cache, 0), FX_T);
    ck_assert_int_eq(kv_cache_seq_len(&cache, 1), FX_T);
    kv_cache_free(&cache);
    gqa_free(&gqa);
    gqa_free(&qwen2);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
