/* L7.9 names (section 2.3): the state dict of a model built from each
 * checkpoint's config has exactly HF's keys in HF's order (the oracle lists
 * them from transformers' module registration order: embed_tokens, each layer's
 * self_attn, mlp, input_layernorm, post_attention_layernorm, then norm, then
 * lm_head), with lm_head.weight only when untied, and no slot shared. */
#include "llama_fixture.h"

START_TEST(test_state_dict_keys_are_hf)
{
    cJSON *root = ll_json();
    for (int i = 0; i < LL_N_ALL; i++) {
        const char *name = LL_ALL[i];
        const cJSON *keys = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "checkpoints"),
                                             name), "state_dict_keys");
        ck_assert_msg(cJSON_IsArray(keys), "llama.json has no state_dict_keys for %s", name);
        LlamaConfig c = ll_config(name);
        LlamaForCausalLM m;
        ck_assert_msg(llama_init(&m, &c, NULL) == 0, "%s: %s", name, tl_error());
        tl_state_dict sd = tl_module_state_dict(m.module);
        ck_assert_msg(sd.count == cJSON_GetArraySize(keys), "%s: %d keys, HF has %d", name,
                      sd.count, cJSON_GetArraySize(keys));
        for (int k = 0; k < sd.count; k++) {
            const char *want = cJSON_GetArrayItem(keys, k)->valuestring;
            ck_assert_msg(strcmp(sd.items[k].name, want) == 0, "%s: key %d is %s; HF's is %s",
                          name, k, sd.items[k].name, want);
            ck_assert_msg(!sd.items[k].shared, "%s: %s is a second name of a tensor", name,
                          sd.items[k].name);
        }
        bool has_head = tl_module_param(m.module, "lm_head.weight") != NULL;
        tl_clear_error();
        ck_assert_msg(has_head == !c.tie_word_embeddings, "%s: lm_head.weight %s but the model "
                      "is %s", name, has_head ? "exists" : "is missing",
                      c.tie_word_embeddings ? "tied" : "untied");
        tl_state_dict_free(&sd);
        llama_free(&m);
    }
    cJSON_Delete(root);
}
END_TEST
