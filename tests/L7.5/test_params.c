/* L7.5: the parameters, by HF's names and in HF's order, and their count.
 * SmolLM2-135M's attention (hidden 576, 9 heads, 3 kv heads, head_dim 64)
 * has 2 * 576 * 576 + 2 * 576 * 192 = 884,736 parameters; Qwen2 adds biases
 * on q, k and v; Llama's attention_bias adds o's too. With rng NULL (init =
 * false) every parameter is zero and nothing is drawn; with rng, PyTorch's
 * default U(-1/sqrt(in), 1/sqrt(in)). */
#include "attn_fixture.h"

static void assert_keys(const GQAttention *a, const char *const *want, int n, const char *what) {
    tl_state_dict sd = tl_module_state_dict(a->module);
    ck_assert_msg(sd.count == n, "%s: %d parameters, expected %d", what, sd.count, n);
    for (int i = 0; i < n; i++)
        ck_assert_msg(strcmp(sd.items[i].name, want[i]) == 0, "%s: key %d is %s, expected %s",
                      what, i, sd.items[i].name, want[i]);
    tl_state_dict_free(&sd);
}

START_TEST(test_param_count_and_hf_names)
{
    tl_scope_push();
    /* SmolLM2-135M's shapes, built without drawing a number. */
    RopeSpec rope64 = attn_rope(64);
    GQAConfig smol = {.hidden = 576, .n_heads = 9, .n_kv_heads = 3, .head_dim = 64};
    GQAttention a;
    ck_assert_msg(gqa_init(&a, &smol, &rope64, NULL) == 0, "gqa_init: %s", tl_error());
    ck_assert_int_eq(gqa_param_count(&a), 884736);
    ck_assert_int_eq(tl_module_param_count(a.module), 884736);
    ck_assert_msg(a.scale == 1.0 / 8.0, "scale is %g; head_dim 64 gives 64^-1/2 = 0.125",
                  a.scale);
    tl_tensor *wq = tl_module_param(a.q_proj, "weight"), *wk = tl_module_param(a.k_proj, "weight");
    tl_tensor *wo = tl_module_param(a.o_proj, "weight");
    ck_assert_msg(wq->shape[0] == 576 && wq->shape[1] == 576 && wk->shape[0] == 192 &&
                  wk->shape[1] == 576 && wo->shape[0] == 576 && wo->shape[1] == 576,
                  "q_proj [576, 576], k_proj [192, 576], o_proj [576, 576] expected");
    ck_assert_msg(tl_item_at(wq, 12345) == 0.0 && tl_item_at(wk, 999) == 0.0,
                  "with rng NULL the weights must be zero");
    const char *plain[4] = {"q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight"};
    assert_keys(&a, plain, 4, "SmolLM2");
    gqa_free(&a);
    ck_assert_msg(a.module == NULL, "gqa_free must clear the struct");

    /* head_dim independent of hidden / n_heads, and the two bias flavours. */
    RopeSpec rope8 = attn_rope(FX_D);
    const char *qwen2_keys[7] = {"q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias",
                                 "v_proj.weight", "v_proj.bias", "o_proj.weight"};
    const char *llama_keys[8] = {"q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias",
                                 "v_proj.weight", "v_proj.bias", "o_proj.weight", "o_proj.bias"};
    /* 16 * 32 + 2 * (16 * 16) + 32 * 16 = 1536 weights; biases 32 + 2 * 16 = 64; o's 16 */
    const int64_t counts[2] = {1536 + 64, 1536 + 64 + 16};
    for (int k = 0; k < 2; k++) {
        GQAConfig cfg = {.hidden = 16, .n_heads = 4, .n_kv_heads = 2, .head_dim = 8,
                         .qkv_bias = true, .o_bias = k == 1};
        tl_pcg32 rng = tl_test_rng(7505);
        ck_assert_msg(gqa_init(&a, &cfg, &rope8, &rng) == 0, "gqa_init: %s", tl_error());
        ck_assert_int_eq(gqa_param_count(&a), counts[k]);
        ck_assert_int_eq(tl_module_param_count(a.module), counts[k]);
        assert_keys(&a, k == 0 ? qwen2_keys : llama_keys, k == 0 ? 7 : 8,
                    k == 0 ? "Qwen2 (q, k, v biased)" : "Llama attention_bias (all biased)");
        ck_assert_msg(a.n_heads == 4 && a.n_kv_heads == 2 && a.head_dim == 8 && a.hidden == 16,
                      "the config's sizes must be kept in the struct");
        /* PyTorch's default init: within 1/sqrt(in), and not all zero. */
        tl_tensor *w = tl_module_param(a.q_proj, "weight");
        double bound = 1.0 / sqrt(16.0), biggest = 0;
        for (int64_t i = 0; i < tl_numel(w); i++) {
            double v = fabs(tl_item_at(w, i));
            ck_assert_msg(v <= bound, "q_proj.weight[%lld] = %g is outside 1/sqrt(16)",
                          (long long)i, tl_item_at(w, i));
            if (v > biggest) biggest = v;
        }
        ck_assert_msg(biggest > 0.5 * bound, "with rng the weights must be drawn");
        ck_assert_msg(w->requires_grad, "parameters must require a gradient");
        gqa_free(&a);
    }
    gqa_free(NULL);
    tl_scope_pop();
}
END_TEST
