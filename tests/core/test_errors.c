/* The error model (tensor.h): a thread-local message, the first one kept,
 * NULL in gives NULL out, and shape errors that name op, shapes and axis. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "tinyllm/ops.h"
#include "tinyllm/testing.h"

START_TEST(no_error_reads_as_null)
{
    tl_clear_error();
    ck_assert_ptr_null(tl_error());
    tl_tensor *t = tl_add(tl_ones(TL_F32, TL_SHAPE(2)), tl_ones(TL_F32, TL_SHAPE(2)));
    tl_assert_ok(t);
    ck_assert_ptr_null(tl_error());   /* success leaves no message */
}
END_TEST

START_TEST(first_error_is_kept)
{
    tl_clear_error();
    ck_assert_ptr_null(tl_fail("first %d", 1));
    tl_fail("second");
    ck_assert_str_eq(tl_error(), "first 1");
    tl_set_error("context: %s", "replaced");   /* callers adding context overwrite */
    ck_assert_str_eq(tl_error(), "context: replaced");
    tl_clear_error();
    ck_assert_ptr_null(tl_error());
}
END_TEST

/* Issue 7's bug: a caller that checks a failure and recovers (without
 * tl_clear_error) must still see the message of the next, different failure,
 * whatever the failing call returns (NULL, -1 or NaN). */
START_TEST(a_handled_failure_does_not_hide_the_next_one)
{
    tl_clear_error();
    tl_tensor *a = tl_ones(TL_F32, TL_SHAPE(2, 3));
    ck_assert_ptr_null(tl_add(a, tl_ones(TL_F32, TL_SHAPE(4, 3))));   /* handled: go on */
    ck_assert_ptr_null(tl_reshape(a, TL_SHAPE(7, -1)));
    ck_assert_str_eq(tl_error(), "reshape: cannot view [2, 3] (6 elements) as [7, -1]");
    ck_assert_int_eq(tl_copy_into(a, tl_ones(TL_F32, TL_SHAPE(3, 2))), -1);
    ck_assert_str_eq(tl_error(), "tl_copy_into: destination [2, 3] and source [3, 2] differ in "
                                 "shape");
    ck_assert(isnan(tl_item(a)));
    ck_assert_str_eq(tl_error(), "tl_item: tensor [2, 3] has 6 elements, not one (use "
                                 "tl_item_at or tl_get)");
    tl_clear_error();
}
END_TEST

START_TEST(null_input_propagates_with_the_first_message)
{
    tl_clear_error();
    tl_tensor *a = tl_ones(TL_F32, TL_SHAPE(2, 3)), *b = tl_ones(TL_F32, TL_SHAPE(4, 3));
    tl_tensor *bad = tl_add(a, b);   /* the cause */
    tl_tensor *out = tl_sum_all(tl_exp(tl_mul(bad, a)));
    ck_assert_ptr_null(out);
    ck_assert_str_eq(tl_error(), "add: shapes [2, 3] and [4, 3] do not broadcast at axis 0 "
                                 "(2 vs 4); sizes must match or be 1");
    tl_clear_error();
}
END_TEST

START_TEST(null_input_without_a_cause_names_the_input)
{
    tl_assert_error(tl_mul(tl_ones(TL_F32, TL_SHAPE(1)), NULL), "mul: input 2 is NULL");
    tl_assert_error(tl_where(NULL, NULL, NULL), "where: input 1 is NULL");
    tl_assert_error(tl_reshape(NULL, TL_SHAPE(1)), "reshape: input 1 is NULL");
}
END_TEST

START_TEST(shape_error_names_op_shapes_and_axis)
{
    tl_tensor *a = tl_ones(TL_F32, TL_SHAPE(5, 2, 3)), *b = tl_ones(TL_F32, TL_SHAPE(4, 1));
    tl_assert_error(tl_sub(a, b), "sub: shapes [5, 2, 3] and [4, 1] do not broadcast at axis 1 "
                                  "(2 vs 4)");
    tl_assert_error(tl_sum(a, 3, false), "sum: axis 3 is out of range for shape [5, 2, 3]");
    tl_assert_error(tl_reshape(a, TL_SHAPE(7, -1)), "reshape: cannot view [5, 2, 3] (30 elements) "
                                                    "as [7, -1]");
}
END_TEST

START_TEST(integer_input_to_arithmetic_is_an_error)
{
    tl_assert_error(tl_exp(tl_arange(0, 3)), "exp: tensor [3] is I64; arithmetic needs F32 or BF16");
    tl_assert_error(tl_where(tl_ones(TL_F32, TL_SHAPE(1)), tl_scalar(1), tl_scalar(2)),
                    "where: mask [1] is F32; it must be BOOL");
}
END_TEST

static void *fail_in_thread(void *arg) {
    (void)arg;
    tl_fail("from another thread");
    return (void *)(tl_error() && strcmp(tl_error(), "from another thread") == 0 ? arg : NULL);
}

START_TEST(errors_are_per_thread)
{
    tl_clear_error();
    pthread_t th;
    int flag = 1;
    void *seen = NULL;
    ck_assert_int_eq(pthread_create(&th, NULL, fail_in_thread, &flag), 0);
    pthread_join(th, &seen);
    ck_assert_ptr_eq(seen, &flag);   /* the thread saw its own message */
    ck_assert_ptr_null(tl_error());  /* and this thread none */
}
END_TEST
