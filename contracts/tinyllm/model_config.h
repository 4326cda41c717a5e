/* tinyllm/model_config.h: the shape of a Llama-family decoder and its
 * parameter count, without allocating a single weight (M05.1). */
#ifndef TINYLLM_MODEL_CONFIG_H
#define TINYLLM_MODEL_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int64_t vocab_size;
    int64_t hidden_size;
    int64_t intermediate_size;
    int64_t num_hidden_layers;
    int64_t num_attention_heads;
    int64_t num_key_value_heads;   /* 0: same as num_attention_heads */
    int64_t head_dim;              /* 0: hidden_size / num_attention_heads */
    bool tie_word_embeddings;
    bool attention_bias;           /* q, k, v and o biased (Llama) */
    bool qkv_bias;                 /* q, k, v biased, o not (Qwen2) */
    bool mlp_bias;
} tl_model_config;

/* SmolLM2-135M's configuration, the course's running example. */
tl_model_config tl_model_config_smollm2_135m(void);
/* head_dim after its default; -1 (with an error) when heads do not divide. */
int64_t tl_model_config_head_dim(const tl_model_config *c);
/* Parameters as HF's num_parameters(): a tied head counted once. -1 on an
 * invalid configuration (non-positive sizes, heads not divisible). */
int64_t tl_model_config_param_count(const tl_model_config *c);

#endif
