/* L7.7 boundary and fault: windows below 1, sinks that fill the capacity,
 * bad positions, sinks of the wrong shape, a window wider than the bounded
 * cache keeps, position ids given to a StreamingLLM cache; and a refused chunk
 * leaves the cache exactly as it was, so the stream goes on correctly. */
#include "mask_fixture.h"

#define assert_fails(expr, n1, n2)                                                      \
    do {                                                                                \
        tl_clear_error();                                                               \
        bool failed_ = (expr);                                                          \
        const char *e_ = tl_error() ? tl_error() : "(no message)";                       \
        ck_assert_msg(failed_, "%s succeeded; expected an error", #expr);                \
        ck_assert_msg(strstr(e_, n1) && strstr(e_, n2),                                 \
                      "%s failed with '%s'; expected it to mention '%s' and '%s'", #expr, \
                      e_, n1, n2);                                                      \
        tl_clear_error();                                                               \
    } while (0)

START_TEST(test_boundary_windows_sinks_and_positions)
{
    tl_scope_push();
    SinkWindowCache c;
    assert_fails(sink_window_cache_init(&c, 1, 1, 1, 4, 0, 0, SINK_KEEP_POSITIONS) == -1,
                 "sink_window_cache_init", "capacity");
    assert_fails(sink_window_cache_init(&c, 1, 1, 1, 4, 4, 4, SINK_KEEP_POSITIONS) == -1,
                 "4 sink tokens", "capacity of 4");
    assert_fails(sink_window_cache_init(&c, 1, 1, 1, 4, 4, 9, SINK_REPOSITION) == -1,
                 "9 sink tokens", "capacity of 4");
    assert_fails(sink_window_cache_init(&c, 1, 1, 1, 4, 4, -1, SINK_KEEP_POSITIONS) == -1,
                 "sink_window_cache_init", "-1");
    assert_fails(sink_window_cache_init(&c, 0, 1, 1, 4, 4, 1, SINK_KEEP_POSITIONS) == -1,
                 "kv_cache_init", "n_layers");
    assert_fails(sink_window_cache_init(NULL, 1, 1, 1, 4, 4, 1, SINK_KEEP_POSITIONS) == -1,
                 "sink_window_cache_init", "NULL");
    assert_fails(sink_window_cache_init(&c, 1, 1, 1, 4, 4, 1, (sink_rope)7) == -1,
                 "sink_window_cache_init", "rope_mode 7");
    kv_cache_free(&c.base);   /* safe after a failed init */

    tl_tensor *q = tl_arange(0, 3), *k = tl_arange(0, 3);
    assert_fails(attention_mask(q, k, -1, 0) == NULL, "attention_mask", "window");
    assert_fails(attention_mask(q, k, 2, -2) == NULL, "attention_mask", "sink_tokens");
    assert_fails(attention_mask(NULL, k, 2, 0) == NULL, "attention_mask", "NULL");
    assert_fails(attention_mask(tl_zeros(TL_F32, TL_SHAPE(3)), k, 2, 0) == NULL,
                 "attention_mask", "F32");
    assert_fails(attention_mask(q, tl_zeros(TL_I64, TL_SHAPE(1, 3)), 2, 0) == NULL,
                 "attention_mask", "[1, 3]");
    const int64_t neg[2] = {4, -1};
    assert_fails(attention_mask(q, tl_from_i64(neg, TL_SHAPE(2)), 2, 0) == NULL, "[1]", "-1");

    tl_tensor *scores = tl_zeros(TL_F32, TL_SHAPE(1, 4, 2, 3));
    assert_fails(softmax_with_sink(scores, tl_zeros(TL_F32, TL_SHAPE(3))) == NULL,
                 "softmax_with_sink", "[3]");
    assert_fails(softmax_with_sink(tl_zeros(TL_F32, TL_SHAPE(4, 2, 3)),
                                   tl_zeros(TL_F32, TL_SHAPE(4))) == NULL,
                 "softmax_with_sink", "[4, 2, 3]");
    assert_fails(softmax_with_sink(NULL, tl_zeros(TL_F32, TL_SHAPE(4))) == NULL,
                 "softmax_with_sink", "NULL");
    assert_fails(gqa_add_learned_sinks(NULL, NULL) == -1, "gqa_add_learned_sinks", "NULL");
    RopeSpec r;
    ck_assert_int_eq(rope_spec_init(&r, MX_D, MX_D, 10000.0, ROPE_HALF), 0);
    GQAConfig cfg = {.hidden = MX_HIDDEN, .n_heads = 4, .n_kv_heads = 2, .head_dim = MX_D};
    GQAttention a;
    ck_assert_int_eq(gqa_init(&a, &cfg, &r, NULL), 0);
    int64_t before = gqa_param_count(&a);
    ck_assert_int_eq(gqa_add_learned_sinks(&a, NULL), 0);
    ck_assert_int_eq(gqa_param_count(&a), before + 4);
    ck_assert_int_eq(tl_module_param_count(a.module), before + 4);
    ck_assert_msg(a.sinks && a.sinks->shape[0] == 4 && a.sink_softmax == softmax_with_sink,
                  "gqa_add_learned_sinks must set sinks [n_heads] and sink_softmax");
    assert_fails(gqa_add_learned_sinks(&a, NULL) == -1, "gqa_add_learned_sinks", "already");

    /* A window wider than the bounded cache keeps would need evicted keys. */
    ck_assert_msg(sink_window_cache_init(&c, 1, 1, 2, MX_D, 6, 2, SINK_KEEP_POSITIONS) == 0,
                  "sink_window_cache_init: %s", tl_error());
    tl_tensor *x = tl_zeros(TL_F32, TL_SHAPE(1, 1, MX_HIDDEN));
    tl_no_grad_push();
    assert_fails(gqa_window_forward(&a, x, NULL, 5, 2, &c.base, 0) == NULL,
                 "gqa_window_forward", "window of 4");
    assert_fails(gqa_window_forward(&a, x, NULL, 4, 3, &c.base, 0) == NULL,
                 "gqa_window_forward", "2 sinks");
    assert_fails(gqa_window_forward(&a, x, NULL, ATTN_NO_WINDOW, 0, &c.base, 0) == NULL,
                 "gqa_window_forward", "window");
    ck_assert_int_eq(kv_cache_seq_len(&c.base, 0), 0);
    tl_no_grad_pop();
    kv_cache_free(&c.base);
    gqa_free(&a);
    tl_scope_pop();
}
END_TEST

START_TEST(test_fault_streaming_refusals_leave_the_cache_intact)
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
    tl_no_grad_push();
    /* A prefill that fits is one chunk: its rows are the stream's first five. */
    tl_tensor *y5 = gqa_forward(&a, tl_narrow(x, 1, 0, 5), NULL, NULL, &c.base, 0);
    mask_assert_close(y5, tl_narrow(golden, 1, 0, 5), rtol, atol, "a prefill of 5 (it fits)");
    /* 3 more do not fit without evicting what the chunk's first token sees. */
    assert_fails(gqa_forward(&a, tl_narrow(x, 1, 5, 3), NULL, NULL, &c.base, 0) == NULL,
                 "gqa_forward", "one at a time");
    /* Position ids to a cache that decides positions itself. */
    assert_fails(gqa_forward(&a, tl_narrow(x, 1, 5, 1), tl_arange(5, 6), NULL, &c.base, 0) ==
                     NULL, "gqa_forward", "positions NULL");
    /* A cache that rotates keys itself needs the layer's RopeSpec. */
    tl_tensor *k1 = tl_zeros(TL_F32, TL_SHAPE(1, STREAM_HKV, 1, MX_D));
    KVCacheUpdate u;
    assert_fails(kv_cache_update(&c.base, 0, k1, k1, NULL, &u) == -1, "kv_cache_update",
                 "RopeSpec");
    ck_assert_int_eq(kv_cache_seq_len(&c.base, 0), 5);
    ck_assert_int_eq(c.base.held[0], 5);
    /* The stream goes on, one token at a time, exactly as the oracle's. */
    for (int64_t t = 5; t < STREAM_T; t++) {
        tl_tensor *y = gqa_forward(&a, tl_narrow(x, 1, t, 1), NULL, NULL, &c.base, 0);
        char what[64];
        snprintf(what, sizeof what, "token %lld after the refusals", (long long)t);
        mask_assert_close(y, tl_narrow(golden, 1, t, 1), rtol, atol, what);
    }
    tl_no_grad_pop();
    kv_cache_free(&c.base);
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
