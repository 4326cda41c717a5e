/* softmax, log_softmax and cross_entropy: values from PyTorch 1.13 (quoted
 * with the call that made them), properties (rows sum to 1, no overflow at
 * 1e4, log_softmax = log of softmax), ignore_index, errors and gradients.
 *
 * Gradcheck tolerance: float32 forward, central differences with eps = 1e-3:
 * rounding contributes about 1e-4 relative error (worst measured here:
 * 1.1e-4), so GRAD_TOL = 2e-3 keeps a margin while a wrong gradient is off
 * by O(1).
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tinyllm/testing.h"
#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"

#define GRAD_TOL 2e-3

static tl_tensor *grad_leaf(tl_pcg32 *rng, int ndim, const int64_t *shape) {
    return tl_requires_grad(tl_randn(rng, ndim, shape), true);
}

static tl_tensor *f_softmax(tl_tensor *const *in, void *ctx) {
    return tl_softmax(in[0], *(const int *)ctx);
}

static tl_tensor *f_log_softmax(tl_tensor *const *in, void *ctx) {
    return tl_log_softmax(in[0], *(const int *)ctx);
}

/* ctx: the targets tensor; -100 is ignored. */
static tl_tensor *f_cross_entropy(tl_tensor *const *in, void *ctx) {
    return tl_cross_entropy(in[0], (tl_tensor *)ctx, -100);
}

/* ---- softmax and log_softmax ------------------------------------------- */

START_TEST(test_softmax_matches_pytorch_on_1_2_3)
{
    tl_scope_push();
    tl_tensor *x = tl_from_f32((const float[]){1, 2, 3}, TL_SHAPE(3));
    /* torch.softmax(torch.tensor([1., 2., 3.]), 0) */
    tl_assert_close(
        tl_softmax(x, 0),
        tl_from_f32((const float[]){0.09003057f, 0.24472847f, 0.66524094f}, TL_SHAPE(3)), 1e-6,
        1e-7);
    /* torch.log_softmax(torch.tensor([1., 2., 3.]), 0) */
    tl_assert_close(
        tl_log_softmax(x, 0),
        tl_from_f32((const float[]){-2.4076059f, -1.4076059f, -0.40760595f}, TL_SHAPE(3)), 1e-6,
        1e-6);
    tl_scope_pop();
}
END_TEST

START_TEST(test_softmax_rows_sum_to_one_on_every_axis)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(21);
    tl_tensor *x = tl_mul_scalar(tl_randn(&rng, TL_SHAPE(3, 4, 5)), 4.0);
    for (int axis = -3; axis < 3; axis++) {
        tl_tensor *p = tl_softmax(x, axis);
        tl_assert_ok(p);
        tl_tensor *sums = tl_sum(p, axis, false);
        tl_assert_close(sums, tl_ones_like(sums), 1e-6, 1e-6);
        for (int64_t i = 0; i < tl_numel(p); i++) ck_assert(tl_item_at(p, i) >= 0);
    }
    tl_scope_pop();
}
END_TEST

/* Softmaxes of 2^16 elements and more share their rows among threads
 * (attention's scores at prefill, [1, 9, 128, 128]): 301 rows of 300 (a
 * ragged last piece) give the same bits on 1 and 3 threads, and each row
 * sums to 1 within 300 roundings. */
START_TEST(test_large_softmax_is_the_same_on_any_thread_count)
{
    enum { R = 301, C = 300 };
    tl_tensor *x = tl_empty(TL_F32, TL_SHAPE(R, C));
    tl_assert_ok(x);
    for (int i = 0; i < R * C; i++) tl_f32(x)[i] = (float)((i * 37) % 101) / 10.0f;
    setenv("TINYLLM_THREADS", "1", 1);
    tl_tensor *one = tl_softmax(x, -1), *log_one = tl_log_softmax(x, -1);
    setenv("TINYLLM_THREADS", "3", 1);
    tl_tensor *three = tl_softmax(x, -1), *log_three = tl_log_softmax(x, -1);
    unsetenv("TINYLLM_THREADS");
    tl_assert_ok(one);
    tl_assert_ok(three);
    tl_assert_ok(log_one);
    tl_assert_ok(log_three);
    ck_assert(memcmp(tl_f32(one), tl_f32(three), sizeof(float) * R * C) == 0);
    ck_assert(memcmp(tl_f32(log_one), tl_f32(log_three), sizeof(float) * R * C) == 0);
    for (int r = 0; r < R; r++) {
        double sum = 0;
        for (int c = 0; c < C; c++) sum += tl_f32(three)[r * C + c];
        ck_assert_msg(fabs(sum - 1.0) <= C * 0x1p-24, "row %d sums to %.9g", r, sum);
    }
}
END_TEST

