/* My error tests: bad arguments fail with a message, never a crash. */
#include <check.h>
#include <math.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rope.h"

START_TEST(my_bad_arguments_are_refused)
{
    tl_scope_push();
    RopeSpec s;
    ck_assert_int_eq(rope_spec_init(&s, 8, 7, 10000.0, ROPE_HALF), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "rotary_dim"));
    tl_clear_error();
    ck_assert_int_eq(rope_spec_init(&s, 8, 10, 10000.0, ROPE_HALF), -1);
    tl_clear_error();
    ck_assert_int_eq(rope_spec_init(&s, 8, 8, NAN, ROPE_HALF), -1);
    tl_clear_error();
    ck_assert_int_eq(rope_spec_init(&s, 8, 8, 10000.0, ROPE_HALF), 0);
    tl_assert_error(rope_apply(&s, tl_ones(TL_F32, TL_SHAPE(1, 2, 1, 6)), tl_arange(0, 2)),
                    "[1, 2, 1, 6]");
    tl_assert_error(rope_apply(&s, tl_ones(TL_F32, TL_SHAPE(1, 2, 1, 8)), tl_arange(0, 3)),
                    "rope_apply");
    tl_assert_error(rope_apply(&s, NULL, tl_arange(0, 3)), "rope_apply");
    tl_assert_error(rope_permute_for_half(tl_ones(TL_F32, TL_SHAPE(12, 2)), 5, 2),
                    "rope_permute_for_half");
    tl_scope_pop();
}
END_TEST
