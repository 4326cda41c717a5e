/* L7.4 unit: the standardisation rules of transformers 5's RotaryEmbeddingConfigMixin,
 * one at a time: which dict applies, which key names the type, where rope_theta and
 * the original length come from, and the defaults. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "tinyllm/modern/rope_scaling.h"

static RopeConfig parse(const char *json) {
    RopeConfig cfg;
    ck_assert_msg(rope_config_from_json(json, &cfg) == 0, "rope_config_from_json: %s\n  %s",
                  tl_error(), json);
    return cfg;
}

#define expect(cond, ...) ck_assert_msg(cond, __VA_ARGS__)

START_TEST(test_config_standardisation_rules)
{
    RopeConfig c;
    /* No rope keys at all: default, theta 10000; Mixtral's class defaults to 1e6. */
    c = parse("{\"hidden_size\": 64, \"num_attention_heads\": 4}");
    expect(c.type == ROPE_TYPE_DEFAULT && c.theta == 10000.0 && c.head_dim == 16 &&
           c.partial_rotary_factor == 1.0,
           "an empty config: type %d, theta %g (10000), head_dim %lld (64 / 4), prf %g",
           (int)c.type, c.theta, (long long)c.head_dim, c.partial_rotary_factor);
    c = parse("{\"model_type\": \"mixtral\", \"rope_scaling\": null}");
    expect(c.theta == 1e6, "Mixtral without rope_theta: %g, its default is 1e6", c.theta);
    /* rope_scaling wins when it is a non-empty object; {} and null fall through. */
    c = parse("{\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2},"
              " \"rope_parameters\": {\"rope_type\": \"default\"}}");
    expect(c.type == ROPE_TYPE_LINEAR && c.factor == 2, "rope_scaling must win over "
           "rope_parameters (type %d)", (int)c.type);
    c = parse("{\"rope_scaling\": {}, \"rope_parameters\": {\"rope_type\": \"linear\","
              " \"factor\": 3, \"rope_theta\": 7000}}");
    expect(c.type == ROPE_TYPE_LINEAR && c.factor == 3 && c.theta == 7000,
           "an empty rope_scaling falls through to rope_parameters (type %d, theta %g)",
           (int)c.type, c.theta);
    /* "rope_type" wins over "type"; the dict's rope_theta over the top level's. */
    c = parse("{\"rope_theta\": 1000, \"rope_scaling\": {\"type\": \"linear\", \"rope_type\":"
              " \"dynamic\", \"factor\": 2, \"rope_theta\": 2000},"
              " \"max_position_embeddings\": 64}");
    expect(c.type == ROPE_TYPE_DYNAMIC && c.theta == 2000, "rope_type over type, the dict's "
           "rope_theta over the top level's: type %d, theta %g", (int)c.type, c.theta);
    c = parse("{\"rope_theta\": 1000, \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2}}");
    expect(c.type == ROPE_TYPE_LINEAR && c.theta == 1000, "4.x: type 'linear', the top-level "
           "rope_theta: type %d, theta %g", (int)c.type, c.theta);
    /* original_max_position_embeddings: the top level (Phi-3) > the dict > max_position. */
    c = parse("{\"max_position_embeddings\": 9000, \"rope_scaling\": {\"type\": \"yarn\","
              " \"factor\": 2}}");
    expect(c.original_max_position_embeddings == 9000, "yarn without an original length: "
           "%lld, it defaults to max_position_embeddings 9000",
           (long long)c.original_max_position_embeddings);
    c = parse("{\"max_position_embeddings\": 9000, \"original_max_position_embeddings\": 1000,"
              " \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 2,"
              " \"original_max_position_embeddings\": 3000}}");
    expect(c.original_max_position_embeddings == 1000, "a top-level original length wins (Phi-3):"
           " %lld, not 1000", (long long)c.original_max_position_embeddings);
    c = parse("{\"max_position_embeddings\": 9000, \"rope_scaling\": {\"type\": \"yarn\","
              " \"factor\": 2, \"original_max_position_embeddings\": 3000}}");
    expect(c.original_max_position_embeddings == 3000, "the dict's original length: %lld",
           (long long)c.original_max_position_embeddings);
    /* Phi3Config's backward compatibility: "su" and "yarn" are longrope for model_type phi3
     * (early Phi-3-*-128k files), and only there. */
    const char *early[2] = {"su", "yarn"};
    for (int k = 0; k < 2; k++) {
        char json[320];
        snprintf(json, sizeof json, "{\"model_type\": \"phi3\", \"max_position_embeddings\": 64,"
                 " \"original_max_position_embeddings\": 32, \"rope_scaling\": {\"type\": \"%s\","
                 " \"short_factor\": [1, 1], \"long_factor\": [2, 2]}}", early[k]);
        c = parse(json);
        expect(c.type == ROPE_TYPE_LONGROPE && c.n_factors == 2 && c.long_factor[1] == 2.0f,
               "Phi-3's \"%s\" is longrope: type %d, %d factors", early[k], (int)c.type,
               c.n_factors);
    }
    RopeConfig su;
    expect(rope_config_from_json("{\"rope_scaling\": {\"type\": \"su\", \"short_factor\":"
                                 " [1, 1], \"long_factor\": [2, 2]}}", &su) == -1 && tl_error() &&
           strstr(tl_error(), "su"), "\"su\" outside Phi-3 is an unknown rope type");
    tl_clear_error();
    /* YaRN's defaults: beta 32 and 1 (also for 0 or null: HF's `or`), truncate true. */
    c = parse("{\"max_position_embeddings\": 8, \"rope_scaling\": {\"type\": \"yarn\","
              " \"factor\": 2, \"beta_fast\": 0, \"beta_slow\": null}}");
    expect(c.beta_fast == 32 && c.beta_slow == 1 && c.truncate && c.mscale == 0 &&
           isnan(c.attention_factor), "yarn defaults: beta_fast %g (32), beta_slow %g (1), "
           "truncate %d (true), mscale %g (0), attention_factor %g (absent)", c.beta_fast,
           c.beta_slow, (int)c.truncate, c.mscale, c.attention_factor);
    c = parse("{\"max_position_embeddings\": 8, \"rope_scaling\": {\"type\": \"yarn\","
              " \"factor\": null, \"original_max_position_embeddings\": 2, \"truncate\": false}}");
    expect(isnan(c.factor) && !c.truncate, "yarn factor null stays absent (derived later) and "
           "truncate false is kept: factor %g, truncate %d", c.factor, (int)c.truncate);
    /* partial_rotary_factor: the top-level one wins; head_dim wins over hidden / heads. */
    c = parse("{\"head_dim\": 80, \"hidden_size\": 2560, \"num_attention_heads\": 16,"
              " \"partial_rotary_factor\": 0.4, \"rope_parameters\": {\"rope_type\": \"default\","
              " \"partial_rotary_factor\": 0.5}}");
    expect(c.partial_rotary_factor == 0.4 && c.head_dim == 80, "partial_rotary_factor %g (the "
           "top level's 0.4), head_dim %lld (80)", c.partial_rotary_factor,
           (long long)c.head_dim);
    const char *names[6] = {"default", "linear", "dynamic", "yarn", "longrope", "llama3"};
    for (int t = 0; t < 6; t++)
        expect(strcmp(rope_type_name((rope_type)t), names[t]) == 0, "rope_type_name(%d) is "
               "'%s', not '%s' (%s)", t, rope_type_name((rope_type)t), names[t],
               tl_error() ? tl_error() : "");
    expect(strcmp(rope_type_name((rope_type)17), "?") == 0, "an unknown type's name is '?'");
}
END_TEST
