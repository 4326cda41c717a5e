/* LlamaConfig from and to a Hugging Face config.json (L7.9): the reference.
 *
 * A key the config leaves out takes the default of its model_type's HF config
 * class, as transformers does. The rope dict of either form (4.x rope_scaling
 * with "type" or "rope_type", 5.x rope_parameters) is rewritten as one 5.x
 * dict and handed to L7.4, which reads every rope type.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "tinyllm/modern/llama.h"

#define FN "llama_config_from_hf"

static const char *const TYPE_NAMES[] = {"llama", "mistral", "qwen2", "deepseek_v3"};
static const char *const ARCHITECTURES[] = {"LlamaForCausalLM", "MistralForCausalLM",
                                            "Qwen2ForCausalLM", "DeepseekV3ForCausalLM"};

const char *llama_model_type_name(llama_model_type type) {
    if ((unsigned)type < LLAMA_MODEL_TYPE_COUNT) return TYPE_NAMES[type];
    return tl_fail("llama_model_type_name: %d is not a llama_model_type", (int)type);
}

/* Each model_type's HF config class defaults (configuration_<type>.py). */
typedef struct {
    int64_t vocab, hidden, intermediate, layers, heads, kv_heads, max_pos, bos, eos;
} class_defaults;

static const class_defaults DEFAULTS[] = {
    {32000, 4096, 11008, 32, 32, 0, 2048, 1, 2},          /* LlamaConfig (kv heads: heads) */
    {32000, 4096, 14336, 32, 32, 8, 4096 * 32, 1, 2},     /* MistralConfig */
    {151936, 4096, 22016, 32, 32, 32, 32768, -1, -1},     /* Qwen2Config */
    {129280, 7168, 18432, 61, 128, 128, 4096, 0, 1},      /* DeepseekV3Config */
};

/* ---- reading keys ---------------------------------------------------------- */

static const cJSON *get(const cJSON *obj, const char *key) {
    return obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

static bool absent(const cJSON *v) { return !v || cJSON_IsNull(v); }

/* A whole number >= min: absent or null gives def (or, with null_ok false, null is an error). */
static int whole(const cJSON *root, const char *key, int64_t def, int64_t min, bool null_ok,
                 int64_t *out) {
    const cJSON *v = get(root, key);
    if (!v || (cJSON_IsNull(v) && null_ok)) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < min ||
        v->valuedouble > 9e15)
        return tl_fail_status(FN ": '%s' must be a whole number >= %lld%s", key, (long long)min,
                              null_ok ? " (or null)" : "");
    *out = (int64_t)v->valuedouble;
    return 0;
}

static int number(const cJSON *root, const char *key, double def, double *out) {
    const cJSON *v = get(root, key);
    if (absent(v)) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return tl_fail_status(FN ": '%s' must be a finite number", key);
    *out = v->valuedouble;
    return 0;
}

static int boolean(const cJSON *root, const char *key, bool def, bool *out) {
    const cJSON *v = get(root, key);
    if (absent(v)) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsBool(v)) return tl_fail_status(FN ": '%s' must be true or false", key);
    *out = cJSON_IsTrue(v);
    return 0;
}

/* A string member, or def when absent or null; NULL (with an error) when not a string. */
static const char *text(const cJSON *root, const char *key, const char *def) {
    const cJSON *v = get(root, key);
    if (absent(v)) return def;
    if (!cJSON_IsString(v)) return tl_fail(FN ": '%s' must be a string", key);
    return v->valuestring;
}

/* eos_token_id: a number, a list of numbers, or null. */
static int read_eos(const cJSON *root, int64_t def, LlamaConfig *c) {
    const cJSON *v = get(root, "eos_token_id");
    c->n_eos = 0;
    if (!v) {
        if (def >= 0) c->eos_token_id[c->n_eos++] = def;
        return 0;
    }
    if (cJSON_IsNull(v)) return 0;
    if (cJSON_IsNumber(v))
        return whole(root, "eos_token_id", 0, 0, false, &c->eos_token_id[c->n_eos++]);
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > LLAMA_MAX_EOS)
        return tl_fail_status(FN ": 'eos_token_id' must be a token id or a list of at most %d",
                              LLAMA_MAX_EOS);
    const cJSON *id;
    cJSON_ArrayForEach(id, v) {
        if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble != floor(id->valuedouble))
            return tl_fail_status(FN ": 'eos_token_id' lists something that is not a token id");
        c->eos_token_id[c->n_eos++] = (int64_t)id->valuedouble;
    }
    return 0;
}

/* ---- the rope: both forms into one dict for L7.4 ------------------------------ */

/* 4.x: top-level rope_theta and rope_scaling {"type" or "rope_type", ...}; 5.x:
 * rope_parameters {"rope_type", "rope_theta", ...}. The dict is rope_scaling when
 * it is a non-empty object, else rope_parameters. */
