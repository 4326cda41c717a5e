/* L7.9 on configs it was not written against: the config.json files of
 * published checkpoints (fixtures/L7.9/configs/, copied from the Hub: SmolLM2,
 * Llama-3.2 and 3.1 with llama3 rope, TinyLlama, Mistral with and without a
 * window, Qwen2.5 tied with its unused window, DeepSeek-V3, and configs saved
 * by transformers 5) read into the shapes their model cards give, down to the
 * parameter count, from the config alone. DeepSeek-V3's own FP8 checkpoint is
 * refused by its quantization_config. */
#include "llama_fixture.h"

static int64_t real_count(const char *file) {
    char key[160];
    snprintf(key, sizeof key, "real_configs.%s.param_count", file);
    /* the file names hold dots: look them up as one key */
    cJSON *root = ll_json();
    const cJSON *entry = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, "real_configs"), file);
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(entry, "param_count");
    ck_assert_msg(cJSON_IsNumber(n), "llama.json has no %s", key);
    int64_t v = (int64_t)n->valuedouble;
    cJSON_Delete(root);
    return v;
}

static LlamaConfig real(const char *file) {
    char rel[160];
    snprintf(rel, sizeof rel, "L7.9/configs/%s", file);
    LlamaConfig c = ll_config_file(rel);
    ck_assert_msg(llama_config_param_count(&c) == real_count(file), "%s: %lld parameters, the "
                  "model card's %lld", file, (long long)llama_config_param_count(&c),
                  (long long)real_count(file));
    return c;
}

START_TEST(test_real_hub_configs_read_as_published)
{
    LlamaConfig c = real("llama-3.2-1b.json");
    ck_assert(c.tie_word_embeddings && c.head_dim == 64 && c.num_key_value_heads == 8);
    ck_assert_int_eq(c.rope.type, ROPE_TYPE_LLAMA3);
    ck_assert(c.rope.factor == 32 && c.rope.original_max_position_embeddings == 8192);
    c = real("llama-3.1-8b-instruct.json");
    ck_assert(c.n_eos == 3 && c.eos_token_id[2] == 128009 && !c.tie_word_embeddings);
    c = real("tinyllama-1.1b-chat.json");
    ck_assert(c.num_key_value_heads == 4 && c.head_dim == 64);
    c = real("mistral-7b-v0.1.json");
    ck_assert_int_eq(llama_layer_window(&c, 0), 4096);
    c = real("mistral-7b-instruct-v0.3.json");
    ck_assert_int_eq(llama_layer_window(&c, 31), 0);
    ck_assert_double_eq(c.rope.theta, 1e6);
    c = real("qwen2.5-0.5b-instruct.json");
    ck_assert_msg(llama_layer_window(&c, 23) == 0, "use_sliding_window is false: no layer slides");
    ck_assert(c.tie_word_embeddings && c.head_dim == 64);
    c = real("qwen2.5-0.5b-instruct-v5.json");
    c = real("smollm2-135m-instruct.json");
    c = real("smollm2-135m-instruct-v5.json");
    c = real("deepseek-v3-bf16.json");
    ck_assert(c.mla && c.q_lora_rank == 1536 && c.kv_lora_rank == 512 && c.head_dim == 192);
    ck_assert(c.n_routed_experts == 256 && c.n_group == 8 && c.topk_group == 4);
    ck_assert(c.first_k_dense_replace == 3 && c.routed_scaling_factor == 2.5);
    ck_assert_int_eq(c.rope.type, ROPE_TYPE_YARN);
    ck_assert(c.rope.factor == 40 && c.rope.mscale_all_dim == 1.0);
    MLAConfig mc;
    ck_assert_int_eq(llama_mla_config(&c, &mc), 0);
    ck_assert(mc.rope_factor == 40 && mc.mscale_all_dim == 1.0 && mc.rope_interleave);
    ck_assert_int_eq(mla_param_count(&mc), 187107328);   /* L7.6's DeepSeek-V3 layer */
    RopeSpec spec;
    ck_assert_int_eq(llama_rope_spec(&c, 0, &spec), 0);
    ck_assert_int_eq(spec.rotary_dim, 64);

    char *text = ll_read_text(tl_fixture_path("L7.9/configs/deepseek-v3.json"));
    ck_assert_int_eq(llama_config_from_hf(text, &c), -1);
    ck_assert_msg(strstr(tl_error(), "quantization_config"), "%s", tl_error());
    free(text);
}
END_TEST
