/* L7.6 differential: decoding through the latent cache equals the full
 * forward. One token at a time and in uneven chunks (3, 1, 2), on both
 * attention paths, with position ids given or left to the cache (NULL: they
 * continue from kv_cache_seq_len), and with two layers sharing one cache
 * object. The oracle's own chunked run through HF's DynamicLayer, which
 * caches the full per-head keys and values, agrees as well. */
#include "mla_fixture.h"

static const mla_path PATHS[2] = {MLA_PATH_NAIVE, MLA_PATH_ABSORBED};

/* Runs a over x in chunks through layer `layer` of cache; positions (or
 * NULL) sliced per chunk. Returns the chunks' outputs joined along T. */
static tl_tensor *run_chunks(const MLAttention *a, tl_tensor *x, tl_tensor *positions,
                             KVCache *cache, int layer, const int *chunks, int n) {
    tl_tensor *parts[FX_T];
    int64_t start = 0;
    for (int i = 0; i < n; i++) {
        tl_tensor *p = positions ? tl_narrow(positions, positions->ndim - 1, start, chunks[i])
                                 : NULL;
        parts[i] = mla_forward(a, tl_narrow(x, 1, start, chunks[i]), p, NULL, cache, layer);
        ck_assert_msg(parts[i] != NULL, "cached chunk %d (tokens %lld .. %lld): %s", i,
                      (long long)start, (long long)(start + chunks[i] - 1), tl_error());
        start += chunks[i];
    }
    return tl_concat(parts, n, 1);
}

START_TEST(test_cached_decode_one_token_at_a_time)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MLA_ST);
    double rtol = mla_tol("test_cached_decode_one_token_at_a_time", "rtol");
    double atol = mla_tol("test_cached_decode_one_token_at_a_time", "atol");
    const int ones[FX_T] = {1, 1, 1, 1, 1, 1};
    const char *names[3] = {"lora_interleave", "v2_pairs", "yarn_bias"};
    tl_tensor *x = tl_fixture_tensor(fx, "x");
    for (int i = 0; i < 3; i++) {
        const mla_case *c = mla_case_named(names[i]);
        MLAttention a;
        mla_from_fixture(&a, fx, c);
        MLAConfig cfg = mla_config(c);
        for (int explicit = 0; explicit < 2; explicit++) {
            /* explicit: the fixture's position ids; else NULL (the cache's). */
            tl_tensor *positions = explicit ? mla_positions(fx) : NULL;
            a.path = MLA_PATH_NAIVE;
            tl_tensor *full = mla_forward(&a, x, positions, NULL, NULL, 0);
            tl_assert_ok(full);
            for (int p = 0; p < 2; p++) {
                a.path = PATHS[p];
                KVCache cache;
                ck_assert_msg(mla_cache_init(&cache, &cfg, 1, FX_B, FX_T) == 0,
                              "mla_cache_init: %s", tl_error());
                tl_no_grad_push();
                tl_tensor *cached = run_chunks(&a, x, positions, &cache, 0, ones, FX_T);
                tl_no_grad_pop();
                char what[160];
                snprintf(what, sizeof what, "%s, one token at a time (%s path), positions %s",
                         c->name, mla_path_name(a.path),
                         explicit ? "[[3..8], [0..5]]" : "NULL (from the cache)");
                mla_assert_close(cached, full, rtol, atol, what);
                ck_assert_int_eq(kv_cache_seq_len(&cache, 0), FX_T);
                kv_cache_free(&cache);
            }
        }
        mla_free(&a);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_cached_decode_uneven_chunks)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MLA_ST);
    double rtol = mla_tol("test_cached_decode_uneven_chunks", "rtol");
    double atol = mla_tol("test_cached_decode_uneven_chunks", "atol");
    const int chunks[3] = {3, 1, 2};
    tl_tensor *x = tl_fixture_tensor(fx, "x"), *positions = mla_positions(fx);
    const mla_case *lora = mla_case_named("lora_interleave");
    const mla_case *noq = mla_case_named("noq_interleave");
    MLAttention a, b;
    mla_from_fixture(&a, fx, lora);
    mla_from_fixture(&b, fx, noq);     /* the same latent widths, no q_lora */
    MLAConfig cfg = mla_config(lora);
    for (int p = 0; p < 2; p++) {
        a.path = b.path = PATHS[p];
        /* Against the oracle's DynamicLayer run. */
        KVCache cache;
        ck_assert_msg(mla_cache_init(&cache, &cfg, 2, FX_B, 8) == 0, "mla_cache_init: %s",
                      tl_error());
        tl_no_grad_push();
        tl_tensor *cached = run_chunks(&a, x, positions, &cache, 0, chunks, 3);
        tl_no_grad_pop();
        char what[128];
        snprintf(what, sizeof what, "chunks of 3, 1, 2 (%s path) vs HF's DynamicLayer",
                 mla_path_name(a.path));
        mla_assert_close(cached, tl_fixture_tensor(fx, "lora_interleave.chunked.y"), rtol, atol,
                         what);

        /* Two layers of one cache, interleaved chunk by chunk, do not interfere. */
        kv_cache_reset(&cache);
        tl_tensor *parts[2][3];
        int64_t start = 0;
        tl_no_grad_push();
        for (int i = 0; i < 3; i++) {
            tl_tensor *xi = tl_narrow(x, 1, start, chunks[i]);
            tl_tensor *pi = tl_narrow(positions, 1, start, chunks[i]);
            parts[0][i] = mla_forward(&a, xi, pi, NULL, &cache, 0);
            parts[1][i] = mla_forward(&b, xi, pi, NULL, &cache, 1);
            ck_assert_msg(parts[0][i] && parts[1][i], "chunk %d: %s", i, tl_error());
            start += chunks[i];
        }
        tl_no_grad_pop();
        snprintf(what, sizeof what, "layer 0 (lora_interleave) of a shared cache (%s path)",
                 mla_path_name(a.path));
        mla_assert_close(tl_concat(parts[0], 3, 1), tl_fixture_tensor(fx, "lora_interleave.y"),
                         rtol, atol, what);
        snprintf(what, sizeof what, "layer 1 (noq_interleave) of a shared cache (%s path)",
                 mla_path_name(a.path));
        mla_assert_close(tl_concat(parts[1], 3, 1), tl_fixture_tensor(fx, "noq_interleave.y"),
                         rtol, atol, what);
        ck_assert_int_eq(kv_cache_seq_len(&cache, 0), FX_T);
        ck_assert_int_eq(kv_cache_seq_len(&cache, 1), FX_T);
        kv_cache_free(&cache);
    }
    mla_free(&a);
    mla_free(&b);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