static int read_rope(const cJSON *root, int64_t rope_width, LlamaConfig *c) {
    const cJSON *scaling = get(root, "rope_scaling"), *params = get(root, "rope_parameters");
    if ((!absent(scaling) && !cJSON_IsObject(scaling)) ||
        (!absent(params) && !cJSON_IsObject(params)))
        return tl_fail_status(FN ": 'rope_scaling' and 'rope_parameters' must be objects or null");
    const cJSON *dict = cJSON_IsObject(scaling) && scaling->child ? scaling : NULL;
    if (!dict && cJSON_IsObject(params)) dict = params;

    const cJSON *type = get(dict, "rope_type");
    if (absent(type)) type = get(dict, "type");          /* 4.x's name for it */
    if (!absent(type) && !cJSON_IsString(type))
        return tl_fail_status(FN ": the rope type ('rope_type' or 'type') must be a string");
    double theta;
    if (number(root, "rope_theta", 10000.0, &theta) != 0 || number(dict, "rope_theta", theta,
                                                                   &theta) != 0)
        return -1;

    cJSON *wrapper = cJSON_CreateObject();
    cJSON *std = dict ? cJSON_Duplicate(dict, true) : cJSON_CreateObject();
    cJSON_DeleteItemFromObjectCaseSensitive(std, "type");
    cJSON_DeleteItemFromObjectCaseSensitive(std, "rope_type");
    cJSON_DeleteItemFromObjectCaseSensitive(std, "rope_theta");
    cJSON_AddStringToObject(std, "rope_type", absent(type) ? "default" : type->valuestring);
    cJSON_AddNumberToObject(std, "rope_theta", theta);
    cJSON_AddItemToObject(wrapper, "rope_parameters", std);
    cJSON_AddNumberToObject(wrapper, "head_dim", (double)rope_width);
    cJSON_AddNumberToObject(wrapper, "max_position_embeddings", (double)c->max_position_embeddings);
    const char *top[2] = {"original_max_position_embeddings", "partial_rotary_factor"};
    for (int i = 0; i < 2; i++)   /* top-level keys L7.4 lets win over the dict's */
        if (get(root, top[i]))
            cJSON_AddItemToObject(wrapper, top[i], cJSON_Duplicate(get(root, top[i]), true));
    char *json = cJSON_PrintUnformatted(wrapper);
    cJSON_Delete(wrapper);
    if (!json) return tl_fail_status(FN ": out of memory");
    int rc = rope_config_from_json(json, &c->rope);
    free(json);
    if (rc != 0) return tl_fail_status(FN ": %s", tl_error());
    return 0;
}

/* ---- windows ------------------------------------------------------------------ */

static int read_windows(const cJSON *root, LlamaConfig *c) {
    int64_t layers = c->num_hidden_layers;
    if (c->model_type == LLAMA_MODEL_MISTRAL) {
        /* A top-level key for every layer: absent means MistralConfig's 4096. */
        if (whole(root, "sliding_window", 4096, 1, true, &c->sliding_window) != 0) return -1;
        if (cJSON_IsNull(get(root, "sliding_window"))) c->sliding_window = 0;
        for (int64_t l = 0; l < layers; l++) c->layer_sliding[l] = c->sliding_window > 0;
    } else if (c->model_type == LLAMA_MODEL_QWEN2) {
        /* Layer l slides only with use_sliding_window, and from max_window_layers on
         * (or where layer_types says so). */
        if (boolean(root, "use_sliding_window", false, &c->use_sliding_window) != 0 ||
            whole(root, "sliding_window", 4096, 1, true, &c->sliding_window) != 0 ||
            whole(root, "max_window_layers", 28, 0, false, &c->max_window_layers) != 0)
            return -1;
        if (cJSON_IsNull(get(root, "sliding_window"))) c->sliding_window = 0;
        const cJSON *types = get(root, "layer_types");
        if (!absent(types) && (!cJSON_IsArray(types) || cJSON_GetArraySize(types) != layers))
            return tl_fail_status(FN ": 'layer_types' must list one type per layer (%lld)",
                                  (long long)layers);
        bool slides = c->use_sliding_window && c->sliding_window > 0;
        for (int64_t l = 0; l < layers; l++) {
            bool sliding = l >= c->max_window_layers;
            if (!absent(types)) {
                const cJSON *t = cJSON_GetArrayItem(types, (int)l);
                bool full = cJSON_IsString(t) && strcmp(t->valuestring, "full_attention") == 0;
                sliding = cJSON_IsString(t) && strcmp(t->valuestring, "sliding_attention") == 0;
                if (!full && !sliding)
                    return tl_fail_status(FN ": layer_types[%lld] must be \"full_attention\" or "
                                          "\"sliding_attention\"", (long long)l);
            }
            c->layer_sliding[l] = slides && sliding;
        }
    }
    bool family_window = false;
    for (int64_t l = 0; l < layers; l++) family_window |= c->layer_sliding[l];
    if (whole(root, "tl_sliding_window", 0, 0, true, &c->tl_sliding_window) != 0 ||
        whole(root, "tl_sink_tokens", 0, 0, true, &c->tl_sink_tokens) != 0 ||
        boolean(root, "tl_learned_sinks", false, &c->tl_learned_sinks) != 0)
        return -1;
    if (c->tl_sliding_window > 0 && family_window)
        return tl_fail_status(FN ": the config has both the family's sliding window (%lld) and "
                              "tl_sliding_window (%lld); keep one", (long long)c->sliding_window,
                              (long long)c->tl_sliding_window);
    if (c->tl_sink_tokens > 0 && c->tl_sliding_window == 0 && !family_window)
        return tl_fail_status(FN ": tl_sink_tokens %lld needs a window (tl_sliding_window or the "
                              "family's sliding_window): without one every token is visible",
                              (long long)c->tl_sink_tokens);
    return 0;
}

