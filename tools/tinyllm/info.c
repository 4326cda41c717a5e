/* info.c: `tinyllm info DIR [--json]` says what a checkpoint folder holds:
 * the architecture in words, the parameter count, the stored dtypes and the
 * bytes of weights. DIR is a folder in Hugging Face's layout. With weights,
 * the folder is loaded as llama_from_pretrained loads it (mapped, strict: a
 * folder the loader refuses is refused here with its message) and the count
 * is the model's; a folder holding only config.json gets the count from the
 * config alone, as M05.1 computes it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "tinyllm/files.h"
#include "tinyllm/modern/llama.h"
#include "tinyllm/safetensors.h"
#include "folder.h"
#include "output.h"
#include "verbs.h"

static const char USAGE[] =
    "usage: tinyllm info DIR [--json]\n"
    "  DIR     a checkpoint folder in Hugging Face's layout: config.json, and\n"
    "          model.safetensors or model.safetensors.index.json with its shards\n"
    "          (a folder with only config.json: the count from the config alone)\n"
    "  --json  one JSON object on stdout instead of text\n";

/* What the folder's weights are, from their headers (no tensor is read). */
typedef struct {
    bool present;
    int files, tensors;
    uint64_t bytes;
    uint64_t by_dtype[TL_ST_F8_E5M2 + 1];   /* bytes per stored dtype */
} weights_summary;

static int summarise(const char *dir, weights_summary *w) {
    memset(w, 0, sizeof *w);
    char index[4200], single[4200];
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", dir);
    snprintf(single, sizeof single, "%s/model.safetensors", dir);
    /* Anything under either name (a dangling link, a folder) is the loader's to explain. */
    if (!tl_path_present(index) && !tl_path_present(single)) return 0;   /* config only */
    tl_checkpoint *c = tl_checkpoint_open(dir);
    if (!c) return -1;
    w->present = true;
    w->files = c->file_count;
    for (int s = 0; s < c->file_count; s++)
        for (int i = 0; i < c->files[s]->count; i++) {
            const tl_st_entry *e = &c->files[s]->entries[i];
            w->tensors++;
            w->bytes += e->end - e->begin;
            w->by_dtype[e->dtype] += e->end - e->begin;
        }
    tl_checkpoint_free(c);
    return 0;
}

static const char *family_class(llama_model_type t) {
    static const char *const names[] = {"LlamaForCausalLM", "MistralForCausalLM",
                                        "Qwen2ForCausalLM", "DeepseekV3ForCausalLM"};
    return (unsigned)t < LLAMA_MODEL_TYPE_COUNT ? names[t] : "?";
}