/* Rows go through the exp in groups (of up to 64 rows and 4096 elements):
 * every row of [300, 37] (four full groups and a ragged one), [3, 5000] (a
 * row alone) and [4, 1] equals a softmax and log-softmax in double. Row r is
 * lifted by 40 r, so a row shifted by another row's max overflows or
 * vanishes instead of passing unseen. */
START_TEST(test_softmax_rows_grouped_for_the_exp_match_double_precision)
{
    const int64_t shapes[3][2] = {{300, 37}, {3, 5000}, {4, 1}};
    for (int k = 0; k < 3; k++) {
        tl_scope_push();
        int64_t R = shapes[k][0], C = shapes[k][1];
        tl_tensor *x = tl_empty(TL_F32, TL_SHAPE(R, C));
        tl_assert_ok(x);
        for (int64_t i = 0; i < R * C; i++)
            tl_f32(x)[i] = (float)((i * 37) % 101) / 10.0f + 40.0f * (float)(i / C);
        tl_tensor *y = tl_softmax(x, -1), *log_y = tl_log_softmax(x, -1);
        tl_assert_ok(y);
        tl_assert_ok(log_y);
        for (int64_t r = 0; r < R; r++) {
            const float *row = tl_f32(x) + r * C;
            double m = row[0], sum = 0;
            for (int64_t c = 1; c < C; c++) m = row[c] > m ? row[c] : m;
            for (int64_t c = 0; c < C; c++) sum += exp((double)row[c] - m);
            for (int64_t c = 0; c < C; c++) {
                double want_log = (double)row[c] - m - log(sum), want = exp(want_log);
                double got = tl_f32(y)[r * C + c], got_log = tl_f32(log_y)[r * C + c];
                ck_assert_msg(fabs(got - want) <= 1e-6 * want,
                              "[%lld, %lld] row %lld col %lld: softmax %.9g, want %.9g",
                              (long long)R, (long long)C, (long long)r, (long long)c, got, want);
                ck_assert_msg(fabs(got_log - want_log) <= 1e-6 * fabs(want_log) + 1e-6,
                              "[%lld, %lld] row %lld col %lld: log_softmax %.9g, want %.9g",
                              (long long)R, (long long)C, (long long)r, (long long)c, got_log,
                              want_log);
            }
        }
        tl_scope_pop();
    }
}
END_TEST

START_TEST(test_softmax_on_middle_axis_equals_last_axis_of_transpose)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(22);
    tl_tensor *x = tl_randn(&rng, TL_SHAPE(2, 3, 4));
    tl_tensor *direct = tl_softmax(x, 1);
    tl_tensor *via_last = tl_transpose(tl_softmax(tl_transpose(x, 1, 2), -1), 1, 2);
    tl_assert_close(direct, via_last, 1e-6, 1e-7);
    tl_assert_close(tl_log_softmax(x, 1),
                    tl_transpose(tl_log_softmax(tl_transpose(x, 1, 2), -1), 1, 2), 1e-6, 1e-6);
    tl_scope_pop();
}
END_TEST

START_TEST(test_softmax_large_logits_give_no_nan)
{
    tl_scope_push();
    tl_tensor *x =
        tl_from_f32((const float[]){1e4f, 1e4f - 1, 0, -1e4f, 1e4f, 1e4f}, TL_SHAPE(2, 3));
    tl_tensor *p = tl_softmax(x, -1), *lp = tl_log_softmax(x, -1);
    tl_assert_ok(p);
    tl_assert_ok(lp);
    for (int64_t i = 0; i < 6; i++) {
        ck_assert_msg(isfinite(tl_item_at(p, i)), "softmax element %lld is not finite",
                      (long long)i);
        ck_assert_msg(isfinite(tl_item_at(lp, i)), "log_softmax element %lld is not finite",
                      (long long)i);
    }
    /* Row 0: exp(0) and exp(-1) over their sum; row 1: two equal maxima. */
    double e = exp(-1.0);
    tl_assert_close(p, tl_from_f32((const float[]){(float)(1 / (1 + e)), (float)(e / (1 + e)), 0,
                                                   0, 0.5f, 0.5f},
                                   TL_SHAPE(2, 3)),
                    1e-6, 1e-7);
    ck_assert_double_eq_tol(tl_item_at(lp, 2), -1e4 - log(1 + e), 1e-2);
    tl_scope_pop();
}
END_TEST

START_TEST(test_log_softmax_equals_log_of_softmax)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(23);
    tl_tensor *x = tl_randn(&rng, TL_SHAPE(4, 7));
    tl_assert_close(tl_log_softmax(x, -1), tl_log(tl_softmax(x, -1)), 1e-5, 1e-6);
    tl_scope_pop();
}
END_TEST

