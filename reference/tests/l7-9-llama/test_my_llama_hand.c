/* My hand examples: SmolLM2's count, worked in section 3, and what its config
 * leaves out (head_dim). Oracle: arithmetic and the published count. */
#include "my_llama.h"

START_TEST(my_smollm2_counts_by_hand)
{
    LlamaConfig c = my_config_file("L7.9/configs/smollm2-135m-instruct.json");
    ck_assert_int_eq(c.head_dim, 576 / 9);
    int64_t layer = 2 * 576 * 576 + 2 * 192 * 576 + 3 * 576 * 1536 + 2 * 576;
    ck_assert_int_eq(layer, 3540096);
    ck_assert_int_eq(llama_config_param_count(&c), 30 * layer + 49152 * 576 + 576);
    LlamaForCausalLM m;
    ck_assert_int_eq(llama_init(&m, &c, NULL), 0);
    ck_assert_int_eq(llama_param_count(&m), 134515008);
    tl_tensor *k = tl_module_param(m.module, "model.layers.0.self_attn.k_proj.weight");
    ck_assert(k && k->shape[0] == 192 && k->shape[1] == 576);
    llama_free(&m);
}
END_TEST

/* A made-up config with no head_dim: 48 wide, 4 heads, 2 kv heads: heads of 12. */
START_TEST(my_head_dim_comes_from_the_query_heads)
{
    LlamaConfig c = my_config("{\"model_type\": \"llama\", \"vocab_size\": 20, "
                              "\"hidden_size\": 48, \"intermediate_size\": 8, "
                              "\"num_hidden_layers\": 1, \"num_attention_heads\": 4, "
                              "\"num_key_value_heads\": 2, \"tie_word_embeddings\": true}");
    ck_assert_int_eq(c.head_dim, 12);
    /* embed 20*48, q and o 48*48 each, k and v 24*48 each, mlp 3*48*8, 3 norms of 48 */
    int64_t want = 20 * 48 + 2 * 48 * 48 + 2 * 24 * 48 + 3 * 48 * 8 + 3 * 48;
    ck_assert_int_eq(llama_config_param_count(&c), want);
    tl_model_config mc;
    ck_assert_int_eq(llama_model_config(&c, &mc), 0);
    ck_assert_int_eq(tl_model_config_param_count(&mc), want);
    c.tie_word_embeddings = false;
    ck_assert_int_eq(llama_config_param_count(&c), want + 20 * 48);
}
END_TEST
