/* L7.9 with L7.7, differential: a llama config with the course's
 * tl_sliding_window 4, tl_sink_tokens 2 and tl_learned_sinks gives the oracle's
 * logits (each query sees the last 4 keys and tokens 0 and 1, and every head's
 * learned sink takes its share of the probability); streamed one token at a
 * time through a SinkWindowCache of 2 sinks + 4 slots, it gives the same
 * logits: the bounded cache keeps exactly what the mask shows. */
#include "llama_fixture.h"

START_TEST(test_sink_tokens_stream_like_full_attention)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(LL_ST);
    double rtol = ll_tol("test_sink_tokens_stream_like_full_attention", "rtol");
    double atol = ll_tol("test_sink_tokens_stream_like_full_attention", "atol");
    const char *name = "llama-sinks";
    LlamaForCausalLM m;
    ll_load(&m, name);
    const LlamaConfig *c = &m.config;
    ck_assert_int_eq(c->tl_sliding_window, 4);
    ck_assert_int_eq(c->tl_sink_tokens, 2);
    for (int64_t l = 0; l < c->num_hidden_layers; l++) {
        ck_assert_msg(m.decoder[l].attn.sinks != NULL, "layer %lld has no learned sinks",
                      (long long)l);
        ck_assert_int_eq(m.decoder[l].window, 4);
        ck_assert_int_eq(m.decoder[l].sink_tokens, 2);
    }
    tl_tensor *ids = ll_golden(fx, name, "ids"), *want = ll_golden(fx, name, "logits");
    char msg[768];
    ck_assert_msg(tl_close_report(ll_forward(&m, ids, NULL, NULL), want, rtol, atol, msg,
                                  sizeof msg), "full forward: %s", msg);

    SinkWindowCache sw;
    ck_assert_int_eq(sink_window_cache_init(&sw, (int)c->num_hidden_layers, ids->shape[0],
                                            c->num_key_value_heads, c->head_dim, 6, 2,
                                            SINK_KEEP_POSITIONS), 0);
    tl_tensor *parts[16];
    for (int64_t t = 0; t < ids->shape[1]; t++)
        parts[t] = ll_forward(&m, ll_cols(ids, 1, t, 1), NULL, &sw.base);
    ck_assert_msg(tl_close_report(tl_concat(parts, (int)ids->shape[1], 1), want, rtol, atol, msg,
                                  sizeof msg), "streamed through 2 sinks + 4 slots: %s", msg);
    ck_assert_int_eq(kv_cache_seq_len(&sw.base, 0), ids->shape[1]);
    ck_assert_int_eq(sw.base.held[0], 6);
    kv_cache_free(&sw.base);
    llama_free(&m);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* StreamingLLM (SINK_REPOSITION: keys re-rotated at their place in the cache):
 * while nothing is evicted the positions are the stream's own, so the logits
 * are the full forward's; after that the stream goes on with positions that
 * never pass the capacity. positions must then be NULL. */
START_TEST(test_streaming_llm_cache_repositions)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(LL_ST);
    double rtol = ll_tol("test_sink_tokens_stream_like_full_attention", "rtol");
    double atol = ll_tol("test_sink_tokens_stream_like_full_attention", "atol");
    LlamaForCausalLM m;
    ll_load(&m, "llama-sinks");
    tl_tensor *ids = ll_golden(fx, "llama-sinks", "ids"), *want = ll_golden(fx, "llama-sinks",
                                                                           "logits");
    SinkWindowCache sw;
    ck_assert_int_eq(sink_window_cache_init(&sw, (int)m.config.num_hidden_layers, ids->shape[0],
                                            m.config.num_key_value_heads, m.config.head_dim, 6,
                                            2, SINK_REPOSITION), 0);
    tl_tensor *first[6];
    for (int64_t t = 0; t < 6; t++) first[t] = ll_forward(&m, ll_cols(ids, 1, t, 1), NULL,
                                                          &sw.base);
    tl_assert_close(tl_concat(first, 6, 1), ll_cols(want, 1, 0, 6), rtol, atol);
    for (int64_t t = 6; t < ids->shape[1]; t++) {
        tl_tensor *y = ll_forward(&m, ll_cols(ids, 1, t, 1), NULL, &sw.base);
        ck_assert(isfinite(tl_item_at(y, 0)));
    }
    tl_no_grad_push();
    tl_assert_error(llama_forward(&m, ll_cols(ids, 1, 0, 1), tl_arange(0, 1), &sw.base),
                    "positions NULL");
    tl_no_grad_pop();
    kv_cache_free(&sw.base);
    llama_free(&m);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
