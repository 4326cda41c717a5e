/* L7.4 property: the 4.x form of a configuration (top-level rope_theta, rope_scaling
 * keyed by "type" or by "rope_type") and its 5.x form (rope_parameters with rope_theta
 * inside) are the same configuration: for every rope type, all three parse to the same
 * type, base and lengths, and give bit-identical frequencies and attention factors at
 * every sequence length. */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "tinyllm/modern/rope_scaling.h"

/* One configuration per type: its parameters as JSON members (besides the type). */
static const struct { const char *type; const char *params; int64_t dim; } TYPES[] = {
    {"default", "", 64},
    {"linear", "\"factor\": 4.0", 64},
    {"dynamic", "\"factor\": 3.0", 64},
    {"yarn", "\"factor\": 16.0, \"beta_fast\": 24, \"mscale\": 0.8, \"mscale_all_dim\": 0.5,"
             " \"original_max_position_embeddings\": 1024, \"truncate\": false", 64},
    {"longrope", "\"short_factor\": [1.0, 1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.07],"
                 " \"long_factor\": [1.5, 2, 3, 5, 8, 13, 21, 34],"
                 " \"original_max_position_embeddings\": 1024", 16},
    {"llama3", "\"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0,"
               " \"original_max_position_embeddings\": 1024", 64},
};
static const int64_t SEQ_LENS[] = {0, 1, 1024, 1025, 4096, 9000};

/* form 0: 4.x "type", 1: 4.x "rope_type", 2: 5.x rope_parameters. */
static void write_form(char *buf, size_t size, int form, int t) {
    int64_t hidden = TYPES[t].dim * 4;
    const char *sep = TYPES[t].params[0] ? ", " : "";
    if (form == 2)
        snprintf(buf, size, "{\"hidden_size\": %lld, \"num_attention_heads\": 4, "
                 "\"max_position_embeddings\": 4096, \"rope_parameters\": {\"rope_type\": \"%s\", "
                 "\"rope_theta\": 50000.0%s%s}}", (long long)hidden, TYPES[t].type, sep,
                 TYPES[t].params);
    else if (t == 0)     /* 4.x default: no rope_scaling at all */
        snprintf(buf, size, "{\"hidden_size\": %lld, \"num_attention_heads\": 4, "
                 "\"max_position_embeddings\": 4096, \"rope_theta\": 50000.0, "
                 "\"rope_scaling\": null}", (long long)hidden);
    else
        snprintf(buf, size, "{\"hidden_size\": %lld, \"num_attention_heads\": 4, "
                 "\"max_position_embeddings\": 4096, \"rope_theta\": 50000.0, "
                 "\"rope_scaling\": {\"%s\": \"%s\"%s%s}}", (long long)hidden,
                 form == 0 ? "type" : "rope_type", TYPES[t].type, sep, TYPES[t].params);
}

START_TEST(test_both_config_forms_agree)
{
    static const char *FORMS[3] = {"4.x rope_scaling with \"type\"",
                                   "4.x rope_scaling with \"rope_type\"",
                                   "5.x rope_parameters"};
    for (size_t t = 0; t < sizeof TYPES / sizeof TYPES[0]; t++) {
        RopeConfig cfg[3];
        char text[1024];
        for (int form = 0; form < 3; form++) {
            write_form(text, sizeof text, form, (int)t);
            ck_assert_msg(rope_config_from_json(text, &cfg[form]) == 0, "%s, %s: %s\n  %s",
                          TYPES[t].type, FORMS[form], tl_error(), text);
            ck_assert_msg(strcmp(rope_type_name(cfg[form].type), TYPES[t].type) == 0,
                          "%s parsed as rope type '%s', not '%s' (%s)", FORMS[form],
                          rope_type_name(cfg[form].type), TYPES[t].type,
                          tl_error() ? tl_error() : "");
            ck_assert_msg(cfg[form].theta == 50000.0, "%s, %s: rope_theta %g, not 50000",
                          TYPES[t].type, FORMS[form], cfg[form].theta);
        }
        for (size_t s = 0; s < sizeof SEQ_LENS / sizeof SEQ_LENS[0]; s++) {
            float inv[3][TL_ROPE_MAX_FREQS];
            double a[3];
            for (int form = 0; form < 3; form++)
                ck_assert_msg(rope_inv_freq_scaled(&cfg[form], TYPES[t].dim, cfg[form].theta,
                                                   SEQ_LENS[s], inv[form], &a[form]) == 0,
                              "%s, %s, seq_len %lld: %s", TYPES[t].type, FORMS[form],
                              (long long)SEQ_LENS[s], tl_error());
            for (int form = 1; form < 3; form++) {
                ck_assert_msg(memcmp(inv[0], inv[form], sizeof(float) * (size_t)(TYPES[t].dim / 2))
                              == 0 && a[0] == a[form],
                              "%s at seq_len %lld: %s and %s give different frequencies or "
                              "attention factors (%.9g vs %.9g for pair 1; a %.17g vs %.17g)",
                              TYPES[t].type, (long long)SEQ_LENS[s], FORMS[0], FORMS[form],
                              inv[0][1], inv[form][1], a[0], a[form]);
            }
        }
    }
}
END_TEST