START_TEST(test_softmax_nan_row_is_nan_other_rows_untouched)
{
    tl_scope_push();
    tl_tensor *x = tl_from_f32((const float[]){0, NAN, 1, 0, 0, 0}, TL_SHAPE(2, 3));
    tl_tensor *p = tl_softmax(x, -1);
    tl_assert_ok(p);
    for (int64_t i = 0; i < 3; i++) ck_assert(isnan(tl_item_at(p, i)));
    for (int64_t i = 3; i < 6; i++) ck_assert_double_eq_tol(tl_item_at(p, i), 1.0 / 3, 1e-7);
    tl_scope_pop();
}
END_TEST

START_TEST(test_softmax_bf16_input_gives_f32)
{
    tl_scope_push();
    tl_tensor *x = tl_from_f32((const float[]){1, 2, 3}, TL_SHAPE(3));
    tl_tensor *p = tl_softmax(tl_cast(x, TL_BF16), 0);
    tl_assert_ok(p);
    ck_assert_int_eq(p->dtype, TL_F32);
    tl_assert_close(p, tl_softmax(x, 0), 0, 0);   /* 1, 2, 3 are exact in BF16 */
    tl_scope_pop();
}
END_TEST

START_TEST(test_softmax_axis_out_of_range_is_an_error)
{
    tl_scope_push();
    tl_tensor *x = tl_zeros(TL_F32, TL_SHAPE(2, 3));
    tl_assert_error(tl_softmax(x, 2), "softmax: axis 2 is out of range for a tensor [2, 3]");
    tl_assert_error(tl_log_softmax(x, -3), "log_softmax: axis -3");
    tl_assert_error(tl_softmax(NULL, 0), "softmax");
    tl_assert_error(tl_softmax(tl_zeros(TL_I64, TL_SHAPE(3)), 0), "softmax");
    tl_scope_pop();
}
END_TEST

START_TEST(test_softmax_gradcheck_last_and_first_axis)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(24);
    tl_tensor *in[] = {grad_leaf(&rng, TL_SHAPE(3, 5))};
    int last = -1, first = 0;
    tl_assert_gradcheck(f_softmax, &last, in, 1, GRAD_TOL);
    tl_assert_gradcheck(f_softmax, &first, in, 1, GRAD_TOL);
    tl_tensor *in3[] = {grad_leaf(&rng, TL_SHAPE(2, 3, 4))};
    int middle = 1;
    tl_assert_gradcheck(f_softmax, &middle, in3, 1, GRAD_TOL);
    tl_scope_pop();
}
END_TEST

START_TEST(test_log_softmax_gradcheck)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(25);
    tl_tensor *in[] = {grad_leaf(&rng, TL_SHAPE(2, 3, 4))};
    int last = -1, middle = 1;
    tl_assert_gradcheck(f_log_softmax, &last, in, 1, GRAD_TOL);
    tl_assert_gradcheck(f_log_softmax, &middle, in, 1, GRAD_TOL);
    tl_scope_pop();
}
END_TEST

/* ---- cross_entropy ----------------------------------------------------- */

START_TEST(test_cross_entropy_matches_pytorch_with_an_ignored_row)
{
    tl_scope_push();
    tl_tensor *logits = tl_from_f32((const float[]){1, 2, 3, 0, 0, 0, 5, -1, 2}, TL_SHAPE(3, 3));
    tl_tensor *targets = tl_from_i64((const int64_t[]){2, -100, 0}, TL_SHAPE(3));
    /* F.cross_entropy(torch.tensor([[1.,2,3],[0,0,0],[5,-1,2]]), torch.tensor([2,-100,0])) */
    tl_tensor *loss = tl_cross_entropy(logits, targets, -100);
    tl_assert_ok(loss);
    ck_assert_int_eq(loss->ndim, 0);
    ck_assert_double_eq_tol(tl_item(loss), 0.22927582, 1e-6);
    tl_scope_pop();
}
END_TEST

START_TEST(test_cross_entropy_equals_mean_negative_log_softmax_at_target)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(26);
    int64_t N = 6, C = 9;
    tl_tensor *logits = tl_mul_scalar(tl_randn(&rng, TL_SHAPE(N, C)), 3.0);
    int64_t t[6];
    for (int i = 0; i < N; i++) t[i] = tl_pcg32_bounded(&rng, (uint32_t)C);
    t[4] = 7;   /* ignore_index need not be negative */
    tl_tensor *lp = tl_log_softmax(logits, -1);
    double sum = 0;
    int counted = 0;
    for (int i = 0; i < N; i++) {
        if (t[i] == 7) continue;   /* row 4, and any row that drew 7 */
        sum -= tl_get(lp, (const int64_t[]){i, t[i]});
        counted++;
    }
    tl_tensor *targets = tl_cast(tl_from_i64(t, TL_SHAPE(6)), TL_I32);
    tl_tensor *loss = tl_cross_entropy(logits, targets, 7);
    tl_assert_ok(loss);
    ck_assert_double_eq_tol(tl_item(loss), sum / counted, 1e-5);
    tl_scope_pop();
}
END_TEST

