/* make_smollm2: writes a random checkpoint shaped as SmolLM2-135M, in Hugging
 * Face's layout, for the decode benchmark (`make bench` runs it once; the
 * result is cached under build/bench/).
 *
 *   make_smollm2 DIR F32|BF16
 *
 * DIR gets config.json (SmolLM2-135M's own values: 30 layers, hidden 576,
 * 9 query heads and 3 key/value heads of 64, MLP 1536, vocabulary 49152,
 * tied embeddings, rope_theta 100000, rms_norm_eps 1e-5) and
 * model.safetensors written by the runtime's writer (tl_st_save: HF's tensor
 * order and header), the floats in the given dtype. The weights are PCG32
 * normals times 0.02 (HF's initializer_range order of magnitude), the norms
 * ones: random, so nothing is cheaper than in a trained model. The files are
 * written under temporary names and renamed, so an interrupted run leaves no
 * checkpoint that looks complete.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinyllm/model_config.h"
#include "tinyllm/nn.h"
#include "tinyllm/pcg32.h"
#include "tinyllm/safetensors.h"
#include "tinyllm/tensor.h"

static const char CONFIG[] =
    "{\n"
    "  \"architectures\": [\"LlamaForCausalLM\"],\n"
    "  \"model_type\": \"llama\",\n"
    "  \"attention_bias\": false,\n"
    "  \"attention_dropout\": 0.0,\n"
    "  \"bos_token_id\": 0,\n"
    "  \"eos_token_id\": 0,\n"
    "  \"head_dim\": 64,\n"
    "  \"hidden_act\": \"silu\",\n"
    "  \"hidden_size\": 576,\n"
    "  \"initializer_range\": 0.041666666666666664,\n"
    "  \"intermediate_size\": 1536,\n"
    "  \"max_position_embeddings\": 8192,\n"
    "  \"mlp_bias\": false,\n"
    "  \"num_attention_heads\": 9,\n"
    "  \"num_hidden_layers\": 30,\n"
    "  \"num_key_value_heads\": 3,\n"
    "  \"pretraining_tp\": 1,\n"
    "  \"rms_norm_eps\": 1e-05,\n"
    "  \"rope_scaling\": null,\n"
    "  \"rope_theta\": 100000,\n"
    "  \"tie_word_embeddings\": true,\n"
    "  \"torch_dtype\": \"%s\",\n"
    "  \"use_cache\": true,\n"
    "  \"vocab_size\": 49152\n"
    "}\n";

typedef struct {
    tl_named_tensor *items;
    int count, cap;
} dict;

static tl_tensor *add(dict *d, const char *name, int ndim, const int64_t *shape, tl_pcg32 *rng) {
    if (d->count == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 64;
        d->items = realloc(d->items, (size_t)d->cap * sizeof *d->items);
        if (!d->items) return NULL;
    }
    tl_tensor *t = tl_tensor_new_owned(TL_F32, ndim, shape);
    if (!t) return NULL;
    float *x = tl_data(t);
    for (int64_t i = 0, n = tl_numel(t); i < n; i++)
        x[i] = rng ? (float)(0.02 * tl_pcg32_normal(rng)) : 1.0f;
    d->items[d->count++] = (tl_named_tensor){strdup(name), t, false};
    return t;
}

static int write_config(const char *dir, const char *dtype) {
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s/config.json.tmp", dir);
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    fprintf(f, CONFIG, dtype);
    if (fclose(f) != 0) return -1;
    return rename(tmp, path);
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[2], "F32") != 0 && strcmp(argv[2], "BF16") != 0)) {
        fprintf(stderr, "usage: make_smollm2 DIR F32|BF16\n");
        return 2;
    }
    const char *dir = argv[1];
    bool bf16 = strcmp(argv[2], "BF16") == 0;
    tl_model_config c = tl_model_config_smollm2_135m();
    int64_t H = c.hidden_size, F = c.intermediate_size, V = c.vocab_size;
    int64_t D = tl_model_config_head_dim(&c), KV = c.num_key_value_heads * D;
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 135, 2);

    dict d = {0};
    bool ok = add(&d, "model.embed_tokens.weight", TL_SHAPE(V, H), &rng) != NULL;
    for (int64_t l = 0; ok && l < c.num_hidden_layers; l++) {
        char p[128], name[192];
        snprintf(p, sizeof p, "model.layers.%lld.", (long long)l);
#define ADD(suffix, rows, cols)                                             \
        snprintf(name, sizeof name, "%s%s", p, suffix);                     \
        ok = ok && add(&d, name, TL_SHAPE(rows, cols), &rng) != NULL
        ADD("self_attn.q_proj.weight", H, H);
        ADD("self_attn.k_proj.weight", KV, H);
        ADD("self_attn.v_proj.weight", KV, H);
        ADD("self_attn.o_proj.weight", H, H);
        ADD("mlp.gate_proj.weight", F, H);
        ADD("mlp.up_proj.weight", F, H);
        ADD("mlp.down_proj.weight", H, F);
#undef ADD
        snprintf(name, sizeof name, "%sinput_layernorm.weight", p);
        ok = ok && add(&d, name, TL_SHAPE(H), NULL) != NULL;
        snprintf(name, sizeof name, "%spost_attention_layernorm.weight", p);
        ok = ok && add(&d, name, TL_SHAPE(H), NULL) != NULL;
    }
    ok = ok && add(&d, "model.norm.weight", TL_SHAPE(H), NULL) != NULL;

    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    tl_state_dict sd = {d.items, d.count};
    int rc = ok ? tl_st_save(path, &sd, bf16 ? TL_BF16 : TL_F32, NULL, NULL, 0) : -1;
    if (rc == 0) rc = write_config(dir, bf16 ? "bfloat16" : "float32");
    if (rc != 0)
        fprintf(stderr, "make_smollm2: cannot write the checkpoint into %s: %s\n", dir,
                tl_error() ? tl_error() : "config.json could not be written");
    else
        printf("make_smollm2: %s: %d tensors, %lld parameters, %s\n", dir, d.count,
               (long long)tl_model_config_param_count(&c), argv[2]);
    for (int i = 0; i < d.count; i++) {
        free(d.items[i].name);
        tl_tensor_free(d.items[i].tensor);
    }
    free(d.items);
    return rc == 0 ? 0 : 1;
}
