/* My config tests: both forms agree; which key wins. */
#include <check.h>
#include <math.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "tinyllm/modern/rope_scaling.h"

static RopeConfig parse(const char *json) {
    RopeConfig c;
    ck_assert_msg(rope_config_from_json(json, &c) == 0, "%s", tl_error());
    return c;
}

static void same(const RopeConfig *a, const RopeConfig *b, int64_t dim) {
    float x[64], y[64];
    double fa, fb;
    const int64_t seqs[3] = {0, 500, 5000};
    for (int s = 0; s < 3; s++) {
        ck_assert_int_eq(rope_inv_freq_scaled(a, dim, a->theta, seqs[s], x, &fa), 0);
        ck_assert_int_eq(rope_inv_freq_scaled(b, dim, b->theta, seqs[s], y, &fb), 0);
        ck_assert_msg(memcmp(x, y, sizeof(float) * (size_t)(dim / 2)) == 0 && fa == fb,
                      "the two forms differ at seq_len %lld", (long long)seqs[s]);
    }
}

START_TEST(my_forms_agree)
{
    RopeConfig a = parse("{\"max_position_embeddings\": 4096, \"rope_theta\": 20000,"
                         " \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 8,"
                         " \"original_max_position_embeddings\": 512}}");
    RopeConfig b = parse("{\"max_position_embeddings\": 4096, \"rope_parameters\":"
                         " {\"rope_type\": \"yarn\", \"factor\": 8, \"rope_theta\": 20000,"
                         " \"original_max_position_embeddings\": 512}}");
    ck_assert_int_eq(a.type, ROPE_TYPE_YARN);
    ck_assert_int_eq(b.type, ROPE_TYPE_YARN);
    same(&a, &b, 32);
    RopeConfig c = parse("{\"max_position_embeddings\": 400, \"rope_theta\": 20000,"
                         " \"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2}}");
    RopeConfig d = parse("{\"max_position_embeddings\": 400, \"rope_parameters\":"
                         " {\"rope_type\": \"dynamic\", \"factor\": 2, \"rope_theta\": 20000}}");
    same(&c, &d, 32);
}
END_TEST

START_TEST(my_which_key_wins)
{
    RopeConfig c = parse("{\"rope_theta\": 1000, \"rope_parameters\": {\"rope_theta\": 3000}}");
    ck_assert_double_eq(c.theta, 3000);
    c = parse("{\"model_type\": \"mixtral\"}");
    ck_assert_double_eq(c.theta, 1e6);
    c = parse("{\"max_position_embeddings\": 131072, \"original_max_position_embeddings\": 4096,"
              " \"rope_scaling\": {\"type\": \"longrope\", \"short_factor\": [1, 1],"
              " \"long_factor\": [4, 4]}}");
    ck_assert_int_eq(c.original_max_position_embeddings, 4096);
    int64_t cached = 0;
    ck_assert_int_eq(rope_update_seq_len(&c, 4096, &cached), 0);
    ck_assert_int_eq(rope_update_seq_len(&c, 4097, &cached), 4097);
    c = parse("{\"max_position_embeddings\": 2048, \"rope_scaling\": {\"rope_type\": \"llama3\","
              " \"factor\": 8, \"low_freq_factor\": 1, \"high_freq_factor\": 4}}");
    ck_assert_int_eq(c.original_max_position_embeddings, 2048);
}
END_TEST
