/* Broadcasting elementwise ops (ops.h): values by hand, NumPy broadcasting,
 * strided and BF16 inputs, and a gradcheck for each. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"

static tl_tensor *vec(int ndim, const int64_t *shape, const float *v) {
    return tl_from_f32(v, ndim, shape);
}

static void assert_values(const tl_tensor *t, const float *want, int n) {
    tl_assert_ok(t);
    ck_assert_int_eq(tl_numel(t), n);
    for (int i = 0; i < n; i++)
        ck_assert_msg(tl_item_at(t, i) == want[i], "element %d: %g, expected %g", i,
                      tl_item_at(t, i), want[i]);
}

START_TEST(same_shape_arithmetic)
{
    tl_tensor *a = vec(TL_SHAPE(2, 2), (float[]){ 1, 2, 3, 4 });
    tl_tensor *b = vec(TL_SHAPE(2, 2), (float[]){ 4, -2, 0.5f, 8 });
    assert_values(tl_add(a, b), (float[]){ 5, 0, 3.5f, 12 }, 4);
    assert_values(tl_sub(a, b), (float[]){ -3, 4, 2.5f, -4 }, 4);
    assert_values(tl_mul(a, b), (float[]){ 4, -4, 1.5f, 32 }, 4);
    assert_values(tl_div(a, b), (float[]){ 0.25f, -1, 6, 0.5f }, 4);
    assert_values(tl_minimum(a, b), (float[]){ 1, -2, 0.5f, 4 }, 4);
    assert_values(tl_maximum(a, b), (float[]){ 4, 2, 3, 8 }, 4);
}
END_TEST

/* Outputs of 2^16 elements and more are cut into pieces the threads share:
 * a prefill-sized add of a strided (transposed) operand and a broadcast row,
 * a mask-shaped broadcast over leading axes, and a flat product, each exact
 * by construction (small integers) and the same on 1 and 3 threads. */
static float at3(int64_t i, int64_t j, int64_t k) { return (float)((i * 7 + j * 3 + k) % 29); }

START_TEST(large_outputs_are_shared_among_threads_exactly)
{
    enum { I = 3, J = 130, K = 200 };   /* 78,000 elements: above the threshold */
    float *va = malloc(sizeof(float) * I * K * J), *vr = malloc(sizeof(float) * K);
    for (int64_t i = 0; i < I; i++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < J; j++) va[(i * K + k) * J + j] = at3(i, j, k);
    for (int64_t k = 0; k < K; k++) vr[k] = (float)(k % 5);
    tl_tensor *stored = tl_from_f32(va, TL_SHAPE(I, K, J));
    tl_tensor *a = tl_transpose(stored, 1, 2);            /* [I, J, K], strided */
    tl_tensor *row = tl_from_f32(vr, TL_SHAPE(K));
    tl_tensor *col = tl_reshape(tl_arange(0, J), TL_SHAPE(J, 1));
    tl_tensor *colf = tl_cast(col, TL_F32);
    const char *counts[] = {"1", "3"};
    tl_tensor *got[2][3];
    for (int c = 0; c < 2; c++) {
        setenv("TINYLLM_THREADS", counts[c], 1);
        got[c][0] = tl_add(a, row);
        got[c][1] = tl_mul(colf, a);                          /* [J, 1] over [I, J, K] */
        got[c][2] = tl_mul(tl_contiguous(a), tl_contiguous(a));   /* one long row */
        for (int k = 0; k < 3; k++) tl_assert_ok(got[c][k]);
    }
    unsetenv("TINYLLM_THREADS");
    for (int c = 0; c < 2; c++) {
        const float *s = tl_f32(got[c][0]), *m = tl_f32(got[c][1]), *q = tl_f32(got[c][2]);
        for (int64_t i = 0; i < I; i++)
            for (int64_t j = 0; j < J; j++)
                for (int64_t k = 0; k < K; k++) {
                    int64_t e = (i * J + j) * K + k;
                    float x = at3(i, j, k);
                    if (s[e] != x + (float)(k % 5) || m[e] != (float)j * x || q[e] != x * x)
                        ck_abort_msg("%s threads: element [%lld, %lld, %lld]: %g %g %g", counts[c],
                                     (long long)i, (long long)j, (long long)k, s[e], m[e], q[e]);
                }
    }
    free(va);
    free(vr);
}
END_TEST

