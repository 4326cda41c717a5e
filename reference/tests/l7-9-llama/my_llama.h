/* my_llama.h: what my model tests share. The course's tiny checkpoints are
 * folders in HF's layout under $TINYLLM_FIXTURES/L7.9/; llama.safetensors holds
 * each one's ids and HF's logits, llama.json its numbers and tolerances. */
#ifndef MY_LLAMA_H
#define MY_LLAMA_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"
#include "tinyllm/modern/llama.h"

#define MY_ST "L7.9/llama.safetensors"
#define MY_JSON "L7.9/llama.json"

static double my_tol(const char *test, const char *which) {
    char key[160];
    snprintf(key, sizeof key, "tolerances.%s.%s", test, which);
    return tl_fixture_number(MY_JSON, key);
}

static void my_load(LlamaForCausalLM *m, const char *name) {
    char rel[128];
    snprintf(rel, sizeof rel, "L7.9/%s", name);
    ck_assert_msg(llama_from_pretrained(m, tl_fixture_path(rel), -1) == 0, "%s: %s", name,
                  tl_error());
}

static tl_tensor *my_tensor(const tl_checkpoint *fx, const char *name, const char *what) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", name, what);
    return tl_fixture_tensor(fx, key);
}

static tl_tensor *my_forward(LlamaForCausalLM *m, tl_tensor *ids, KVCache *cache) {
    tl_no_grad_push();
    tl_tensor *y = llama_forward(m, ids, NULL, cache);
    tl_no_grad_pop();
    ck_assert_msg(y != NULL, "llama_forward: %s", tl_error());
    return y;
}

/* A config.json of my own, or one of the real ones in L7.9/configs/. */
static LlamaConfig my_config(const char *json) {
    LlamaConfig c;
    ck_assert_msg(llama_config_from_hf(json, &c) == 0, "%s\n%s", tl_error(), json);
    return c;
}

static LlamaConfig my_config_file(const char *rel) {
    FILE *f = fopen(tl_fixture_path(rel), "rb");
    ck_assert_msg(f != NULL, "cannot open %s", rel);
    char *text = calloc(1, 1 << 16);
    ck_assert(fread(text, 1, (1 << 16) - 1, f) > 0);
    fclose(f);
    LlamaConfig c = my_config(text);
    free(text);
    return c;
}

#endif
