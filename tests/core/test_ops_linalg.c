/* matmul and linear: hand values, a naive-loop cross-check over random
 * shapes and layouts (broadcast batches, transposed and strided views,
 * vectors), the BF16 weight paths of linear, error messages, gradients.
 *
 * Gradcheck tolerance: the forward runs in float32 and the numeric gradient
 * takes central differences with eps = 1e-3, so rounding alone contributes
 * about 1e-7 * |f| / eps ~ 1e-4 of relative error (the worst case measured
 * here is 2.1e-4). GRAD_TOL = 2e-3 keeps a tenfold margin, while a wrong
 * gradient (off by a factor, a transpose, a missing term) is off by O(1).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tinyllm/testing.h"
#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"

#define GRAD_TOL 2e-3

/* ---- helpers ----------------------------------------------------------- */

/* The reference product a @ b (rank >= 2, batch axes broadcast) in double,
 * element by element through tl_get: independent of layouts and BLAS. */
static tl_tensor *naive_matmul(const tl_tensor *a, const tl_tensor *b) {
    int nb = (a->ndim > b->ndim ? a->ndim : b->ndim) - 2;
    int64_t shape[TL_MAX_DIMS];
    for (int d = 0; d < nb; d++) {
        int da = d - (nb - (a->ndim - 2)), db = d - (nb - (b->ndim - 2));
        int64_t sa = da >= 0 ? a->shape[da] : 1, sb = db >= 0 ? b->shape[db] : 1;
        shape[d] = sa > sb ? sa : sb;
    }
    int64_t M = a->shape[a->ndim - 2], K = a->shape[a->ndim - 1], N = b->shape[b->ndim - 1];
    shape[nb] = M;
    shape[nb + 1] = N;
    tl_tensor *out = tl_zeros(TL_F32, nb + 2, shape);
    int64_t idx[TL_MAX_DIMS] = {0}, total = tl_numel(out);
    for (int64_t p = 0; p < total; p++) {
        int64_t ai[TL_MAX_DIMS], bi[TL_MAX_DIMS];
        for (int d = 0; d < a->ndim - 2; d++) {
            int64_t i = idx[d + nb - (a->ndim - 2)];
            ai[d] = a->shape[d] == 1 ? 0 : i;
        }
        for (int d = 0; d < b->ndim - 2; d++) {
            int64_t i = idx[d + nb - (b->ndim - 2)];
            bi[d] = b->shape[d] == 1 ? 0 : i;
        }
        double s = 0;
        for (int64_t k = 0; k < K; k++) {
            ai[a->ndim - 2] = idx[nb];
            ai[a->ndim - 1] = k;
            bi[b->ndim - 2] = k;
            bi[b->ndim - 1] = idx[nb + 1];
            s += tl_get(a, ai) * tl_get(b, bi);
        }
        tl_set(out, idx, s);
        for (int d = nb + 1; d >= 0 && ++idx[d] == shape[d]; d--) idx[d] = 0;
    }
    return out;
}

/* A random [.., rows, cols] operand in one of three layouts: contiguous,
 * a transposed view (BLAS reads it with Trans), or a stride-2 view of a
 * larger tensor (no BLAS layout fits: matmul copies it). */
static tl_tensor *random_operand(tl_pcg32 *rng, int ndim, const int64_t *shape, int layout) {
    int64_t s[TL_MAX_DIMS];
    memcpy(s, shape, sizeof(int64_t) * (size_t)ndim);
    if (layout == 1) {
        s[ndim - 2] = shape[ndim - 1];
        s[ndim - 1] = shape[ndim - 2];
        return tl_transpose(tl_randn(rng, ndim, s), -1, -2);
    }
    if (layout == 2) {
        s[ndim] = 2;
        tl_tensor *wide = tl_randn(rng, ndim + 1, s);
        return tl_squeeze(tl_narrow(wide, ndim, 1, 1), ndim);
    }
    return tl_randn(rng, ndim, shape);
}

static tl_tensor *f_matmul(tl_tensor *const *in, void *ctx) {
    (void)ctx;
    return tl_matmul(in[0], in[1]);
}

static tl_tensor *f_matmul_transposed_b(tl_tensor *const *in, void *ctx) {
    (void)ctx;
    return tl_matmul(in[0], tl_transpose(in[1], -1, -2));
}

static tl_tensor *f_linear(tl_tensor *const *in, void *ctx) {
    (void)ctx;
    return tl_linear(in[0], in[1], in[2]);
}

static tl_tensor *f_linear_no_bias(tl_tensor *const *in, void *ctx) {
    (void)ctx;
    return tl_linear(in[0], in[1], NULL);
}

static tl_tensor *grad_leaf(tl_pcg32 *rng, int ndim, const int64_t *shape) {
    return tl_requires_grad(tl_randn(rng, ndim, shape), true);
}

/* ---- matmul: values ---------------------------------------------------- */

START_TEST(test_matmul_hand_2x3_by_3x2)
{
    tl_scope_push();
    tl_tensor *a = tl_from_f32((const float[]){1, 2, 3, 4, 5, 6}, TL_SHAPE(2, 3));
    tl_tensor *b = tl_from_f32((const float[]){7, 8, 9, 10, 11, 12}, TL_SHAPE(3, 2));
    tl_tensor *c = tl_matmul(a, b);
    tl_assert_ok(c);
    /* [1 2 3; 4 5 6] @ [7 8; 9 10; 11 12] worked by hand. */
    tl_tensor *want = tl_from_f32((const float[]){58, 64, 139, 154}, TL_SHAPE(2, 2));
    tl_assert_close(c, want, 0, 0);
    ck_assert_int_eq(c->dtype, TL_F32);
    tl_scope_pop();
}
END_TEST

