/* My properties: cached decoding equals the full forward; the 4.x and 5.x
 * ways of writing a rope are one rope; a tied model counts its embedding once;
 * save and load give the same model. Oracles: the model itself, and my own
 * configs. */
#include "my_llama.h"

START_TEST(my_decoding_token_by_token_equals_the_full_forward)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    LlamaForCausalLM m;
    my_load(&m, "llama-gqa");
    tl_tensor *ids = my_tensor(fx, "llama-gqa", "ids");
    tl_tensor *full = my_forward(&m, ids, NULL);
    KVCache cache;
    ck_assert_int_eq(llama_cache_init(&m, &cache, 2, 12), 0);
    tl_tensor *parts[8];
    parts[0] = my_forward(&m, tl_contiguous(tl_narrow(ids, 1, 0, 6)), &cache);
    for (int t = 6; t < 12; t++)
        parts[t - 5] = my_forward(&m, tl_contiguous(tl_narrow(ids, 1, t, 1)), &cache);
    tl_assert_close(tl_concat(parts, 7, 1), full,
                    my_tol("test_cached_decode_equals_full_forward", "rtol"),
                    my_tol("test_cached_decode_equals_full_forward", "atol"));
    kv_cache_free(&cache);
    llama_free(&m);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

#define BASE "\"model_type\": \"llama\", \"hidden_size\": 32, \"num_attention_heads\": 4, " \
             "\"max_position_embeddings\": 128"

START_TEST(my_rope_reads_the_same_in_both_forms)
{
    LlamaConfig old = my_config("{" BASE ", \"rope_theta\": 20000.0, \"rope_scaling\": "
                                "{\"type\": \"yarn\", \"factor\": 4.0}}");
    LlamaConfig new = my_config("{" BASE ", \"rope_parameters\": {\"rope_type\": \"yarn\", "
                                "\"rope_theta\": 20000.0, \"factor\": 4.0}}");
    ck_assert_int_eq(old.rope.type, ROPE_TYPE_YARN);
    ck_assert_int_eq(new.rope.type, ROPE_TYPE_YARN);
    ck_assert(old.rope.theta == 20000.0 && new.rope.theta == 20000.0);
    RopeSpec a, b;
    ck_assert_int_eq(llama_rope_spec(&old, 0, &a), 0);
    ck_assert_int_eq(llama_rope_spec(&new, 0, &b), 0);
    for (int i = 0; i < 4; i++) ck_assert(a.inv_freq[i] == b.inv_freq[i]);
    ck_assert(a.attention_scaling > 1.1 && a.attention_scaling == b.attention_scaling);
    /* to_hf and back */
    char *json = llama_config_to_hf(&new);
    LlamaConfig back = my_config(json);
    free(json);
    ck_assert(back.rope.type == ROPE_TYPE_YARN && back.rope.factor == 4.0);
}
END_TEST

START_TEST(my_tied_embedding_is_counted_once)
{
    LlamaForCausalLM m;
    my_load(&m, "llama-mqa-tied");
    ck_assert_int_eq(llama_param_count(&m), (int64_t)tl_fixture_number(
                         MY_JSON, "checkpoints.llama-mqa-tied.hf_param_count"));
    ck_assert_int_eq(llama_config_param_count(&m.config), llama_param_count(&m));
    tl_model_config mc;
    ck_assert_int_eq(llama_model_config(&m.config, &mc), 0);
    ck_assert_int_eq(tl_model_config_param_count(&mc), llama_param_count(&m));
    llama_free(&m);
}
END_TEST

START_TEST(my_save_then_load_is_the_same_model)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    LlamaForCausalLM m, back;
    my_load(&m, "qwen2-window-bias");
    char dir[] = "/tmp/my-llama-save-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(llama_save_pretrained(&m, dir, TL_F32, 0), 0);
    ck_assert_int_eq(llama_from_pretrained(&back, dir, -1), 0);
    tl_tensor *ids = my_tensor(fx, "qwen2-window-bias", "ids");
    tl_assert_close(my_forward(&back, ids, NULL), my_forward(&m, ids, NULL), 0, 0);
    char path[128];
    const char *files[] = {"config.json", "generation_config.json", "model.safetensors"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        ck_assert_int_eq(remove(path), 0);
    }
    ck_assert_int_eq(remove(dir), 0);
    llama_free(&m);
    llama_free(&back);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(my_unknown_model_types_are_refused)
{
    LlamaConfig c;
    ck_assert_int_eq(llama_config_from_hf("{\"model_type\": \"gemma2\"}", &c), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "gemma2"));
    ck_assert_int_eq(llama_config_from_hf("{\"model_type\": \"llama\", \"rope_scaling\": "
                                          "{\"rope_type\": \"banana\", \"factor\": 2}}", &c), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "banana"));
}
END_TEST
