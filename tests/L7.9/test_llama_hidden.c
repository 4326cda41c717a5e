/* L7.9 llama_model_forward (HF's LlamaModel.forward), property: it is
 * llama_forward without its head. For every checkpoint its hidden states
 * [B, T, hidden_size] through tl_linear with head_weight are llama_forward's
 * logits bit for bit, and each row is model.norm's output (divided by the
 * norm's weight, its mean square is 1 up to eps, exact by construction).
 * Explicit positions ([B, T], shifted) are honoured as llama_forward honours
 * them. Through a cache, positions continue from what it holds: a prompt in
 * two chunks and then one token at a time, each call llama_model_forward and
 * the head, give the full forward's logits (the milestone's generate runs
 * this path). Its own checks name it and leave a cache as it was. */
#include "llama_fixture.h"

static tl_tensor *hidden_of(LlamaForCausalLM *m, tl_tensor *ids, KVCache *cache) {
    tl_no_grad_push();
    tl_tensor *h = llama_model_forward(m, ids, NULL, cache);
    tl_no_grad_pop();
    ck_assert_msg(h != NULL, "llama_model_forward: %s", tl_error() ? tl_error() : "(none)");
    return h;
}

/* Divided by model.norm's weight, a row of hidden has mean square
 * ms / (ms + eps) for the row's own mean square ms before the norm: at most 1,
 * and above 0.5 unless ms < eps. Without the norm it is the residual stream's
 * own scale instead (5.45 in llama-gqa's first row). */
static void assert_rows_are_normed(const char *name, tl_tensor *hidden, const RMSNorm *norm) {
    tl_tensor *h = tl_contiguous(hidden);
    const float *x = tl_f32(h), *w = tl_f32(tl_contiguous(tl_cast(norm->weight, TL_F32)));
    int64_t d = h->shape[2], rows = h->shape[0] * h->shape[1];
    for (int64_t r = 0; r < rows; r++) {
        double sum = 0;
        int64_t used = 0;
        for (int64_t i = 0; i < d; i++) {
            double scale = norm->unit_offset ? 1.0 + w[i] : w[i];
            if (fabs(scale) < 1e-3) continue;
            double u = x[r * d + i] / scale;
            sum += u * u;
            used++;
        }
        ck_assert_msg(used > d / 2, "%s: model.norm's weight is mostly ~0", name);
        double ms = sum / (double)used;
        ck_assert_msg(ms > 0.5 && ms < 1.0 + 1e-3,
                      "%s: row %lld of llama_model_forward divided by model.norm.weight has mean "
                      "square %.6f; after the final RMSNorm it is 1 (the norm not applied?)",
                      name, (long long)r, ms);
    }
}

START_TEST(test_model_forward_is_forward_without_head)
{
    tl_checkpoint *fx = tl_fixture_load(LL_ST);
    for (int i = 0; i < LL_N_ALL; i++) {
        tl_scope_push();
        const char *name = LL_ALL[i];
        LlamaForCausalLM m;
        ll_load(&m, name);
        tl_tensor *ids = ll_golden(fx, name, "ids");
        tl_tensor *logits = ll_forward(&m, ids, NULL, NULL);
        tl_tensor *hidden = hidden_of(&m, ids, NULL);
        ck_assert_msg(hidden->dtype == TL_F32 && hidden->ndim == 3 &&
                          hidden->shape[0] == ids->shape[0] && hidden->shape[1] == ids->shape[1] &&
                          hidden->shape[2] == m.config.hidden_size,
                      "%s: llama_model_forward must return F32 [B, T, hidden_size] = [%lld, %lld, "
                      "%lld]", name, (long long)ids->shape[0], (long long)ids->shape[1],
                      (long long)m.config.hidden_size);
        tl_no_grad_push();
        tl_tensor *through_head = tl_linear(hidden, m.head_weight, NULL);
        tl_no_grad_pop();
        char msg[768];
        ck_assert_msg(tl_close_report(through_head, logits, 0, 0, msg, sizeof msg),
                      "%s: tl_linear(llama_model_forward, head_weight) must be llama_forward's "
                      "logits bit for bit: %s", name, msg);
        assert_rows_are_normed(name, hidden, &m.norm);

        /* Explicit positions [B, T], 3 .. T + 2: the same bits as llama_forward's. */
        int64_t b = ids->shape[0], t = ids->shape[1];
        int64_t *pos = malloc((size_t)(b * t) * sizeof *pos);
        ck_assert_ptr_nonnull(pos);
        for (int64_t r = 0; r < b * t; r++) pos[r] = 3 + r % t;
        tl_tensor *positions = tl_from_i64(pos, TL_SHAPE(b, t));
        free(pos);
        tl_tensor *shifted = ll_forward(&m, ids, positions, NULL);
        tl_no_grad_push();
        tl_tensor *shifted_hidden = llama_model_forward(&m, ids, positions, NULL);
        tl_tensor *shifted_head = shifted_hidden ? tl_linear(shifted_hidden, m.head_weight, NULL)
                                                 : NULL;
        tl_no_grad_pop();
        ck_assert_msg(shifted_head != NULL, "%s: llama_model_forward with positions [B, T]: %s",
                      name, tl_error());
        ck_assert_msg(tl_close_report(shifted_head, shifted, 0, 0, msg, sizeof msg),
                      "%s: with positions 3 .. T + 2 as [B, T], llama_model_forward through the "
                      "head must be llama_forward's logits bit for bit: %s", name, msg);
        llama_free(&m);
        tl_scope_pop();
    }
    tl_checkpoint_free(fx);
}
END_TEST