START_TEST(test_matmul_matches_naive_loop_on_random_shapes_and_layouts)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(11);
    for (int trial = 0; trial < 60; trial++) {
        tl_scope_push();
        int64_t M = 1 + tl_pcg32_bounded(&rng, 6), K = 1 + tl_pcg32_bounded(&rng, 7);
        int64_t N = 1 + tl_pcg32_bounded(&rng, 6);
        /* Batch axes: a common shape, each operand a suffix of it with
         * some axes shrunk to 1 so they broadcast. */
        int nb = (int)tl_pcg32_bounded(&rng, 3);
        int64_t batch[2] = {1 + tl_pcg32_bounded(&rng, 3), 1 + tl_pcg32_bounded(&rng, 3)};
        int na = (int)tl_pcg32_bounded(&rng, (uint32_t)nb + 1);
        int nbb = (int)tl_pcg32_bounded(&rng, (uint32_t)nb + 1);
        int64_t as[TL_MAX_DIMS], bs[TL_MAX_DIMS];
        for (int d = 0; d < na; d++)
            as[d] = tl_pcg32_bounded(&rng, 3) == 0 ? 1 : batch[nb - na + d];
        for (int d = 0; d < nbb; d++)
            bs[d] = tl_pcg32_bounded(&rng, 3) == 0 ? 1 : batch[nb - nbb + d];
        as[na] = M;
        as[na + 1] = K;
        bs[nbb] = K;
        bs[nbb + 1] = N;
        tl_tensor *a = random_operand(&rng, na + 2, as, (int)tl_pcg32_bounded(&rng, 3));
        tl_tensor *b = random_operand(&rng, nbb + 2, bs, (int)tl_pcg32_bounded(&rng, 3));
        tl_tensor *c = tl_matmul(a, b);
        tl_assert_ok(c);
        tl_assert_close(c, naive_matmul(a, b), 1e-5, 1e-5);
        tl_scope_pop();
    }
    tl_scope_pop();
}
END_TEST

START_TEST(test_matmul_broadcasts_batch_axes)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(2);
    tl_tensor *a = tl_randn(&rng, TL_SHAPE(2, 1, 3, 4));
    tl_tensor *b = tl_randn(&rng, TL_SHAPE(5, 4, 2));
    tl_tensor *c = tl_matmul(a, b);
    tl_assert_ok(c);
    int64_t want_shape[] = {2, 5, 3, 2};
    ck_assert_int_eq(c->ndim, 4);
    for (int d = 0; d < 4; d++) ck_assert_int_eq(c->shape[d], want_shape[d]);
    tl_assert_close(c, naive_matmul(a, b), 1e-5, 1e-5);
    /* One shared matrix b against a batch of a (the folded path). */
    tl_tensor *w = tl_randn(&rng, TL_SHAPE(4, 6));
    tl_assert_close(tl_matmul(a, w), naive_matmul(a, w), 1e-5, 1e-5);
    tl_scope_pop();
}
END_TEST

START_TEST(test_matmul_transposed_view_equals_explicit_copy)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(3);
    tl_tensor *q = tl_randn(&rng, TL_SHAPE(2, 5, 8));
    tl_tensor *k = tl_randn(&rng, TL_SHAPE(2, 7, 8));
    tl_tensor *kt = tl_transpose(k, -1, -2);          /* a view, read with Trans */
    tl_tensor *kt_copy = tl_contiguous(kt);           /* the same values, laid out */
    ck_assert(!tl_is_contiguous(kt));
    tl_assert_close(tl_matmul(q, kt), tl_matmul(q, kt_copy), 1e-6, 1e-6);
    /* Both operands transposed, and one row against K^T (decode's q @ K^T). */
    tl_tensor *qt = tl_transpose(tl_randn(&rng, TL_SHAPE(2, 8, 5)), -1, -2);
    tl_assert_close(tl_matmul(qt, kt), naive_matmul(qt, kt), 1e-5, 1e-5);
    tl_tensor *row = tl_narrow(q, 1, 2, 1);
    tl_assert_close(tl_matmul(row, kt), naive_matmul(row, kt), 1e-5, 1e-5);
    /* K^T of a column slice (a head of a fused projection): rows 12 apart. */
    tl_tensor *head = tl_narrow(tl_randn(&rng, TL_SHAPE(2, 7, 12)), 2, 2, 8);
    tl_tensor *head_t = tl_transpose(head, -1, -2);
    tl_assert_close(tl_matmul(row, head_t), naive_matmul(row, head_t), 1e-5, 1e-5);
    tl_assert_close(tl_matmul(q, head_t), naive_matmul(q, head_t), 1e-5, 1e-5);
    tl_scope_pop();
}
END_TEST

