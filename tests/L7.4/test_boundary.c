/* L7.4 boundary: configurations HF refuses (an unknown rope type, a key the type
 * requires), values no formula can use (a factor below 1 or not a number, a longrope
 * list of the wrong length), and bad arguments fail with a message that names the key
 * and the rope type, and leave the RopeConfig zeroed. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "tinyllm/modern/rope_scaling.h"

static bool all_zero(const RopeConfig *c) {
    static const RopeConfig zero;
    return memcmp(c, &zero, sizeof zero) == 0;
}

/* json must be refused with a message holding every needle (up to three). */
static void refused(const char *json, const char *n1, const char *n2, const char *n3) {
    RopeConfig cfg;
    memset(&cfg, 0x5a, sizeof cfg);
    tl_clear_error();
    int rc = rope_config_from_json(json, &cfg);
    const char *e = tl_error() ? tl_error() : "(no message)";
    ck_assert_msg(rc == -1, "rope_config_from_json accepted %s; expected an error about '%s'",
                  json, n1);
    ck_assert_msg(strstr(e, n1) && strstr(e, n2) && strstr(e, n3), "rope_config_from_json(%s) "
                  "failed with '%s'; expected it to mention '%s', '%s' and '%s'", json, e, n1, n2,
                  n3);
    ck_assert_msg(all_zero(&cfg), "a refused config must leave *out zeroed (%s)", json);
}

START_TEST(test_boundary_unknown_type_and_missing_keys)
{
    refused("{\"rope_scaling\": {\"type\": \"su2\", \"factor\": 2}}", "su2", "yarn", "llama3");
    refused("{\"rope_parameters\": {\"rope_type\": \"proportional\"}}", "proportional",
            "unknown", "longrope");
    refused("{\"rope_scaling\": {\"type\": \"linear\"}}", "factor", "linear", "rope_config");
    refused("{\"max_position_embeddings\": 64, \"rope_scaling\": {\"rope_type\": \"dynamic\"}}",
            "factor", "dynamic", "");
    refused("{\"rope_scaling\": {\"rope_type\": \"yarn\", \"original_max_position_embeddings\":"
            " 8}}", "factor", "yarn", "");
    refused("{\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 1,"
            " \"original_max_position_embeddings\": 8192}}", "high_freq_factor", "llama3", "");
    refused("{\"hidden_size\": 64, \"num_attention_heads\": 4, \"max_position_embeddings\": 64,"
            " \"rope_scaling\": {\"type\": \"longrope\", \"long_factor\": [1, 1, 1, 1, 1, 1, 1, 1],"
            " \"original_max_position_embeddings\": 32}}", "short_factor", "longrope", "");
    refused("{\"rope_scaling\": {\"rope_type\": 7}}", "rope type", "string", "");
    refused("{\"rope_scaling\": \"yarn\"}", "rope_scaling", "object", "");
    /* transformers 5's one dict per layer type (Gemma 3): refused, not read as "default". */
    refused("{\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"linear\", \"factor\": 8,"
            " \"rope_theta\": 1e6}, \"sliding_attention\": {\"rope_type\": \"default\","
            " \"rope_theta\": 10000}}}", "full_attention", "layer type", "rope_parameters");
}
END_TEST

START_TEST(test_boundary_bad_values)
{
    /* A factor below 1 or not a number; factor null where nothing derives it. */
    refused("{\"rope_scaling\": {\"type\": \"linear\", \"factor\": 0.5}}", "factor", "0.5",
            "linear");
    refused("{\"rope_scaling\": {\"type\": \"linear\", \"factor\": \"4\"}}", "factor", "linear",
            "number");
    refused("{\"rope_scaling\": {\"type\": \"linear\", \"factor\": null}}", "factor", "null",
            "linear");
    refused("{\"rope_scaling\": {\"type\": \"yarn\", \"factor\": null,"
            " \"original_max_position_embeddings\": 1024}}", "factor",
            "max_position_embeddings", "yarn");
    refused("{\"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2}}",
            "max_position_embeddings", "dynamic", "");
    refused("{\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 4,"
            " \"high_freq_factor\": 4, \"original_max_position_embeddings\": 8192}}",
            "high_freq_factor", "low_freq_factor", "llama3");
    refused("{\"rope_theta\": 1e999}", "rope_theta", "finite", "");
    refused("{\"rope_theta\": -5}", "rope_theta", "-5", "");
    /* longrope lists: one number per rotated pair (head_dim 16: 8), both the same length. */
    refused("{\"hidden_size\": 64, \"num_attention_heads\": 4, \"max_position_embeddings\": 64,"
            " \"rope_scaling\": {\"type\": \"longrope\", \"short_factor\": [1, 1, 1],"
            " \"long_factor\": [2, 2, 2], \"original_max_position_embeddings\": 32}}", "3", "8",
            "longrope");
    refused("{\"max_position_embeddings\": 64, \"rope_scaling\": {\"type\": \"longrope\","
            " \"short_factor\": [1, 1], \"long_factor\": [2, 2, 2],"
            " \"original_max_position_embeddings\": 32}}", "short_factor", "long_factor", "3");
    refused("{\"max_position_embeddings\": 64, \"rope_scaling\": {\"type\": \"longrope\","
            " \"short_factor\": [1, \"x\"], \"long_factor\": [2, 2],"
            " \"original_max_position_embeddings\": 32}}", "short_factor", "longrope", "number");
    /* More pairs than a RopeSpec holds (TL_ROPE_MAX_FREQS): refused, not truncated. */
    static char big[8 * TL_ROPE_MAX_FREQS + 256];
    int n = snprintf(big, sizeof big, "{\"max_position_embeddings\": 64, \"rope_scaling\": "
                     "{\"type\": \"longrope\", \"original_max_position_embeddings\": 32, "
                     "\"short_factor\": [1");
    for (int i = 1; i <= TL_ROPE_MAX_FREQS; i++) n += snprintf(big + n, sizeof big - n, ", 1");
    n += snprintf(big + n, sizeof big - n, "], \"long_factor\": [2");
    for (int i = 1; i <= TL_ROPE_MAX_FREQS; i++) n += snprintf(big + n, sizeof big - n, ", 2");
    snprintf(big + n, sizeof big - n, "]}}");
    char most[16];
    snprintf(most, sizeof most, "%d", TL_ROPE_MAX_FREQS);
    refused(big, "short_factor", "longrope", most);
    /* Not a config at all. */
    refused("{\"rope_theta\": 10000,", "JSON", "byte", "");
    refused("[1, 2, 3]", "object", "config", "");
    RopeConfig cfg;
    tl_clear_error();
    ck_assert_msg(rope_config_from_json(NULL, &cfg) == -1 && tl_error(),
                  "a NULL text must be refused");
    ck_assert_msg(rope_config_from_json("{}", NULL) == -1, "a NULL RopeConfig must be refused");
}
END_TEST

