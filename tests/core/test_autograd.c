/* Autograd (autograd.h): what tl_backward promises, on graphs small enough
 * to differentiate by hand. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"

static tl_tensor *leaf(const float *v, int ndim, const int64_t *shape) {
    return tl_requires_grad(tl_from_f32(v, ndim, shape), true);
}

START_TEST(ops_on_a_leaf_record_a_node)
{
    tl_tensor *x = leaf((float[]){ 1, 2 }, TL_SHAPE(2));
    tl_tensor *c = tl_ones(TL_F32, TL_SHAPE(2));
    tl_tensor *y = tl_mul(x, c);
    ck_assert(y->requires_grad && y->grad_fn);
    tl_tensor *z = tl_mul(c, c);   /* nothing needs a gradient: nothing recorded */
    ck_assert(!z->requires_grad && !z->grad_fn);
}
END_TEST

START_TEST(no_grad_records_nothing)
{
    tl_tensor *x = leaf((float[]){ 1, 2 }, TL_SHAPE(2));
    ck_assert(tl_grad_enabled());
    tl_no_grad_push();
    tl_no_grad_push();
    ck_assert(!tl_grad_enabled());
    tl_tensor *y = tl_exp(tl_reshape(x, TL_SHAPE(1, 2)));
    tl_no_grad_pop();
    ck_assert(!tl_grad_enabled());   /* nested: still off */
    tl_no_grad_pop();
    ck_assert(tl_grad_enabled());
    ck_assert(!y->requires_grad && !y->grad_fn);
    tl_assert_ok(y);
    tl_clear_error();
    ck_assert_int_eq(tl_backward(tl_sum_all(y)), -1);
    ck_assert_ptr_nonnull(
        strstr(tl_error(), "does not depend on any tensor that requires a gradient"));
    tl_clear_error();
}
END_TEST

START_TEST(tensor_used_twice_gets_both_gradients)
{
    tl_tensor *x = leaf((float[]){ 3, -2 }, TL_SHAPE(2));
    ck_assert_int_eq(tl_backward(tl_sum_all(tl_mul(x, x))), 0);   /* d(x^2) = 2x */
    ck_assert(tl_item_at(x->grad, 0) == 6 && tl_item_at(x->grad, 1) == -4);
    tl_zero_grad(x);
    tl_tensor *a = tl_exp(x);   /* a diamond: y = a + a*x */
    ck_assert_int_eq(tl_backward(tl_sum_all(tl_add(a, tl_mul(a, x)))), 0);
    for (int i = 0; i < 2; i++) {   /* d/dx (e^x (1 + x)) = e^x (2 + x) */
        double v = tl_item_at(x, i);
        ck_assert_double_eq_tol(tl_item_at(x->grad, i), exp(v) * (2 + v), 1e-5 * exp(v) + 1e-6);
    }
}
END_TEST

START_TEST(leaf_gradients_accumulate_until_zero_grad)
{
    tl_tensor *x = leaf((float[]){ 1, 1 }, TL_SHAPE(2));
    tl_backward(tl_sum_all(tl_mul_scalar(x, 2)));
    tl_backward(tl_sum_all(tl_mul_scalar(x, 3)));
    ck_assert(tl_item_at(x->grad, 0) == 5);
    tl_zero_grad(x);
    ck_assert_ptr_null(x->grad);
    tl_backward(tl_sum_all(x));   /* the loss may be the leaf's own sum */
    ck_assert(tl_item_at(x->grad, 1) == 1);
}
END_TEST

START_TEST(owned_leaf_gets_an_owned_gradient)
{
    tl_tensor *w = tl_requires_grad(tl_tensor_new_owned(TL_F32, TL_SHAPE(3)), true);
    tl_scope_push();
    tl_backward(tl_sum_all(tl_add_scalar(w, 1)));
    tl_scope_pop();
    ck_assert(w->grad && w->grad->owned);
    ck_assert(tl_item_at(w->grad, 2) == 1);
    tl_zero_grad(w);   /* frees it */
    tl_scope_push();
    tl_backward(tl_sum_all(tl_mul_scalar(w, 4)));
    tl_scope_pop();
    ck_assert(tl_item_at(w->grad, 0) == 4);
    tl_tensor_free(w);   /* frees the gradient too */
}
END_TEST

