/* L7.6 unit: the parameters, by HF's names, shapes and order, and their count.
 * q_proj only without q_lora; q_a_proj, q_a_layernorm, q_b_proj with it;
 * attention_bias biases q_a_proj, kv_a_proj_with_mqa and o_proj (never q_proj,
 * q_b_proj or kv_b_proj); the count by hand for DeepSeek-V3 (187,107,328 per
 * layer) and DeepSeek-V2-Lite (13,763,072); init=false gives zeros (norms 1),
 * an rng PyTorch's bounds. */
#include "mla_fixture.h"

typedef struct {
    const char *name;
    int64_t rows, cols;   /* cols 0: a vector */
} expected_param;

static void assert_state_dict(const MLAttention *a, const expected_param *want, int n,
                              const char *what) {
    tl_state_dict sd = tl_module_state_dict(a->module);
    ck_assert_msg(sd.count == n, "%s: %d parameters; HF's layer has %d", what, sd.count, n);
    for (int i = 0; i < n; i++) {
        const tl_tensor *t = sd.items[i].tensor;
        ck_assert_msg(strcmp(sd.items[i].name, want[i].name) == 0,
                      "%s: parameter %d is %s; HF's is %s", what, i, sd.items[i].name,
                      want[i].name);
        bool ok = want[i].cols ? t->ndim == 2 && t->shape[0] == want[i].rows &&
                                     t->shape[1] == want[i].cols
                               : t->ndim == 1 && t->shape[0] == want[i].rows;
        char shape[64], hf[64];
        if (want[i].cols) snprintf(hf, sizeof hf, "[%lld, %lld]", (long long)want[i].rows,
                                   (long long)want[i].cols);
        else snprintf(hf, sizeof hf, "[%lld]", (long long)want[i].rows);
        ck_assert_msg(ok, "%s: %s has shape %s; HF's is %s", what, want[i].name,
                      tl_shape_str(t, shape, sizeof shape), hf);
    }
    tl_state_dict_free(&sd);
}

