/* My dynamic NTK tests: HF's update rule, forward after forward. */
#include <check.h>
#include "tinyllm/testing.h"
#include "tinyllm/modern/rope_scaling.h"

START_TEST(my_dynamic_grows_keeps_and_resets)
{
    RopeConfig c;
    ck_assert_int_eq(rope_config_from_json("{\"max_position_embeddings\": 100, \"rope_scaling\":"
                                           " {\"type\": \"dynamic\", \"factor\": 2}}", &c), 0);
    int64_t cached = 0;
    ck_assert_int_eq(rope_update_seq_len(&c, 50, &cached), 0);     /* within: original */
    ck_assert_int_eq(rope_update_seq_len(&c, 150, &cached), 150);  /* grows */
    ck_assert_int_eq(rope_update_seq_len(&c, 120, &cached), 150);  /* keeps the longest */
    ck_assert_int_eq(rope_update_seq_len(&c, 100, &cached), 150);  /* 100 is not < 100 */
    ck_assert_int_eq(rope_update_seq_len(&c, 99, &cached), 0);     /* resets */
    ck_assert_int_eq(cached, 100);
}
END_TEST