START_TEST(test_matmul_vector_operands_follow_numpy)
{
    tl_scope_push();
    tl_tensor *m = tl_from_f32((const float[]){1, 2, 3, 4, 5, 6}, TL_SHAPE(2, 3));
    tl_tensor *v3 = tl_from_f32((const float[]){1, 0, -1}, TL_SHAPE(3));
    tl_tensor *v2 = tl_from_f32((const float[]){2, -1}, TL_SHAPE(2));

    tl_tensor *dot = tl_matmul(v3, v3);               /* [3] @ [3] -> rank 0 */
    tl_assert_ok(dot);
    ck_assert_int_eq(dot->ndim, 0);
    ck_assert_double_eq(tl_item(dot), 2.0);

    tl_tensor *mv = tl_matmul(m, v3);                 /* [2, 3] @ [3] -> [2] */
    tl_assert_close(mv, tl_from_f32((const float[]){-2, -2}, TL_SHAPE(2)), 0, 0);

    tl_tensor *vm = tl_matmul(v2, m);                 /* [2] @ [2, 3] -> [3] */
    tl_assert_close(vm, tl_from_f32((const float[]){-2, -1, 0}, TL_SHAPE(3)), 0, 0);

    tl_tensor *batch = tl_reshape(tl_arange(0, 12), TL_SHAPE(2, 2, 3));
    tl_tensor *bv = tl_matmul(tl_cast(batch, TL_F32), v3);   /* [2, 2, 3] @ [3] -> [2, 2] */
    tl_assert_close(bv, tl_from_f32((const float[]){-2, -2, -2, -2}, TL_SHAPE(2, 2)), 0, 0);
    tl_scope_pop();
}
END_TEST

START_TEST(test_matmul_bf16_operand_is_widened_exactly)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(4);
    tl_tensor *a = tl_randn(&rng, TL_SHAPE(3, 4));
    tl_tensor *b16 = tl_cast(tl_randn(&rng, TL_SHAPE(4, 5)), TL_BF16);
    tl_tensor *c = tl_matmul(a, b16);
    tl_assert_ok(c);
    ck_assert_int_eq(c->dtype, TL_F32);
    tl_assert_close(c, naive_matmul(a, tl_cast(b16, TL_F32)), 1e-5, 1e-5);
    tl_scope_pop();
}
END_TEST

START_TEST(test_matmul_empty_inner_axis_gives_zeros)
{
    tl_scope_push();
    tl_tensor *c = tl_matmul(tl_zeros(TL_F32, TL_SHAPE(2, 0)), tl_ones(TL_F32, TL_SHAPE(0, 3)));
    tl_assert_ok(c);
    tl_assert_close(c, tl_zeros(TL_F32, TL_SHAPE(2, 3)), 0, 0);
    tl_scope_pop();
}
END_TEST

/* ---- matmul: errors ---------------------------------------------------- */

START_TEST(test_matmul_inner_mismatch_names_both_shapes)
{
    tl_scope_push();
    tl_tensor *a = tl_zeros(TL_F32, TL_SHAPE(2, 3));
    tl_tensor *b = tl_zeros(TL_F32, TL_SHAPE(4, 5));
    tl_assert_error(tl_matmul(a, b), "a [2, 3] has K=3 on its last axis but b [4, 5] has K=4");
    tl_assert_error(tl_matmul(a, tl_zeros(TL_F32, TL_SHAPE(2))), "K=2");
    tl_scope_pop();
}
END_TEST

START_TEST(test_matmul_batch_mismatch_names_the_axis)
{
    tl_scope_push();
    tl_tensor *a = tl_zeros(TL_F32, TL_SHAPE(2, 3, 4));
    tl_tensor *b = tl_zeros(TL_F32, TL_SHAPE(3, 4, 5));
    tl_assert_error(tl_matmul(a, b), "batch axis 0 has sizes 2 and 3");
    tl_scope_pop();
}
END_TEST

START_TEST(test_matmul_rejects_scalars_and_null)
{
    tl_scope_push();
    tl_assert_error(tl_matmul(tl_scalar(2), tl_zeros(TL_F32, TL_SHAPE(2))), "at least one axis");
    tl_assert_error(tl_matmul(NULL, tl_zeros(TL_F32, TL_SHAPE(2))), "matmul");
    tl_assert_error(tl_matmul(tl_zeros(TL_I64, TL_SHAPE(2, 2)), tl_zeros(TL_F32, TL_SHAPE(2, 2))),
                    "matmul");
    tl_scope_pop();
}
END_TEST

/* ---- matmul: gradients ------------------------------------------------- */

START_TEST(test_matmul_gradcheck_2d)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(5);
    tl_tensor *in[] = {grad_leaf(&rng, TL_SHAPE(3, 4)), grad_leaf(&rng, TL_SHAPE(4, 2))};
    tl_assert_gradcheck(f_matmul, NULL, in, 2, GRAD_TOL);
    tl_scope_pop();
}
END_TEST

START_TEST(test_matmul_gradcheck_broadcast_batches)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(6);
    tl_tensor *in[] = {grad_leaf(&rng, TL_SHAPE(2, 1, 3, 4)), grad_leaf(&rng, TL_SHAPE(3, 4, 2))};
    tl_assert_gradcheck(f_matmul, NULL, in, 2, GRAD_TOL);
    tl_tensor *shared[] = {grad_leaf(&rng, TL_SHAPE(2, 3, 4)), grad_leaf(&rng, TL_SHAPE(4, 2))};
    tl_assert_gradcheck(f_matmul, NULL, shared, 2, GRAD_TOL);
    tl_scope_pop();
}
END_TEST

START_TEST(test_matmul_gradcheck_vectors_and_transposed_view)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(7);
    tl_tensor *vv[] = {grad_leaf(&rng, TL_SHAPE(4)), grad_leaf(&rng, TL_SHAPE(4))};
    tl_assert_gradcheck(f_matmul, NULL, vv, 2, GRAD_TOL);
    tl_tensor *vm[] = {grad_leaf(&rng, TL_SHAPE(4)), grad_leaf(&rng, TL_SHAPE(2, 4, 3))};
    tl_assert_gradcheck(f_matmul, NULL, vm, 2, GRAD_TOL);
    tl_tensor *mv[] = {grad_leaf(&rng, TL_SHAPE(2, 3, 4)), grad_leaf(&rng, TL_SHAPE(4))};
    tl_assert_gradcheck(f_matmul, NULL, mv, 2, GRAD_TOL);
    tl_tensor *qk[] = {grad_leaf(&rng, TL_SHAPE(2, 3, 4)), grad_leaf(&rng, TL_SHAPE(2, 5, 4))};
    tl_assert_gradcheck(f_matmul_transposed_b, NULL, qk, 2, GRAD_TOL);
    tl_scope_pop();
}
END_TEST

