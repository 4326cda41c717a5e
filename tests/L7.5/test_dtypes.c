/* L7.5 unit: dtypes. A BF16 input is widened exactly (ops.h), so attention of
 * a BF16 x equals attention of the same values in F32, bit for bit, with and
 * without a cache; the cache stores F32, whatever came in. */
#include "attn_fixture.h"

START_TEST(test_bf16_input_is_widened_exactly)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(ATTN_ST);
    GQAttention a;
    attn_from_fixture(&a, fx, attn_case_named("qwen2"));
    tl_tensor *xb = tl_cast(tl_fixture_tensor(fx, "x"), TL_BF16);
    tl_tensor *xf = tl_cast(xb, TL_F32);
    tl_tensor *positions = attn_positions(fx);
    tl_tensor *yb = gqa_forward(&a, xb, positions, NULL, NULL, 0);
    tl_assert_ok(yb);
    ck_assert_msg(yb->dtype == TL_F32, "the output is F32 for a BF16 input");
    tl_assert_close(yb, gqa_forward(&a, xf, positions, NULL, NULL, 0), 0.0, 0.0);

    KVCache cache;
    ck_assert_int_eq(kv_cache_init(&cache, 1, FX_B, 2, FX_D, FX_D, FX_T), 0);
    tl_no_grad_push();
    tl_tensor *y2 = gqa_forward(&a, tl_narrow(xb, 1, 0, 2), tl_narrow(positions, 1, 0, 2), NULL,
                                &cache, 0);
    tl_no_grad_pop();
    tl_assert_ok(y2);
    tl_assert_close(y2, tl_narrow(yb, 1, 0, 2), 1e-4, 1e-5);
    ck_assert_msg(cache.keys[0]->dtype == TL_F32 && cache.values[0]->dtype == TL_F32,
                  "the cache stores F32");
    /* kv_cache_update takes BF16 keys and values too, stored exactly. */
    kv_cache_reset(&cache);
    tl_tensor *kb = tl_cast(tl_fixture_tensor(fx, "gqa.k_rot"), TL_BF16);
    KVCacheUpdate u;
    ck_assert_msg(kv_cache_update(&cache, 0, kb, kb, NULL, &u) == 0, "update: %s", tl_error());
    tl_assert_close(u.keys, tl_cast(kb, TL_F32), 0.0, 0.0);
    kv_cache_free(&cache);
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
