/* L7.9 positions and the cache (section 2.5), differential: the full forward
 * of T tokens is the oracle of the cached one. A prefill followed by decoding
 * one token at a time, or chunks of several, with positions NULL (they continue
 * from kv_cache_seq_len), gives the full forward's logits at every position,
 * for every family; with Mistral's window, a bounded SinkWindowCache that keeps
 * only the window gives them too. */
#include "llama_fixture.h"

static const char *const CACHED[] = {
    "llama-gqa", "llama-mqa-tied", "mistral-window", "qwen2-window-bias", "llama3-bias",
    "llama-yarn", "llama-sinks", "llama-bf16-sharded",
};

/* Feeds ids [B, T] through cache in chunks of the given sizes (summing to T) and
 * returns the logits of every position, joined along T. */
static tl_tensor *decode_in_chunks(LlamaForCausalLM *m, tl_tensor *ids, KVCache *cache,
                                   const int64_t *chunks, int n) {
    tl_tensor *parts[32];
    int64_t start = 0;
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(kv_cache_seq_len(cache, 0), start);
        parts[i] = ll_forward(m, ll_cols(ids, 1, start, chunks[i]), NULL, cache);
        start += chunks[i];
    }
    ck_assert_int_eq(kv_cache_seq_len(cache, 0), start);
    return tl_concat(parts, n, 1);
}

/* Mistral's window of 5 through a cache of 5 slots: memory bounded, logits equal. */
static void bounded_cache_keeps_only_the_window(const tl_checkpoint *fx, double rtol,
                                                double atol) {
    LlamaForCausalLM m;
    ll_load(&m, "mistral-window");
    ck_assert_int_eq(llama_layer_window(&m.config, 0), 5);
    tl_tensor *ids = ll_golden(fx, "mistral-window", "ids");
    SinkWindowCache sw;
    ck_assert_int_eq(sink_window_cache_init(&sw, (int)m.config.num_hidden_layers, ids->shape[0],
                                            m.config.num_key_value_heads, m.config.head_dim, 5,
                                            0, SINK_KEEP_POSITIONS), 0);
    const int64_t chunks[] = {5, 1, 1, 1, 1, 1, 1, 1};
    tl_tensor *decoded = decode_in_chunks(&m, ids, &sw.base, chunks, 8);
    tl_assert_close(decoded, ll_golden(fx, "mistral-window", "logits"), rtol, atol);
    ck_assert_int_eq(sw.base.held[0], 5);
    kv_cache_free(&sw.base);
    llama_free(&m);
}

START_TEST(test_cached_decode_equals_full_forward)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(LL_ST);
    double rtol = ll_tol("test_cached_decode_equals_full_forward", "rtol");
    double atol = ll_tol("test_cached_decode_equals_full_forward", "atol");
    const int64_t one_by_one[] = {5, 1, 1, 1, 1, 1, 1, 1}, thirds[] = {4, 4, 4};
    for (size_t i = 0; i < sizeof CACHED / sizeof CACHED[0]; i++) {
        const char *name = CACHED[i];
        LlamaForCausalLM m;
        ll_load(&m, name);
        tl_tensor *ids = ll_golden(fx, name, "ids");
        tl_tensor *full = ll_forward(&m, ids, NULL, NULL);
        KVCache cache;
        ck_assert_msg(llama_cache_init(&m, &cache, ids->shape[0], 16) == 0, "%s", tl_error());
        char msg[768];
        tl_tensor *decoded = decode_in_chunks(&m, ll_cols(ids, 1, 0, 12), &cache, one_by_one, 8);
        ck_assert_msg(tl_close_report(decoded, full, rtol, atol, msg, sizeof msg),
                      "%s, prefill 5 then one at a time: %s", name, msg);
        kv_cache_reset(&cache);
        decoded = decode_in_chunks(&m, ids, &cache, thirds, 3);
        ck_assert_msg(tl_close_report(decoded, full, rtol, atol, msg, sizeof msg),
                      "%s, three chunks of 4: %s", name, msg);
        kv_cache_free(&cache);
        llama_free(&m);
    }
    bounded_cache_keeps_only_the_window(fx, rtol, atol);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* Greedy decoding, as the milestone runs it: the oracle's 24 new tokens after
 * the fixture prompt, with the cache and without it (recomputing everything),
 * for every checkpoint. Dynamic rope changes its frequencies as the sequence
 * grows, so HF's two lists differ there, and the model's must match each. */
static int64_t argmax_last(tl_tensor *logits) {
    tl_tensor *last = tl_narrow(logits, 1, logits->shape[1] - 1, 1);
    return (int64_t)tl_item(tl_argmax(tl_reshape(last, TL_SHAPE(-1)), 0, false));
}

START_TEST(test_greedy_ids_match_the_oracle)
{
    for (int i = 0; i < LL_N_ALL; i++) {
        tl_scope_push();
        const char *name = LL_ALL[i];
        LlamaForCausalLM m;
        ll_load(&m, name);
        int64_t prompt_len = (int64_t)tl_fixture_number(LL_JSON, "inputs.prompt_len");
        int64_t n = (int64_t)tl_fixture_number(LL_JSON, "inputs.new_tokens");
        int64_t ids[64];
        char key[64];
        for (int64_t j = 0; j < prompt_len; j++) {
            snprintf(key, sizeof key, "prompt_ids.%lld", (long long)j);
            ids[j] = (int64_t)ll_meta(name, key);
        }
        for (int cached = 0; cached <= 1; cached++) {
            KVCache cache;
            ck_assert_int_eq(llama_cache_init(&m, &cache, 1, prompt_len + n), 0);
            m.rope_seq_len = 0;   /* a fresh model's dynamic-rope state */
            int64_t len = prompt_len;
            tl_tensor *step = tl_from_i64(ids, TL_SHAPE(1, prompt_len));
            for (int64_t k = 0; k < n; k++) {
                tl_scope_push();
                tl_tensor *all = tl_from_i64(ids, TL_SHAPE(1, len));
                int64_t next = argmax_last(ll_forward(&m, cached ? step : all, NULL,
                                                      cached ? &cache : NULL));
                tl_scope_pop();
                snprintf(key, sizeof key, "%s.%lld", cached ? "greedy_ids_cached" : "greedy_ids",
                         (long long)k);
                int64_t want = (int64_t)ll_meta(name, key);
                ck_assert_msg(next == want, "%s (%s cache): new token %lld is %lld, HF's %lld",
                              name, cached ? "with a" : "without a", (long long)k,
                              (long long)next, (long long)want);
                ids[len++] = next;
                step = tl_from_i64(&ids[len - 1], TL_SHAPE(1, 1));
            }
            kv_cache_free(&cache);
        }
        llama_free(&m);
        tl_scope_pop();
    }
}
END_TEST