/* ---- attention and experts ----------------------------------------------------- */

static int read_mla(const cJSON *root, LlamaConfig *c) {
    if (c->model_type == LLAMA_MODEL_DEEPSEEK_V3) {
        c->mla = true;
        if (whole(root, "q_lora_rank", 1536, 1, true, &c->q_lora_rank) != 0 ||
            whole(root, "kv_lora_rank", 512, 1, false, &c->kv_lora_rank) != 0 ||
            whole(root, "qk_nope_head_dim", 128, 1, false, &c->qk_nope_head_dim) != 0 ||
            whole(root, "qk_rope_head_dim", 64, 2, false, &c->qk_rope_head_dim) != 0 ||
            whole(root, "v_head_dim", 128, 1, false, &c->v_head_dim) != 0 ||
            boolean(root, "rope_interleave", true, &c->rope_interleave) != 0)
            return -1;
        if (cJSON_IsNull(get(root, "q_lora_rank"))) c->q_lora_rank = 0;
        c->head_dim = c->qk_nope_head_dim + c->qk_rope_head_dim;   /* HF's qk_head_dim */
        return 0;
    }
    const char *kind = text(root, "tl_attention", "gqa");
    if (!kind) return -1;
    if (strcmp(kind, "gqa") != 0 && strcmp(kind, "mla") != 0)
        return tl_fail_status(FN ": tl_attention is \"%.40s\"; it must be \"gqa\" or \"mla\"",
                              kind);
    c->mla = strcmp(kind, "mla") == 0;
    if (!c->mla) return 0;
    if (!get(root, "tl_mla_rank"))
        return tl_fail_status(FN ": tl_attention \"mla\" needs tl_mla_rank (the latent width)");
    if (c->model_type == LLAMA_MODEL_QWEN2)
        return tl_fail_status(FN ": tl_attention \"mla\" cannot take qwen2's q, k, v biases");
    if (whole(root, "tl_mla_rank", 0, 1, false, &c->kv_lora_rank) != 0 ||
        whole(root, "tl_mla_q_rank", 0, 1, true, &c->q_lora_rank) != 0 ||
        whole(root, "tl_mla_rope_dim", c->head_dim / 2, 2, false, &c->qk_rope_head_dim) != 0)
        return -1;
    if (c->qk_rope_head_dim % 2 != 0 || c->qk_rope_head_dim >= c->head_dim)
        return tl_fail_status(FN ": tl_mla_rope_dim %lld must be even and below head_dim %lld",
                              (long long)c->qk_rope_head_dim, (long long)c->head_dim);
    c->qk_nope_head_dim = c->head_dim - c->qk_rope_head_dim;
    c->v_head_dim = c->head_dim;
    c->rope_interleave = false;
    return 0;
}

static int read_experts(const cJSON *root, LlamaConfig *c) {
    bool deepseek = c->model_type == LLAMA_MODEL_DEEPSEEK_V3;
    if (deepseek && get(root, "tl_num_experts"))
        return tl_fail_status(FN ": deepseek_v3 has its own experts (n_routed_experts); "
                              "tl_num_experts is for the other families");
    if (deepseek) {
        if (whole(root, "n_routed_experts", 256, 1, false, &c->n_routed_experts) != 0 ||
            whole(root, "num_experts_per_tok", 8, 1, false, &c->num_experts_per_tok) != 0 ||
            whole(root, "moe_intermediate_size", 2048, 1, false, &c->moe_intermediate_size) ||
            whole(root, "n_shared_experts", 1, 0, true, &c->n_shared_experts) != 0 ||
            whole(root, "first_k_dense_replace", 3, 0, false, &c->first_k_dense_replace) != 0 ||
            whole(root, "n_group", 8, 1, false, &c->n_group) != 0 ||
            whole(root, "topk_group", 4, 1, false, &c->topk_group) != 0 ||
            boolean(root, "norm_topk_prob", true, &c->norm_topk_prob) != 0 ||
            number(root, "routed_scaling_factor", 2.5, &c->routed_scaling_factor) != 0)
            return -1;
    } else {
        if (whole(root, "tl_num_experts", 0, 0, true, &c->n_routed_experts) != 0) return -1;
        if (c->n_routed_experts == 0) return 0;
        if (whole(root, "num_experts_per_tok", 2, 1, false, &c->num_experts_per_tok) != 0 ||
            whole(root, "moe_intermediate_size", c->intermediate_size, 1, false,
                  &c->moe_intermediate_size) != 0 ||
            whole(root, "shared_expert_intermediate_size", 0, 0, true,
                  &c->shared_expert_intermediate_size) != 0 ||
            whole(root, "first_k_dense_replace", 0, 0, false, &c->first_k_dense_replace) != 0 ||
            boolean(root, "norm_topk_prob", false, &c->norm_topk_prob) != 0)
            return -1;
        c->routed_scaling_factor = 1.0;
    }
    if (number(root, "router_aux_loss_coef", 0.001, &c->router_aux_loss_coef) != 0) return -1;
    if (c->num_experts_per_tok > c->n_routed_experts)
        return tl_fail_status(FN ": num_experts_per_tok %lld is more than the %lld experts",
                              (long long)c->num_experts_per_tok, (long long)c->n_routed_experts);
    if (c->first_k_dense_replace > c->num_hidden_layers)
        return tl_fail_status(FN ": first_k_dense_replace %lld is more than the %lld layers",
                              (long long)c->first_k_dense_replace,
                              (long long)c->num_hidden_layers);
    return 0;
}

