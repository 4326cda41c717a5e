/* My golden tests: every configuration of the course's fixtures against HF. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include "tinyllm/testing.h"
#include "tinyllm/modern/rope_scaling.h"

static RopeConfig load(const char *name) {
    char rel[96];
    snprintf(rel, sizeof rel, "L7.4/config.%s.json", name);
    FILE *f = fopen(tl_fixture_path(rel), "rb");
    ck_assert_ptr_nonnull(f);
    static char text[16384];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    RopeConfig c;
    ck_assert_msg(rope_config_from_json(text, &c) == 0, "%s: %s", name, tl_error());
    return c;
}

START_TEST(my_golden_every_case)
{
    tl_scope_push();
    static const struct { const char *name; int64_t dim; int64_t seq[4]; int n; } CASES[] = {
        {"default_smollm2", 64, {0}, 1}, {"default_mixtral", 128, {0}, 1}, {"linear", 32, {0}, 1},
        {"linear_partial", 32, {0}, 1}, {"dynamic", 32, {0, 256, 300, 1000}, 4},
        {"yarn_gpt_oss", 64, {0}, 1}, {"yarn_deepseek_v3", 64, {0}, 1},
        {"yarn_qwen_v5", 128, {0}, 1}, {"yarn_derived_factor", 64, {0}, 1},
        {"longrope_phi3", 96, {0, 4096, 4097, 10000}, 4}, {"longrope_explicit", 32, {0, 2049}, 2},
        {"llama3_llama31", 128, {0}, 1}, {"llama3_llama32", 64, {0}, 1},
    };
    tl_checkpoint *fx = tl_fixture_load("L7.4/rope_scaling.safetensors");
    const char *json = "L7.4/rope_scaling.json";
    double rtol = tl_fixture_number(json, "tolerances.test_golden_inv_freq_every_type.rtol");
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        RopeConfig cfg = load(CASES[c].name);
        for (int s = 0; s < CASES[c].n; s++) {
            float inv[64];
            double a;
            int64_t half = CASES[c].dim / 2;
            ck_assert_int_eq(rope_inv_freq_scaled(&cfg, CASES[c].dim, cfg.theta, CASES[c].seq[s],
                                                  inv, &a), 0);
            char name[96], key[160];
            snprintf(name, sizeof name, "%s.seq%lld.inv_freq", CASES[c].name,
                     (long long)CASES[c].seq[s]);
            tl_assert_close(tl_from_f32(inv, 1, &half), tl_fixture_tensor(fx, name), rtol, 0.0);
            snprintf(key, sizeof key, "values.%s.attention_factor.seq%lld", CASES[c].name,
                     (long long)CASES[c].seq[s]);
            ck_assert_double_eq_tol(a, tl_fixture_number(json, key), 1e-12);
        }
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* The tables L7.3 makes from the filled spec, against HF's forward. */
START_TEST(my_golden_tables)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load("L7.4/rope_scaling.safetensors");
    double atol = tl_fixture_number("L7.4/rope_scaling.json",
                                    "tolerances.test_golden_scaled_tables_match_hf.atol");
    const int64_t pos[5] = {0, 1, 7, 100, 4097};
    RopeConfig cfg = load("yarn_gpt_oss");
    RopeSpec spec;
    ck_assert_int_eq(rope_spec_from_config(&spec, &cfg, 64, ROPE_HALF, 0), 0);
    tl_tensor *cos, *sin;
    ck_assert_int_eq(rope_cos_sin(&spec, tl_from_i64(pos, TL_SHAPE(5)), &cos, &sin), 0);
    tl_assert_close(cos, tl_fixture_tensor(fx, "yarn_gpt_oss.table.cos"), 0.0, atol);
    tl_assert_close(sin, tl_fixture_tensor(fx, "yarn_gpt_oss.table.sin"), 0.0, atol);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