/* ---- linear ------------------------------------------------------------ */

START_TEST(test_linear_hand_with_bias)
{
    tl_scope_push();
    tl_tensor *x = tl_from_f32((const float[]){1, 2, 3, 4, 5, 6}, TL_SHAPE(2, 3));
    /* [out=2, in=3] */
    tl_tensor *w = tl_from_f32((const float[]){1, 0, -1, 2, 1, 0}, TL_SHAPE(2, 3));
    tl_tensor *bias = tl_from_f32((const float[]){10, -10}, TL_SHAPE(2));
    /* Row 1: [1-3, 2+2] + b = [8, -6]; row 2: [4-6, 8+5] + b = [8, 3]. */
    tl_assert_close(tl_linear(x, w, bias),
                    tl_from_f32((const float[]){8, -6, 8, 3}, TL_SHAPE(2, 2)), 0, 0);
    tl_assert_close(tl_linear(x, w, NULL),
                    tl_from_f32((const float[]){-2, 4, -2, 13}, TL_SHAPE(2, 2)), 0, 0);
    tl_scope_pop();
}
END_TEST

START_TEST(test_linear_equals_matmul_with_transposed_weight)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(8);
    tl_tensor *w = tl_randn(&rng, TL_SHAPE(6, 5));
    tl_tensor *bias = tl_randn(&rng, TL_SHAPE(6));
    tl_tensor *x = tl_randn(&rng, TL_SHAPE(2, 3, 5));
    tl_tensor *want = tl_add(naive_matmul(x, tl_transpose(w, 0, 1)), bias);
    tl_tensor *y = tl_linear(x, w, bias);
    tl_assert_ok(y);
    ck_assert_int_eq(y->ndim, 3);
    ck_assert_int_eq(y->shape[2], 6);
    tl_assert_close(y, want, 1e-5, 1e-5);
    /* A weight given as a transposed view of [in, out] storage. */
    tl_tensor *wt = tl_transpose(tl_contiguous(tl_transpose(w, 0, 1)), 0, 1);
    ck_assert(!tl_is_contiguous(wt));
    tl_assert_close(tl_linear(x, wt, bias), want, 1e-5, 1e-5);
    /* A non-contiguous input (a transposed view). */
    tl_tensor *xs = tl_transpose(tl_randn(&rng, TL_SHAPE(5, 4)), 0, 1);
    tl_assert_close(tl_linear(xs, w, NULL), naive_matmul(xs, tl_transpose(w, 0, 1)), 1e-5, 1e-5);
    tl_scope_pop();
}
END_TEST

START_TEST(test_linear_single_row_f32_and_bf16_weights)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(9);
    tl_tensor *w = tl_randn(&rng, TL_SHAPE(37, 19));
    tl_tensor *x = tl_randn(&rng, TL_SHAPE(1, 19));      /* decode: one row */
    tl_tensor *v = tl_randn(&rng, TL_SHAPE(19));          /* a plain vector */
    tl_tensor *wt = tl_transpose(w, 0, 1);
    tl_assert_close(tl_linear(x, w, NULL), naive_matmul(x, wt), 1e-5, 1e-5);
    tl_tensor *yv = tl_linear(v, w, NULL);
    tl_assert_ok(yv);
    ck_assert_int_eq(yv->ndim, 1);
    tl_assert_close(tl_reshape(yv, TL_SHAPE(1, 37)),
                    naive_matmul(tl_reshape(v, TL_SHAPE(1, 19)), wt), 1e-5, 1e-5);
    /* BF16: the result equals F32 math on the widened weight. */
    tl_tensor *w16 = tl_cast(w, TL_BF16);
    tl_tensor *w16_as_f32 = tl_cast(w16, TL_F32);
    tl_assert_close(tl_linear(x, w16, NULL), naive_matmul(x, tl_transpose(w16_as_f32, 0, 1)),
                    1e-5, 1e-5);
    tl_scope_pop();
}
END_TEST

START_TEST(test_linear_bf16_weight_many_rows_in_blocks)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(10);
    /* 2100 x 1024 is more than two blocks of the 1M-float scratch. */
    tl_tensor *w16 = tl_cast(tl_randn(&rng, TL_SHAPE(2100, 1024)), TL_BF16);
    tl_tensor *x = tl_randn(&rng, TL_SHAPE(3, 1024));
    tl_tensor *bias = tl_randn(&rng, TL_SHAPE(2100));
    tl_tensor *y = tl_linear(x, w16, bias);
    tl_assert_ok(y);
    tl_tensor *want = tl_linear(x, tl_cast(w16, TL_F32), bias);
    tl_assert_close(y, want, 1e-5, 1e-4);
    tl_scope_pop();
}
END_TEST