/* ---- the whole config ---------------------------------------------------------- */

static int read_type(const cJSON *root, LlamaConfig *c) {
    const cJSON *v = get(root, "model_type");
    if (!cJSON_IsString(v))
        return tl_fail_status(FN ": the config has no model_type string; a Hugging Face "
                              "config.json names one (\"llama\", \"mistral\", \"qwen2\", "
                              "\"deepseek_v3\")");
    for (int t = 0; t < LLAMA_MODEL_TYPE_COUNT; t++)
        if (strcmp(v->valuestring, TYPE_NAMES[t]) == 0) {
            c->model_type = (llama_model_type)t;
            return 0;
        }
    return tl_fail_status(FN ": model_type \"%.60s\" is not supported; this model reads "
                          "\"llama\", \"mistral\", \"qwen2\" and \"deepseek_v3\"", v->valuestring);
}

static int read_sizes(const cJSON *root, LlamaConfig *c) {
    const class_defaults *d = &DEFAULTS[c->model_type];
    if (whole(root, "vocab_size", d->vocab, 1, false, &c->vocab_size) != 0 ||
        whole(root, "hidden_size", d->hidden, 1, false, &c->hidden_size) != 0 ||
        whole(root, "intermediate_size", d->intermediate, 1, false, &c->intermediate_size) ||
        whole(root, "num_hidden_layers", d->layers, 1, false, &c->num_hidden_layers) != 0 ||
        whole(root, "num_attention_heads", d->heads, 1, false, &c->num_attention_heads) != 0 ||
        whole(root, "max_position_embeddings", d->max_pos, 1, false,
              &c->max_position_embeddings) != 0)
        return -1;
    if (c->num_hidden_layers > LLAMA_MAX_LAYERS)
        return tl_fail_status(FN ": num_hidden_layers %lld is more than LLAMA_MAX_LAYERS (%d)",
                              (long long)c->num_hidden_layers, LLAMA_MAX_LAYERS);
    int64_t kv_default = d->kv_heads ? d->kv_heads : c->num_attention_heads;
    if (whole(root, "num_key_value_heads", kv_default, 1, true, &c->num_key_value_heads) != 0)
        return -1;
    if (cJSON_IsNull(get(root, "num_key_value_heads")))
        c->num_key_value_heads = c->num_attention_heads;   /* "for backward compatibility" */
    if (c->model_type != LLAMA_MODEL_DEEPSEEK_V3 &&
        c->num_attention_heads % c->num_key_value_heads != 0)
        return tl_fail_status(FN ": num_key_value_heads %lld does not divide num_attention_heads "
                              "%lld; each kv head serves a whole group of query heads",
                              (long long)c->num_key_value_heads, (long long)c->num_attention_heads);
    /* No head_dim (SmolLM2), or null: the hidden width split over the query heads. */
    if (whole(root, "head_dim", 0, 0, true, &c->head_dim) != 0) return -1;
    if (c->head_dim == 0 && c->model_type != LLAMA_MODEL_DEEPSEEK_V3) {
        if (c->hidden_size % c->num_attention_heads != 0)
            return tl_fail_status(FN ": hidden_size %lld is not divisible by num_attention_heads "
                                  "%lld, and there is no head_dim to say the width",
                                  (long long)c->hidden_size, (long long)c->num_attention_heads);
        c->head_dim = c->hidden_size / c->num_attention_heads;
    }
    return 0;
}

static int read_rest(const cJSON *root, LlamaConfig *c) {
    const char *act = text(root, "hidden_act", "silu");
    if (!act) return -1;
    if (activation_from_name(act, &c->hidden_act) != 0)
        return tl_fail_status(FN ": hidden_act: %s", tl_error());
    bool llama = c->model_type == LLAMA_MODEL_LLAMA;
    if (number(root, "rms_norm_eps", 1e-6, &c->rms_norm_eps) != 0 ||
        number(root, "initializer_range", 0.02, &c->initializer_range) != 0 ||
        boolean(root, "tie_word_embeddings", false, &c->tie_word_embeddings) != 0 ||
        boolean(root, "attention_bias", false, &c->attention_bias) != 0 ||
        boolean(root, "mlp_bias", false, &c->mlp_bias) != 0)
        return -1;
    if (!(c->rms_norm_eps >= 0))
        return tl_fail_status(FN ": rms_norm_eps is %g; it must be >= 0", c->rms_norm_eps);
    if (!llama) c->mlp_bias = false;          /* only LlamaMLP has the key */
    if (c->model_type == LLAMA_MODEL_MISTRAL || c->model_type == LLAMA_MODEL_QWEN2)
        c->attention_bias = false;            /* fixed by the family, whatever the key says */
    const class_defaults *d = &DEFAULTS[c->model_type];
    /* -1, as early LLaMA conversions wrote, is no id, as null is. */
    if (whole(root, "bos_token_id", d->bos, -1, true, &c->bos_token_id) != 0 ||
        whole(root, "pad_token_id", -1, -1, true, &c->pad_token_id) != 0 ||
        read_eos(root, d->eos, c) != 0)
        return -1;
    if (cJSON_IsNull(get(root, "bos_token_id"))) c->bos_token_id = -1;
    if (cJSON_IsNull(get(root, "pad_token_id"))) c->pad_token_id = -1;
    const char *dtype = text(root, "dtype", NULL);
    if (!dtype) dtype = text(root, "torch_dtype", "");
    if (!dtype) return -1;
    snprintf(c->torch_dtype, sizeof c->torch_dtype, "%s", dtype);
    return 0;
}