START_TEST(broadcasting_aligns_trailing_axes)
{
    tl_tensor *m = vec(TL_SHAPE(2, 3), (float[]){ 1, 2, 3, 4, 5, 6 });
    tl_tensor *row = vec(TL_SHAPE(3), (float[]){ 10, 20, 30 });
    tl_tensor *col = vec(TL_SHAPE(2, 1), (float[]){ 100, 200 });
    tl_tensor *r = tl_add(m, row);
    assert_values(r, (float[]){ 11, 22, 33, 14, 25, 36 }, 6);
    assert_values(tl_add(row, col), (float[]){ 110, 120, 130, 210, 220, 230 }, 6);
    tl_tensor *outer = tl_mul(col, row);   /* [2, 1] x [3] -> [2, 3] */
    ck_assert_int_eq(outer->ndim, 2);
    assert_values(outer, (float[]){ 1000, 2000, 3000, 2000, 4000, 6000 }, 6);
    assert_values(tl_sub(m, tl_scalar(1)), (float[]){ 0, 1, 2, 3, 4, 5 }, 6);
    tl_tensor *big = tl_add(tl_ones(TL_F32, TL_SHAPE(2, 1, 3)), tl_ones(TL_F32, TL_SHAPE(4, 1)));
    ck_assert_int_eq(big->ndim, 3);
    ck_assert_int_eq(big->shape[1], 4);
}
END_TEST

START_TEST(strided_and_bf16_inputs_are_read_in_place)
{
    tl_tensor *m = vec(TL_SHAPE(2, 3), (float[]){ 1, 2, 3, 4, 5, 6 });
    tl_tensor *t = tl_transpose(m, 0, 1);   /* [[1, 4], [2, 5], [3, 6]] */
    assert_values(tl_mul(t, t), (float[]){ 1, 16, 4, 25, 9, 36 }, 6);
    tl_tensor *h = tl_cast(vec(TL_SHAPE(2), (float[]){ 1.5f, -3 }), TL_BF16);
    tl_tensor *s = tl_add(h, vec(TL_SHAPE(2), (float[]){ 1, 1 }));
    ck_assert_int_eq(s->dtype, TL_F32);   /* BF16 widens; results are F32 */
    assert_values(s, (float[]){ 2.5f, -2 }, 2);
    assert_values(tl_add(tl_narrow(m, 1, 1, 2), tl_narrow(m, 1, 0, 2)), (float[]){3, 5, 9, 11}, 4);
}
END_TEST

START_TEST(minimum_and_maximum_propagate_nan)
{
    tl_tensor *a = vec(TL_SHAPE(2), (float[]){ NAN, 1 });
    tl_tensor *b = vec(TL_SHAPE(2), (float[]){ 0, NAN });
    for (int i = 0; i < 2; i++) {
        ck_assert(isnan(tl_item_at(tl_minimum(a, b), i)));
        ck_assert(isnan(tl_item_at(tl_maximum(a, b), i)));
    }
}
END_TEST

START_TEST(where_selects_with_broadcast_condition)
{
    tl_tensor *cond = tl_cast(vec(TL_SHAPE(3), (float[]){ 1, 0, 1 }), TL_BOOL);
    tl_tensor *a = vec(TL_SHAPE(2, 3), (float[]){ 1, 2, 3, 4, 5, 6 });
    assert_values(tl_where(cond, a, tl_scalar(-1)), (float[]){ 1, -1, 3, 4, -1, 6 }, 6);
    tl_assert_error(tl_where(cond, a, tl_ones(TL_F32, TL_SHAPE(2))),
                    "where: shapes [2, 3] and [2]");
}
END_TEST

START_TEST(masked_fill_writes_value_where_mask_is_true)
{
    /* a causal mask: position j > i is hidden */
    tl_tensor *mask = tl_zeros(TL_BOOL, TL_SHAPE(2, 2));
    tl_set(mask, (int64_t[]){ 0, 1 }, 1);
    tl_tensor *scores = vec(TL_SHAPE(2, 2, 2), (float[]){ 1, 2, 3, 4, 5, 6, 7, 8 });
    tl_tensor *out = tl_masked_fill(scores, mask, -INFINITY);
    tl_assert_ok(out);
    ck_assert(isinf(tl_item_at(out, 1)) && isinf(tl_item_at(out, 5)));
    ck_assert(tl_item_at(out, 0) == 1 && tl_item_at(out, 7) == 8);
    tl_assert_error(tl_masked_fill(tl_ones(TL_F32, TL_SHAPE(2)), mask, 0),
                    "mask [2, 2] is larger than the tensor [2]");
    tl_assert_error(tl_masked_fill(scores, scores, 0), "mask [2, 2, 2] is F32; it must be BOOL");
}
END_TEST

