/* L7.9 counting (section 2.4), a property of every checkpoint: the loaded
 * model's llama_param_count, the count from its config alone, and HF's
 * num_parameters() (the oracle's, a tied head once, buffers not at all) are one
 * number; for the dense GQA ones M05.1's tl_model_config_param_count is too. */
#include "llama_fixture.h"

START_TEST(test_param_counts_match_hf_and_m05_1)
{
    for (int i = 0; i < LL_N_ALL; i++) {
        const char *name = LL_ALL[i];
        int64_t hf = (int64_t)ll_meta(name, "hf_param_count");
        LlamaForCausalLM m;
        ll_load(&m, name);
        ck_assert_msg(llama_param_count(&m) == hf, "%s: llama_param_count %lld, HF %lld", name,
                      (long long)llama_param_count(&m), (long long)hf);
        ck_assert_msg(llama_config_param_count(&m.config) == hf,
                      "%s: llama_config_param_count %lld, HF %lld", name,
                      (long long)llama_config_param_count(&m.config), (long long)hf);
        const LlamaConfig *c = &m.config;
        tl_model_config mc;
        if (!c->mla && c->n_routed_experts == 0 && !c->tl_learned_sinks) {
            ck_assert_msg(llama_model_config(c, &mc) == 0, "%s: %s", name, tl_error());
            ck_assert_msg(tl_model_config_param_count(&mc) == hf, "%s: M05.1 counts %lld, HF %lld",
                          name, (long long)tl_model_config_param_count(&mc), (long long)hf);
            ck_assert_int_eq(mc.tie_word_embeddings, c->tie_word_embeddings);
        } else {
            ck_assert_msg(llama_model_config(c, &mc) == -1 && strstr(tl_error(), "M05.1"),
                          "%s: M05.1's config cannot describe MLA, experts or sinks", name);
        }
        llama_free(&m);
    }
}
END_TEST

/* Tying changes the count by exactly the head, V * d. */
START_TEST(test_tying_counts_the_embedding_once)
{
    LlamaConfig tied = ll_config("llama-mqa-tied");
    ck_assert(tied.tie_word_embeddings);
    LlamaConfig untied = tied;
    untied.tie_word_embeddings = false;
    int64_t head = tied.vocab_size * tied.hidden_size;
    ck_assert_int_eq(llama_config_param_count(&untied) - llama_config_param_count(&tied), head);
    LlamaForCausalLM a, b;
    ck_assert_int_eq(llama_init(&a, &tied, NULL), 0);
    ck_assert_int_eq(llama_init(&b, &untied, NULL), 0);
    ck_assert_int_eq(llama_param_count(&b) - llama_param_count(&a), head);
    ck_assert_int_eq(llama_param_count(&a), (int64_t)ll_meta("llama-mqa-tied", "hf_param_count"));
    llama_free(&a);
    llama_free(&b);
}
END_TEST

/* A damaged config.json whose sizes are far too large: the count from the config
 * alone (tinyllm info on a folder without weights) is an error, not a number
 * that wrapped past 64 bits, on the paths M05.1's checked count does not take:
 * experts, MLA, learned sinks. */
START_TEST(test_count_that_overflows_is_an_error)
{
    const char *configs[] = {
        "{\"model_type\": \"llama\", \"tl_num_experts\": 4, \"vocab_size\": 1125899906842624}",
        "{\"model_type\": \"llama\", \"tl_num_experts\": 4, \"moe_intermediate_size\": "
        "1125899906842624, \"num_hidden_layers\": 2}",
        "{\"model_type\": \"deepseek_v3\", \"hidden_size\": 1125899906842624}",
        "{\"model_type\": \"deepseek_v3\", \"kv_lora_rank\": 1125899906842624}",
        "{\"model_type\": \"llama\", \"tl_sliding_window\": 4, \"tl_learned_sinks\": true, "
        "\"num_attention_heads\": 4, \"head_dim\": 8, \"hidden_size\": 1099511627776, "
        "\"vocab_size\": 16777216}",
    };
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        LlamaConfig c = ll_config_text(configs[i]);
        tl_clear_error();
        int64_t n = llama_config_param_count(&c);
        ck_assert_msg(n == -1 && tl_error() && strstr(tl_error(), "overflows"),
                      "%s: counted %lld (%s)", configs[i], (long long)n,
                      tl_error() ? tl_error() : "no error");
    }
}
END_TEST