START_TEST(test_linear_shape_errors_name_the_shapes)
{
    tl_scope_push();
    tl_tensor *x = tl_zeros(TL_F32, TL_SHAPE(2, 3));
    tl_tensor *w = tl_zeros(TL_F32, TL_SHAPE(4, 5));
    tl_assert_error(tl_linear(x, w, NULL), "input [2, 3] must end with in=5");
    tl_tensor *w2 = tl_zeros(TL_F32, TL_SHAPE(4, 3));
    tl_assert_error(tl_linear(x, w2, tl_zeros(TL_F32, TL_SHAPE(3))),
                    "bias [3] must be [out] = [4]");
    tl_assert_error(tl_linear(x, tl_zeros(TL_F32, TL_SHAPE(3)), NULL), "[out, in]");
    tl_assert_error(tl_linear(x, tl_zeros(TL_I64, TL_SHAPE(4, 3)), NULL), "I64");
    tl_assert_error(tl_linear(NULL, w2, NULL), "linear");
    tl_scope_pop();
}
END_TEST

START_TEST(test_linear_gradcheck_input_weight_bias)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(12);
    tl_tensor *in[] = {grad_leaf(&rng, TL_SHAPE(2, 3, 4)), grad_leaf(&rng, TL_SHAPE(5, 4)),
                       grad_leaf(&rng, TL_SHAPE(5))};
    tl_assert_gradcheck(f_linear, NULL, in, 3, GRAD_TOL);
    tl_tensor *row[] = {grad_leaf(&rng, TL_SHAPE(4)), grad_leaf(&rng, TL_SHAPE(3, 4))};
    tl_assert_gradcheck(f_linear_no_bias, NULL, row, 2, GRAD_TOL);
    tl_scope_pop();
}
END_TEST

START_TEST(test_linear_backward_repeats_rows_into_weight_grad)
{
    tl_scope_push();
    /* Two identical rows: dW = sum over rows of g^T x = 2 * x for g = 1. */
    tl_tensor *x = tl_from_f32((const float[]){1, 2, 1, 2}, TL_SHAPE(2, 2));
    tl_tensor *w = tl_requires_grad(tl_zeros(TL_F32, TL_SHAPE(1, 2)), true);
    tl_tensor *loss = tl_sum_all(tl_linear(x, w, NULL));
    ck_assert_int_eq(tl_backward(loss), 0);
    tl_assert_ok(w->grad);
    tl_assert_close(w->grad, tl_from_f32((const float[]){2, 4}, TL_SHAPE(1, 2)), 0, 0);
    tl_scope_pop();
}
END_TEST

/* ---- matmul: the decode paths over a KV cache --------------------------- */

/* A preallocated cache [B, H, T_max, D] filled with random values, as F32 or
 * rounded to BF16; the first T positions are what attention reads. */
static tl_tensor *random_cache(tl_pcg32 *rng, tl_dtype dt, int64_t B, int64_t H, int64_t Tmax,
                               int64_t D) {
    tl_tensor *c = tl_randn(rng, TL_SHAPE(B, H, Tmax, D));
    return dt == TL_F32 ? c : tl_cast(c, TL_BF16);
}

/* Agreement with the double reference: a float32 sum of K products of unit
 * normals errs by about sqrt(K) * 2^-24 * |terms|, under 1e-5 * K / 24 here. */
static void assert_matches_naive(tl_tensor *got, const tl_tensor *a, const tl_tensor *b,
                                 const char *what) {
    tl_tensor *want = naive_matmul(a, b);
    tl_assert_ok(got);
    double tol = 1e-5 * (double)a->shape[a->ndim - 1] / 24.0;
    char msg[512];
    ck_assert_msg(tl_close_report(got, want, 1e-5, tol, msg, sizeof msg), "%s: %s", what, msg);
}

/* a [B, H, M, K] @ b [B, H, K, N] in double, from contiguous F32 copies of
 * any view (so independent of the layouts matmul reads): naive_matmul's
 * answer, quick enough for long caches under ASan. Its tolerance. */
static void assert_matches_bmm(tl_tensor *got, tl_tensor *a, tl_tensor *b, const char *what) {
    tl_tensor *ac = tl_cast(a, TL_F32), *bc = tl_cast(b, TL_F32);
    int64_t B = a->shape[0], H = a->shape[1], M = a->shape[2], K = a->shape[3];
    int64_t N = b->shape[3];
    tl_tensor *want = tl_zeros(TL_F32, TL_SHAPE(B, H, M, N));
    const float *x = tl_data(ac), *y = tl_data(bc);
    float *out = tl_data(want);
    for (int64_t bh = 0; bh < B * H; bh++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double sum = 0;
                for (int64_t k = 0; k < K; k++)
                    sum += (double)x[(bh * M + i) * K + k] * y[(bh * K + k) * N + j];
                out[(bh * M + i) * N + j] = (float)sum;
            }
    tl_assert_ok(got);
    char msg[512];
    if (!tl_close_report(got, want, 1e-5, 1e-5 * (double)K / 24.0, msg, sizeof msg))
        ck_abort_msg("%s: %s", what, msg);
}

START_TEST(matmul_reads_a_cache_in_place_for_one_query_row)
{
    tl_pcg32 rng = tl_test_rng(71);
    const tl_dtype dts[] = {TL_F32, TL_BF16};
    for (int i = 0; i < 2; i++) {
        int64_t B = 2, H = 3, Tmax = 40, T = 17, D = 24;
        tl_tensor *k_cache = random_cache(&rng, dts[i], B, H, Tmax, D);
        tl_tensor *v_cache = random_cache(&rng, dts[i], B, H, Tmax, D);
        tl_tensor *k = tl_narrow(k_cache, 2, 0, T), *v = tl_narrow(v_cache, 2, 0, T);
        tl_tensor *q = tl_randn(&rng, TL_SHAPE(B, H, 1, D));
        tl_tensor *kt = tl_transpose(k, -1, -2);                      /* [B, H, D, T] */
        assert_matches_naive(tl_matmul(q, kt), q, kt, "q @ K^T");
        tl_tensor *p = tl_softmax(tl_randn(&rng, TL_SHAPE(B, H, 1, T)), -1);
        assert_matches_naive(tl_matmul(p, v), p, v, "p @ V");
        /* Several query rows (a group of heads, or a short prompt). */
        tl_tensor *q5 = tl_randn(&rng, TL_SHAPE(B, H, 5, D));
        assert_matches_naive(tl_matmul(q5, kt), q5, kt, "5 rows @ K^T");
        tl_tensor *p5 = tl_randn(&rng, TL_SHAPE(B, H, 5, T));
        assert_matches_naive(tl_matmul(p5, v), p5, v, "5 rows @ V");
    }
}
END_TEST