static int refuse_unsupported(const cJSON *root, const LlamaConfig *c) {
    if (!absent(get(root, "quantization_config")))
        return tl_fail_status(FN ": the config has a quantization_config: its weights are "
                              "quantized (not F32, BF16 or F16); load a dequantized checkpoint");
    if (c->model_type == LLAMA_MODEL_QWEN2 && cJSON_IsTrue(get(root, "use_mrope")))
        return tl_fail_status(FN ": use_mrope is true (Qwen2-VL's multimodal rope); this model "
                              "reads text decoders only");
    if (c->tl_learned_sinks && c->mla)
        return tl_fail_status(FN ": tl_learned_sinks needs GQA attention, not MLA");
    int64_t width = c->mla ? c->qk_rope_head_dim : c->head_dim;
    if (width % 2 != 0)
        return tl_fail_status(FN ": the rotated head width %lld is odd; RoPE turns pairs",
                              (long long)width);
    return 0;
}

int llama_config_from_hf(const char *json, LlamaConfig *out) {
    if (!out) return tl_fail_status(FN ": the LlamaConfig pointer is NULL");
    memset(out, 0, sizeof *out);
    if (!json) return tl_fail_status(FN ": the config text is NULL");
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &end, true);
    if (!root)
        return tl_fail_status(FN ": the config is not valid JSON (syntax error at byte %ld)",
                              end ? (long)(end - json) : 0L);
    int rc = cJSON_IsObject(root) ? 0 : tl_fail_status(FN ": the config is not a JSON object");
    if (rc == 0) rc = read_type(root, out);
    if (rc == 0) rc = read_sizes(root, out);
    if (rc == 0) rc = read_rest(root, out);
    if (rc == 0) rc = read_mla(root, out);
    if (rc == 0) rc = read_experts(root, out);
    if (rc == 0) rc = read_windows(root, out);
    if (rc == 0) rc = refuse_unsupported(root, out);
    if (rc == 0) rc = read_rope(root, out->mla ? out->qk_rope_head_dim : out->head_dim, out);
    cJSON_Delete(root);
    if (rc != 0) memset(out, 0, sizeof *out);
    return rc;
}

/* ---- writing config.json ------------------------------------------------------ */

static void add_int(cJSON *o, const char *key, int64_t v) {
    if (v < 0) cJSON_AddNullToObject(o, key);
    else cJSON_AddNumberToObject(o, key, (double)v);
}

/* The rope's own keys, as one dict (rope_parameters; rope_scaling without the theta). */
static cJSON *rope_dict(const RopeConfig *r, bool with_theta) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "rope_type", rope_type_name(r->type));
    if (with_theta) cJSON_AddNumberToObject(d, "rope_theta", r->theta);
    if (r->type == ROPE_TYPE_DEFAULT) return d;
    if (isnan(r->factor)) cJSON_AddNullToObject(d, "factor");
    else cJSON_AddNumberToObject(d, "factor", r->factor);
    if (r->type == ROPE_TYPE_YARN || r->type == ROPE_TYPE_LONGROPE ||
        r->type == ROPE_TYPE_LLAMA3)
        add_int(d, "original_max_position_embeddings", r->original_max_position_embeddings);
    if (!isnan(r->attention_factor)) cJSON_AddNumberToObject(d, "attention_factor",
                                                             r->attention_factor);
    if (r->type == ROPE_TYPE_YARN) {
        cJSON_AddNumberToObject(d, "beta_fast", r->beta_fast);
        cJSON_AddNumberToObject(d, "beta_slow", r->beta_slow);
        if (r->mscale != 0) cJSON_AddNumberToObject(d, "mscale", r->mscale);
        if (r->mscale_all_dim != 0) cJSON_AddNumberToObject(d, "mscale_all_dim", r->mscale_all_dim);
        cJSON_AddBoolToObject(d, "truncate", r->truncate);
    } else if (r->type == ROPE_TYPE_LLAMA3) {
        cJSON_AddNumberToObject(d, "low_freq_factor", r->low_freq_factor);
        cJSON_AddNumberToObject(d, "high_freq_factor", r->high_freq_factor);
    } else if (r->type == ROPE_TYPE_LONGROPE) {
        cJSON *s = cJSON_AddArrayToObject(d, "short_factor");
        cJSON *l = cJSON_AddArrayToObject(d, "long_factor");
        for (int i = 0; i < r->n_factors; i++) {
            cJSON_AddItemToArray(s, cJSON_CreateNumber(r->short_factor[i]));
            cJSON_AddItemToArray(l, cJSON_CreateNumber(r->long_factor[i]));
        }
    }
    return d;
}

