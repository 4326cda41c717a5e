/* L7.4 unit: YaRN's worked values (hf-numerics.md section 4). gpt-oss (factor 32, no
 * mscale) has a = 0.1 ln 32 + 1 = 1.3465735902799727; DeepSeek-V3 (factor 40, mscale =
 * mscale_all_dim = 1) has a = 1, and its correction dims 10.47 and 22.51 truncate to
 * low 10, high 23: pairs 0..10 keep their frequency (extrapolation), pairs 23..31 are
 * divided by the factor (interpolation), the ones between blend. gpt-oss does not
 * truncate (8.09 and 17.40). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include "tinyllm/testing.h"
#include "tinyllm/modern/rope_scaling.h"

static const char *DEEPSEEK_V3 =
    "{\"model_type\": \"deepseek_v3\", \"hidden_size\": 7168, \"num_attention_heads\": 128,"
    " \"qk_rope_head_dim\": 64, \"max_position_embeddings\": 163840, \"rope_theta\": 10000,"
    " \"rope_scaling\": {\"beta_fast\": 32, \"beta_slow\": 1, \"factor\": 40, \"mscale\": 1.0,"
    " \"mscale_all_dim\": 1.0, \"original_max_position_embeddings\": 4096, \"type\": \"yarn\"}}";
static const char *GPT_OSS =
    "{\"model_type\": \"gpt_oss\", \"head_dim\": 64, \"num_attention_heads\": 64,"
    " \"hidden_size\": 2880, \"max_position_embeddings\": 131072, \"rope_theta\": 150000,"
    " \"rope_scaling\": {\"beta_fast\": 32.0, \"beta_slow\": 1.0, \"factor\": 32.0,"
    " \"original_max_position_embeddings\": 4096, \"rope_type\": \"yarn\", \"truncate\": false}}";

static double tol(const char *which) {
    char key[96];
    snprintf(key, sizeof key, "tolerances.test_yarn_worked_values.%s", which);
    return tl_fixture_number("L7.4/rope_scaling.json", key);
}

static void assert_near(double got, double want, const char *what) {
    ck_assert_msg(fabs(got - want) <= tol("atol") + tol("rtol") * fabs(want),
                  "%s: %.17g, expected %.17g", what, got, want);
}

START_TEST(test_yarn_worked_values)
{
    RopeConfig oss, ds;
    ck_assert_msg(rope_config_from_json(GPT_OSS, &oss) == 0, "gpt-oss: %s", tl_error());
    ck_assert_msg(rope_config_from_json(DEEPSEEK_V3, &ds) == 0, "DeepSeek-V3: %s", tl_error());
    float inv[32], plain[32];
    double a, low, high;

    ck_assert_msg(rope_inv_freq_scaled(&oss, 64, oss.theta, 0, inv, &a) == 0, "%s", tl_error());
    assert_near(a, 1.3465735902799727, "gpt-oss attention factor 0.1 ln 32 + 1");
    ck_assert_msg(rope_yarn_correction_range(&oss, 64, oss.theta, &low, &high) == 0, "%s",
                  tl_error());
    assert_near(low, tl_fixture_number("L7.4/rope_scaling.json",
                                       "values.yarn_gpt_oss.correction_low"),
                "gpt-oss correction low (truncate false: 8.0928...)");
    assert_near(high, tl_fixture_number("L7.4/rope_scaling.json",
                                        "values.yarn_gpt_oss.correction_high"),
                "gpt-oss correction high (truncate false: 17.398...)");
    oss.truncate = true;                       /* what the default would give */
    ck_assert_int_eq(rope_yarn_correction_range(&oss, 64, oss.theta, &low, &high), 0);
    assert_near(low, 8, "gpt-oss's range truncated: floor(8.09)");
    assert_near(high, 18, "gpt-oss's range truncated: ceil(17.40)");

    ck_assert_msg(rope_inv_freq_scaled(&ds, 64, ds.theta, 0, inv, &a) == 0, "%s", tl_error());
    assert_near(a, 1.0, "DeepSeek-V3 attention factor g(40, 1) / g(40, 1)");
    ck_assert_msg(rope_yarn_correction_range(&ds, 64, ds.theta, &low, &high) == 0, "%s",
                  tl_error());
    assert_near(low, 10, "DeepSeek-V3 correction low floor(10.47)");
    assert_near(high, 23, "DeepSeek-V3 correction high ceil(22.51)");
    /* The ramp: extrapolation (the plain frequency) up to pair 10, interpolation from 23. */
    RopeConfig plain_cfg = ds;
    plain_cfg.type = ROPE_TYPE_DEFAULT;
    ck_assert_int_eq(rope_inv_freq_scaled(&plain_cfg, 64, ds.theta, 0, plain, &a), 0);
    for (int i = 0; i < 32; i++) {
        if (i <= 10)
            ck_assert_msg(fabsf(inv[i] - plain[i]) <= 1e-6f * plain[i], "pair %d (<= low 10) "
                          "must keep its frequency %.9g, not %.9g", i, plain[i], inv[i]);
        else if (i >= 23)
            ck_assert_msg(fabsf(inv[i] * 40.0f - plain[i]) <= 1e-6f * plain[i],
                          "pair %d (>= high 23) must be divided by the factor 40: %.9g vs %.9g",
                          i, inv[i], plain[i] / 40.0f);
        else
            ck_assert_msg(inv[i] < plain[i] && inv[i] > plain[i] / 40.0f,
                          "pair %d (between 10 and 23) must blend: %.9g not in (%.9g, %.9g)", i,
                          inv[i], plain[i] / 40.0f, plain[i]);
    }
}
END_TEST
