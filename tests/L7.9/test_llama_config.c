/* L7.9 config.json (section 2.2), properties: llama_config_to_hf writes a
 * config that llama_config_from_hf reads back field for field, for every
 * fixture checkpoint and every real Hub config; and a rope said in the 4.x
 * form (rope_theta with rope_scaling, keyed "type" or "rope_type") or in the
 * 5.x form (rope_parameters with rope_theta inside) is the same rope, with the
 * same frequencies, for every rope type. */
#include "llama_fixture.h"

static const char *const REAL[] = {
    "smollm2-135m-instruct.json", "smollm2-135m-instruct-v5.json", "llama-3.2-1b.json",
    "llama-3.1-8b-instruct.json", "tinyllama-1.1b-chat.json", "mistral-7b-v0.1.json",
    "mistral-7b-instruct-v0.3.json", "qwen2.5-0.5b-instruct.json",
    "qwen2.5-0.5b-instruct-v5.json", "deepseek-v3-bf16.json",
};
#define N_REAL ((int)(sizeof REAL / sizeof REAL[0]))

static bool same_double(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

/* The first field where a and b differ, or NULL. */
static const char *first_difference(const LlamaConfig *a, const LlamaConfig *b) {
#define SAME(f) if (!(a->f == b->f)) return #f
#define SAMED(f) if (!same_double(a->f, b->f)) return #f
    SAME(model_type); SAME(vocab_size); SAME(hidden_size); SAME(intermediate_size);
    SAME(num_hidden_layers); SAME(num_attention_heads); SAME(num_key_value_heads);
    SAME(head_dim); SAME(hidden_act); SAME(max_position_embeddings); SAMED(rms_norm_eps);
    SAMED(initializer_range); SAME(tie_word_embeddings); SAME(attention_bias); SAME(mlp_bias);
    SAME(sliding_window); SAME(use_sliding_window); SAME(max_window_layers);
    SAME(tl_sliding_window); SAME(tl_sink_tokens); SAME(tl_learned_sinks); SAME(mla);
    SAME(q_lora_rank); SAME(kv_lora_rank); SAME(qk_nope_head_dim); SAME(qk_rope_head_dim);
    SAME(v_head_dim); SAME(rope_interleave); SAME(n_routed_experts); SAME(num_experts_per_tok);
    SAME(moe_intermediate_size); SAME(n_shared_experts); SAME(shared_expert_intermediate_size);
    SAME(first_k_dense_replace); SAME(n_group); SAME(topk_group); SAME(norm_topk_prob);
    SAMED(routed_scaling_factor); SAMED(router_aux_loss_coef); SAME(bos_token_id);
    SAME(pad_token_id); SAME(n_eos);
    SAME(rope.type); SAMED(rope.theta); SAME(rope.max_position_embeddings);
    SAME(rope.original_max_position_embeddings); SAME(rope.head_dim);
    SAMED(rope.partial_rotary_factor); SAMED(rope.factor); SAMED(rope.attention_factor);
    SAMED(rope.beta_fast); SAMED(rope.beta_slow); SAMED(rope.mscale); SAMED(rope.mscale_all_dim);
    SAME(rope.truncate); SAMED(rope.low_freq_factor); SAMED(rope.high_freq_factor);
    SAME(rope.n_factors);
#undef SAME
#undef SAMED
    for (int i = 0; i < a->n_eos; i++) if (a->eos_token_id[i] != b->eos_token_id[i]) return "eos";
    for (int i = 0; i < a->rope.n_factors; i++)
        if (a->rope.short_factor[i] != b->rope.short_factor[i] ||
            a->rope.long_factor[i] != b->rope.long_factor[i]) return "rope factors";
    for (int64_t l = 0; l < a->num_hidden_layers; l++)
        if (a->layer_sliding[l] != b->layer_sliding[l]) return "layer_sliding";
    if (strcmp(a->torch_dtype, b->torch_dtype) != 0) return "torch_dtype";
    return NULL;
}

static void assert_roundtrip(const LlamaConfig *c, const char *what) {
    char *json = llama_config_to_hf(c);
    ck_assert_msg(json != NULL, "%s: llama_config_to_hf: %s", what, tl_error());
    LlamaConfig back;
    int rc = llama_config_from_hf(json, &back);
    ck_assert_msg(rc == 0, "%s: to_hf wrote a config from_hf refuses: %s\n%s", what, tl_error(),
                  json);
    const char *diff = first_difference(c, &back);
    ck_assert_msg(diff == NULL, "%s: from_hf(to_hf(c)) differs from c in %s\n%s", what, diff,
                  json);
    free(json);
}

/* One rope, three ways of writing it. */
typedef struct {
    const char *type;     /* the rope type */
    const char *fields;   /* its keys (JSON members, without braces) */
} rope_case;

static const rope_case ROPES[] = {
    {"linear", "\"factor\": 2.0"},
    {"dynamic", "\"factor\": 2.0"},
    {"yarn", "\"factor\": 4.0, \"original_max_position_embeddings\": 32, \"beta_fast\": 16"},
    {"llama3", "\"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
               "\"original_max_position_embeddings\": 64"},
    {"longrope", "\"short_factor\": [1.0, 1.5, 2.0, 2.5], \"long_factor\": [2.0, 3.0, 4.0, 5.0],"
                 " \"original_max_position_embeddings\": 64"},
};

static LlamaConfig rope_config(const char *form, const rope_case *r, double theta) {
    char json[1024];
    const char *head = "{\"model_type\": \"llama\", \"vocab_size\": 64, \"hidden_size\": 32, "
                       "\"intermediate_size\": 64, \"num_hidden_layers\": 1, "
                       "\"num_attention_heads\": 4, \"max_position_embeddings\": 256";
    if (strcmp(form, "4.x type") == 0)
        snprintf(json, sizeof json, "%s, \"rope_theta\": %g, \"rope_scaling\": {\"type\": \"%s\", "
                 "%s}}", head, theta, r->type, r->fields);
    else if (strcmp(form, "4.x rope_type") == 0)
        snprintf(json, sizeof json, "%s, \"rope_theta\": %g, \"rope_scaling\": {\"rope_type\": "
                 "\"%s\", %s}}", head, theta, r->type, r->fields);
    else
        snprintf(json, sizeof json, "%s, \"rope_parameters\": {\"rope_type\": \"%s\", "
                 "\"rope_theta\": %g, %s}}", head, r->type, theta, r->fields);
    return ll_config_text(json);
}

static void both_rope_forms_give_the_same_rope(void) {
    const char *forms[3] = {"4.x type", "4.x rope_type", "5.x rope_parameters"};
    for (size_t i = 0; i < sizeof ROPES / sizeof ROPES[0]; i++) {
        LlamaConfig c[3];
        RopeSpec spec[3];
        for (int f = 0; f < 3; f++) {
            c[f] = rope_config(forms[f], &ROPES[i], 50000.0);
            ck_assert_msg(strcmp(rope_type_name(c[f].rope.type), ROPES[i].type) == 0,
                          "%s written as %s reads as rope type %s", ROPES[i].type, forms[f],
                          rope_type_name(c[f].rope.type));
            ck_assert_msg(c[f].rope.theta == 50000.0, "%s as %s: rope_theta %g, not 50000",
                          ROPES[i].type, forms[f], c[f].rope.theta);
            ck_assert_int_eq(llama_rope_spec(&c[f], 300, &spec[f]), 0);
        }
        for (int f = 1; f < 3; f++) {
            const char *diff = first_difference(&c[0], &c[f]);
            ck_assert_msg(diff == NULL, "%s: %s and %s differ in %s", ROPES[i].type, forms[0],
                          forms[f], diff);
            ck_assert(memcmp(spec[0].inv_freq, spec[f].inv_freq, sizeof spec[0].inv_freq) == 0);
            ck_assert(spec[0].attention_scaling == spec[f].attention_scaling);
        }
        /* and it is not the default rope */
        RopeSpec plain;
        ck_assert_int_eq(rope_spec_init(&plain, 8, 8, 50000.0, ROPE_HALF), 0);
        ck_assert_msg(memcmp(plain.inv_freq, spec[0].inv_freq, sizeof plain.inv_freq) != 0 ||
                      plain.attention_scaling != spec[0].attention_scaling,
                      "%s gave the default frequencies", ROPES[i].type);
    }
    /* rope_theta alone: top-level (4.x) and inside rope_parameters (5.x). */
    LlamaConfig a = ll_config_text("{\"model_type\": \"qwen2\", \"rope_theta\": 1000000.0}");
    LlamaConfig b = ll_config_text("{\"model_type\": \"qwen2\", \"rope_parameters\": "
                                   "{\"rope_type\": \"default\", \"rope_theta\": 1000000.0}}");
    ck_assert(a.rope.theta == 1e6 && b.rope.theta == 1e6);
    ck_assert(first_difference(&a, &b) == NULL);
}

START_TEST(test_config_roundtrip_and_both_rope_forms)
{
    for (int i = 0; i < LL_N_ALL; i++) {
        LlamaConfig c = ll_config(LL_ALL[i]);
        assert_roundtrip(&c, LL_ALL[i]);
    }
    for (int i = 0; i < N_REAL; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "L7.9/configs/%s", REAL[i]);
        LlamaConfig c = ll_config_file(rel);
        assert_roundtrip(&c, REAL[i]);
    }
    /* A config saved by transformers 5 reads as the one saved by 4.x. */
    LlamaConfig v4 = ll_config_file("L7.9/configs/smollm2-135m-instruct.json");
    LlamaConfig v5 = ll_config_file("L7.9/configs/smollm2-135m-instruct-v5.json");
    snprintf(v5.torch_dtype, sizeof v5.torch_dtype, "%s", v4.torch_dtype);
    ck_assert_msg(first_difference(&v4, &v5) == NULL, "SmolLM2 4.x and 5.x differ in %s",
                  first_difference(&v4, &v5));
    both_rope_forms_give_the_same_rope();
}
END_TEST

