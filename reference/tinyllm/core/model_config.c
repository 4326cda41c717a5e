/* model_config.c: a Llama-family decoder's shape and parameter count (M05.1).
 *
 * The count is HF's num_parameters() worked out from the config alone:
 *
 *   per layer  q_proj   d x H d_h          (+ H d_h     with q, k, v biases)
 *              k_proj   d x K d_h          (+ K d_h     likewise)
 *              v_proj   d x K d_h          (+ K d_h     likewise)
 *              o_proj   H d_h x d          (+ d         with attention_bias)
 *              gate, up d x f each         (+ f each    with mlp_bias)
 *              down     f x d              (+ d         with mlp_bias)
 *              two RMSNorm weights, d each
 *   model      embedding V x d, final norm d, and lm_head V x d when untied.
 *
 * For SmolLM2-135M a layer is 3,540,096 and the total 134,515,008.
 */
#include "tinyllm/model_config.h"

#include "tinyllm/tensor.h"

tl_model_config tl_model_config_smollm2_135m(void) {
    return (tl_model_config){
        .vocab_size = 49152,
        .hidden_size = 576,
        .intermediate_size = 1536,
        .num_hidden_layers = 30,
        .num_attention_heads = 9,
        .num_key_value_heads = 3,
        .head_dim = 0,                /* not in its config.json: 576 / 9 = 64 */
        .tie_word_embeddings = true,
    };
}

static int64_t kv_heads(const tl_model_config *c) {
    return c->num_key_value_heads ? c->num_key_value_heads : c->num_attention_heads;
}

int64_t tl_model_config_head_dim(const tl_model_config *c) {
    if (!c) {
        return tl_fail_status("model_config: config is NULL");
    }
    int64_t heads = c->num_attention_heads;
    if (heads <= 0) {
        return tl_fail_status("model_config: num_attention_heads must be positive, got %lld",
                              (long long)heads);
    }
    if (c->head_dim < 0) {
        return tl_fail_status("model_config: head_dim must be positive (or 0 for hidden_size / "
                              "num_attention_heads), got %lld", (long long)c->head_dim);
    }
    if (c->head_dim > 0) return c->head_dim;
    if (c->hidden_size <= 0 || c->hidden_size % heads != 0) {
        return tl_fail_status("model_config: num_attention_heads %lld does not divide hidden_size "
                              "%lld; pick a divisor or set head_dim explicitly", (long long)heads,
                              (long long)c->hidden_size);
    }
    return c->hidden_size / heads;
}

/* Checks every size the count uses; 0 when the config is valid. */
static int validate(const tl_model_config *c) {
    const struct { const char *name; int64_t value; } sizes[] = {
        {"vocab_size", c->vocab_size},
        {"hidden_size", c->hidden_size},
        {"intermediate_size", c->intermediate_size},
        {"num_hidden_layers", c->num_hidden_layers},
        {"num_attention_heads", c->num_attention_heads},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (sizes[i].value <= 0) {
            return tl_fail_status("model_config: %s must be positive, got %lld", sizes[i].name,
                                  (long long)sizes[i].value);
        }
    }
    if (c->num_key_value_heads < 0) {
        return tl_fail_status("model_config: num_key_value_heads must be positive (or 0 for "
                              "num_attention_heads), got %lld", (long long)c->num_key_value_heads);
    }
    if (c->num_attention_heads % kv_heads(c) != 0) {
        return tl_fail_status("model_config: num_key_value_heads %lld does not divide "
                              "num_attention_heads %lld; each KV head must serve a whole group of "
                              "query heads", (long long)kv_heads(c),
                              (long long)c->num_attention_heads);
    }
    return tl_model_config_head_dim(c) < 0 ? -1 : 0;
}

/* Checked arithmetic: a nonsense config gets an error, not undefined
 * behaviour. Once *overflow is set the result is meaningless. */
static int64_t mul(int64_t a, int64_t b, bool *overflow) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) *overflow = true;
    return r;
}

static int64_t add(int64_t a, int64_t b, bool *overflow) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) *overflow = true;
    return r;
}

int64_t tl_model_config_param_count(const tl_model_config *c) {
    if (!c) {
        return tl_fail_status("model_config: config is NULL");
    }
    if (validate(c) != 0) return -1;
    bool of = false;
    int64_t d = c->hidden_size, f = c->intermediate_size, head_dim = tl_model_config_head_dim(c);
    int64_t q_width = mul(c->num_attention_heads, head_dim, &of);
    int64_t kv_width = mul(kv_heads(c), head_dim, &of);
    int64_t qkv_width = add(q_width, mul(2, kv_width, &of), &of);

    int64_t layer = mul(d, qkv_width, &of);                      /* q, k, v */
    layer = add(layer, mul(q_width, d, &of), &of);               /* o */
    layer = add(layer, mul(mul(3, d, &of), f, &of), &of);        /* gate, up, down */
    layer = add(layer, mul(2, d, &of), &of);                     /* two RMSNorms */
    if (c->attention_bias || c->qkv_bias) layer = add(layer, qkv_width, &of);
    if (c->attention_bias) layer = add(layer, d, &of);           /* o's bias */
    if (c->mlp_bias) layer = add(layer, add(mul(2, f, &of), d, &of), &of);

    int64_t embedding = mul(c->vocab_size, d, &of);
    int64_t total = add(mul(c->num_hidden_layers, layer, &of), embedding, &of);
    if (!c->tie_word_embeddings) total = add(total, embedding, &of);   /* lm_head */
    total = add(total, d, &of);                                        /* final norm */
    if (of) {
        return tl_fail_status("model_config: the parameter count overflows 64 bits (vocab_size "
                              "%lld, hidden_size %lld, intermediate_size %lld, %lld layers, "
                              "head_dim %lld); check the config", (long long)c->vocab_size,
                              (long long)d, (long long)f, (long long)c->num_hidden_layers,
                              (long long)head_dim);
    }
    return total;
}
