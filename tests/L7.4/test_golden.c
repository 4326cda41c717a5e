/* L7.4 golden: the inverse frequencies and attention factors of every rope type,
 * parsed from the config.json each model ships (fixtures/L7.4/config.<case>.json, both
 * the 4.x and the 5.x forms), against the oracle (oracle/L7.4): transformers 5's
 * modeling_rope_utils.py re-implemented, in float32 where HF is. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "tinyllm/testing.h"
#include "tinyllm/modern/rope_scaling.h"

#define GOLDEN_ST "L7.4/rope_scaling.safetensors"
#define GOLDEN_JSON "L7.4/rope_scaling.json"

/* The case, its rotary dimension and the sequence lengths the oracle evaluated. */
static const struct { const char *name; int64_t dim; int64_t seq[5]; int n_seq; } CASES[] = {
    {"default_smollm2", 64, {0}, 1},      {"default_mixtral", 128, {0}, 1},
    {"linear", 32, {0}, 1},               {"linear_partial", 32, {0}, 1},
    {"dynamic", 32, {0, 200, 256, 300, 1000}, 5},
    {"yarn_gpt_oss", 64, {0}, 1},         {"yarn_deepseek_v3", 64, {0}, 1},
    {"yarn_qwen_v5", 128, {0}, 1},        {"yarn_derived_factor", 64, {0}, 1},
    {"longrope_phi3", 96, {0, 4096, 4097, 10000}, 4}, {"longrope_explicit", 32, {0, 2049}, 2},
    {"llama3_llama31", 128, {0}, 1},      {"llama3_llama32", 64, {0}, 1},
};
#define N_CASES ((int)(sizeof CASES / sizeof CASES[0]))

/* config.<name>.json from the fixtures, parsed. */
static RopeConfig load_config(const char *name) {
    char rel[128];
    snprintf(rel, sizeof rel, "L7.4/config.%s.json", name);
    FILE *f = fopen(tl_fixture_path(rel), "rb");
    ck_assert_msg(f != NULL, "cannot open the fixture %s", rel);
    static char text[16384];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    RopeConfig cfg;
    ck_assert_msg(rope_config_from_json(text, &cfg) == 0, "rope_config_from_json(%s): %s", rel,
                  tl_error());
    return cfg;
}

static double tol(const char *test, const char *which) {
    char key[128];
    snprintf(key, sizeof key, "tolerances.%s.%s", test, which);
    return tl_fixture_number(GOLDEN_JSON, key);
}

START_TEST(test_golden_inv_freq_every_type)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(GOLDEN_ST);
    double rtol = tol("test_golden_inv_freq_every_type", "rtol");
    double atol = tol("test_golden_inv_freq_every_type", "atol");
    for (int c = 0; c < N_CASES; c++) {
        RopeConfig cfg = load_config(CASES[c].name);
        char key[128];
        snprintf(key, sizeof key, "values.%s.theta", CASES[c].name);
        double theta = tl_fixture_number(GOLDEN_JSON, key);
        ck_assert_msg(cfg.theta == theta, "%s: rope_theta parsed as %g; the standardised value "
                      "is %g", CASES[c].name, cfg.theta, theta);
        for (int s = 0; s < CASES[c].n_seq; s++) {
            float inv[TL_ROPE_MAX_FREQS];
            double a;
            int64_t seq = CASES[c].seq[s], half = CASES[c].dim / 2;
            ck_assert_msg(rope_inv_freq_scaled(&cfg, CASES[c].dim, cfg.theta, seq, inv, &a) == 0,
                          "%s at seq_len %lld: %s", CASES[c].name, (long long)seq, tl_error());
            char name[128], msg[768];
            snprintf(name, sizeof name, "%s.seq%lld.inv_freq", CASES[c].name, (long long)seq);
            ck_assert_msg(tl_close_report(tl_from_f32(inv, 1, &half), tl_fixture_tensor(fx, name),
                                          rtol, atol, msg, sizeof msg),
                          "%s (rope_type %s, dim %lld, seq_len %lld) vs the oracle's %s: %s",
                          CASES[c].name, rope_type_name(cfg.type), (long long)CASES[c].dim,
                          (long long)seq, name, msg);
        }
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_golden_attention_factors)
{
    double rtol = tol("test_golden_attention_factors", "rtol");
    double atol = tol("test_golden_attention_factors", "atol");
    for (int c = 0; c < N_CASES; c++) {
        RopeConfig cfg = load_config(CASES[c].name);
        for (int s = 0; s < CASES[c].n_seq; s++) {
            float inv[TL_ROPE_MAX_FREQS];
            double a = NAN;
            int64_t seq = CASES[c].seq[s];
            ck_assert_msg(rope_inv_freq_scaled(&cfg, CASES[c].dim, cfg.theta, seq, inv, &a) == 0,
                          "%s at seq_len %lld: %s", CASES[c].name, (long long)seq, tl_error());
            char key[160];
            snprintf(key, sizeof key, "values.%s.attention_factor.seq%lld", CASES[c].name,
                     (long long)seq);
            double want = tl_fixture_number(GOLDEN_JSON, key);
            ck_assert_msg(fabs(a - want) <= atol + rtol * fabs(want),
                          "%s (rope_type %s) at seq_len %lld: attention factor %.17g, HF's %.17g",
                          CASES[c].name, rope_type_name(cfg.type), (long long)seq, a, want);
        }
    }
}
END_TEST