/* 134515008 as "134,515,008" (buf of at least 32). */
static const char *grouped(int64_t n, char *buf) {
    char digits[24];
    int len = snprintf(digits, sizeof digits, "%" PRId64, n), o = 0;
    for (int i = 0; i < len; i++) {
        if (i > 0 && digits[i - 1] != '-' && (len - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

static void print_words(const LlamaConfig *c) {
    printf("architecture: %s (model_type %s)\n", family_class(c->model_type),
           llama_model_type_name(c->model_type));
    printf("  %" PRId64 " layers, hidden %" PRId64 ", vocab %" PRId64 ", context %" PRId64 "\n",
           c->num_hidden_layers, c->hidden_size, c->vocab_size, c->max_position_embeddings);
    if (c->mla) {
        printf("  attention: MLA, %" PRId64 " heads; latent %" PRId64 ", q rank %" PRId64
               " (0: none), nope %" PRId64 " + rope %" PRId64 ", values %" PRId64 "\n",
               c->num_attention_heads, c->kv_lora_rank, c->q_lora_rank, c->qk_nope_head_dim,
               c->qk_rope_head_dim, c->v_head_dim);
    } else {
        const char *kind = c->num_key_value_heads == c->num_attention_heads ? "MHA"
                           : c->num_key_value_heads == 1 ? "MQA" : "GQA";
        printf("  attention: %s, %" PRId64 " query heads, %" PRId64 " kv heads, head_dim %" PRId64
               "%s%s\n", kind, c->num_attention_heads, c->num_key_value_heads, c->head_dim,
               c->model_type == LLAMA_MODEL_QWEN2 ? ", q/k/v biases"
               : c->attention_bias ? ", q/k/v/o biases" : "",
               c->tl_learned_sinks ? ", learned sinks" : "");
    }
    int64_t sliding = 0, window = 0;
    for (int64_t l = 0; l < c->num_hidden_layers; l++) {
        int64_t w = llama_layer_window(c, l);
        if (w > 0) sliding++, window = w;
    }
    if (sliding > 0)
        printf("  window: %" PRId64 " of %" PRId64 " layers see the last %" PRId64 " tokens",
               sliding, c->num_hidden_layers, window);
    if (sliding > 0 && c->tl_sink_tokens > 0)
        printf(" and the first %" PRId64 " (sink tokens)", c->tl_sink_tokens);
    if (sliding > 0) printf("\n");
    if (c->n_routed_experts > 0)
        printf("  MLP: %" PRId64 " dense layer(s) of %" PRId64 ", then MoE: %" PRId64
               " experts of %" PRId64 ", top %" PRId64 "%s (%s)\n", c->first_k_dense_replace,
               c->intermediate_size, c->n_routed_experts, c->moe_intermediate_size,
               c->num_experts_per_tok,
               c->n_shared_experts > 0 || c->shared_expert_intermediate_size > 0
                   ? ", with a shared expert" : "", activation_name(c->hidden_act));
    else
        printf("  MLP: gated, %" PRId64 " wide (%s)%s\n", c->intermediate_size,
               activation_name(c->hidden_act), c->mlp_bias ? ", biases" : "");
    printf("  RoPE: %s, theta %g; embeddings %s\n", rope_type_name(c->rope.type), c->rope.theta,
           c->tie_word_embeddings ? "tied to the head" : "and head separate");
}

static void add_dtypes(cJSON *o, const weights_summary *w) {
    cJSON *d = cJSON_AddObjectToObject(o, "dtypes");
    for (int t = 0; t <= TL_ST_F8_E5M2; t++)
        if (w->by_dtype[t]) cJSON_AddNumberToObject(d, tl_st_dtype_name((tl_st_dtype)t),
                                                    (double)w->by_dtype[t]);
}

static void print_json(const char *dir, const LlamaConfig *c, int64_t count,
                       const weights_summary *w) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "folder", dir);
    cJSON_AddStringToObject(o, "model_type", llama_model_type_name(c->model_type));
    cJSON_AddStringToObject(o, "architecture", family_class(c->model_type));
    cJSON_AddNumberToObject(o, "param_count", (double)count);
    cJSON_AddStringToObject(o, "param_count_from", w->present ? "checkpoint" : "config");
    cJSON_AddNumberToObject(o, "vocab_size", (double)c->vocab_size);
    cJSON_AddNumberToObject(o, "hidden_size", (double)c->hidden_size);
    cJSON_AddNumberToObject(o, "intermediate_size", (double)c->intermediate_size);
    cJSON_AddNumberToObject(o, "num_hidden_layers", (double)c->num_hidden_layers);
    cJSON_AddNumberToObject(o, "num_attention_heads", (double)c->num_attention_heads);
    cJSON_AddNumberToObject(o, "num_key_value_heads", (double)c->num_key_value_heads);
    cJSON_AddNumberToObject(o, "head_dim", (double)c->head_dim);
    cJSON_AddNumberToObject(o, "max_position_embeddings", (double)c->max_position_embeddings);
    cJSON_AddBoolToObject(o, "tie_word_embeddings", c->tie_word_embeddings);
    cJSON_AddStringToObject(o, "attention", c->mla ? "mla" : "gqa");
    cJSON_AddNumberToObject(o, "experts", (double)c->n_routed_experts);
    cJSON_AddStringToObject(o, "hidden_act", activation_name(c->hidden_act));
    cJSON_AddStringToObject(o, "rope_type", rope_type_name(c->rope.type));
    cJSON_AddNumberToObject(o, "rope_theta", c->rope.theta);
    if (w->present) {
        cJSON_AddNumberToObject(o, "weight_bytes", (double)w->bytes);
        cJSON_AddNumberToObject(o, "files", w->files);
        cJSON_AddNumberToObject(o, "tensors", w->tensors);
        add_dtypes(o, w);
    }
    char *text = cJSON_Print(o);
    if (text) puts(text);
    free(text);
    cJSON_Delete(o);
}

/* The count: the loaded model's when there are weights (the folder must load),
 * else the config's. */
static int count_parameters(const char *dir, const LlamaConfig *c, const weights_summary *w,
                            int64_t *count) {
    if (!w->present) {
        *count = llama_config_param_count(c);
        return *count < 0 ? -1 : 0;
    }
    LlamaForCausalLM m;
    if (llama_from_pretrained(&m, dir, -1) != 0) return folder_explain_load_failure(dir);
    *count = llama_param_count(&m);
    llama_free(&m);
    return 0;
}

int tinyllm_info(int argc, char **argv) {
    const char *dir = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(USAGE, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--json") == 0) json = true;
        else if (argv[i][0] == '-' || dir) {
            fprintf(stderr, "tinyllm info: unexpected argument '%s'\n%s", argv[i], USAGE);
            return 2;
        } else dir = argv[i];
    }
    if (!dir) {
        fputs(USAGE, stderr);
        return 2;
    }
    tl_clear_error();
    LlamaConfig c;
    weights_summary w;
    int64_t count = -1;
    /* Weights are optional here: a folder with config.json alone is counted from it. */
    int rc = folder_check(dir, false) == 0 ? folder_parse_config(dir, &c) : -1;
    if (rc == 0) rc = summarise(dir, &w);
    if (rc == 0) rc = count_parameters(dir, &c, &w, &count);
    if (rc != 0) {
        print_failure("info", "cannot read the folder");
        return 1;
    }
    if (json) {
        print_json(dir, &c, count, &w);
        return 0;
    }
    printf("folder: %s\n", dir);
    print_words(&c);
    char n1[32];
    printf("parameters: %s (%.1f M)%s\n", grouped(count, n1), count / 1e6,
           w.present ? "" : ", from config.json alone (no weights in the folder)");
    if (w.present) {
        printf("weights: %s bytes in %d tensor%s, %d file%s:", grouped((int64_t)w.bytes, n1),
               w.tensors,
               w.tensors == 1 ? "" : "s", w.files, w.files == 1 ? "" : "s");
        for (int t = 0; t <= TL_ST_F8_E5M2; t++)
            if (w.by_dtype[t]) printf(" %s %" PRIu64, tl_st_dtype_name((tl_st_dtype)t),
                                      w.by_dtype[t]);
        printf("\n");
    }
    return 0;
}
