/* L7.9 section 3 by hand: SmolLM2-135M-Instruct's config.json (as published on
 * the Hub, fixtures/L7.9/configs/) gives head_dim 64 = 576 / 9 (it has no
 * head_dim key), a kv width of 3 * 64 = 192, 3,540,096 parameters per layer and
 * 134,515,008 in all, HF's num_parameters(): the config alone, M05.1's count and
 * a model built with init=false agree. */
#include "llama_fixture.h"

#define SMOLLM2 "L7.9/configs/smollm2-135m-instruct.json"

START_TEST(test_hand_example_smollm2_config)
{
    LlamaConfig c = ll_config_file(SMOLLM2);
    ck_assert_int_eq(c.model_type, LLAMA_MODEL_LLAMA);
    ck_assert_int_eq(c.vocab_size, 49152);
    ck_assert_int_eq(c.hidden_size, 576);
    ck_assert_int_eq(c.num_hidden_layers, 30);
    ck_assert_int_eq(c.num_attention_heads, 9);
    ck_assert_int_eq(c.num_key_value_heads, 3);
    ck_assert_int_eq(c.intermediate_size, 1536);
    ck_assert_msg(c.head_dim == 64, "head_dim is %lld: with no head_dim key it is hidden_size / "
                  "num_attention_heads = 576 / 9 = 64", (long long)c.head_dim);
    ck_assert(c.tie_word_embeddings);
    ck_assert_double_eq(c.rms_norm_eps, 1e-5);
    ck_assert_double_eq(c.rope.theta, 100000.0);
    ck_assert_int_eq(c.rope.type, ROPE_TYPE_DEFAULT);

    /* Section 3's table: one layer, then the whole model. */
    int64_t q = 576 * 576, kv = 192 * 576, mlp = 3 * 576 * 1536, norms = 2 * 576;
    ck_assert_int_eq(2 * q, 663552);
    ck_assert_int_eq(2 * kv, 221184);
    ck_assert_int_eq(mlp, 2654208);
    int64_t layer = 2 * q + 2 * kv + mlp + norms;
    ck_assert_int_eq(layer, 3540096);
    ck_assert_int_eq(30 * layer + 49152 * 576 + 576, 134515008);

    ck_assert_int_eq(llama_config_param_count(&c), 134515008);
    tl_model_config mc;
    ck_assert_int_eq(llama_model_config(&c, &mc), 0);
    ck_assert_int_eq(tl_model_config_param_count(&mc), 134515008);

    /* Built without drawing a number; the shapes follow from head_dim 64. */
    LlamaForCausalLM m;
    ck_assert_msg(llama_init(&m, &c, NULL) == 0, "llama_init: %s", tl_error());
    ck_assert_int_eq(llama_param_count(&m), 134515008);
    tl_tensor *k = tl_module_param(m.module, "model.layers.0.self_attn.k_proj.weight");
    tl_tensor *o = tl_module_param(m.module, "model.layers.29.self_attn.o_proj.weight");
    ck_assert_ptr_nonnull(k);
    ck_assert_ptr_nonnull(o);
    ck_assert_msg(k->shape[0] == 192 && k->shape[1] == 576, "k_proj is [%lld, %lld], not "
                  "[192, 576]", (long long)k->shape[0], (long long)k->shape[1]);
    ck_assert(o->shape[0] == 576 && o->shape[1] == 576);
    ck_assert_int_eq(tl_module_param_count(tl_module_child(m.module, "model.layers.7")), 3540096);
    ck_assert_msg(m.lm_head == NULL, "a tied model has no lm_head module");
    ck_assert_ptr_eq(m.head_weight, tl_module_param(m.module, "model.embed_tokens.weight"));
    llama_free(&m);

    /* Untied, the head is counted too: 162,826,560 (hf-numerics.md section 10). */
    c.tie_word_embeddings = false;
    ck_assert_int_eq(llama_config_param_count(&c), 162826560);
}
END_TEST