START_TEST(test_boundary_bad_arguments)
{
    RopeConfig cfg;
    ck_assert_msg(rope_config_from_json("{\"max_position_embeddings\": 100, \"rope_scaling\":"
                                        " {\"type\": \"longrope\", \"short_factor\": [1, 1, 1, 1],"
                                        " \"long_factor\": [2, 2, 2, 2]}}", &cfg) == 0,
                  "rope_config_from_json: %s", tl_error());
    float inv[TL_ROPE_MAX_FREQS];
    double a;
    const struct { int64_t dim; double theta; int64_t seq; const char *needle; } BAD[] = {
        {7, 10000, 0, "dim"}, {0, 10000, 0, "dim"}, {2 * TL_ROPE_MAX_FREQS + 2, 10000, 0, "dim"},
        {8, 1.0, 0, "theta"}, {8, NAN, 0, "theta"}, {8, 10000, -1, "seq_len"},
        {16, 10000, 0, "longrope"},            /* 4 factors cannot serve 8 pairs */
    };
    for (size_t k = 0; k < sizeof BAD / sizeof BAD[0]; k++) {
        tl_clear_error();
        ck_assert_msg(rope_inv_freq_scaled(&cfg, BAD[k].dim, BAD[k].theta, BAD[k].seq, inv, &a)
                      == -1, "rope_inv_freq_scaled(dim %lld, theta %g, seq_len %lld) succeeded",
                      (long long)BAD[k].dim, BAD[k].theta, (long long)BAD[k].seq);
        ck_assert_msg(tl_error() && strstr(tl_error(), BAD[k].needle) &&
                      strstr(tl_error(), "rope_inv_freq_scaled"),
                      "rope_inv_freq_scaled failed with '%s'; expected it to mention '%s'",
                      tl_error() ? tl_error() : "(none)", BAD[k].needle);
    }
    ck_assert_int_eq(rope_inv_freq_scaled(NULL, 8, 10000, 0, inv, &a), -1);
    ck_assert_int_eq(rope_inv_freq_scaled(&cfg, 8, 10000, 0, NULL, &a), -1);
    ck_assert_int_eq(rope_inv_freq_scaled(&cfg, 8, 10000, 0, inv, NULL), -1);
    double low, high;
    tl_clear_error();
    ck_assert_msg(rope_yarn_correction_range(&cfg, 8, 10000, &low, &high) == -1 && tl_error() &&
                  strstr(tl_error(), "yarn"), "the correction range of a longrope config must be "
                  "refused, naming yarn (%s)", tl_error() ? tl_error() : "(none)");
    int64_t cached = 0;
    ck_assert_msg(rope_update_seq_len(&cfg, 0, &cached) == -1, "seq_len 0 must be refused");
    ck_assert_msg(rope_update_seq_len(&cfg, 5, NULL) == -1, "a NULL state must be refused");
    /* An odd rotary_dim from partial_rotary_factor: the spec refuses it and is zeroed. */
    RopeConfig partial;
    ck_assert_msg(rope_config_from_json("{\"partial_rotary_factor\": 0.3}", &partial) == 0, "%s",
                  tl_error());
    RopeSpec spec;
    tl_clear_error();
    ck_assert_msg(rope_spec_from_config(&spec, &partial, 10, ROPE_HALF, 0) == -1 && tl_error() &&
                  strstr(tl_error(), "rope_spec_from_config") && strstr(tl_error(), "3"),
                  "head_dim 10 * 0.3 = 3 features cannot pair up: '%s'",
                  tl_error() ? tl_error() : "(none)");
    ck_assert_msg(spec.rotary_dim == 0 && spec.head_dim == 0, "a failed rope_spec_from_config "
                  "must leave the spec zeroed");
}
END_TEST
