/* L7.5: what the KV cache holds and which positions it gives. After a prefill
 * the cache holds the keys AFTER RoPE (the oracle's k_rot) and the plain
 * values; positions continue across calls; every layer of the one cache keeps
 * its own tokens; a reset starts again at 0 and keeps the storage. */
#include "attn_fixture.h"

static void assert_positions(const tl_tensor *p, int64_t start, int64_t n, const char *what) {
    ck_assert_msg(p != NULL, "%s: NULL (%s)", what, tl_error() ? tl_error() : "?");
    ck_assert_msg(p->dtype == TL_I64 && p->ndim == 1 && p->shape[0] == n,
                  "%s: expected I64 [%lld]", what, (long long)n);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(tl_item_at(p, i) == (double)(start + i), "%s[%lld] = %g, expected %lld",
                      what, (long long)i, tl_item_at(p, i), (long long)(start + i));
}

START_TEST(test_keys_cached_after_rope)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(ATTN_ST);
    double rtol = attn_tol("test_keys_cached_after_rope", "rtol");
    double atol = attn_tol("test_keys_cached_after_rope", "atol");
    GQAttention a;
    attn_from_fixture(&a, fx, attn_case_named("gqa"));
    tl_tensor *x = tl_fixture_tensor(fx, "x");
    KVCache cache;
    ck_assert_msg(kv_cache_init(&cache, 1, FX_B, 2, FX_D, FX_D, 10) == 0, "kv_cache_init: %s",
                  tl_error());
    tl_no_grad_push();
    tl_assert_ok(gqa_forward(&a, x, attn_positions(fx), NULL, &cache, 0));
    tl_no_grad_pop();
    ck_assert_int_eq(kv_cache_seq_len(&cache, 0), FX_T);

    tl_tensor *keys, *values;
    ck_assert_msg(kv_cache_view(&cache, 0, &keys, &values) == 0, "kv_cache_view: %s",
                  tl_error());
    attn_assert_close(keys, tl_fixture_tensor(fx, "gqa.k_rot"), rtol, atol,
                      "the cached keys (after RoPE, [B, Hkv, T, D])");
    /* Values are v_proj(x), split into heads: [B, T, Hkv, D] -> [B, Hkv, T, D]. */
    tl_tensor *v = tl_linear(x, tl_fixture_tensor(fx, "gqa.v_proj.weight"), NULL);
    v = tl_permute(tl_reshape(v, TL_SHAPE(FX_B, FX_T, 2, FX_D)), (int[]){0, 2, 1, 3});
    attn_assert_close(values, v, rtol, atol, "the cached values ([B, Hkv, T, D])");
    kv_cache_free(&cache);
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_cache_positions_continue)
{
    tl_scope_push();
    KVCache cache;
    ck_assert_msg(kv_cache_init(&cache, 2, 1, 2, 4, 4, 8) == 0, "kv_cache_init: %s", tl_error());
    ck_assert_int_eq(cache.capacity, 8);
    ck_assert_int_eq(kv_cache_seq_len(&cache, 0), 0);
    tl_tensor *qp, *kp;
    ck_assert_msg(kv_cache_positions(&cache, 0, 3, &qp, &kp) == 0, "positions: %s", tl_error());
    assert_positions(qp, 0, 3, "a fresh cache: the queries' cache positions");
    assert_positions(kp, 0, 3, "a fresh cache: the keys' cache positions");

    /* Append 3 tokens to layer 0, then plan 2 more: they continue at 3. */
    tl_pcg32 rng = tl_test_rng(7501);
    tl_tensor *k = tl_randn(&rng, TL_SHAPE(1, 2, 3, 4)), *v = tl_randn(&rng, TL_SHAPE(1, 2, 3, 4));
    KVCacheUpdate u;
    ck_assert_msg(kv_cache_update(&cache, 0, k, v, NULL, &u) == 0, "update: %s", tl_error());
    assert_positions(u.query_positions, 0, 3, "the update's query positions");
    assert_positions(u.key_positions, 0, 3, "the update's key positions");
    ck_assert_msg(u.keys && u.keys->shape[2] == 3, "the update must return the 3 keys held");
    tl_assert_close(u.keys, k, 0.0, 0.0);    /* a plain copy: exact */
    tl_assert_close(u.values, v, 0.0, 0.0);
    ck_assert_msg(u.query_rope_positions == NULL,
                  "the plain cache does not rotate keys itself: query_rope_positions is NULL");
    ck_assert_int_eq(kv_cache_seq_len(&cache, 0), 3);
    ck_assert_msg(kv_cache_positions(&cache, 0, 2, &qp, &kp) == 0, "positions: %s", tl_error());
    assert_positions(qp, 3, 2, "after 3 tokens: the next queries");
    assert_positions(kp, 0, 5, "after 3 tokens: the keys");

    /* Layer 1 of the same cache has seen nothing. */
    ck_assert_int_eq(kv_cache_seq_len(&cache, 1), 0);
    ck_assert_msg(kv_cache_positions(&cache, 1, 1, &qp, &kp) == 0, "positions: %s", tl_error());
    assert_positions(qp, 0, 1, "layer 1 (untouched): the next query");

    /* One more token: the views hold all four, the first three unchanged. */
    tl_tensor *k1 = tl_randn(&rng, TL_SHAPE(1, 2, 1, 4));
    tl_tensor *v1 = tl_randn(&rng, TL_SHAPE(1, 2, 1, 4));
    ck_assert_msg(kv_cache_update(&cache, 0, k1, v1, NULL, &u) == 0, "update: %s", tl_error());
    ck_assert_msg(u.keys->shape[2] == 4 && u.values->shape[2] == 4, "4 keys after 3 + 1");
    tl_tensor *parts[2] = {k, k1};
    tl_assert_close(u.keys, tl_concat(parts, 2, 2), 0.0, 0.0);
    assert_positions(u.query_positions, 3, 1, "the 4th token's cache position");

    kv_cache_reset(&cache);
    ck_assert_int_eq(kv_cache_seq_len(&cache, 0), 0);
    ck_assert_int_eq(cache.capacity, 8);
    ck_assert_msg(kv_cache_positions(&cache, 0, 8, &qp, &kp) == 0,
                  "after a reset the whole capacity is free again: %s", tl_error());
    assert_positions(qp, 0, 8, "after a reset: the queries start at 0");
    kv_cache_free(&cache);
    kv_cache_free(&cache);    /* a cleared cache: a no-op */
    tl_scope_pop();
}
END_TEST
