/* L7.9 with L7.6 and L7.8, differential: DeepSeek-V3 (MLA, and MoE from layer
 * first_k_dense_replace = 1 on) and a llama config with the course's
 * tl_attention "mla" and tl_num_experts give the oracle's logits; decoding
 * through the latent cache (kv_lora_rank + qk_rope_head_dim floats per token)
 * equals the full forward; the aux loss over every MoE layer is the oracle's;
 * the first k layers are dense and the rest sparse; the counts are HF's. */
#include "llama_fixture.h"

static const char *const LATENT[] = {"deepseek-v3", "llama-mla-moe"};

START_TEST(test_latent_attention_and_experts)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(LL_ST);
    double rtol = ll_tol("test_latent_attention_and_experts", "rtol");
    double atol = ll_tol("test_latent_attention_and_experts", "atol");
    for (int i = 0; i < 2; i++) {
        const char *name = LATENT[i];
        LlamaForCausalLM m;
        ll_load(&m, name);
        const LlamaConfig *c = &m.config;
        ck_assert_msg(c->mla, "%s: the config asks for MLA", name);
        for (int64_t l = 0; l < c->num_hidden_layers; l++) {
            ck_assert_msg(m.decoder[l].latent, "%s: layer %lld is not MLA", name, (long long)l);
            bool sparse = l >= c->first_k_dense_replace;
            ck_assert_msg(m.decoder[l].sparse == sparse, "%s: layer %lld is %s; with "
                          "first_k_dense_replace %lld it must be %s", name, (long long)l,
                          m.decoder[l].sparse ? "MoE" : "dense",
                          (long long)c->first_k_dense_replace, sparse ? "MoE" : "dense");
        }
        ck_assert_int_eq(llama_param_count(&m), (int64_t)ll_meta(name, "hf_param_count"));

        tl_tensor *ids = ll_golden(fx, name, "ids");
        tl_tensor *full = ll_forward(&m, ids, NULL, NULL);
        char msg[768];
        ck_assert_msg(tl_close_report(full, ll_golden(fx, name, "logits"), rtol, atol, msg,
                                      sizeof msg), "%s logits: %s", name, msg);
        tl_tensor *aux = llama_aux_loss(&m);
        tl_assert_ok(aux);
        tl_assert_close(tl_reshape(aux, TL_SHAPE(1)), ll_golden(fx, name, "aux_loss"),
                        ll_tol("test_aux_loss", "rtol"), ll_tol("test_aux_loss", "atol"));

        KVCache cache;
        ck_assert_int_eq(llama_cache_init(&m, &cache, ids->shape[0], 12), 0);
        ck_assert_msg(cache.n_kv_heads == 1 && cache.key_dim == c->kv_lora_rank &&
                      cache.value_dim == c->qk_rope_head_dim, "%s: the latent cache holds "
                      "[%lld heads, %lld + %lld] per token, not [1, kv_lora_rank %lld + "
                      "qk_rope_head_dim %lld]", name, (long long)cache.n_kv_heads,
                      (long long)cache.key_dim, (long long)cache.value_dim,
                      (long long)c->kv_lora_rank, (long long)c->qk_rope_head_dim);
        tl_tensor *parts[8];
        parts[0] = ll_forward(&m, ll_cols(ids, 1, 0, 6), NULL, &cache);
        for (int k = 0; k < 6; k++) parts[k + 1] = ll_forward(&m, ll_cols(ids, 1, 6 + k, 1), NULL,
                                                              &cache);
        ck_assert_msg(tl_close_report(tl_concat(parts, 7, 1), full, rtol, atol, msg, sizeof msg),
                      "%s through the latent cache: %s", name, msg);
        kv_cache_free(&cache);
        llama_free(&m);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* The aux loss trains the router: its gradient reaches every router's weight. */
START_TEST(test_aux_loss_reaches_the_routers)
{
    tl_scope_push();
    LlamaConfig c = ll_config("llama-mla-moe");
    tl_pcg32 rng = tl_test_rng(9);
    LlamaForCausalLM m;
    ck_assert_int_eq(llama_init(&m, &c, &rng), 0);
    tl_tensor *ids = tl_from_i64((int64_t[]){3, 9, 27, 81, 243, 217}, TL_SHAPE(1, 6));
    tl_assert_ok(llama_forward(&m, ids, NULL, NULL));
    tl_tensor *aux = llama_aux_loss(&m);
    tl_assert_ok(aux);
    ck_assert_int_eq(tl_backward(aux), 0);
    for (int64_t l = c.first_k_dense_replace; l < c.num_hidden_layers; l++)
        ck_assert_msg(m.decoder[l].moe.gate &&
                          tl_module_param(m.decoder[l].moe.gate, "weight")->grad,
                      "layer %lld's router got no gradient from the aux loss", (long long)l);
    llama_free(&m);
    tl_scope_pop();
}
END_TEST