START_TEST(test_param_count_and_hf_names)
{
    tl_scope_push();
    /* n(dn + dr) = 3 * 14 = 42 query rows, n(dn + dv) = 33 kv rows, r_kv + dr = 20. */
    const expected_param no_lora[] = {
        {"q_proj.weight", 42, 16},         {"kv_a_proj_with_mqa.weight", 20, 16},
        {"kv_a_layernorm.weight", 12, 0},  {"kv_b_proj.weight", 33, 12},
        {"o_proj.weight", 16, 15},
    };
    const expected_param lora_bias[] = {
        {"q_a_proj.weight", 10, 16},       {"q_a_proj.bias", 10, 0},
        {"q_a_layernorm.weight", 10, 0},   {"q_b_proj.weight", 42, 10},
        {"kv_a_proj_with_mqa.weight", 20, 16}, {"kv_a_proj_with_mqa.bias", 20, 0},
        {"kv_a_layernorm.weight", 12, 0},  {"kv_b_proj.weight", 33, 12},
        {"o_proj.weight", 16, 15},         {"o_proj.bias", 16, 0},
    };
    const expected_param lora[] = {
        {"q_a_proj.weight", 10, 16},       {"q_a_layernorm.weight", 10, 0},
        {"q_b_proj.weight", 42, 10},       {"kv_a_proj_with_mqa.weight", 20, 16},
        {"kv_a_layernorm.weight", 12, 0},  {"kv_b_proj.weight", 33, 12},
        {"o_proj.weight", 16, 15},
    };
    struct {
        const char *case_name;
        const expected_param *want;
        int n;
        int64_t count;
    } flavours[] = {
        /* 42*16 + 20*16 + 12 + 33*12 + 16*15 = 672 + 320 + 12 + 396 + 240 */
        {"noq_interleave", no_lora, 5, 1640},
        /* 160 + 10 + 10 + 420 + 320 + 20 + 12 + 396 + 240 + 16 */
        {"yarn_bias", lora_bias, 10, 1604},
        /* 160 + 10 + 420 + 320 + 12 + 396 + 240 */
        {"lora_interleave", lora, 7, 1558},
    };
    for (int f = 0; f < 3; f++) {
        const mla_case *c = mla_case_named(flavours[f].case_name);
        MLAConfig cfg = mla_config(c);
        RopeSpec rope = mla_rope(c);
        MLAttention a;
        ck_assert_msg(mla_init(&a, &cfg, &rope, NULL) == 0, "mla_init: %s", tl_error());
        assert_state_dict(&a, flavours[f].want, flavours[f].n, c->name);
        ck_assert_int_eq(mla_param_count(&cfg), flavours[f].count);
        ck_assert_int_eq(tl_module_param_count(a.module), flavours[f].count);
        /* init=false: every Linear parameter zero, the norms' weights 1. */
        tl_state_dict sd = tl_module_state_dict(a.module);
        for (int i = 0; i < sd.count; i++) {
            bool norm = strstr(sd.items[i].name, "layernorm") != NULL;
            for (int64_t k = 0; k < tl_numel(sd.items[i].tensor); k++)
                ck_assert_msg(tl_item_at(sd.items[i].tensor, k) == (norm ? 1.0 : 0.0),
                              "%s: init=false gives %s[%lld] = %g", c->name, sd.items[i].name,
                              (long long)k, tl_item_at(sd.items[i].tensor, k));
            ck_assert_msg(sd.items[i].tensor->requires_grad, "%s does not require a gradient",
                          sd.items[i].name);
        }
        tl_state_dict_free(&sd);
        mla_free(&a);
        mla_free(&a);   /* a cleared struct: a no-op */
    }

    /* By hand (the chapter's section 2.6): DeepSeek-V3 and DeepSeek-V2-Lite. */
    MLAConfig v3 = {.hidden = 7168, .n_heads = 128, .q_lora_rank = 1536, .kv_lora_rank = 512,
                    .qk_nope_head_dim = 128, .qk_rope_head_dim = 64, .v_head_dim = 128,
                    .rope_interleave = true, .rope_factor = 40, .mscale_all_dim = 1};
    ck_assert_int_eq(mla_param_count(&v3), 187107328);
    MLAConfig v2_lite = {.hidden = 2048, .n_heads = 16, .q_lora_rank = 0, .kv_lora_rank = 512,
                         .qk_nope_head_dim = 128, .qk_rope_head_dim = 64, .v_head_dim = 128};
    ck_assert_int_eq(mla_param_count(&v2_lite), 13763072);

    /* With an rng: PyTorch's U(-1/sqrt(in), 1/sqrt(in)) per Linear, norms still 1. */
    const mla_case *c = mla_case_named("yarn_bias");
    MLAConfig cfg = mla_config(c);
    RopeSpec rope = mla_rope(c);
    tl_pcg32 rng = tl_test_rng(7);
    MLAttention a;
    ck_assert_msg(mla_init(&a, &cfg, &rope, &rng) == 0, "mla_init: %s", tl_error());
    tl_state_dict sd = tl_module_state_dict(a.module);
    const int64_t fan_in[10] = {16, 16, 0, 10, 16, 16, 0, 12, 15, 15};
    for (int i = 0; i < sd.count; i++) {
        const tl_tensor *t = sd.items[i].tensor;
        double bound = fan_in[i] ? 1.0 / sqrt((double)fan_in[i]) : 0, worst = 0;
        bool any_nonzero = false;
        for (int64_t k = 0; k < tl_numel(t); k++) {
            double v = tl_item_at(t, k);
            if (!fan_in[i]) ck_assert_msg(v == 1.0, "%s[%lld] = %g, not 1", sd.items[i].name,
                                          (long long)k, v);
            worst = fmax(worst, fabs(v));
            any_nonzero = any_nonzero || v != 0;
        }
        if (fan_in[i]) {
            ck_assert_msg(worst <= bound, "%s: |w| reaches %g > 1/sqrt(%lld)", sd.items[i].name,
                          worst, (long long)fan_in[i]);
            ck_assert_msg(any_nonzero, "%s drew nothing from the rng", sd.items[i].name);
        }
    }
    tl_state_dict_free(&sd);
    mla_free(&a);
    tl_scope_pop();
}
END_TEST
