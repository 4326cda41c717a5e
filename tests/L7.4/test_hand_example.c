/* L7.4 section 3, by hand: Llama-3.1 (theta 500000, d = 128, factor 8, low_freq_factor 1,
 * high_freq_factor 4, original length 8192), one pair in each band. The bands are by
 * wavelength 2 pi / inv: longer than 8192 / 1 = 8192 tokens is slow (divided by 8),
 * shorter than 8192 / 4 = 2048 fast (unchanged), between blended.
 *
 *   pair  0: inv = 1,               wavelength 6.28     fast:  1
 *   pair 32: inv = 500000^-0.5      wavelength 4442.9   blend: s = (8192 / 4442.9 - 1) / 3
 *            = 0.00141421356                                   = 0.281283,
 *                                   inv' = (1 - s) inv / 8 + s inv = 0.000524846161
 *   pair 63: inv = 2.45514079e-06   wavelength 2.56e6   slow:  inv / 8 = 3.06892599e-07
 */
#include <check.h>
#include <math.h>
#include "tinyllm/testing.h"
#include "tinyllm/modern/rope_scaling.h"

static const char *LLAMA31 =
    "{\"model_type\": \"llama\", \"hidden_size\": 4096, \"num_attention_heads\": 32,"
    " \"max_position_embeddings\": 131072, \"rope_theta\": 500000.0,"
    " \"rope_scaling\": {\"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0,"
    " \"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"}}";

START_TEST(test_hand_example_llama31_bands)
{
    const char *json = "L7.4/rope_scaling.json";
    double rtol = tl_fixture_number(json, "tolerances.test_hand_example_llama31_bands.rtol");
    RopeConfig cfg;
    ck_assert_msg(rope_config_from_json(LLAMA31, &cfg) == 0, "rope_config_from_json: %s",
                  tl_error());
    ck_assert_msg(cfg.type == ROPE_TYPE_LLAMA3 && cfg.theta == 500000.0 && cfg.factor == 8.0 &&
                  cfg.original_max_position_embeddings == 8192 && cfg.head_dim == 128,
                  "Llama-3.1's config parsed to type %d, theta %g, factor %g, orig %lld, "
                  "head_dim %lld", (int)cfg.type, cfg.theta, cfg.factor,
                  (long long)cfg.original_max_position_embeddings, (long long)cfg.head_dim);
    float inv[64];
    double a = -1;
    ck_assert_msg(rope_inv_freq_scaled(&cfg, 128, cfg.theta, 0, inv, &a) == 0,
                  "rope_inv_freq_scaled: %s", tl_error());
    const struct { int pair; double want; const char *band; } HAND[] = {
        {0, 1.0, "fast (wavelength 6.28 < 2048): unchanged"},
        {32, 0.000524846161, "blended (2048 <= wavelength 4442.9 <= 8192)"},
        {63, 3.06892599e-07, "slow (wavelength 2.56e6 > 8192): divided by 8"},
    };
    for (int k = 0; k < 3; k++)
        ck_assert_msg(fabs(inv[HAND[k].pair] - HAND[k].want) <= rtol * HAND[k].want,
                      "pair %d, %s: inv_freq %.9g, by hand %.9g", HAND[k].pair, HAND[k].band,
                      inv[HAND[k].pair], HAND[k].want);
    ck_assert_msg(a == 1.0, "llama3's attention factor is %g; it is always 1", a);
}
END_TEST
