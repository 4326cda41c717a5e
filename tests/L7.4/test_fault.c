/* L7.4 fault: what a download or an editor can do to a config.json. Every prefix of a
 * real config (a file cut short), and the same text with one byte replaced by a
 * brace, a quote or a NUL at every position, is either refused with a message or
 * parsed; never a crash, a leak (the suite runs under ASan and valgrind) or a
 * half-filled RopeConfig. */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "tinyllm/modern/rope_scaling.h"

static const char *CONFIG =
    "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 4,"
    " \"max_position_embeddings\": 4096, \"rope_theta\": 500000.0, \"rope_scaling\":"
    " {\"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0,"
    " \"original_max_position_embeddings\": 1024, \"rope_type\": \"llama3\"}}";

static void check_one(const char *text, const char *what, size_t at) {
    RopeConfig cfg, zero;
    memset(&zero, 0, sizeof zero);
    tl_clear_error();
    int rc = rope_config_from_json(text, &cfg);
    if (rc == 0) {
        float inv[8];
        double a;
        ck_assert_msg(rope_inv_freq_scaled(&cfg, 16, cfg.theta, 0, inv, &a) == 0 ||
                      tl_error() != NULL, "%s at %zu: a parsed config the formulas cannot "
                      "use must say why", what, at);
        return;
    }
    ck_assert_msg(rc == -1 && tl_error() && strstr(tl_error(), "rope_config_from_json"),
                  "%s at byte %zu: returned %d with '%s'; a refusal is -1 with a message naming "
                  "rope_config_from_json", what, at, rc, tl_error() ? tl_error() : "(none)");
    ck_assert_msg(memcmp(&cfg, &zero, sizeof cfg) == 0, "%s at byte %zu: a refused config must "
                  "leave *out zeroed", what, at);
}

START_TEST(test_fault_truncated_and_corrupted_configs)
{
    RopeConfig cfg;
    ck_assert_msg(rope_config_from_json(CONFIG, &cfg) == 0, "the intact config: %s", tl_error());
    size_t n = strlen(CONFIG);
    char text[1024];
    ck_assert(n < sizeof text);
    for (size_t cut = 0; cut < n; cut++) {            /* every prefix: never valid JSON */
        memcpy(text, CONFIG, cut);
        text[cut] = '\0';
        RopeConfig c;
        tl_clear_error();
        ck_assert_msg(rope_config_from_json(text, &c) == -1 && tl_error(),
                      "the config cut after %zu bytes was accepted", cut);
    }
    const char replacements[3] = {'{', '"', '\0'};
    for (int r = 0; r < 3; r++)
        for (size_t at = 0; at < n; at++) {
            memcpy(text, CONFIG, n + 1);
            text[at] = replacements[r];
            check_one(text, r == 2 ? "a NUL" : r == 1 ? "a quote" : "a brace", at);
        }
}
END_TEST
