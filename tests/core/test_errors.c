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

/* Rule 1: a failure sets its own message, replacing an earlier one. */
START_TEST(a_failure_replaces_an_earlier_message)
{
    tl_clear_error();
    ck_assert_ptr_null(tl_fail("first %d", 1));
    ck_assert_str_eq(tl_error(), "first 1");
    ck_assert_ptr_null(tl_fail("second"));
    ck_assert_str_eq(tl_error(), "second");
    ck_assert_int_eq(tl_fail_status("third %s", "as a status"), -1);
    ck_assert_str_eq(tl_error(), "third as a status");
    tl_set_error("fourth");   /* the old name sets too */
    ck_assert_str_eq(tl_error(), "fourth");
    tl_clear_error();
    ck_assert_ptr_null(tl_error());
}
END_TEST

/* A caller adds context by formatting the lower message into its own. */
START_TEST(a_failure_may_quote_the_lower_message)
{
    tl_clear_error();
    tl_fail("lower: %s", "the cause");
    ck_assert_int_eq(tl_fail_status("upper: while loading: %s", tl_error()), -1);
    ck_assert_str_eq(tl_error(), "upper: while loading: lower: the cause");
    tl_clear_error();
}
END_TEST

/* Rule 2, as functions: a NULL input keeps the cause, or names itself. */
START_TEST(propagate_keeps_the_cause_or_names_the_input)
{
    tl_clear_error();
    tl_fail("the cause");
    ck_assert_ptr_null(tl_propagate("op: input 1 is NULL"));
    ck_assert_int_eq(tl_propagate_status("op: input 2 is NULL"), -1);
    ck_assert_str_eq(tl_error(), "the cause");
    tl_clear_error();
    ck_assert_int_eq(tl_propagate_status("op: input %d is NULL", 2), -1);
    ck_assert_str_eq(tl_error(), "op: input 2 is NULL");
    tl_clear_error();
    ck_assert_ptr_null(tl_propagate("op: input %d is NULL", 1));
    ck_assert_str_eq(tl_error(), "op: input 1 is NULL");
    tl_clear_error();
}
END_TEST

/* A message longer than the buffer is cut, never overrun. */
START_TEST(a_long_message_is_cut_at_1023_bytes)
{
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    tl_fail("%s", big);
    ck_assert_uint_eq(strlen(tl_error()), 1023);
    tl_fail("long: %s", tl_error());   /* quoting a full buffer is safe too */
    ck_assert_uint_eq(strlen(tl_error()), 1023);
    ck_assert(strncmp(tl_error(), "long: xxx", 9) == 0);
    tl_clear_error();
}
END_TEST

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

/* Rule 2 through a chain: the op that failed first is named, whatever ran
 * after it (here a successful tl_exp between the failure and its consumer),
 * and whatever the consumer returns (NULL, -1 or NaN). */
START_TEST(null_input_keeps_the_message_of_the_call_that_failed)
{
    tl_clear_error();
    const char *cause = "add: shapes [2, 3] and [4, 3] do not broadcast at axis 0 (2 vs 4); "
                        "sizes must match or be 1";
    tl_tensor *a = tl_ones(TL_F32, TL_SHAPE(2, 3)), *b = tl_ones(TL_F32, TL_SHAPE(4, 3));
    tl_tensor *bad = tl_add(a, b);   /* the cause */
    tl_tensor *ok = tl_exp(a);       /* a success in between */
    ck_assert_ptr_nonnull(ok);
    ck_assert_ptr_null(tl_sum_all(tl_mul(bad, ok)));
    ck_assert_str_eq(tl_error(), cause);
    ck_assert_int_eq(tl_copy_into(a, bad), -1);
    ck_assert_str_eq(tl_error(), cause);
    ck_assert(isnan(tl_item(bad)));
    ck_assert_str_eq(tl_error(), cause);
    ck_assert_int_eq(tl_dim(bad, 0), -1);
    ck_assert_str_eq(tl_error(), cause);
    /* An earlier failure, handled, does not stand in for a later cause. */
    ck_assert_ptr_null(tl_reshape(tl_narrow(a, 0, 1, 5), TL_SHAPE(3)));
    ck_assert(strstr(tl_error(), "narrow: elements 1..5 of axis 0 are out of range"));
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
    tl_assert_error(tl_exp(tl_arange(0, 3)),
                    "exp: tensor [3] is I64; arithmetic needs F32 or BF16");
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
