/* My error tests: what HF refuses is refused, naming the key and the type. */
#include <check.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "tinyllm/modern/rope_scaling.h"

START_TEST(my_bad_configs_are_refused)
{
    RopeConfig c;
    ck_assert_int_eq(rope_config_from_json("{\"rope_scaling\": {\"type\": \"ntk\"}}", &c), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "ntk"));
    ck_assert_int_eq(rope_config_from_json("{\"rope_scaling\": {\"type\": \"linear\"}}", &c), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "factor"));
    ck_assert_int_eq(rope_config_from_json("{\"rope_scaling\": {\"type\": \"linear\","
                                           " \"factor\": 0.25}}", &c), -1);
    ck_assert_int_eq(rope_config_from_json("{\"head_dim\": 8, \"max_position_embeddings\": 9,"
                                           " \"rope_scaling\": {\"type\": \"longrope\","
                                           " \"short_factor\": [1], \"long_factor\": [1]}}", &c),
                     -1);
    ck_assert_int_eq(rope_config_from_json("not json", &c), -1);
}
END_TEST