/* Grouped-query attention without repeat_kv: the key heads, expanded over
 * the group axis (stride 0), serve every query head of their group. */
START_TEST(matmul_broadcasts_a_grouped_cache_over_expanded_heads)
{
    tl_pcg32 rng = tl_test_rng(72);
    int64_t B = 1, KV = 3, G = 3, Tmax = 32, T = 9, D = 16;
    const tl_dtype dts[] = {TL_F32, TL_BF16};
    for (int i = 0; i < 2; i++) {
        tl_tensor *k = tl_narrow(random_cache(&rng, dts[i], B, KV, Tmax, D), 2, 0, T);
        tl_tensor *k5 = tl_expand(tl_unsqueeze(k, 2), TL_SHAPE(B, KV, G, T, D));
        tl_tensor *q = tl_randn(&rng, TL_SHAPE(B, KV, G, 1, D));
        tl_tensor *kt = tl_transpose(k5, -1, -2);
        assert_matches_naive(tl_matmul(q, kt), q, kt, "grouped q @ K^T");
        /* The group as rows: q [B, KV, G, D] @ K^T [B, KV, D, T]. */
        tl_tensor *qg = tl_randn(&rng, TL_SHAPE(B, KV, G, D));
        tl_tensor *kt4 = tl_transpose(k, -1, -2);
        assert_matches_naive(tl_matmul(qg, kt4), qg, kt4, "group rows @ K^T");
        tl_tensor *p = tl_randn(&rng, TL_SHAPE(B, KV, G, 1, T));
        tl_tensor *v5 = tl_expand(tl_unsqueeze(k, 2), TL_SHAPE(B, KV, G, T, D));
        assert_matches_naive(tl_matmul(p, v5), p, v5, "grouped p @ V");
    }
}
END_TEST

/* Reading in place means no arena memory beyond the result: a copy of this
 * 4 MiB cache view would show in tl_scope_bytes. */
START_TEST(matmul_over_a_cache_allocates_only_its_result)
{
    tl_pcg32 rng = tl_test_rng(73);
    int64_t H = 8, Tmax = 2048, T = 2000, D = 64;
    tl_tensor *cache = tl_tensor_new_owned(TL_F32, TL_SHAPE(1, H, Tmax, D));
    tl_tensor *bf = tl_tensor_new_owned(TL_BF16, TL_SHAPE(1, H, Tmax, D));
    tl_copy_into(cache, tl_randn(&rng, TL_SHAPE(1, H, Tmax, D)));
    tl_copy_into(bf, cache);
    tl_tensor *q = tl_randn(&rng, TL_SHAPE(1, H, 1, D)), *p = tl_randn(&rng, TL_SHAPE(1, H, 1, T));
    tl_tensor *caches[] = {cache, bf};
    tl_no_grad_push();
    for (int i = 0; i < 2; i++) {
        tl_scope_push();
        tl_tensor *k = tl_narrow(caches[i], 2, 0, T);
        tl_tensor *kt = tl_transpose(k, -1, -2);
        size_t before = tl_scope_bytes();
        tl_tensor *scores = tl_matmul(q, kt), *mixed = tl_matmul(p, k);
        size_t grown = tl_scope_bytes() - before;
        tl_assert_ok(scores);
        tl_assert_ok(mixed);
        ck_assert_msg(grown < 1 << 20, "%s cache: matmul took %zu bytes of arena (a copy?)",
                      i ? "BF16" : "F32", grown);
        tl_scope_pop();
    }
    tl_no_grad_pop();
    tl_tensor_free(cache);
    tl_tensor_free(bf);
}
END_TEST

/* One row against a BF16 weight: the result of the BF16 GEMV, with no F32
 * copy of the weight; several rows: the multi-row GEMV, the values of the
 * widened weight's GEMM but for rounding (another order of the sums: the
 * tolerance of assert_matches_naive). */
