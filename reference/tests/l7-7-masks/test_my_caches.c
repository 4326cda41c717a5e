/* My bounded-cache tests: memory bounded, outputs unchanged. */
#include "my_masks.h"

/* 14 tokens one at a time through 2 sinks + a window of 4 equal the oracle's
 * keep-everything result under the same mask; then in chunks 3, 5, 1, 5. */
START_TEST(my_bounded_stream_equals_the_mask)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    double rt = my_tol("test_bounded_cache_equals_keep_everything_under_the_mask", "rtol");
    double at = my_tol("test_bounded_cache_equals_keep_everything_under_the_mask", "atol");
    GQAttention a;
    my_layer(&a, fx, "stream");
    tl_tensor *x = tl_fixture_tensor(fx, "stream.x");
    const int plans[2][14] = {{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {3, 5, 1, 5}};
    const int counts[2] = {14, 4};
    for (int plan = 0; plan < 2; plan++) {
        SinkWindowCache c;
        ck_assert_int_eq(sink_window_cache_init(&c, 1, 1, 2, 8, 6, 2, SINK_KEEP_POSITIONS), 0);
        tl_tensor *parts[14];
        int64_t start = 0;
        tl_no_grad_push();
        for (int i = 0; i < counts[plan]; i++) {
            int n = plans[plan][i];
            parts[i] = gqa_window_forward(&a, tl_narrow(x, 1, start, n), NULL, 4, 2, &c.base, 0);
            ck_assert_msg(parts[i] != NULL, "%s", tl_error());
            start += n;
            /* never more than 6 held, and the sinks always among them */
            ck_assert(c.base.held[0] <= 6);
            int sinks = 0;
            for (int64_t s = 0; s < c.base.held[0]; s++) sinks += c.base.slot_positions[s] < 2;
            ck_assert_int_eq(sinks, start < 2 ? start : 2);
        }
        tl_no_grad_pop();
        tl_assert_close(tl_concat(parts, counts[plan], 1), tl_fixture_tensor(fx, "stream.keep.y"),
                        rt, at);
        kv_cache_free(&c.base);
    }
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* StreamingLLM: token by token equals the oracle. */
START_TEST(my_streaming_llm_stream)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    GQAttention a;
    my_layer(&a, fx, "stream");
    tl_tensor *x = tl_fixture_tensor(fx, "stream.x");
    SinkWindowCache c;
    ck_assert_int_eq(sink_window_cache_init(&c, 1, 1, 2, 8, 6, 2, SINK_REPOSITION), 0);
    tl_tensor *parts[14];
    tl_no_grad_push();
    for (int t = 0; t < 14; t++) {
        parts[t] = gqa_forward(&a, tl_narrow(x, 1, t, 1), NULL, NULL, &c.base, 0);
        ck_assert_msg(parts[t] != NULL, "%s", tl_error());
    }
    tl_no_grad_pop();
    tl_assert_close(tl_concat(parts, 14, 1), tl_fixture_tensor(fx, "stream.repos.y"),
                    my_tol("test_streaming_llm_repositions_keys", "rtol"),
                    my_tol("test_streaming_llm_repositions_keys", "atol"));
    kv_cache_free(&c.base);
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* Position ids are RoPE's: the window counts cache positions. */
START_TEST(my_window_ignores_position_ids)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    GQAttention a;
    my_layer(&a, fx, "stream");
    tl_tensor *x = tl_narrow(tl_fixture_tensor(fx, "stream.x"), 1, 0, 5);
    tl_tensor *ids = tl_arange(20, 25);
    tl_tensor *mask = attention_mask(tl_arange(0, 5), tl_arange(0, 5), 2, 0);
    tl_assert_close(gqa_window_forward(&a, x, ids, 2, 0, NULL, 0),
                    gqa_forward(&a, x, ids, mask, NULL, 0), 1e-5, 1e-6);
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* One cache for every layer: two layers fed in turn each keep their own tokens. */
START_TEST(my_two_layers_share_one_bounded_cache)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    GQAttention a;
    my_layer(&a, fx, "stream");
    tl_tensor *x = tl_fixture_tensor(fx, "stream.x");
    SinkWindowCache c;
    ck_assert_int_eq(sink_window_cache_init(&c, 2, 1, 2, 8, 6, 2, SINK_KEEP_POSITIONS), 0);
    tl_tensor *parts[2][14];
    tl_no_grad_push();
    for (int t = 0; t < 14; t++)
        for (int layer = 0; layer < 2; layer++) {
            parts[layer][t] = gqa_window_forward(&a, tl_narrow(x, 1, t, 1), NULL, 4, 2, &c.base,
                                                 layer);
            ck_assert_msg(parts[layer][t] != NULL, "%s", tl_error());
        }
    tl_no_grad_pop();
    for (int layer = 0; layer < 2; layer++) {
        tl_assert_close(tl_concat(parts[layer], 14, 1), tl_fixture_tensor(fx, "stream.keep.y"),
                        my_tol("test_bounded_cache_equals_keep_everything_under_the_mask", "rtol"),
                        my_tol("test_bounded_cache_equals_keep_everything_under_the_mask", "atol"));
        ck_assert_int_eq(kv_cache_seq_len(&c.base, layer), 14);
    }
    kv_cache_free(&c.base);
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
