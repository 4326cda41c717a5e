/* L7.4 golden and boundary: longrope switches from short_factor to long_factor when the
 * sequence is LONGER than original_max_position_embeddings (4096 for Phi-3-mini-128k):
 * at 4096 the short factors still apply, at 4097 the long ones. The attention factor,
 * sqrt(1 + ln 32 / ln 4096) = 1.1902380714238083, does not switch. Phi-3 keeps the
 * original length at the top level of config.json. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include "tinyllm/testing.h"
#include "tinyllm/modern/rope_scaling.h"

static RopeConfig load_phi3(void) {
    FILE *f = fopen(tl_fixture_path("L7.4/config.longrope_phi3.json"), "rb");
    ck_assert_msg(f != NULL, "cannot open the fixture config.longrope_phi3.json");
    static char text[16384];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    RopeConfig cfg;
    ck_assert_msg(rope_config_from_json(text, &cfg) == 0, "rope_config_from_json: %s",
                  tl_error());
    return cfg;
}

START_TEST(test_longrope_switch_at_original)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load("L7.4/rope_scaling.safetensors");
    const char *json = "L7.4/rope_scaling.json";
    double rtol = tl_fixture_number(json, "tolerances.test_longrope_switch_at_original.rtol");
    double atol = tl_fixture_number(json, "tolerances.test_longrope_switch_at_original.atol");
    RopeConfig cfg = load_phi3();
    ck_assert_msg(cfg.original_max_position_embeddings == 4096 && cfg.n_factors == 48,
                  "Phi-3: original_max_position_embeddings %lld (the top-level key, 4096), %d "
                  "factors (96 / 2 = 48)", (long long)cfg.original_max_position_embeddings,
                  cfg.n_factors);
    const struct { int64_t seq; const char *which; } AT[] = {
        {0, "short (initialisation)"}, {4096, "short (seq_len = original, not longer)"},
        {4097, "long (one past the original)"}, {10000, "long"},
    };
    int64_t cached = 0;
    for (int k = 0; k < 4; k++) {
        int64_t use = AT[k].seq == 0 ? 0 : rope_update_seq_len(&cfg, AT[k].seq, &cached);
        ck_assert_msg(use >= 0, "rope_update_seq_len: %s", tl_error());
        float inv[48];
        double a;
        ck_assert_msg(rope_inv_freq_scaled(&cfg, 96, cfg.theta, use, inv, &a) == 0, "%s",
                      tl_error());
        char name[64], msg[768];
        snprintf(name, sizeof name, "longrope_phi3.seq%lld.inv_freq", (long long)AT[k].seq);
        int64_t half = 48;
        ck_assert_msg(tl_close_report(tl_from_f32(inv, 1, &half), tl_fixture_tensor(fx, name),
                                      rtol, atol, msg, sizeof msg),
                      "seq_len %lld must use the %s factors: %s", (long long)AT[k].seq,
                      AT[k].which, msg);
        ck_assert_msg(fabs(a - 1.1902380714238083) <= 1e-12, "seq_len %lld: attention factor "
                      "%.17g; sqrt(1 + ln 32 / ln 4096) = 1.1902380714238083",
                      (long long)AT[k].seq, a);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