/* The defaults that matter (section 2.2): no head_dim, null head_dim, no
 * num_key_value_heads, Mistral's window, Qwen2's window rules, the biases a
 * model_type implies, tie_word_embeddings false, both dtype keys. */
START_TEST(test_defaults_follow_each_model_type)
{
    LlamaConfig c = ll_config_text("{\"model_type\": \"llama\", \"hidden_size\": 96, "
                                   "\"num_attention_heads\": 6, \"head_dim\": null}");
    ck_assert_int_eq(c.head_dim, 16);
    ck_assert_int_eq(c.num_key_value_heads, 6);       /* LlamaConfig: the query heads */
    ck_assert(!c.tie_word_embeddings && !c.attention_bias);
    c = ll_config_text("{\"model_type\": \"mistral\"}");
    ck_assert_int_eq(c.num_key_value_heads, 8);
    ck_assert_int_eq(c.sliding_window, 4096);         /* MistralConfig's default */
    ck_assert_int_eq(llama_layer_window(&c, 31), 4096);
    c = ll_config_text("{\"model_type\": \"mistral\", \"sliding_window\": null}");
    ck_assert_int_eq(llama_layer_window(&c, 0), 0);
    c = ll_config_text("{\"model_type\": \"qwen2\", \"num_hidden_layers\": 4, "
                       "\"sliding_window\": 8, \"max_window_layers\": 2}");
    ck_assert_int_eq(llama_layer_window(&c, 3), 0);   /* use_sliding_window is false */
    c = ll_config_text("{\"model_type\": \"qwen2\", \"num_hidden_layers\": 4, "
                       "\"use_sliding_window\": true, \"sliding_window\": 8, "
                       "\"max_window_layers\": 2}");
    ck_assert(llama_layer_window(&c, 1) == 0 && llama_layer_window(&c, 2) == 8);
    c = ll_config_text("{\"model_type\": \"qwen2\", \"num_hidden_layers\": 3, "
                       "\"use_sliding_window\": true, \"sliding_window\": 8, \"layer_types\": "
                       "[\"sliding_attention\", \"full_attention\", \"sliding_attention\"]}");
    ck_assert(llama_layer_window(&c, 0) == 8 && llama_layer_window(&c, 1) == 0);
    tl_model_config mc;
    ck_assert_int_eq(llama_model_config(&c, &mc), 0);
    ck_assert(mc.qkv_bias && !mc.attention_bias);     /* implied by model_type qwen2 */
    c = ll_config_text("{\"model_type\": \"llama\", \"attention_bias\": true, \"dtype\": "
                       "\"bfloat16\"}");
    ck_assert_int_eq(llama_model_config(&c, &mc), 0);
    ck_assert(mc.attention_bias && !mc.qkv_bias);
    ck_assert_str_eq(c.torch_dtype, "bfloat16");
    c = ll_config_text("{\"model_type\": \"llama\", \"torch_dtype\": \"float16\", "
                       "\"eos_token_id\": [5, 7]}");
    ck_assert_str_eq(c.torch_dtype, "float16");
    ck_assert(c.n_eos == 2 && c.eos_token_id[1] == 7);
    c = ll_config_text("{\"model_type\": \"deepseek_v3\"}");
    ck_assert(c.mla && c.n_routed_experts == 256 && c.first_k_dense_replace == 3);
    ck_assert(c.q_lora_rank == 1536 && c.rope_interleave && c.head_dim == 192);
}
END_TEST
