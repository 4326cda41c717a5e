/* My error tests: bad arguments fail with a useful message. */
#include <check.h>
#include <math.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"

START_TEST(my_bad_arguments_are_refused)
{
    tl_scope_push();
    RMSNorm n;
    ck_assert_int_eq(rmsnorm_init(&n, 8, -1e-5, false), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "eps"));
    tl_clear_error();
    ck_assert_int_eq(rmsnorm_init(&n, 8, NAN, false), -1);
    tl_clear_error();
    ck_assert_int_eq(rmsnorm_init(&n, 0, 1e-5, false), -1);
    tl_clear_error();
    ck_assert_int_eq(rmsnorm_init(&n, 8, 1e-5, false), 0);
    tl_assert_error(rmsnorm_forward(&n, tl_ones(TL_F32, TL_SHAPE(3, 7))), "[3, 7]");
    tl_assert_error(rmsnorm_forward(&n, NULL), "rmsnorm_forward");
    tl_assert_error(pre_norm_residual(tl_ones(TL_F32, TL_SHAPE(3, 8)), &n, NULL, NULL),
                    "pre_norm_residual");
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST

/* The contract: a weight that is not [dim] is refused, even when x matches
 * it. A [1, dim] weight would otherwise broadcast without a word. */
START_TEST(my_weight_that_is_not_dim_is_refused)
{
    tl_scope_push();
    RMSNorm n;
    ck_assert_int_eq(rmsnorm_init(&n, 8, 1e-5, false), 0);
    tl_tensor *mine = n.weight;
    n.weight = tl_tensor_new_owned(TL_F32, TL_SHAPE(1, 8));
    tl_assert_error(rmsnorm_forward(&n, tl_ones(TL_F32, TL_SHAPE(3, 8))), "rmsnorm_forward");
    tl_tensor_free(n.weight);
    n.weight = mine;
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST
