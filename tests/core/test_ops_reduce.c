/* Reductions (ops.h): over one axis with and without keepdim, over
 * everything, and their gradients. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"

static tl_tensor *m23(void) {   /* [[1, 2, 3], [4, 5, 6]] */
    return tl_from_f32((float[]){ 1, 2, 3, 4, 5, 6 }, TL_SHAPE(2, 3));
}

START_TEST(sum_over_each_axis)
{
    tl_tensor *s0 = tl_sum(m23(), 0, false), *s1 = tl_sum(m23(), -1, false);
    ck_assert_int_eq(s0->ndim, 1);
    ck_assert_int_eq(s0->shape[0], 3);
    ck_assert(tl_item_at(s0, 0) == 5 && tl_item_at(s0, 2) == 9);
    ck_assert_int_eq(s1->shape[0], 2);
    ck_assert(tl_item_at(s1, 0) == 6 && tl_item_at(s1, 1) == 15);
}
END_TEST

START_TEST(keepdim_leaves_a_unit_axis)
{
    tl_tensor *s = tl_sum(m23(), 1, true);
    ck_assert_int_eq(s->ndim, 2);
    ck_assert_int_eq(s->shape[0], 2);
    ck_assert_int_eq(s->shape[1], 1);
    tl_tensor *centred = tl_sub(m23(), tl_mean(m23(), -1, true));   /* the usual use */
    ck_assert(tl_item_at(centred, 0) == -1 && tl_item_at(centred, 5) == 1);
}
END_TEST

START_TEST(mean_and_max_by_hand)
{
    tl_tensor *mean = tl_mean(m23(), 0, false);
    ck_assert(tl_item_at(mean, 0) == 2.5 && tl_item_at(mean, 2) == 4.5);
    tl_tensor *t = tl_from_f32((float[]){ 3, -1, 7, 7, 0, 2 }, TL_SHAPE(3, 2));
    tl_tensor *mx = tl_max(t, 1, false);
    ck_assert(tl_item_at(mx, 0) == 3 && tl_item_at(mx, 1) == 7 && tl_item_at(mx, 2) == 2);
    ck_assert(tl_item(tl_max(tl_from_f32((float[]){ 1, NAN, 2 }, TL_SHAPE(3)), 0, false)) != 1);
}
END_TEST

START_TEST(reduce_everything_to_rank_zero)
{
    tl_tensor *s = tl_sum_all(m23()), *m = tl_mean_all(m23());
    ck_assert_int_eq(s->ndim, 0);
    ck_assert(tl_item(s) == 21 && tl_item(m) == 3.5);
    ck_assert(tl_item(tl_sum_all(tl_transpose(m23(), 0, 1))) == 21);
    ck_assert(tl_item(tl_sum_all(tl_zeros(TL_F32, TL_SHAPE(0)))) == 0);
    ck_assert(isnan(tl_item(tl_mean_all(tl_zeros(TL_F32, TL_SHAPE(0))))));
}
END_TEST

START_TEST(middle_axis_of_a_rank_three_tensor)
{
    tl_tensor *t = tl_empty(TL_F32, TL_SHAPE(2, 3, 4));
    for (int i = 0; i < 24; i++) tl_f32(t)[i] = (float)i;
    tl_tensor *s = tl_sum(t, 1, false);   /* s[a][c] = sum_b t[a][b][c] */
    ck_assert(tl_get(s, (int64_t[]){ 1, 2 }) == (14 + 18 + 22));
    tl_tensor *mx = tl_max(t, 1, true);
    ck_assert(tl_get(mx, (int64_t[]){ 0, 0, 3 }) == 11);
}
END_TEST

START_TEST(sum_accumulates_in_double)
{
    /* 2^24 ones plus one: float32 running sums stall at 2^24 */
    tl_tensor *t = tl_ones(TL_F32, TL_SHAPE((1 << 24) + 2));
    ck_assert(tl_item(tl_sum_all(t)) == (1 << 24) + 2);
}
END_TEST

/* A row's sum over the last axis runs in one order on every CPU, whatever
 * width its loop is compiled for: 16 partial sums in double (lane k takes
 * elements k, k + 16, ...), then added in a tree (8 + 8, 4 + 4, 2 + 2, 1 + 1).
 * Rows of 1e16 and 1 that cancel make every other order give another value
 * (a control checks the plain left-to-right sum differs). */