START_TEST(test_cross_entropy_large_logits_stay_finite)
{
    tl_scope_push();
    tl_tensor *logits = tl_from_f32((const float[]){1e4f, 0, -1e4f, 0}, TL_SHAPE(2, 2));
    tl_tensor *targets = tl_from_i64((const int64_t[]){1, 0}, TL_SHAPE(2));
    tl_tensor *loss = tl_cross_entropy(logits, targets, -100);
    tl_assert_ok(loss);
    /* Row 0 loses 1e4, row 1 loses 1e4: the mean is 1e4. */
    ck_assert_double_eq_tol(tl_item(loss), 1e4, 1e-2);
    tl_scope_pop();
}
END_TEST

START_TEST(test_cross_entropy_all_ignored_is_nan_with_zero_grad)
{
    tl_scope_push();
    tl_tensor *logits = tl_requires_grad(tl_ones(TL_F32, TL_SHAPE(2, 3)), true);
    tl_tensor *targets = tl_from_i64((const int64_t[]){-100, -100}, TL_SHAPE(2));
    tl_tensor *loss = tl_cross_entropy(logits, targets, -100);
    tl_assert_ok(loss);
    ck_assert(isnan(tl_item(loss)));
    /* PyTorch 1.13 gives a zero gradient here. */
    ck_assert_int_eq(tl_backward(loss), 0);
    tl_assert_ok(logits->grad);
    tl_assert_close(logits->grad, tl_zeros(TL_F32, TL_SHAPE(2, 3)), 0, 0);
    tl_scope_pop();
}
END_TEST

START_TEST(test_cross_entropy_errors_name_target_row_and_shapes)
{
    tl_scope_push();
    tl_tensor *logits = tl_zeros(TL_F32, TL_SHAPE(3, 4));
    tl_assert_error(
        tl_cross_entropy(logits, tl_from_i64((const int64_t[]){0, 4, 1}, TL_SHAPE(3)), -100),
        "target 4 at row 1 is out of range [0, C=4)");
    tl_assert_error(
        tl_cross_entropy(logits, tl_from_i64((const int64_t[]){0, 1, -1}, TL_SHAPE(3)), -100),
        "target -1 at row 2");
    tl_assert_error(
        tl_cross_entropy(logits, tl_from_i64((const int64_t[]){0, 1}, TL_SHAPE(2)), -100),
        "logits [3, 4] and targets [2]");
    tl_assert_error(tl_cross_entropy(tl_zeros(TL_F32, TL_SHAPE(2, 3, 4)),
                                     tl_from_i64((const int64_t[]){0, 1}, TL_SHAPE(2)), -100),
                    "logits must be [N, C]");
    tl_assert_error(tl_cross_entropy(logits, tl_zeros(TL_F32, TL_SHAPE(3)), -100), "cross_entropy");
    tl_scope_pop();
}
END_TEST

START_TEST(test_cross_entropy_gradcheck_with_ignored_row)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(27);
    tl_tensor *in[] = {grad_leaf(&rng, TL_SHAPE(4, 5))};
    tl_tensor *targets = tl_from_i64((const int64_t[]){3, -100, 0, 4}, TL_SHAPE(4));
    tl_assert_gradcheck(f_cross_entropy, targets, in, 1, GRAD_TOL);
    tl_scope_pop();
}
END_TEST

START_TEST(test_cross_entropy_grad_is_softmax_minus_onehot_over_count)
{
    tl_scope_push();
    tl_tensor *logits =
        tl_requires_grad(tl_from_f32((const float[]){0, 0, 1, 2}, TL_SHAPE(2, 2)), true);
    tl_tensor *targets = tl_from_i64((const int64_t[]){0, 1}, TL_SHAPE(2));
    ck_assert_int_eq(tl_backward(tl_cross_entropy(logits, targets, -100)), 0);
    /* Row 0: ([.5, .5] - [1, 0]) / 2; row 1: (softmax([1, 2]) - [0, 1]) / 2. */
    double s = 1 / (1 + exp(1.0));   /* softmax([1, 2])[0] */
    tl_tensor *want = tl_from_f32((const float[]){-0.25f, 0.25f, (float)(s / 2), (float)(-s / 2)},
                                  TL_SHAPE(2, 2));
    tl_assert_close(logits->grad, want, 1e-6, 1e-7);
    tl_scope_pop();
}
END_TEST