START_TEST(results_are_new_contiguous_f32)
{
    tl_tensor *a = tl_ones(TL_F32, TL_SHAPE(2, 3));
    tl_tensor *r = tl_add(tl_transpose(a, 0, 1), tl_scalar(0));
    ck_assert(tl_is_contiguous(r) && r->storage != a->storage && r->dtype == TL_F32);
}
END_TEST

/* ---- gradchecks ------------------------------------------------------------ */

typedef tl_tensor *(*binary_op)(tl_tensor *, tl_tensor *);

static tl_tensor *apply_binary(tl_tensor *const *in, void *ctx) {
    return (*(binary_op *)ctx)(in[0], in[1]);
}

/* x [2, 3] against y [3] (broadcast), y kept away from 0 for div and from x
 * for minimum/maximum, so every difference is taken on a smooth piece. */
static void gradcheck_binary(binary_op op, double tol) {
    tl_pcg32 rng = tl_test_rng(7);
    tl_tensor *x = tl_requires_grad(tl_rand_uniform(&rng, -1, 1, TL_SHAPE(2, 3)), true);
    tl_tensor *y = tl_requires_grad(tl_rand_uniform(&rng, 1.5, 2.5, TL_SHAPE(3)), true);
    tl_tensor *in[2] = { x, y };
    tl_assert_gradcheck(apply_binary, &op, in, 2, tol);
    tl_tensor *swapped[2] = { y, x };
    tl_assert_gradcheck(apply_binary, &op, swapped, 2, tol);
}

START_TEST(gradcheck_add) { gradcheck_binary(tl_add, 1e-3); }
END_TEST
START_TEST(gradcheck_sub) { gradcheck_binary(tl_sub, 1e-3); }
END_TEST
START_TEST(gradcheck_mul) { gradcheck_binary(tl_mul, 1e-3); }
END_TEST
START_TEST(gradcheck_div) { gradcheck_binary(tl_div, 1e-3); }
END_TEST
START_TEST(gradcheck_minimum) { gradcheck_binary(tl_minimum, 1e-3); }
END_TEST
START_TEST(gradcheck_maximum) { gradcheck_binary(tl_maximum, 1e-3); }
END_TEST

START_TEST(minimum_and_maximum_send_ties_to_a)
{
    tl_tensor *a = tl_requires_grad(vec(TL_SHAPE(2), (float[]){ 1, 2 }), true);
    tl_tensor *b = tl_requires_grad(vec(TL_SHAPE(2), (float[]){ 1, 2 }), true);
    tl_backward(tl_sum_all(tl_add(tl_minimum(a, b), tl_maximum(a, b))));
    ck_assert(tl_item_at(a->grad, 0) == 2 && tl_item_at(b->grad, 0) == 0);
}
END_TEST

static tl_tensor *apply_where(tl_tensor *const *in, void *ctx) {
    return tl_where((tl_tensor *)ctx, in[0], in[1]);
}

START_TEST(gradcheck_where)
{
    tl_pcg32 rng = tl_test_rng(8);
    tl_tensor *cond = tl_cast(vec(TL_SHAPE(2, 1), (float[]){ 1, 0 }), TL_BOOL);
    tl_tensor *in[2] = { tl_requires_grad(tl_randn(&rng, TL_SHAPE(2, 3)), true),
                         tl_requires_grad(tl_randn(&rng, TL_SHAPE(3)), true) };
    tl_assert_gradcheck(apply_where, cond, in, 2, 1e-3);
}
END_TEST

static tl_tensor *apply_masked_fill(tl_tensor *const *in, void *ctx) {
    return tl_masked_fill(in[0], (tl_tensor *)ctx, -5.0);
}

START_TEST(gradcheck_masked_fill)
{
    tl_pcg32 rng = tl_test_rng(9);
    tl_tensor *mask = tl_cast(vec(TL_SHAPE(3), (float[]){ 0, 1, 0 }), TL_BOOL);
    tl_tensor *x = tl_requires_grad(tl_randn(&rng, TL_SHAPE(2, 3)), true);
    tl_assert_gradcheck(apply_masked_fill, mask, &x, 1, 1e-3);
    tl_backward(tl_sum_all(apply_masked_fill(&x, mask)));
    ck_assert(tl_item_at(x->grad, 1) == 0 && tl_item_at(x->grad, 4) == 0);   /* filled: none */
}
END_TEST