/* The logits of ids' columns [start, start + len) through the cache, as
 * generate computes them: llama_model_forward, then the head. */
static tl_tensor *head_of_chunk(LlamaForCausalLM *m, tl_tensor *ids, int64_t start, int64_t len,
                                KVCache *cache) {
    ck_assert_int_eq(kv_cache_seq_len(cache, 0), start);
    tl_tensor *hidden = hidden_of(m, ll_cols(ids, 1, start, len), cache);
    ck_assert_int_eq(kv_cache_seq_len(cache, 0), start + len);
    tl_no_grad_push();
    tl_tensor *logits = tl_linear(hidden, m->head_weight, NULL);
    tl_no_grad_pop();
    ck_assert_msg(logits != NULL, "tl_linear(hidden, head_weight): %s", tl_error());
    return logits;
}

/* generate's path: a prompt in two chunks, then one token at a time, every
 * call llama_model_forward through the cache (positions continue from it)
 * and the head: the full forward's logits at every position. */
START_TEST(test_model_forward_generates_through_the_cache)
{
    tl_checkpoint *fx = tl_fixture_load(LL_ST);
    double rtol = ll_tol("test_cached_decode_equals_full_forward", "rtol");
    double atol = ll_tol("test_cached_decode_equals_full_forward", "atol");
    const char *names[] = {"llama-gqa", "llama-mqa-tied", "mistral-window", "llama-yarn",
                           "deepseek-v3", "llama-bf16-sharded"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        tl_scope_push();
        const char *name = names[i];
        LlamaForCausalLM m;
        ll_load(&m, name);
        tl_tensor *ids = ll_golden(fx, name, "ids");
        int64_t b = ids->shape[0], t = ids->shape[1], first = t / 4, prompt = t / 2;
        ck_assert(t - prompt + 2 <= 64 && first >= 1);
        tl_tensor *full = ll_forward(&m, ids, NULL, NULL);
        KVCache cache;
        ck_assert_msg(llama_cache_init(&m, &cache, b, t) == 0, "%s", tl_error());
        tl_tensor *parts[64];
        int n = 0;
        parts[n++] = head_of_chunk(&m, ids, 0, first, &cache);
        parts[n++] = head_of_chunk(&m, ids, first, prompt - first, &cache);
        for (int64_t j = prompt; j < t; j++) parts[n++] = head_of_chunk(&m, ids, j, 1, &cache);
        char msg[768];
        ck_assert_msg(tl_close_report(tl_concat(parts, n, 1), full, rtol, atol, msg, sizeof msg),
                      "%s: llama_model_forward through the cache (chunks of %lld and %lld, then "
                      "one token at a time) and the head must give the full forward's logits: "
                      "%s", name, (long long)first, (long long)(prompt - first), msg);
        kv_cache_free(&cache);
        llama_free(&m);
        tl_scope_pop();
    }
    tl_checkpoint_free(fx);
}
END_TEST

START_TEST(test_model_forward_errors_name_it)
{
    tl_scope_push();
    LlamaForCausalLM m;
    ll_load(&m, "llama-gqa");
    tl_tensor *ids = tl_from_i64((int64_t[]){5, 6, 7, 8, 9}, TL_SHAPE(1, 5));
    tl_assert_error(llama_model_forward(NULL, ids, NULL, NULL), "llama_model_forward");
    tl_assert_error(llama_model_forward(&m, NULL, NULL, NULL), "llama_model_forward");
    tl_assert_error(llama_model_forward(&m, tl_zeros(TL_F32, TL_SHAPE(1, 2)), NULL, NULL),
                    "llama_model_forward");
    tl_assert_error(llama_model_forward(&m, tl_zeros(TL_F32, TL_SHAPE(1, 2)), NULL, NULL),
                    "I64");
    tl_assert_error(llama_model_forward(&m, ids, tl_arange(0, 4), NULL), "positions");
    tl_assert_error(llama_model_forward(&m, ids, tl_arange(0, 4), NULL), "llama_model_forward");
    tl_tensor *out_of_range = tl_from_i64((int64_t[]){1, 512}, TL_SHAPE(1, 2));
    tl_assert_error(llama_model_forward(&m, out_of_range, NULL, NULL), "512");
    tl_assert_error(llama_model_forward(&m, out_of_range, NULL, NULL), "llama_model_forward");
    KVCache cache;
    ck_assert_int_eq(llama_cache_init(&m, &cache, 1, 4), 0);
    tl_assert_error(llama_model_forward(&m, ids, NULL, &cache), "no_grad");
    tl_assert_error(llama_model_forward(&m, ids, NULL, &cache), "llama_model_forward");
    tl_no_grad_push();
    tl_assert_error(llama_model_forward(&m, ids, NULL, &cache), "llama_model_forward");
    tl_no_grad_pop();
    ck_assert_msg(kv_cache_seq_len(&cache, 0) == 0 && kv_cache_seq_len(&cache, 1) == 0,
                  "a refused llama_model_forward changed the cache");
    kv_cache_free(&cache);
    llama_free(&m);
    tl_scope_pop();
}
END_TEST