START_TEST(linear_reads_a_bf16_weight_without_widening_it)
{
    tl_pcg32 rng = tl_test_rng(74);
    int64_t out = 1536, in = 576;
    tl_tensor *w = tl_cast(tl_randn(&rng, TL_SHAPE(out, in)), TL_BF16);
    tl_tensor *w32 = tl_cast(w, TL_F32);
    tl_tensor *x1 = tl_randn(&rng, TL_SHAPE(1, 1, in)), *x9 = tl_randn(&rng, TL_SHAPE(9, in));
    tl_no_grad_push();
    size_t before = tl_scope_bytes();
    tl_tensor *y1 = tl_linear(x1, w, NULL);
    ck_assert_msg(tl_scope_bytes() - before < 256 << 10, "a one-row BF16 linear took %zu bytes",
                  tl_scope_bytes() - before);
    before = tl_scope_bytes();
    tl_tensor *y9 = tl_linear(x9, w, NULL);
    ck_assert_msg(tl_scope_bytes() - before < 256 << 10, "a 9-row BF16 linear took %zu bytes",
                  tl_scope_bytes() - before);
    tl_no_grad_pop();
    char msg[512];
    ck_assert_msg(tl_close_report(y1, tl_linear(x1, w32, NULL), 1e-5, 1e-5, msg, sizeof msg),
                  "one row: %s", msg);
    ck_assert_msg(tl_close_report(y9, tl_linear(x9, w32, NULL), 1e-5, 1e-5 * (double)in / 24,
                                  msg, sizeof msg), "nine rows: %s", msg);
    /* matmul reads a BF16 weight's transpose in place too. */
    tl_tensor *wt = tl_transpose(w, 0, 1);
    assert_matches_naive(tl_matmul(tl_reshape(x1, TL_SHAPE(1, in)), wt),
                         tl_reshape(x1, TL_SHAPE(1, in)), wt, "x @ W^T, W BF16");
    assert_matches_bmm(tl_reshape(tl_matmul(x9, wt), TL_SHAPE(1, 1, 9, out)),
                       tl_reshape(x9, TL_SHAPE(1, 1, 9, in)),
                       tl_reshape(wt, TL_SHAPE(1, 1, in, out)), "9 rows @ W^T, W BF16");
}
END_TEST

/* Batched GEMV shared among threads gives the values of one thread. */
START_TEST(matmul_batches_on_threads_match_one_thread)
{
    tl_pcg32 rng = tl_test_rng(75);
    tl_tensor *k = tl_randn(&rng, TL_SHAPE(4, 9, 192, 64));
    tl_tensor *q = tl_randn(&rng, TL_SHAPE(4, 9, 1, 64));
    tl_tensor *kt = tl_transpose(k, -1, -2);
    setenv("TINYLLM_THREADS", "1", 1);
    tl_tensor *one = tl_matmul(q, kt);
    setenv("TINYLLM_THREADS", "3", 1);
    tl_tensor *three = tl_matmul(q, kt);
    unsetenv("TINYLLM_THREADS");
    char msg[512];
    ck_assert_msg(tl_close_report(three, one, 0, 0, msg, sizeof msg), "%s", msg);
}
END_TEST

/* ---- a few rows against one matrix (the multi-row GEMVs) ---------------- */

/* Row counts on both sides of the crossovers to GEMM (8 rows for an F32
 * matrix, 32 for BF16, 8 where GEMM runs on gemm_avx512.c; ops_linalg.c),
 * with register-tile tails (not multiples of 4), on one and two threads, for
 * F32, BF16 and a BF16 view of every row's middle columns (a row stride past
 * its width: the multi-row GEMVs up to 32 rows, a widened copy beyond):
 * every path agrees with the double reference; up to the crossover (the
 * multi-row GEMVs) the two thread counts give the same bits (OpenBLAS's GEMM
 * beyond it need not). */
static const int64_t FEW_ROWS[] = {2, 3, 5, 8, 9, 17, 32, 33};
#define N_FEW_ROWS (int)(sizeof FEW_ROWS / sizeof FEW_ROWS[0])

START_TEST(linear_few_rows_match_the_reference_for_both_dtypes_and_thread_counts)
{
    tl_pcg32 rng = tl_test_rng(81);
    const int64_t sizes[][2] = {{37, 29}, {263, 577}};   /* [out, in], odd; 577 is split */
    tl_no_grad_push();
    for (int d = 0; d < 3; d++)
        for (int s = 0; s < 2; s++) {
            tl_tensor *w = tl_randn(&rng, TL_SHAPE(sizes[s][0], sizes[s][1] + (d == 2 ? 7 : 0)));
            if (d) w = tl_cast(w, TL_BF16);
            if (d == 2) w = tl_narrow(w, 1, 3, sizes[s][1]);   /* row stride in + 7 */
            for (int i = 0; i < N_FEW_ROWS; i++) {
                tl_tensor *x = tl_randn(&rng, TL_SHAPE(1, FEW_ROWS[i], sizes[s][1]));
                setenv("TINYLLM_THREADS", "1", 1);
                tl_tensor *one = tl_linear(x, w, NULL);
                setenv("TINYLLM_THREADS", "2", 1);
                tl_tensor *two = tl_linear(x, w, NULL);
                unsetenv("TINYLLM_THREADS");
                char what[96], msg[512];
                snprintf(what, sizeof what, "%s linear, %lld rows, [%lld, %lld]",
                         d == 2 ? "strided BF16" : d ? "BF16" : "F32", (long long)FEW_ROWS[i],
                         (long long)sizes[s][0],
                         (long long)sizes[s][1]);
                int64_t M = FEW_ROWS[i], in = sizes[s][1], out = sizes[s][0];
                assert_matches_bmm(tl_reshape(one, TL_SHAPE(1, 1, M, out)),
                                   tl_reshape(x, TL_SHAPE(1, 1, M, in)),
                                   tl_reshape(tl_transpose(w, 0, 1), TL_SHAPE(1, 1, in, out)),
                                   what);
                bool multi = M <= (d ? 32 : 8);
                double tol = multi ? 0 : 1e-5 * (double)in / 24;
                if (!tl_close_report(two, one, multi ? 0 : 1e-5, tol, msg, sizeof msg))
                    ck_abort_msg("%s: 2 threads differ from 1: %s", what, msg);
            }
        }
    tl_no_grad_pop();
}
END_TEST

/* The cache as HF lays it out, [B, S_max, Hkv, D], viewed [B, Hkv, S, D]:
 * rows of one head are Hkv * D apart, read in place at that stride. */