START_TEST(last_axis_sums_run_in_one_order_on_every_cpu)
{
    enum { C = 1000 };
    const int lengths[] = {1, 15, 16, 17, 31, 100, C};
    for (int li = 0; li < 7; li++) {
        int n = lengths[li];
        float x[C];
        for (int j = 0; j < n; j++)
            x[j] = j % 7 == 0 ? 1e16f : j % 7 == 3 ? -1e16f : (float)(j % 5) + 0.25f;
        double lane[16] = {0};
        for (int j = 0; j < n; j++) lane[j % 16] += x[j];
        for (int width = 8; width > 0; width /= 2)
            for (int k = 0; k < width; k++) lane[k] += lane[k + width];
        tl_tensor *got = tl_sum(tl_from_f32(x, TL_SHAPE(1, n)), -1, false);
        tl_assert_ok(got);
        ck_assert_msg(tl_item_at(got, 0) == (float)lane[0], "length %d: sum %.9g, want %.9g", n,
                      tl_item_at(got, 0), (float)lane[0]);
        if (n == C) {
            double plain = 0;
            for (int j = 0; j < n; j++) plain += x[j];
            ck_assert((float)plain != (float)lane[0]);
        }
    }
}
END_TEST

START_TEST(reduction_errors)
{
    tl_assert_error(tl_max(tl_zeros(TL_F32, TL_SHAPE(2, 0)), 1, false),
                    "max: axis 1 of shape [2, 0] is empty");
    tl_assert_error(tl_mean(m23(), -3, false), "mean: axis -3 is out of range for shape [2, 3]");
    tl_assert_error(tl_sum_all(tl_arange(0, 4)), "sum_all: tensor [4] is I64");
}
END_TEST

/* ---- gradients ------------------------------------------------------------ */

typedef struct { int which, axis; bool keepdim; } reduce_ctx;

static tl_tensor *apply_reduce(tl_tensor *const *in, void *ctx) {
    const reduce_ctx *c = ctx;
    switch (c->which) {
    case 0: return tl_sum(in[0], c->axis, c->keepdim);
    case 1: return tl_mean(in[0], c->axis, c->keepdim);
    case 2: return tl_max(in[0], c->axis, c->keepdim);
    case 3: return tl_sum_all(in[0]);
    default: return tl_mean_all(in[0]);
    }
}

START_TEST(gradcheck_every_reduction)
{
    tl_pcg32 rng = tl_test_rng(21);
    for (int which = 0; which < 5; which++)
        for (int axis = -3; axis < 3; axis++)
            for (int keep = 0; keep < 2; keep++) {
                reduce_ctx c = { which, axis, keep };
                tl_tensor *x = tl_requires_grad(tl_randn(&rng, TL_SHAPE(2, 3, 4)), true);
                tl_assert_gradcheck(apply_reduce, &c, &x, 1, 2e-3);
            }
}
END_TEST

START_TEST(max_gradient_goes_to_the_first_maximum)
{
    tl_tensor *x = tl_requires_grad(tl_from_f32((float[]){ 5, 1, 5, 2 }, TL_SHAPE(4)), true);
    tl_backward(tl_max(x, 0, false));
    const float want[4] = { 1, 0, 0, 0 };
    for (int i = 0; i < 4; i++) ck_assert(tl_item_at(x->grad, i) == want[i]);
}
END_TEST

/* Sums over the last axis of 2^16 elements and more share their rows among
 * threads (a prefill's norms): the mean of each of 301 rows of 577 small
 * integers (a ragged last block) is exact, and the same on 1 and 3 threads. */
START_TEST(large_last_axis_means_are_shared_among_threads_exactly)
{
    enum { ROWS = 301, N = 577 };
    tl_tensor *x = tl_empty(TL_F32, TL_SHAPE(ROWS, N));
    tl_assert_ok(x);
    for (int r = 0; r < ROWS; r++)
        for (int k = 0; k < N; k++) tl_f32(x)[r * N + k] = (float)((r * 13 + k * 7) % 31);
    const char *counts[] = {"1", "3"};
    for (int c = 0; c < 2; c++) {
        setenv("TINYLLM_THREADS", counts[c], 1);
        tl_tensor *m = tl_mean(x, -1, false), *s = tl_sum(x, 1, true);
        tl_assert_ok(m);
        tl_assert_ok(s);
        for (int r = 0; r < ROWS; r++) {
            double sum = 0;
            for (int k = 0; k < N; k++) sum += (r * 13 + k * 7) % 31;
            ck_assert_msg(tl_f32(m)[r] == (float)(sum * (1.0 / N)) && tl_f32(s)[r] == (float)sum,
                          "%s threads, row %d: mean %.9g sum %.9g, expected %.9g %.9g",
                          counts[c], r, tl_f32(m)[r], tl_f32(s)[r], sum / N, sum);
        }
    }
    unsetenv("TINYLLM_THREADS");
}
END_TEST
