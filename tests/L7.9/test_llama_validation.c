/* L7.9 boundary: what must fail, fails loudly and says what to do. Configs the
 * model cannot be (an unknown model_type, an unknown rope type, heads the kv
 * heads do not divide, quantized weights, tl_* keys that contradict each
 * other); checkpoints that are not the config's (a missing key, a tensor of the
 * wrong shape, a key no part of the model has: each message names the key, the
 * shapes and the file, and nothing is loaded; a config.json that is a FIFO,
 * refused without waiting for a writer); bad ids; a full cache (left as it
 * was); a cached forward that would record gradients. */
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>
#include "llama_fixture.h"

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* A scratch copy of a fixture checkpoint folder whose config.json has
 * `from` replaced by `to` (both NULL: unchanged). */
static char *copy_checkpoint(const char *name, const char *from, const char *to) {
    char *dir = strdup("/tmp/tl-llama-bad-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    const char *files[] = {"model.safetensors", "config.json", "generation_config.json",
                           "model.safetensors.index.json", "model-00001-of-00003.safetensors",
                           "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char src[4200], dst[4200];
        snprintf(src, sizeof src, "%s/%s", ll_dir(name), files[i]);
        snprintf(dst, sizeof dst, "%s/%s", dir, files[i]);
        if (access(src, F_OK) != 0) continue;
        char *text = ll_read_text(src);
        FILE *f = fopen(src, "rb");
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fclose(f);
        if (from && strcmp(files[i], "config.json") == 0) {
            char *at = strstr(text, from);
            ck_assert_msg(at != NULL, "%s's config has no '%s'", name, from);
            char *edited = malloc(strlen(text) + strlen(to) + 1);
            sprintf(edited, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
            write_text(dst, edited);
            free(edited);
        } else {
            FILE *out = fopen(dst, "wb");
            ck_assert(fwrite(text, 1, (size_t)n, out) == (size_t)n);
            fclose(out);
        }
        free(text);
    }
    return dir;
}

static void remove_dir(char *dir) {
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

/* from_pretrained fails, leaves the model cleared, and the message holds every needle. */
static void assert_load_fails(char *dir, const char *const *needles, int n) {
    LlamaForCausalLM m;
    tl_clear_error();
    ck_assert_msg(llama_from_pretrained(&m, dir, -1) == -1, "%s loaded", dir);
    const char *e = tl_error();
    ck_assert_ptr_nonnull(e);
    for (int i = 0; i < n; i++)
        ck_assert_msg(strstr(e, needles[i]), "the error '%s' does not mention '%s'", e, needles[i]);
    ck_assert_ptr_null(m.module);
    llama_free(&m);
    remove_dir(dir);
}

START_TEST(test_validation)
{
    tl_scope_push();
    LlamaConfig c;
    /* Configs */
    ck_assert_int_eq(llama_config_from_hf("{\"model_type\": \"gpt2\"}", &c), -1);
    ck_assert_msg(strstr(tl_error(), "\"gpt2\" is not supported"), "%s", tl_error());
    ck_assert_msg(strstr(tl_error(), "llama") && strstr(tl_error(), "mistral") &&
                  strstr(tl_error(), "qwen2") && strstr(tl_error(), "deepseek_v3"),
                  "the refusal lists what is supported: %s", tl_error());
    const struct { const char *json, *needle; } bad[] = {
        {"{\"hidden_size\": 64}", "model_type"},
        {"{\"model_type\": \"llama\",", "not valid JSON"},
        {"[1, 2]", "not a JSON object"},
        {"{\"model_type\": \"llama\", \"rope_scaling\": {\"type\": \"ntk-by-parts\", "
         "\"factor\": 2}}", "ntk-by-parts"},
        {"{\"model_type\": \"llama\", \"rope_scaling\": {\"rope_type\": \"linear\"}}", "factor"},
        {"{\"model_type\": \"llama\", \"num_attention_heads\": 4, \"num_key_value_heads\": 3}",
         "does not divide"},
        {"{\"model_type\": \"llama\", \"hidden_size\": 30, \"num_attention_heads\": 4}",
         "not divisible"},
        {"{\"model_type\": \"llama\", \"hidden_act\": \"swiglu\"}", "swiglu"},
        {"{\"model_type\": \"llama\", \"vocab_size\": 0}", "vocab_size"},
        {"{\"model_type\": \"llama\", \"hidden_size\": \"64\"}", "hidden_size"},
        {"{\"model_type\": \"deepseek_v3\", \"quantization_config\": {\"quant_method\": \"fp8\"}}",
         "quantization_config"},
        {"{\"model_type\": \"llama\", \"tl_attention\": \"linear\"}", "tl_attention"},
        {"{\"model_type\": \"llama\", \"tl_attention\": \"mla\"}", "tl_mla_rank"},
        {"{\"model_type\": \"llama\", \"tl_sink_tokens\": 4}", "needs a window"},
        {"{\"model_type\": \"mistral\", \"tl_sliding_window\": 8}", "keep one"},
        {"{\"model_type\": \"llama\", \"tl_num_experts\": 2, \"num_experts_per_tok\": 3}",
         "num_experts_per_tok"},
        {"{\"model_type\": \"qwen2\", \"num_hidden_layers\": 2, \"layer_types\": "
         "[\"full_attention\"]}", "layer_types"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tl_clear_error();
        ck_assert_msg(llama_config_from_hf(bad[i].json, &c) == -1, "accepted: %s", bad[i].json);
        ck_assert_msg(tl_error() && strstr(tl_error(), bad[i].needle), "%s: the error '%s' does "
                      "not mention '%s'", bad[i].json, tl_error() ? tl_error() : "", bad[i].needle);
    }

    /* Checkpoints that are not the config's */
    assert_load_fails(copy_checkpoint("llama-gqa", "\"model_type\": \"llama\"",
                                      "\"model_type\": \"qwen2\""),
                      (const char *[]){"missing", "model.layers.0.self_attn.q_proj.bias",
                                       "[32]"}, 3);
    assert_load_fails(copy_checkpoint("llama-gqa", "\"model_type\": \"llama\"",
                                      "\"attention_bias\": true, \"model_type\": \"llama\""),
                      (const char *[]){"8 keys the model needs are missing", "q_proj.bias"}, 2);
    assert_load_fails(copy_checkpoint("llama-gqa", "\"intermediate_size\": 64",
                                      "\"intermediate_size\": 48"),
                      (const char *[]){"model.layers.0.mlp.gate_proj.weight", "[64, 32]",
                                       "[48, 32]", "model.safetensors"}, 4);
    assert_load_fails(copy_checkpoint("llama-bf16-sharded", "\"hidden_size\": 32",
                                      "\"hidden_size\": 40"),
                      (const char *[]){"model.embed_tokens.weight", "[512, 32]", "[512, 40]",
                                       "model-00001-of-00003.safetensors"}, 4);
    assert_load_fails(copy_checkpoint("llama-mqa-tied", "\"num_hidden_layers\": 3",
                                      "\"num_hidden_layers\": 2"),
                      (const char *[]){"model.layers.2.", "unexpected", "model.safetensors"}, 3);
    char *empty = strdup("/tmp/tl-llama-empty-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(empty));
    assert_load_fails(empty, (const char *[]){"config.json"}, 1);
    char *no_weights = strdup("/tmp/tl-llama-noweights-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(no_weights));
    char cfg[4200];
    snprintf(cfg, sizeof cfg, "%s/config.json", no_weights);
    write_text(cfg, "{\"model_type\": \"llama\", \"vocab_size\": 16, \"hidden_size\": 8, "
                    "\"num_attention_heads\": 2, \"num_hidden_layers\": 1}");
    assert_load_fails(no_weights, (const char *[]){"model.safetensors"}, 1);
    /* A config.json that is a FIFO is refused, not waited on for a writer that never comes. */
    char *fifo = copy_checkpoint("llama-gqa", NULL, NULL);
    snprintf(cfg, sizeof cfg, "%s/config.json", fifo);
    ck_assert_int_eq(remove(cfg), 0);
    ck_assert_int_eq(mkfifo(cfg, 0600), 0);
    assert_load_fails(fifo, (const char *[]){"config.json", "FIFO"}, 2);

    /* Bad ids, positions and caches */
    LlamaForCausalLM m;
    ll_load(&m, "llama-gqa");
    tl_assert_error(llama_forward(&m, tl_from_i64((int64_t[]){1, 512}, TL_SHAPE(1, 2)), NULL,
                                  NULL), "512");
    tl_assert_error(llama_forward(&m, tl_zeros(TL_F32, TL_SHAPE(1, 2)), NULL, NULL), "I64");
    tl_assert_error(llama_forward(&m, tl_arange(1, 4), NULL, NULL), "[B, T]");
    tl_assert_error(llama_forward(&m, tl_arange(1, 4), NULL, NULL), "llama_forward");
    tl_tensor *ids = tl_from_i64((int64_t[]){5, 6, 7, 8, 9}, TL_SHAPE(1, 5));
    tl_assert_error(llama_forward(&m, ids, tl_arange(0, 4), NULL), "positions");
    tl_assert_error(llama_forward(NULL, ids, NULL, NULL), "llama_forward");
    KVCache cache;
    ck_assert_int_eq(llama_cache_init(&m, &cache, 1, 4), 0);
    tl_assert_error(llama_forward(&m, ids, NULL, &cache), "no_grad");
    tl_no_grad_push();
    tl_assert_error(llama_forward(&m, ids, NULL, &cache), "4");
    tl_no_grad_pop();
    ck_assert_msg(kv_cache_seq_len(&cache, 0) == 0 && kv_cache_seq_len(&cache, 1) == 0,
                  "a refused forward changed the cache");
    kv_cache_free(&cache);
    tl_assert_error(llama_aux_loss(&m), "no MoE layer");
    ck_assert_int_eq(llama_save_pretrained(&m, "/tmp", TL_I64, 0), -1);
    llama_free(&m);
    llama_free(&m);   /* a cleared model frees to nothing */
    tl_scope_pop();
}
END_TEST
