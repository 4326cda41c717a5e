/* llama_fixture.h: what the L7.9 model tests share. The oracle's tiny
 * checkpoints (fixtures/L7.9/<name>/, oracle/L7.9/make_fixtures.py), each a
 * folder in Hugging Face's layout; their inputs and logits (llama.safetensors);
 * their counts, keys and greedy ids (llama.json); and real Hub configs
 * (fixtures/L7.9/configs/).
 *
 *   LlamaForCausalLM m;
 *   ll_load(&m, "llama-gqa");
 *   tl_tensor *logits = ll_forward(&m, ll_golden(fx, "llama-gqa", "ids"), NULL, NULL);
 *   tl_assert_close(logits, ll_golden(fx, "llama-gqa", "logits"), rtol, atol);
 *   llama_free(&m);
 */
#ifndef TESTS_L7_9_LLAMA_FIXTURE_H
#define TESTS_L7_9_LLAMA_FIXTURE_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "tinyllm/autograd.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/safetensors.h"
#include "tinyllm/testing.h"
#include "tinyllm/modern/llama.h"

#define LL_ST "L7.9/llama.safetensors"
#define LL_JSON "L7.9/llama.json"

/* Every checkpoint the oracle writes. */
static const char *const LL_ALL[] = {
    "llama-gqa", "llama-mqa-tied", "mistral-window", "qwen2-window-bias", "llama3-bias",
    "llama-yarn", "llama-dynamic", "llama-sinks", "deepseek-v3", "llama-mla-moe",
    "llama-bf16-sharded",
};
#define LL_N_ALL ((int)(sizeof LL_ALL / sizeof LL_ALL[0]))

/* The dense ones: GQA, MQA, a window, biases, tied and untied, Llama-3, YaRN and
 * dynamic rope, BF16 shards. */
static const char *const LL_DENSE[] = {
    "llama-gqa", "llama-mqa-tied", "mistral-window", "qwen2-window-bias", "llama3-bias",
    "llama-yarn", "llama-dynamic", "llama-bf16-sharded",
};
#define LL_N_DENSE ((int)(sizeof LL_DENSE / sizeof LL_DENSE[0]))

static double ll_tol(const char *test, const char *which) {
    char key[160];
    snprintf(key, sizeof key, "tolerances.%s.%s", test, which);
    return tl_fixture_number(LL_JSON, key);
}

/* A number of a checkpoint's entry in llama.json ("hf_param_count", "greedy_ids.3"). */
static double ll_meta(const char *name, const char *what) {
    char key[200];
    snprintf(key, sizeof key, "checkpoints.%s.%s", name, what);
    return tl_fixture_number(LL_JSON, key);
}

/* The checkpoint folder (a static buffer per call site: copy it to keep it). */
static const char *ll_dir(const char *name) {
    static char dir[4][4096];
    static int next;
    char rel[256];
    snprintf(rel, sizeof rel, "L7.9/%s", name);
    char *d = dir[next++ % 4];
    snprintf(d, 4096, "%s", tl_fixture_path(rel));
    return d;
}

static void ll_load_as(LlamaForCausalLM *m, const char *name, int dtype) {
    ck_assert_msg(llama_from_pretrained(m, ll_dir(name), dtype) == 0, "loading %s: %s", name,
                  tl_error() ? tl_error() : "(no message)");
}

static void ll_load(LlamaForCausalLM *m, const char *name) { ll_load_as(m, name, -1); }

/* "<name>.ids", "<name>.logits" or "<name>.aux_loss" of llama.safetensors. */
static tl_tensor *ll_golden(const tl_checkpoint *fx, const char *name, const char *what) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", name, what);
    return tl_fixture_tensor(fx, key);
}

/* A whole text file (malloc'd), failing the test when it cannot be read. */
static char *ll_read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    ck_assert(text && fread(text, 1, (size_t)n, f) == (size_t)n);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* A checkpoint's config.json, or a real Hub config (configs/<file>), parsed. */
static LlamaConfig ll_config_file(const char *rel) {
    char *text = ll_read_text(tl_fixture_path(rel));
    LlamaConfig c;
    int rc = llama_config_from_hf(text, &c);
    free(text);
    ck_assert_msg(rc == 0, "llama_config_from_hf(%s): %s", rel, tl_error());
    return c;
}

static LlamaConfig ll_config(const char *name) {
    char rel[256];
    snprintf(rel, sizeof rel, "L7.9/%s/config.json", name);
    return ll_config_file(rel);
}

/* A config from JSON text written in the test. */
static LlamaConfig ll_config_text(const char *json) {
    LlamaConfig c;
    ck_assert_msg(llama_config_from_hf(json, &c) == 0, "llama_config_from_hf: %s\n%s",
                  tl_error(), json);
    return c;
}

/* An inference forward (cached forwards need no_grad). */
static tl_tensor *ll_forward(LlamaForCausalLM *m, tl_tensor *ids, tl_tensor *positions,
                             KVCache *cache) {
    tl_no_grad_push();
    tl_tensor *y = llama_forward(m, ids, positions, cache);
    tl_no_grad_pop();
    ck_assert_msg(y != NULL, "llama_forward: %s", tl_error() ? tl_error() : "(no message)");
    return y;
}

/* Columns [start, start + len) of ids [B, T], made contiguous. */
static tl_tensor *ll_cols(tl_tensor *t, int axis, int64_t start, int64_t len) {
    return tl_contiguous(tl_narrow(t, axis, start, len));
}

/* llama.json, parsed (free with cJSON_Delete). */
static cJSON *ll_json(void) {
    char *text = ll_read_text(tl_fixture_path(LL_JSON));
    cJSON *root = cJSON_Parse(text);
    free(text);
    ck_assert_msg(root != NULL, "%s is not valid JSON", LL_JSON);
    return root;
}

#endif
