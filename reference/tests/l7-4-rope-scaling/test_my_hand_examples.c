/* My hand examples: frequencies and factors I worked on paper (section 3 and 2.x of
 * the chapter), compared with a relative tolerance. */
#include <check.h>
#include <math.h>
#include "tinyllm/testing.h"
#include "tinyllm/modern/rope_scaling.h"

static RopeConfig parse(const char *json) {
    RopeConfig c;
    ck_assert_msg(rope_config_from_json(json, &c) == 0, "%s", tl_error());
    return c;
}

static void near(double got, double want, double rtol, const char *what) {
    ck_assert_msg(fabs(got - want) <= rtol * fabs(want), "%s: %.9g, by hand %.9g", what, got,
                  want);
}

START_TEST(my_llama31_bands)
{
    RopeConfig c = parse("{\"hidden_size\": 4096, \"num_attention_heads\": 32, \"rope_theta\":"
                         " 500000.0, \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8,"
                         " \"low_freq_factor\": 1, \"high_freq_factor\": 4,"
                         " \"original_max_position_embeddings\": 8192}}");
    float inv[64];
    double a;
    ck_assert_int_eq(rope_inv_freq_scaled(&c, 128, c.theta, 0, inv, &a), 0);
    near(inv[0], 1.0, 1e-6, "pair 0, fast: unchanged");
    double w = 1 / sqrt(500000.0), wl = 2 * M_PI / w, s = (8192 / wl - 1) / 3;
    near(inv[32], (1 - s) * w / 8 + s * w, 1e-5, "pair 32, blended");
    near(inv[63], pow(500000.0, -126.0 / 128) / 8, 1e-5, "pair 63, slow: / 8");
    near(a, 1.0, 1e-12, "llama3's attention factor");
}
END_TEST

START_TEST(my_linear_and_dynamic)
{
    float inv[16];
    double a;
    RopeConfig lin = parse("{\"rope_theta\": 10000, \"rope_scaling\": {\"type\": \"linear\","
                           " \"factor\": 4}}");
    ck_assert_int_eq(rope_inv_freq_scaled(&lin, 32, lin.theta, 0, inv, &a), 0);
    near(inv[1], pow(10000.0, -2.0 / 32) / 4, 1e-6, "linear: pair 1 divided by 4");
    RopeConfig dyn = parse("{\"max_position_embeddings\": 256, \"rope_theta\": 10000,"
                           " \"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2}}");
    ck_assert_int_eq(rope_inv_freq_scaled(&dyn, 32, dyn.theta, 200, inv, &a), 0);
    near(inv[1], pow(10000.0, -2.0 / 32), 1e-6, "dynamic at 200 <= 256: the default");
    ck_assert_int_eq(rope_inv_freq_scaled(&dyn, 32, dyn.theta, 1000, inv, &a), 0);
    double base = 10000 * pow(2.0 * 1000 / 256 - 1, 32.0 / 30);
    near(inv[1], pow(base, -2.0 / 32), 1e-6, "dynamic at 1000: theta' = 10000 * 6.8125^(32/30)");
}
END_TEST

START_TEST(my_yarn_values)
{
    float inv[32], plain[32];
    double a, low, high;
    RopeConfig oss = parse("{\"max_position_embeddings\": 131072, \"rope_theta\": 150000,"
                           " \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 32,"
                           " \"original_max_position_embeddings\": 4096, \"truncate\": false}}");
    ck_assert_int_eq(rope_inv_freq_scaled(&oss, 64, oss.theta, 0, inv, &a), 0);
    near(a, 0.1 * log(32.0) + 1, 1e-12, "gpt-oss attention factor");
    ck_assert_int_eq(rope_yarn_correction_range(&oss, 64, oss.theta, &low, &high), 0);
    near(low, 64 * log(4096 / (32 * 2 * M_PI)) / (2 * log(150000.0)), 1e-12, "gpt-oss low");
    near(high, 64 * log(4096 / (2 * M_PI)) / (2 * log(150000.0)), 1e-12, "gpt-oss high");

    RopeConfig ds = parse("{\"max_position_embeddings\": 163840, \"rope_theta\": 10000,"
                          " \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 40, \"mscale\": 1,"
                          " \"mscale_all_dim\": 1, \"original_max_position_embeddings\": 4096}}");
    ck_assert_int_eq(rope_inv_freq_scaled(&ds, 64, ds.theta, 0, inv, &a), 0);
    near(a, 1.0, 1e-12, "DeepSeek-V3 attention factor");
    ck_assert_int_eq(rope_yarn_correction_range(&ds, 64, ds.theta, &low, &high), 0);
    near(low, 10, 1e-12, "DeepSeek-V3 low");
    near(high, 23, 1e-12, "DeepSeek-V3 high");
    for (int i = 0; i < 32; i++) plain[i] = (float)pow(10000.0, -2.0 * i / 64);
    near(inv[5], plain[5], 1e-6, "pair 5 < low: kept");
    near(inv[30], plain[30] / 40, 1e-6, "pair 30 > high: divided by 40");
}
END_TEST
