/* L7.5 fault: a full cache is an error that says its size, never a silent
 * overwrite, and a forward that fails leaves the cache exactly as it was, so
 * the stream can go on and still equal the full forward. */
#include "attn_fixture.h"

START_TEST(test_fault_full_cache_says_its_size_and_keeps_its_tokens)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(ATTN_ST);
    double rtol = attn_tol("test_cached_decode_uneven_chunks", "rtol");
    double atol = attn_tol("test_cached_decode_uneven_chunks", "atol");
    GQAttention a;
    attn_from_fixture(&a, fx, attn_case_named("gqa"));
    tl_tensor *x = tl_fixture_tensor(fx, "x");
    tl_tensor *full = gqa_forward(&a, x, NULL, NULL, NULL, 0);
    tl_assert_ok(full);
    KVCache cache;
    ck_assert_int_eq(kv_cache_init(&cache, 1, FX_B, 2, FX_D, FX_D, 4), 0);
    tl_no_grad_push();
    tl_tensor *y3 = gqa_forward(&a, tl_narrow(x, 1, 0, 3), NULL, NULL, &cache, 0);
    tl_assert_ok(y3);
    tl_tensor *keys, *values;
    ck_assert_int_eq(kv_cache_view(&cache, 0, &keys, &values), 0);
    tl_tensor *keys_before = tl_clone(keys), *values_before = tl_clone(values);

    /* Two more tokens do not fit in 4 slots. */
    tl_clear_error();
    ck_assert_ptr_null(gqa_forward(&a, tl_narrow(x, 1, 3, 2), NULL, NULL, &cache, 0));
    const char *e = tl_error() ? tl_error() : "(no message)";
    ck_assert_msg(strstr(e, "gqa_forward") && strstr(e, "holds 3 of 4") &&
                  strstr(e, "max_len 4"),
                  "a full cache must say what it holds and its size ('holds 3 of 4', "
                  "'max_len 4'); got '%s'", e);
    tl_clear_error();
    ck_assert_int_eq(kv_cache_seq_len(&cache, 0), 3);
    ck_assert_int_eq(kv_cache_view(&cache, 0, &keys, &values), 0);
    tl_assert_close(keys, keys_before, 0.0, 0.0);
    tl_assert_close(values, values_before, 0.0, 0.0);

    /* The same from the cache's own update. */
    KVCacheUpdate u;
    tl_tensor *k2 = tl_zeros(TL_F32, TL_SHAPE(FX_B, 2, 2, FX_D));
    tl_clear_error();
    ck_assert_int_eq(kv_cache_update(&cache, 0, k2, k2, NULL, &u), -1);
    ck_assert_msg(tl_error() && strstr(tl_error(), "holds 3 of 4"), "kv_cache_update: '%s'",
                  tl_error() ? tl_error() : "(no message)");
    tl_clear_error();

    /* A forward refused for another reason (a mask of the wrong shape) changes
     * nothing either; then the 4th token still decodes exactly as the full
     * forward's row 3, and a 5th is refused. */
    ck_assert_ptr_null(gqa_forward(&a, tl_narrow(x, 1, 3, 1), NULL,
                                   tl_zeros(TL_F32, TL_SHAPE(1, 9)), &cache, 0));
    tl_clear_error();
    ck_assert_int_eq(kv_cache_seq_len(&cache, 0), 3);
    tl_tensor *y4 = gqa_forward(&a, tl_narrow(x, 1, 3, 1), NULL, NULL, &cache, 0);
    tl_assert_ok(y4);
    attn_assert_close(y4, tl_narrow(full, 1, 3, 1), rtol, atol,
                      "the 4th token after the refused calls");
    ck_assert_ptr_null(gqa_forward(&a, tl_narrow(x, 1, 4, 1), NULL, NULL, &cache, 0));
    ck_assert_msg(tl_error() && strstr(tl_error(), "holds 4 of 4"), "got '%s'",
                  tl_error() ? tl_error() : "(no message)");
    tl_clear_error();
    tl_no_grad_pop();
    kv_cache_free(&cache);
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