static void add_family_keys(cJSON *o, const LlamaConfig *c) {
    if (c->model_type == LLAMA_MODEL_LLAMA) {
        cJSON_AddBoolToObject(o, "attention_bias", c->attention_bias);
        cJSON_AddBoolToObject(o, "mlp_bias", c->mlp_bias);
    } else if (c->model_type == LLAMA_MODEL_MISTRAL) {
        add_int(o, "sliding_window", c->sliding_window > 0 ? c->sliding_window : -1);
    } else if (c->model_type == LLAMA_MODEL_QWEN2) {
        cJSON_AddBoolToObject(o, "use_sliding_window", c->use_sliding_window);
        add_int(o, "sliding_window", c->sliding_window > 0 ? c->sliding_window : -1);
        add_int(o, "max_window_layers", c->max_window_layers);
        cJSON *types = cJSON_AddArrayToObject(o, "layer_types");
        for (int64_t l = 0; l < c->num_hidden_layers; l++)
            cJSON_AddItemToArray(types, cJSON_CreateString(c->layer_sliding[l] ?
                                                           "sliding_attention" : "full_attention"));
    }
    if (c->mla && c->model_type == LLAMA_MODEL_DEEPSEEK_V3) {
        cJSON_AddBoolToObject(o, "attention_bias", c->attention_bias);
        add_int(o, "q_lora_rank", c->q_lora_rank > 0 ? c->q_lora_rank : -1);
        add_int(o, "kv_lora_rank", c->kv_lora_rank);
        add_int(o, "qk_nope_head_dim", c->qk_nope_head_dim);
        add_int(o, "qk_rope_head_dim", c->qk_rope_head_dim);
        add_int(o, "v_head_dim", c->v_head_dim);
        cJSON_AddBoolToObject(o, "rope_interleave", c->rope_interleave);
        add_int(o, "n_routed_experts", c->n_routed_experts);
        add_int(o, "n_shared_experts", c->n_shared_experts);
        add_int(o, "n_group", c->n_group);
        add_int(o, "topk_group", c->topk_group);
        cJSON_AddNumberToObject(o, "routed_scaling_factor", c->routed_scaling_factor);
    } else if (c->mla) {
        cJSON_AddStringToObject(o, "tl_attention", "mla");
        add_int(o, "tl_mla_rank", c->kv_lora_rank);
        add_int(o, "tl_mla_q_rank", c->q_lora_rank > 0 ? c->q_lora_rank : -1);
        add_int(o, "tl_mla_rope_dim", c->qk_rope_head_dim);
    }
    if (c->n_routed_experts > 0) {
        if (c->model_type != LLAMA_MODEL_DEEPSEEK_V3) {
            add_int(o, "tl_num_experts", c->n_routed_experts);
            add_int(o, "shared_expert_intermediate_size", c->shared_expert_intermediate_size);
        }
        add_int(o, "num_experts_per_tok", c->num_experts_per_tok);
        add_int(o, "moe_intermediate_size", c->moe_intermediate_size);
        add_int(o, "first_k_dense_replace", c->first_k_dense_replace);
        cJSON_AddBoolToObject(o, "norm_topk_prob", c->norm_topk_prob);
        cJSON_AddNumberToObject(o, "router_aux_loss_coef", c->router_aux_loss_coef);
    }
    if (c->tl_sliding_window > 0) add_int(o, "tl_sliding_window", c->tl_sliding_window);
    if (c->tl_sink_tokens > 0) add_int(o, "tl_sink_tokens", c->tl_sink_tokens);
    if (c->tl_learned_sinks) cJSON_AddBoolToObject(o, "tl_learned_sinks", true);
}

static int compare_keys(const void *a, const void *b) {
    return strcmp((*(cJSON *const *)a)->string, (*(cJSON *const *)b)->string);
}

/* HF's json.dumps(indent=2, sort_keys=True): keys sorted, two spaces per level. */
static char *print_sorted(cJSON *o) {
    int n = cJSON_GetArraySize(o);
    cJSON **items = malloc((size_t)(n > 0 ? n : 1) * sizeof *items);
    if (!items) return NULL;
    for (int i = 0; i < n; i++) items[i] = cJSON_DetachItemFromArray(o, 0);
    qsort(items, (size_t)n, sizeof *items, compare_keys);
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(o, items[i]);
    free(items);
    char *tabbed = cJSON_Print(o);   /* tabs only indent: strings escape theirs */
    if (!tabbed) return NULL;
    size_t tabs = 0, len = strlen(tabbed);
    for (size_t i = 0; i < len; i++) tabs += tabbed[i] == '\t';
    char *out = malloc(len + tabs + 2);
    if (out) {
        char *w = out;
        for (size_t i = 0; i < len; i++) {
            if (tabbed[i] == '\t') { *w++ = ' '; *w++ = ' '; }
            else *w++ = tabbed[i];
        }
        *w++ = '\n';
        *w = '\0';
    }
    free(tabbed);
    return out;
}