START_TEST(broadcast_gradient_is_summed_to_the_input_shape)
{
    tl_tensor *x = leaf((float[]){ 1, 2, 3, 4, 5, 6 }, TL_SHAPE(2, 3));
    tl_tensor *b = leaf((float[]){ 10, 20, 30 }, TL_SHAPE(3));
    tl_tensor *s = leaf((float[]){ 2 }, TL_SHAPE(1, 1));
    ck_assert_int_eq(tl_backward(tl_sum_all(tl_mul(tl_add(x, b), s))), 0);
    ck_assert(tl_same_shape(b->grad, b) && tl_same_shape(s->grad, s));
    ck_assert(tl_item_at(b->grad, 0) == 4);   /* two rows, times s = 2 */
    ck_assert(tl_item_at(s->grad, 0) == 21 + 120);
}
END_TEST

START_TEST(backward_with_takes_an_upstream_gradient)
{
    tl_tensor *x = leaf((float[]){ 1, 2 }, TL_SHAPE(2));
    tl_tensor *y = tl_mul_scalar(x, 3);
    ck_assert_int_eq(tl_backward_with(y, tl_from_f32((float[]){ 1, -1 }, TL_SHAPE(2))), 0);
    ck_assert(tl_item_at(x->grad, 0) == 3 && tl_item_at(x->grad, 1) == -3);
    tl_clear_error();
    ck_assert_int_eq(tl_backward_with(y, tl_ones(TL_F32, TL_SHAPE(3))), -1);
    ck_assert_ptr_nonnull(
        strstr(tl_error(), "upstream gradient [3] does not match the output [2]"));
    tl_clear_error();
}
END_TEST

START_TEST(backward_needs_a_one_element_loss)
{
    tl_tensor *x = leaf((float[]){ 1, 2 }, TL_SHAPE(2));
    tl_clear_error();
    ck_assert_int_eq(tl_backward(tl_exp(x)), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "the loss [2] has 2 elements; it needs exactly one"));
    tl_clear_error();
    ck_assert_int_eq(tl_backward(NULL), -1);
    tl_clear_error();
}
END_TEST

START_TEST(detach_stops_the_gradient)
{
    tl_tensor *x = leaf((float[]){ 2 }, TL_SHAPE(1));
    tl_tensor *y = tl_mul(x, tl_detach(x));   /* d/dx (x * const) = const */
    tl_backward(tl_sum_all(y));
    ck_assert(tl_item_at(x->grad, 0) == 2);
}
END_TEST

START_TEST(requires_grad_is_for_float_leaves)
{
    tl_assert_error(tl_requires_grad(tl_arange(0, 3), true),
                    "only F32 and BF16 tensors have gradients");
    tl_tensor *x = leaf((float[]){ 1 }, TL_SHAPE(1));
    tl_assert_error(tl_requires_grad(tl_exp(x), false), "was made by exp");
    ck_assert_ptr_eq(tl_requires_grad(x, false), x);
    ck_assert(!x->requires_grad);
}
END_TEST

START_TEST(a_long_chain_does_not_overflow_the_stack)
{
    tl_scope_push();
    tl_tensor *x = leaf((float[]){ 1 }, TL_SHAPE(1));
    tl_tensor *y = x;
    for (int i = 0; i < 100000; i++) y = tl_add_scalar(y, 0.0);
    ck_assert_int_eq(tl_backward(tl_sum_all(y)), 0);
    ck_assert(tl_item_at(x->grad, 0) == 1);
    tl_scope_pop();
}
END_TEST

START_TEST(only_what_needs_a_gradient_gets_one)
{
    tl_tensor *x = leaf((float[]){ 1, 2 }, TL_SHAPE(2));
    tl_tensor *c = tl_from_f32((float[]){ 5, 6 }, TL_SHAPE(2));
    tl_backward(tl_sum_all(tl_mul(x, c)));
    ck_assert_ptr_null(c->grad);
    ck_assert(tl_item_at(x->grad, 1) == 6);
}
END_TEST

START_TEST(backward_leaves_recording_on)
{
    tl_tensor *x = leaf((float[]){ 1 }, TL_SHAPE(1));
    tl_backward(tl_sum_all(tl_exp(x)));
    ck_assert(tl_grad_enabled());
    ck_assert(x->grad && !x->grad->requires_grad && !x->grad->grad_fn);
}
END_TEST
