/* L7.7: gqa_window_forward builds its mask from CACHE positions, not from the
 * position ids it is given for RoPE. With position ids 10 .. 15 on a fresh
 * cache (cache positions 0 .. 5), a window of 3 must still show each query
 * its last 3 keys: the result equals gqa_forward with the mask of cache
 * positions 0 .. 5, with or without the cache. */
#include "mask_fixture.h"

START_TEST(test_mask_from_cache_positions_not_position_ids)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MASK_ST);
    double rtol = mask_tol("test_bounded_cache_equals_keep_everything_under_the_mask", "rtol");
    double atol = mask_tol("test_bounded_cache_equals_keep_everything_under_the_mask", "atol");
    GQAttention a;
    mask_layer(&a, fx, "stream");
    tl_tensor *x = tl_narrow(tl_fixture_tensor(fx, "stream.x"), 1, 0, 6);
    tl_tensor *ids = tl_arange(10, 16);
    tl_tensor *want = gqa_forward(&a, x, ids, attention_mask(tl_arange(0, 6), tl_arange(0, 6), 3,
                                                             0), NULL, 0);
    tl_assert_ok(want);
    mask_assert_close(gqa_window_forward(&a, x, ids, 3, 0, NULL, 0), want, rtol, atol,
                      "position ids 10 .. 15, no cache");
    KVCache c;
    ck_assert_int_eq(kv_cache_init(&c, 1, 1, STREAM_HKV, MX_D, MX_D, 6), 0);
    tl_no_grad_push();
    tl_tensor *parts[2] = {
        gqa_window_forward(&a, tl_narrow(x, 1, 0, 4), tl_arange(10, 14), 3, 0, &c, 0),
        gqa_window_forward(&a, tl_narrow(x, 1, 4, 2), tl_arange(14, 16), 3, 0, &c, 0)};
    tl_no_grad_pop();
    ck_assert_msg(parts[0] && parts[1], "%s", tl_error());
    mask_assert_close(tl_concat(parts, 2, 1), want, rtol, atol,
                      "position ids 10 .. 15 through a cache in chunks of 4 and 2");
    kv_cache_free(&c);
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
