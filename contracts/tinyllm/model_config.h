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

/* SmolLM2-135M's configuration, the course's running example (a value; no
 * allocation, no failure). */
tl_model_config tl_model_config_smollm2_135m(void);
/* head_dim after its default: head_dim when set (> 0), else hidden_size /
 * num_attention_heads. Returns -1 with an error: c NULL ("model_config:
 * config is NULL"); num_attention_heads <= 0 ("model_config:
 * num_attention_heads must be positive, got 0"); head_dim < 0 ("model_config:
 * head_dim must be positive (or 0 for hidden_size / num_attention_heads), got
 * -1"); heads not dividing hidden_size when head_dim is 0 ("model_config:
 * num_attention_heads 7 does not divide hidden_size 576; pick a divisor or
 * set head_dim explicitly"). */
int64_t tl_model_config_head_dim(const tl_model_config *c);
/* Parameters as HF's num_parameters(): a tied head counted once, biases as
 * the flags say. Returns the count, or -1 with an error: those of
 * tl_model_config_head_dim; a size that is not positive ("model_config:
 * vocab_size must be positive, got 0", and likewise hidden_size,
 * intermediate_size, num_hidden_layers, num_attention_heads);
 * num_key_value_heads negative ("model_config: num_key_value_heads must be
 * positive (or 0 for num_attention_heads), got -1") or not dividing the heads
 * ("model_config: num_key_value_heads 4 does not divide num_attention_heads
 * 9; each KV head must serve a whole group of query heads"); a count beyond
 * 64 bits ("model_config: the parameter count overflows 64 bits"). */
int64_t tl_model_config_param_count(const tl_model_config *c);

#endif