static tl_tensor *hf_layout_view(tl_tensor *cache, int64_t S) {
    return tl_transpose(tl_narrow(cache, 1, 0, S), 1, 2);
}

/* q @ K^T and p @ V for G * T query rows per key head over the cache view
 * k [1, KV, S, D], on one and two threads: the reference's values, the same
 * bits on both up to the crossover (within tolerance beyond), and no copy of
 * the cache in the arena (one would show once it is 1 MiB or more; the arena
 * grows by blocks, hence the slack). */
static void check_group_rows(tl_pcg32 *rng, tl_tensor *k, int64_t G, int64_t T,
                             const char *what) {
    int64_t KV = k->shape[1], S = k->shape[2], D = k->shape[3];
    tl_tensor *kt = tl_transpose(k, -1, -2);
    tl_tensor *q = tl_randn(rng, TL_SHAPE(1, KV, G * T, D));
    tl_tensor *p = tl_randn(rng, TL_SHAPE(1, KV, G * T, S));
    const char *threads[] = {"1", "2"};
    tl_tensor *scores[2], *mixed[2];
    for (int t = 0; t < 2; t++) {
        setenv("TINYLLM_THREADS", threads[t], 1);
        size_t before = tl_scope_bytes();
        scores[t] = tl_matmul(q, kt);
        mixed[t] = tl_matmul(p, k);
        size_t grown = tl_scope_bytes() - before;
        size_t results = (size_t)(KV * G * T * (S + D)) * 4, copy = (size_t)(KV * S * D) * 4;
        if (copy >= 1 << 20 && grown > results + (512 << 10))
            ck_abort_msg("%s: matmul took %zu bytes of arena for %zu of results (a copy of "
                         "the cache?)", what, grown, results);
    }
    unsetenv("TINYLLM_THREADS");
    assert_matches_bmm(scores[0], q, kt, what);
    assert_matches_bmm(mixed[0], p, k, what);
    bool multi = G * T <= (k->dtype == TL_BF16 ? 32 : 8);
    double rtol = multi ? 0 : 1e-5, atol = multi ? 0 : 1e-5 * (double)S / 24;
    char msg[512];
    if (!tl_close_report(scores[1], scores[0], rtol, atol, msg, sizeof msg) ||
        !tl_close_report(mixed[1], mixed[0], rtol, atol, msg, sizeof msg))
        ck_abort_msg("%s: 2 threads differ from 1: %s", what, msg);
}

/* The query rows of one key head (a GQA group of 3, times T = 1 or 3 new
 * tokens: 3 rows, or 9, beyond F32's crossover) over cache views: narrowed,
 * transposed, in the lesson's [B, Hkv, S_max, D] layout and in HF's strided
 * one; F32 and BF16; odd lengths and head sizes. */
START_TEST(matmul_grouped_query_rows_read_cache_views_in_place)
{
    tl_pcg32 rng = tl_test_rng(82);
    const int64_t KV = 3, G = 3, Smax = 1400;
    const int64_t cases[][2] = {{1, 17}, {7, 64}, {100, 17}, {1371, 64}};   /* S, D */
    const tl_dtype dts[] = {TL_F32, TL_BF16};
    tl_no_grad_push();
    for (int di = 0; di < 2; di++)
        for (int ci = 0; ci < 4; ci++) {
            int64_t S = cases[ci][0], D = cases[ci][1];
            tl_tensor *lesson = random_cache(&rng, dts[di], 1, KV, Smax, D);
            tl_tensor *hf = tl_randn(&rng, TL_SHAPE(1, Smax, KV, D));
            if (dts[di] == TL_BF16) hf = tl_cast(hf, TL_BF16);
            for (int layout = 0; layout < 2; layout++)
                for (int64_t T = 1; T <= 3; T += 2) {
                    tl_tensor *k = layout ? hf_layout_view(hf, S) : tl_narrow(lesson, 2, 0, S);
                    char what[128];
                    snprintf(what, sizeof what, "%s cache (%s layout), S=%lld, D=%lld, %lld rows",
                             di ? "BF16" : "F32", layout ? "HF" : "lesson", (long long)S,
                             (long long)D, (long long)(G * T));
                    check_group_rows(&rng, k, G, T, what);
                }
        }
    tl_no_grad_pop();
}
END_TEST

/* The expanded form of GQA (key heads broadcast over the group, stride 0)
 * with several query rows per head: each group's K read in place. */
START_TEST(matmul_expanded_group_heads_with_several_rows_match_the_reference)
{
    tl_pcg32 rng = tl_test_rng(83);
    int64_t B = 1, KV = 2, G = 3, Smax = 300, S = 257, D = 33, T = 5;
    const tl_dtype dts[] = {TL_F32, TL_BF16};
    for (int i = 0; i < 2; i++) {
        tl_tensor *k = tl_narrow(random_cache(&rng, dts[i], B, KV, Smax, D), 2, 0, S);
        tl_tensor *k5 = tl_expand(tl_unsqueeze(k, 2), TL_SHAPE(B, KV, G, S, D));
        tl_tensor *kt = tl_transpose(k5, -1, -2);
        tl_tensor *q = tl_randn(&rng, TL_SHAPE(B, KV, G, T, D));
        tl_tensor *p = tl_randn(&rng, TL_SHAPE(B, KV, G, T, S));
        assert_matches_naive(tl_matmul(q, kt), q, kt, "expanded q @ K^T, 5 rows");
        assert_matches_naive(tl_matmul(p, k5), p, k5, "expanded p @ V, 5 rows");
    }
}
END_TEST