char *llama_config_to_hf(const LlamaConfig *c) {
    if (!c || (unsigned)c->model_type >= LLAMA_MODEL_TYPE_COUNT)
        return tl_fail("llama_config_to_hf: the config is NULL or its model_type is unknown");
    cJSON *o = cJSON_CreateObject();
    cJSON *arch = cJSON_AddArrayToObject(o, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString(ARCHITECTURES[c->model_type]));
    cJSON_AddStringToObject(o, "model_type", TYPE_NAMES[c->model_type]);
    add_int(o, "vocab_size", c->vocab_size);
    add_int(o, "hidden_size", c->hidden_size);
    add_int(o, "intermediate_size", c->intermediate_size);
    add_int(o, "num_hidden_layers", c->num_hidden_layers);
    add_int(o, "num_attention_heads", c->num_attention_heads);
    add_int(o, "num_key_value_heads", c->num_key_value_heads);
    if (c->model_type != LLAMA_MODEL_DEEPSEEK_V3) add_int(o, "head_dim", c->head_dim);
    cJSON_AddStringToObject(o, "hidden_act", activation_name(c->hidden_act));
    add_int(o, "max_position_embeddings", c->max_position_embeddings);
    cJSON_AddNumberToObject(o, "rms_norm_eps", c->rms_norm_eps);
    cJSON_AddNumberToObject(o, "initializer_range", c->initializer_range);
    cJSON_AddBoolToObject(o, "tie_word_embeddings", c->tie_word_embeddings);
    add_family_keys(o, c);
    /* The rope in both forms: 4.x readers take rope_theta and rope_scaling, 5.x ones
     * rope_parameters; both describe the same rope. */
    cJSON_AddNumberToObject(o, "rope_theta", c->rope.theta);
    if (c->rope.type == ROPE_TYPE_DEFAULT) cJSON_AddNullToObject(o, "rope_scaling");
    else cJSON_AddItemToObject(o, "rope_scaling", rope_dict(&c->rope, false));
    cJSON_AddItemToObject(o, "rope_parameters", rope_dict(&c->rope, true));
    if (c->rope.partial_rotary_factor != 1.0)
        cJSON_AddNumberToObject(o, "partial_rotary_factor", c->rope.partial_rotary_factor);
    add_int(o, "bos_token_id", c->bos_token_id);
    add_int(o, "pad_token_id", c->pad_token_id);
    if (c->n_eos == 0) cJSON_AddNullToObject(o, "eos_token_id");
    else if (c->n_eos == 1) add_int(o, "eos_token_id", c->eos_token_id[0]);
    else {
        cJSON *eos = cJSON_AddArrayToObject(o, "eos_token_id");
        for (int i = 0; i < c->n_eos; i++)
            cJSON_AddItemToArray(eos, cJSON_CreateNumber((double)c->eos_token_id[i]));
    }
    if (c->torch_dtype[0]) {
        cJSON_AddStringToObject(o, "torch_dtype", c->torch_dtype);   /* 4.x's name */
        cJSON_AddStringToObject(o, "dtype", c->torch_dtype);         /* 5.x's */
    }
    char *s = print_sorted(o);
    cJSON_Delete(o);
    return s ? s : tl_fail("llama_config_to_hf: out of memory");
}

/* ---- what the config implies ------------------------------------------------------ */

int llama_model_config(const LlamaConfig *c, tl_model_config *out) {
    if (!c || !out) return tl_fail_status("llama_model_config: the config or out is NULL");
    if (c->mla || c->n_routed_experts > 0 || c->tl_learned_sinks)
        return tl_fail_status("llama_model_config: M05.1's ModelConfig describes dense GQA "
                              "decoders; this config has %s (use llama_config_param_count)",
                              c->mla ? "MLA" : c->n_routed_experts > 0 ? "experts" :
                              "learned sinks");
    bool llama = c->model_type == LLAMA_MODEL_LLAMA;
    *out = (tl_model_config){
        .vocab_size = c->vocab_size,
        .hidden_size = c->hidden_size,
        .intermediate_size = c->intermediate_size,
        .num_hidden_layers = c->num_hidden_layers,
        .num_attention_heads = c->num_attention_heads,
        .num_key_value_heads = c->num_key_value_heads,
        .head_dim = c->head_dim,
        .tie_word_embeddings = c->tie_word_embeddings,
        .attention_bias = llama && c->attention_bias,
        .qkv_bias = c->model_type == LLAMA_MODEL_QWEN2,
        .mlp_bias = llama && c->mlp_bias,
    };
    return 0;
}

int llama_mla_config(const LlamaConfig *c, MLAConfig *out) {
    if (!c || !out || !c->mla)
        return tl_fail_status("llama_mla_config: the config or out is NULL, or it has no MLA");
    bool scaled = c->rope.type != ROPE_TYPE_DEFAULT;
    *out = (MLAConfig){
        .hidden = c->hidden_size,
        .n_heads = c->num_attention_heads,
        .q_lora_rank = c->q_lora_rank,
        .kv_lora_rank = c->kv_lora_rank,
        .qk_nope_head_dim = c->qk_nope_head_dim,
        .qk_rope_head_dim = c->qk_rope_head_dim,
        .v_head_dim = c->v_head_dim,
        .attention_bias = c->attention_bias,
        .rope_interleave = c->rope_interleave,
        .rope_factor = scaled && !isnan(c->rope.factor) ? c->rope.factor : 0,
        .mscale_all_dim = scaled ? c->rope.mscale_all_dim : 0,
    };
    return 0;
}

/* Checked arithmetic for the count: a config of absurd sizes (a damaged
 * config.json) gets an error, not signed overflow. Once *of is set the
 * result is meaningless. */
static int64_t cmul(int64_t a, int64_t b, bool *of) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) *of = true;
    return r;
}

static int64_t cadd(int64_t a, int64_t b, bool *of) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) *of = true;
    return r;
}

