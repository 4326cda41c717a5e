/* LlamaConfig from and to a Hugging Face config.json (L7.9): your implementation.
 *
 * The contract is contracts/tinyllm/modern/llama.h; the rules are section 2.2
 * of the chapter (course/L7.9/README.md) and the worked count is section 3.
 * Parse with cJSON (<cjson/cJSON.h>: cJSON_ParseWithOpts,
 * cJSON_GetObjectItemCaseSensitive), take every absent key from its
 * model_type's HF defaults, and hand the rope to L7.4's rope_config_from_json.
 * Replace each tl_fail below, then run `ol tests L7.9`.
 */
#include "tinyllm/modern/llama.h"

const char *llama_model_type_name(llama_model_type type) {
    /* "llama", "mistral", "qwen2", "deepseek_v3" by value; an error otherwise. */
    (void)type;
    return tl_fail("not implemented: llama_model_type_name (L7.9)");
}

int llama_config_from_hf(const char *json, LlamaConfig *out) {
    /* Section 2.2: model_type first (refuse the others by name), then the sizes
     * with HF's defaults (a missing head_dim is hidden_size / num_attention_heads),
     * the biases the family implies, windows, MLA and experts, the tl_* keys,
     * and the rope dict of either form (rope_scaling with "type" or "rope_type",
     * or rope_parameters) rewritten as one dict for rope_config_from_json. */
    (void)json; (void)out;
    return tl_fail_status("not implemented: llama_config_from_hf (L7.9)");
}

char *llama_config_to_hf(const LlamaConfig *c) {
    /* Build a cJSON object with HF's keys for c's model_type (the rope in both
     * forms), print it, and make sure llama_config_from_hf reads it back as *c. */
    (void)c;
    return tl_fail("not implemented: llama_config_to_hf (L7.9)");
}

int llama_model_config(const LlamaConfig *c, tl_model_config *out) {
    /* Copy the dense fields into M05.1's tl_model_config (model_config.h); refuse
     * MLA, experts and learned sinks, which it does not describe. */
    (void)c; (void)out;
    return tl_fail_status("not implemented: llama_model_config (L7.9)");
}

int llama_mla_config(const LlamaConfig *c, MLAConfig *out) {
    /* L7.6's MLAConfig from the MLA widths, and the rope's factor and
     * mscale_all_dim when the rope is scaled. */
    (void)c; (void)out;
    return tl_fail_status("not implemented: llama_mla_config (L7.9)");
}

int64_t llama_config_param_count(const LlamaConfig *c) {
    /* Section 2.4: tl_model_config_param_count for dense GQA; otherwise the sum
     * of the parts (embedding, head unless tied, norms, each layer's attention
     * and MLP or MoE, as L7.5, L7.6 and L7.8 count them). */
    (void)c;
    return tl_fail_status("not implemented: llama_config_param_count (L7.9)");
}

int64_t llama_layer_window(const LlamaConfig *c, int64_t l) {
    /* tl_sliding_window, else sliding_window where layer_sliding[l], else 0. */
    (void)c; (void)l;
    return tl_fail_status("not implemented: llama_layer_window (L7.9)");
}

int llama_rope_spec(const LlamaConfig *c, int64_t seq_len, RopeSpec *out) {
    /* L7.4's rope_spec_from_config over head_dim (MLA: qk_rope_head_dim),
     * ROPE_HALF, at seq_len. */
    (void)c; (void)seq_len; (void)out;
    return tl_fail_status("not implemented: llama_rope_spec (L7.9)");
}
