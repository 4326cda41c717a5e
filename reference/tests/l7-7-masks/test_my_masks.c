/* My mask tests: rules I can state and check key by key. */
#include "my_masks.h"

/* Window 3, 2 sinks, 12 positions: j visible to i iff j <= i and
 * (i - j < 3 or j < 2). */
START_TEST(my_window_and_sinks_key_by_key)
{
    tl_scope_push();
    tl_tensor *m = attention_mask(tl_arange(0, 12), tl_arange(0, 12), 3, 2);
    tl_assert_ok(m);
    for (int64_t i = 0; i < 12; i++)
        for (int64_t j = 0; j < 12; j++)
            ck_assert_msg(my_visible(m, i, j) == (j <= i && (i - j < 3 || j < 2)),
                          "query %lld key %lld", (long long)i, (long long)j);
    tl_scope_pop();
}
END_TEST

/* A hidden entry is fp32 min exactly, never -inf. */
START_TEST(my_hidden_is_fp32_min)
{
    tl_scope_push();
    tl_tensor *m = attention_mask(tl_arange(0, 2), tl_arange(0, 2), ATTN_NO_WINDOW, 0);
    tl_assert_ok(m);
    ck_assert(tl_item_at(m, 1) == -3.4028234663852886e38);
    ck_assert(tl_item_at(m, 0) == 0.0 && tl_item_at(m, 2) == 0.0 && tl_item_at(m, 3) == 0.0);
    tl_scope_pop();
}
END_TEST

/* The oracle's masks, including a bounded cache's ring order. */
START_TEST(my_golden_masks)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    const int64_t ring[6] = {0, 1, 10, 11, 8, 9};
    tl_assert_close(attention_mask(tl_arange(11, 12), tl_from_i64(ring, TL_SHAPE(6)), 4, 2),
                    tl_fixture_tensor(fx, "mask.ring"), 0.0, 0.0);
    tl_assert_close(attention_mask(tl_arange(4, 10), tl_arange(0, 10), 3, 2),
                    tl_fixture_tensor(fx, "mask.window_sinks"), 0.0, 0.0);
    tl_assert_close(attention_mask(tl_arange(0, 4), tl_arange(0, 4), 2, 2),
                    tl_fixture_tensor(fx, "mask.early_sinks"), 0.0, 0.0);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* Every key hidden: the attention still gives finite numbers. */
START_TEST(my_fully_masked_layer_is_finite)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    GQAttention a;
    my_layer(&a, fx, "stream");
    tl_tensor *x = tl_narrow(tl_fixture_tensor(fx, "stream.x"), 1, 0, 3);
    tl_tensor *mask = attention_mask(tl_arange(0, 3), tl_arange(5, 8), ATTN_NO_WINDOW, 0);
    tl_tensor *y = gqa_forward(&a, x, NULL, mask, NULL, 0);
    tl_assert_ok(y);
    for (int64_t i = 0; i < tl_numel(y); i++) ck_assert(isfinite(tl_item_at(y, i)));
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