static int64_t gqa_params(const LlamaConfig *c, bool *of) {
    int64_t d = c->hidden_size, q = cmul(c->num_attention_heads, c->head_dim, of);
    int64_t kv = cmul(c->num_key_value_heads, c->head_dim, of);
    int64_t n = cmul(2 * d, cadd(q, kv, of), of);
    bool qwen2 = c->model_type == LLAMA_MODEL_QWEN2, llama = c->model_type == LLAMA_MODEL_LLAMA;
    if (qwen2 || (llama && c->attention_bias)) n = cadd(n, cadd(q, cmul(2, kv, of), of), of);
    if (llama && c->attention_bias) n = cadd(n, d, of);
    if (c->tl_learned_sinks) n = cadd(n, c->num_attention_heads, of);
    return n;
}

/* mla_param_count's sum (L7.6), checked: only to know that it fits in 64 bits
 * before L7.6's unchecked one runs. */
static void check_mla_fits(const MLAConfig *m, bool *of) {
    int64_t h = m->hidden, n = m->n_heads, rq = m->q_lora_rank, r = m->kv_lora_rank;
    int64_t dqk = m->qk_nope_head_dim + m->qk_rope_head_dim, dr = m->qk_rope_head_dim;
    int64_t dv = m->v_head_dim, b = m->attention_bias ? 1 : 0;
    int64_t q = rq == 0 ? cmul(cmul(n, dqk, of), h, of)
                        : cadd(cmul(rq, h + b + 1, of), cmul(cmul(n, dqk, of), rq, of), of);
    int64_t kv = cadd(cmul(r + dr, h + b, of),
                      cadd(r, cmul(cmul(n, m->qk_nope_head_dim + dv, of), r, of), of), of);
    int64_t o = cadd(cmul(cmul(h, n, of), dv, of), b * h, of);
    (void)cadd(cadd(q, kv, of), o, of);
}

static int64_t mlp_params(const LlamaConfig *c, int64_t l, bool *of) {
    int64_t d = c->hidden_size, f = c->intermediate_size;
    if (c->n_routed_experts == 0 || l < c->first_k_dense_replace)
        return cadd(cmul(3 * d, f, of), c->mlp_bias ? cadd(2 * f, d, of) : 0, of);
    int64_t shared = c->model_type == LLAMA_MODEL_DEEPSEEK_V3
                         ? cmul(c->moe_intermediate_size, c->n_shared_experts, of)
                         : c->shared_expert_intermediate_size;
    int64_t n = cmul(c->n_routed_experts, d, of);                       /* router */
    n = cadd(n, cmul(cmul(c->n_routed_experts, 3 * d, of), c->moe_intermediate_size, of), of);
    n = cadd(n, cmul(3 * d, shared, of), of);
    if (shared > 0 && c->model_type != LLAMA_MODEL_DEEPSEEK_V3) n = cadd(n, d, of); /* its gate */
    return n;
}

int64_t llama_config_param_count(const LlamaConfig *c) {
    if (!c) return tl_fail_status("llama_config_param_count: the config is NULL");
    tl_model_config dense;
    if (!c->mla && c->n_routed_experts == 0 && !c->tl_learned_sinks) {
        if (llama_model_config(c, &dense) != 0) return -1;
        int64_t n = tl_model_config_param_count(&dense);
        return n >= 0 ? n : tl_fail_status("llama_config_param_count: %s", tl_error());
    }
    bool of = false;
    int64_t d = c->hidden_size;
    int64_t n = cadd(cmul(cmul(c->vocab_size, d, &of), c->tie_word_embeddings ? 1 : 2, &of), d,
                     &of);                                               /* embed, head, norm */
    MLAConfig mla;
    int64_t attention = 0;
    if (c->mla && llama_mla_config(c, &mla) != 0)
        return tl_fail_status("llama_config_param_count: %s", tl_error());
    if (c->mla) check_mla_fits(&mla, &of);
    if (c->mla && !of && (attention = mla_param_count(&mla)) < 0)
        return tl_fail_status("llama_config_param_count: %s", tl_error());
    if (!c->mla) attention = gqa_params(c, &of);
    for (int64_t l = 0; l < c->num_hidden_layers; l++)
        n = cadd(n, cadd(cadd(2 * d, attention, &of), mlp_params(c, l, &of), &of), &of);
    if (of)
        return tl_fail_status("llama_config_param_count: the parameter count overflows 64 bits: "
                              "a size in the config is far too large (vocab_size %lld, "
                              "hidden_size %lld, %lld layers; the attention's and experts' "
                              "widths count too); check the config", (long long)c->vocab_size,
                              (long long)d, (long long)c->num_hidden_layers);
    return n;
}

int64_t llama_layer_window(const LlamaConfig *c, int64_t l) {
    if (!c || l < 0 || l >= c->num_hidden_layers)
        return tl_fail_status("llama_layer_window: the config is NULL or layer %lld is out of "
                              "range", (long long)l);
    if (c->tl_sliding_window > 0) return c->tl_sliding_window;
    return c->layer_sliding[l] ? c->sliding_window : 0;
}

int llama_rope_spec(const LlamaConfig *c, int64_t seq_len, RopeSpec *out) {
    if (!c || !out || seq_len < 0)
        return tl_fail_status("llama_rope_spec: the config or out is NULL, or seq_len < 0");
    int64_t width = c->mla ? c->qk_rope_head_dim : c->head_dim;
    if (rope_spec_from_config(out, &c->rope, width, ROPE_HALF, seq_len) != 0)
        return tl_fail_status("llama_rope_spec: %s", tl_error());
    return 0;
}
