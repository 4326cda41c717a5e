/* my_masks.h: helpers my mask tests share. */
#ifndef MY_MASKS_H
#define MY_MASKS_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "tinyllm/autograd.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"
#include "tinyllm/modern/attention.h"
#include "tinyllm/modern/mask.h"
#include "tinyllm/modern/rope.h"

#define MY_ST "L7.7/mask.safetensors"
#define MY_JSON "L7.7/mask.json"

static double my_tol(const char *test, const char *which) {
    char key[160];
    snprintf(key, sizeof key, "tolerances.%s.%s", test, which);
    return tl_fixture_number(MY_JSON, key);
}

/* "sinks" (gpt-oss: biased, learned sinks) or "stream": 4 heads, 2 kv heads. */
static void my_layer(GQAttention *a, const tl_checkpoint *fx, const char *prefix) {
    bool sinks = strcmp(prefix, "sinks") == 0;
    RopeSpec r;
    ck_assert_int_eq(rope_spec_init(&r, 8, 8, 10000.0, ROPE_HALF), 0);
    GQAConfig cfg = {.hidden = 16, .n_heads = 4, .n_kv_heads = 2, .head_dim = 8,
                     .qkv_bias = sinks, .o_bias = sinks};
    ck_assert_int_eq(gqa_init(a, &cfg, &r, NULL), 0);
    if (sinks) ck_assert_int_eq(gqa_add_learned_sinks(a, NULL), 0);
    tl_state_dict sd = tl_module_state_dict(a->module);
    for (int i = 0; i < sd.count; i++) {
        char name[96];
        snprintf(name, sizeof name, "%s.%s", prefix, sd.items[i].name);
        ck_assert_msg(tl_copy_into(sd.items[i].tensor, tl_fixture_tensor(fx, name)) == 0, "%s",
                      name);
    }
    tl_state_dict_free(&sd);
}

/* Is key j visible to query i in a mask [T, S]? */
static bool my_visible(const tl_tensor *mask, int64_t i, int64_t j) {
    return tl_item_at(mask, i * mask->shape[1] + j) == 0.0;
}

#endif
