/* L7.4 golden and unit: dynamic NTK. Up to max_position_embeddings (256 here) the
 * frequencies are the default ones; beyond, the base grows,
 *   theta' = theta (factor L / max_pos - (factor - 1))^(d / (d - 2)),
 * by hand for L = 1000, factor 2, d = 32: 10000 * 6.8125^(32/30) = 77421.27, so pair 1
 * turns at 77421.27^(-2/32) = 0.494819 instead of 0.562341. Before each forward,
 * HF's dynamic_rope_update grows the cached length, keeps it, or resets it when a
 * sequence shorter than max_position_embeddings comes: the oracle replays forwards of
 * lengths 100, 300, 280, 500, 256, 100, 300. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "tinyllm/testing.h"
#include "tinyllm/modern/rope_scaling.h"

static const char *DYNAMIC =
    "{\"model_type\": \"llama\", \"hidden_size\": 256, \"num_attention_heads\": 8,"
    " \"max_position_embeddings\": 256, \"rope_theta\": 10000.0,"
    " \"rope_scaling\": {\"rope_type\": \"dynamic\", \"factor\": 2.0}}";

static double tol(const char *test, const char *which) {
    char key[128];
    snprintf(key, sizeof key, "tolerances.%s.%s", test, which);
    return tl_fixture_number("L7.4/rope_scaling.json", key);
}

static void assert_inv(const float *inv, const tl_checkpoint *fx, const char *name,
                       const char *test, const char *what) {
    char msg[768];
    int64_t half = 16;
    ck_assert_msg(tl_close_report(tl_from_f32(inv, 1, &half), tl_fixture_tensor(fx, name),
                                  tol(test, "rtol"), tol(test, "atol"), msg, sizeof msg),
                  "%s vs the oracle's %s: %s", what, name, msg);
}

START_TEST(test_dynamic_ntk_beyond_max_position)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load("L7.4/rope_scaling.safetensors");
    const char *test = "test_dynamic_ntk_beyond_max_position";
    RopeConfig cfg, plain;
    ck_assert_msg(rope_config_from_json(DYNAMIC, &cfg) == 0, "%s", tl_error());
    float inv[16], def[16];
    double a;
    plain = cfg;
    plain.type = ROPE_TYPE_DEFAULT;
    ck_assert_msg(rope_inv_freq_scaled(&plain, 32, cfg.theta, 0, def, &a) == 0, "%s", tl_error());
    const int64_t within[3] = {0, 200, 256};
    for (int k = 0; k < 3; k++) {
        ck_assert_msg(rope_inv_freq_scaled(&cfg, 32, cfg.theta, within[k], inv, &a) == 0, "%s",
                      tl_error());
        for (int i = 0; i < 16; i++)
            ck_assert_msg(fabsf(inv[i] - def[i]) <= 1e-6f * def[i],
                          "seq_len %lld <= max_position_embeddings 256: pair %d is %.9g, the "
                          "default %.9g (the base grows only beyond)", (long long)within[k], i,
                          inv[i], def[i]);
    }
    ck_assert_msg(rope_inv_freq_scaled(&cfg, 32, cfg.theta, 1000, inv, &a) == 0, "%s", tl_error());
    ck_assert_msg(fabs(inv[1] - 0.4948188) <= 1e-6, "seq_len 1000: pair 1 is %.9g; by hand "
                  "77421.27^(-2/32) = 0.4948188", inv[1]);
    ck_assert_msg(a == 1.0, "dynamic's attention factor is %g, not 1", a);
    assert_inv(inv, fx, "dynamic.seq1000.inv_freq", test, "seq_len 1000");
    ck_assert_int_eq(rope_inv_freq_scaled(&cfg, 32, cfg.theta, 300, inv, &a), 0);
    assert_inv(inv, fx, "dynamic.seq300.inv_freq", test, "seq_len 300");
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_dynamic_update_rule_matches_hf)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load("L7.4/rope_scaling.safetensors");
    RopeConfig cfg;
    ck_assert_msg(rope_config_from_json(DYNAMIC, &cfg) == 0, "%s", tl_error());
    const int64_t lengths[7] = {100, 300, 280, 500, 256, 100, 300};
    int64_t cached = 0;
    for (int k = 0; k < 7; k++) {
        int64_t use = rope_update_seq_len(&cfg, lengths[k], &cached);
        ck_assert_msg(use >= 0, "rope_update_seq_len: %s", tl_error());
        char key[128], name[64], what[160];
        snprintf(key, sizeof key, "values.dynamic.max_seq_len_cached.update%d", k);
        double want = tl_fixture_number("L7.4/rope_scaling.json", key);
        ck_assert_msg(cached == (int64_t)want, "forward %d (length %lld): max_seq_len_cached is "
                      "%lld; HF's is %.0f", k, (long long)lengths[k], (long long)cached, want);
        RopeSpec spec;
        ck_assert_msg(rope_spec_from_config(&spec, &cfg, 32, ROPE_HALF, use) == 0, "%s",
                      tl_error());
        snprintf(name, sizeof name, "dynamic.update%d.inv_freq", k);
        snprintf(what, sizeof what, "the frequencies in use after forward %d (length %lld)", k,
                 (long long)lengths[k]);
        assert_inv(spec.inv_freq, fx, name, "test_dynamic_update_rule_matches_hf", what);
    }
    /* Types whose frequencies never change. */
    RopeConfig other = cfg;
    other.type = ROPE_TYPE_LINEAR;
    cached = 0;
    ck_assert_msg(rope_update_seq_len(&other, 5000, &cached) == 0,
                  "linear's frequencies never change: rope_update_seq_len must return 0");
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
