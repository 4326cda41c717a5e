/* My tests of the latent cache: what it holds, how big it is, and that
 * decoding through it equals the full forward. */
#include "my_mla.h"

START_TEST(my_cache_holds_rms_c_and_rotated_k_rope)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    const char *t = "test_latent_cache_holds_normed_latent_and_rotated_k_rope";
    double rt = my_tol(t, "rtol"), at = my_tol(t, "atol");
    for (int i = 0; i < 5; i++) {
        MLAttention a;
        my_layer(&a, fx, &MY_CASES[i]);
        MLAConfig cfg = my_config(&MY_CASES[i]);
        KVCache c;
        ck_assert_int_eq(mla_cache_init(&c, &cfg, 1, 2, 6), 0);
        /* 12 + 8 floats per token: one latent and one shared rope key. */
        ck_assert_int_eq(tl_numel(c.keys[0]) + tl_numel(c.values[0]), 2 * 6 * (12 + 8));
        tl_no_grad_push();
        tl_assert_ok(mla_forward(&a, tl_fixture_tensor(fx, "x"), my_positions(fx), NULL, &c, 0));
        tl_no_grad_pop();
        tl_tensor *k, *v;
        ck_assert_int_eq(kv_cache_view(&c, 0, &k, &v), 0);
        char key[96];
        snprintf(key, sizeof key, "%s.cache.latent", MY_CASES[i].name);
        tl_assert_close(k, tl_fixture_tensor(fx, key), rt, at);
        snprintf(key, sizeof key, "%s.cache.k_rope", MY_CASES[i].name);
        tl_assert_close(v, tl_fixture_tensor(fx, key), rt, at);
        kv_cache_free(&c);
        mla_free(&a);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(my_decode_one_by_one_equals_full)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    double rt = my_tol("test_cached_decode_one_token_at_a_time", "rtol");
    double at = my_tol("test_cached_decode_one_token_at_a_time", "atol");
    tl_tensor *x = tl_fixture_tensor(fx, "x");
    for (int i = 0; i < 5; i += 4) {
        MLAttention a;
        my_layer(&a, fx, &MY_CASES[i]);
        MLAConfig cfg = my_config(&MY_CASES[i]);
        /* positions NULL: 0 .. 5, continuing from the cache in decode. */
        tl_tensor *full = mla_forward(&a, x, NULL, NULL, NULL, 0);
        tl_assert_ok(full);
        for (int p = 0; p < 2; p++) {
            a.path = p ? MLA_PATH_ABSORBED : MLA_PATH_NAIVE;
            KVCache c;
            ck_assert_int_eq(mla_cache_init(&c, &cfg, 1, 2, 6), 0);
            tl_tensor *parts[6];
            tl_no_grad_push();
            for (int t = 0; t < 6; t++) {
                parts[t] = mla_forward(&a, tl_narrow(x, 1, t, 1), NULL, NULL, &c, 0);
                tl_assert_ok(parts[t]);
            }
            tl_no_grad_pop();
            tl_assert_close(tl_concat(parts, 6, 1), full, rt, at);
            kv_cache_free(&c);
        }
        mla_free(&a);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(my_chunks_match_hf_dynamic_cache)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    double rt = my_tol("test_cached_decode_uneven_chunks", "rtol");
    double at = my_tol("test_cached_decode_uneven_chunks", "atol");
    MLAttention a;
    my_layer(&a, fx, &MY_CASES[0]);
    MLAConfig cfg = my_config(&MY_CASES[0]);
    KVCache c;
    ck_assert_int_eq(mla_cache_init(&c, &cfg, 1, 2, 6), 0);
    tl_tensor *x = tl_fixture_tensor(fx, "x"), *pos = my_positions(fx), *parts[3];
    const int sizes[3] = {3, 1, 2};
    int start = 0;
    tl_no_grad_push();
    for (int i = 0; i < 3; i++) {
        parts[i] = mla_forward(&a, tl_narrow(x, 1, start, sizes[i]),
                               tl_narrow(pos, 1, start, sizes[i]), NULL, &c, 0);
        tl_assert_ok(parts[i]);
        start += sizes[i];
    }
    tl_no_grad_pop();
    tl_assert_close(tl_concat(parts, 3, 1), tl_fixture_tensor(fx, "lora_interleave.chunked.y"),
                    rt, at);
    /* One more token does not fit a cache of 6: refused, nothing changed. */
    tl_no_grad_push();
    ck_assert_ptr_null(mla_forward(&a, tl_narrow(x, 1, 0, 1), NULL, NULL, &c, 0));
    tl_no_grad_pop();
    ck_assert(strstr(tl_error(), "holds 6 of 6") != NULL);
    ck_assert_int_eq(kv_cache_seq_len(&c, 0), 6);
    kv_cache_free(&c);
    mla_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
