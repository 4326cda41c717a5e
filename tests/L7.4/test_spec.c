/* L7.4 differential and golden: rope_spec_from_config fills L7.3's RopeSpec, so the
 * model's attention layers rotate with the scaled frequencies and attention factor:
 * its fields equal rope_inv_freq_scaled's, rotary_dim follows partial_rotary_factor,
 * and the cos/sin tables L7.3 makes from it equal HF's LlamaRotaryEmbedding.forward
 * for gpt-oss (yarn), Llama-3.1 (llama3) and Phi-3 (longrope: position 4097 is past
 * its original 4096, so the long factors) at positions 0, 1, 7, 100 and 4097. */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rope_scaling.h"

static RopeConfig load(const char *name) {
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

START_TEST(test_spec_from_config_fills_rope_spec)
{
    /* linear_partial: head_dim 64, partial_rotary_factor 0.5, so 32 features rotate. */
    const struct { const char *name; int64_t head_dim, rotary_dim; } CASES[] = {
        {"linear_partial", 64, 32}, {"yarn_gpt_oss", 64, 64}, {"llama3_llama31", 128, 128},
        {"longrope_phi3", 96, 96},
    };
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        RopeConfig cfg = load(CASES[c].name);
        RopeSpec spec;
        ck_assert_msg(rope_spec_from_config(&spec, &cfg, CASES[c].head_dim, ROPE_INTERLEAVED, 0)
                      == 0, "%s: rope_spec_from_config: %s", CASES[c].name, tl_error());
        ck_assert_msg(spec.head_dim == CASES[c].head_dim && spec.rotary_dim == CASES[c].rotary_dim
                      && spec.theta == cfg.theta && spec.pairing == ROPE_INTERLEAVED,
                      "%s: spec head_dim %lld, rotary_dim %lld (want %lld), theta %g, pairing %d",
                      CASES[c].name, (long long)spec.head_dim, (long long)spec.rotary_dim,
                      (long long)CASES[c].rotary_dim, spec.theta, (int)spec.pairing);
        float inv[TL_ROPE_MAX_FREQS];
        double a;
        ck_assert_msg(rope_inv_freq_scaled(&cfg, CASES[c].rotary_dim, cfg.theta, 0, inv, &a) == 0,
                      "%s", tl_error());
        ck_assert_msg(memcmp(inv, spec.inv_freq, sizeof(float) * (size_t)(CASES[c].rotary_dim / 2))
                      == 0 && a == spec.attention_scaling,
                      "%s: the spec's frequencies or attention_scaling (%g) are not "
                      "rope_inv_freq_scaled's (%g)", CASES[c].name, spec.attention_scaling, a);
    }
}
END_TEST

START_TEST(test_golden_scaled_tables_match_hf)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load("L7.4/rope_scaling.safetensors");
    const char *json = "L7.4/rope_scaling.json";
    double rtol = tl_fixture_number(json, "tolerances.test_golden_scaled_tables_match_hf.rtol");
    double atol = tl_fixture_number(json, "tolerances.test_golden_scaled_tables_match_hf.atol");
    const int64_t positions[5] = {0, 1, 7, 100, 4097};
    const struct { const char *name; int64_t head_dim; } CASES[] = {
        {"yarn_gpt_oss", 64}, {"llama3_llama31", 128}, {"longrope_phi3", 96},
    };
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        RopeConfig cfg = load(CASES[c].name);
        int64_t cached = 0;
        int64_t use = rope_update_seq_len(&cfg, 4098, &cached);      /* max(position) + 1 */
        ck_assert_msg(use >= 0, "rope_update_seq_len: %s", tl_error());
        RopeSpec spec;
        ck_assert_msg(rope_spec_from_config(&spec, &cfg, CASES[c].head_dim, ROPE_HALF, use) == 0,
                      "%s: %s", CASES[c].name, tl_error());
        tl_tensor *cos, *sin;
        ck_assert_msg(rope_cos_sin(&spec, tl_from_i64(positions, TL_SHAPE(5)), &cos, &sin) == 0,
                      "rope_cos_sin: %s", tl_error());
        char name[64], msg[768];
        snprintf(name, sizeof name, "%s.table.cos", CASES[c].name);
        ck_assert_msg(tl_close_report(cos, tl_fixture_tensor(fx, name), rtol, atol, msg,
                                      sizeof msg), "%s cos (times a): %s", CASES[c].name, msg);
        snprintf(name, sizeof name, "%s.table.sin", CASES[c].name);
        ck_assert_msg(tl_close_report(sin, tl_fixture_tensor(fx, name), rtol, atol, msg,
                                      sizeof msg), "%s sin (times a): %s", CASES[c].name, msg);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
