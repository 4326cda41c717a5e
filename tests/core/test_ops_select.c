/* argmax and topk: hand values, PyTorch's tie and NaN rules (the lower
 * index wins a tie; NaN ranks above every number), axes and keepdim, a
 * cross-check of topk against a full sort, and the errors. No gradients:
 * selection is not differentiable. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "tinyllm/testing.h"
#include "tinyllm/ops.h"

static void assert_i64(const tl_tensor *t, const int64_t *want, int64_t n) {
    ck_assert_int_eq(t->dtype, TL_I64);
    ck_assert_int_eq(tl_numel(t), n);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg((int64_t)tl_item_at(t, i) == want[i], "element %lld: got %lld, want %lld",
                      (long long)i, (long long)tl_item_at(t, i), (long long)want[i]);
}

/* ---- argmax ------------------------------------------------------------ */

START_TEST(test_argmax_hand_rows_and_columns)
{
    tl_scope_push();
    tl_tensor *t = tl_from_f32((const float[]){1, 5, 2, 7, -1, 3}, TL_SHAPE(2, 3));
    tl_tensor *rows = tl_argmax(t, -1, false);
    tl_assert_ok(rows);
    ck_assert_int_eq(rows->ndim, 1);
    assert_i64(rows, (const int64_t[]){1, 0}, 2);
    tl_tensor *cols = tl_argmax(t, 0, true);
    tl_assert_ok(cols);
    ck_assert_int_eq(cols->ndim, 2);
    ck_assert_int_eq(cols->shape[0], 1);
    ck_assert_int_eq(cols->shape[1], 3);
    assert_i64(cols, (const int64_t[]){1, 0, 1}, 3);
    tl_scope_pop();
}
END_TEST

START_TEST(test_argmax_tie_goes_to_lower_index)
{
    tl_scope_push();
    /* torch.argmax(torch.tensor([3., 1., 3., 2.])) == 0 */
    tl_tensor *t = tl_from_f32((const float[]){3, 1, 3, 2}, TL_SHAPE(4));
    assert_i64(tl_argmax(t, 0, false), (const int64_t[]){0}, 1);
    tl_tensor *flat = tl_from_f32((const float[]){-2, -2, -2}, TL_SHAPE(3));
    assert_i64(tl_argmax(flat, 0, false), (const int64_t[]){0}, 1);
    tl_scope_pop();
}
END_TEST

START_TEST(test_argmax_nan_ranks_highest_like_pytorch)
{
    tl_scope_push();
    /* torch.argmax(torch.tensor([1., nan, 3., nan])) == 1 */
    tl_tensor *t = tl_from_f32((const float[]){1, NAN, 3, NAN, INFINITY, 0}, TL_SHAPE(2, 3));
    assert_i64(tl_argmax(t, -1, false), (const int64_t[]){1, 0}, 2);
    tl_tensor *row = tl_from_f32((const float[]){INFINITY, 2, NAN}, TL_SHAPE(3));
    assert_i64(tl_argmax(row, 0, false), (const int64_t[]){2}, 1);
    tl_scope_pop();
}
END_TEST

START_TEST(test_argmax_reads_views_and_bf16)
{
    tl_scope_push();
    tl_tensor *t = tl_from_f32((const float[]){1, 5, 2, 7, -1, 3}, TL_SHAPE(2, 3));
    /* The transpose's rows are t's columns. */
    assert_i64(tl_argmax(tl_transpose(t, 0, 1), 1, false), (const int64_t[]){1, 0, 1}, 3);
    assert_i64(tl_argmax(tl_cast(t, TL_BF16), 1, false), (const int64_t[]){1, 0}, 2);
    tl_scope_pop();
}
END_TEST

START_TEST(test_argmax_errors)
{
    tl_scope_push();
    tl_tensor *t = tl_zeros(TL_F32, TL_SHAPE(2, 3));
    tl_assert_error(tl_argmax(t, 2, false), "axis 2 is out of range for [2, 3]");
    tl_assert_error(tl_argmax(tl_zeros(TL_F32, TL_SHAPE(2, 0)), 1, false),
                    "axis 1 of [2, 0] is empty");
    tl_assert_error(tl_argmax(NULL, 0, false), "argmax");
    tl_scope_pop();
}
END_TEST

/* ---- topk -------------------------------------------------------------- */

START_TEST(test_topk_descending_with_ties_lower_index_first)
{
    tl_scope_push();
    /* torch.topk(torch.tensor([3., 1., 3., 2.]), 3) -> values [3, 3, 2], indices [0, 2, 3] */
    tl_tensor *t = tl_from_f32((const float[]){3, 1, 3, 2}, TL_SHAPE(4));
    tl_tensor *values, *indices;
    ck_assert_int_eq(tl_topk(t, 3, &values, &indices), 0);
    assert_i64(indices, (const int64_t[]){0, 2, 3}, 3);
    tl_assert_close(values, tl_from_f32((const float[]){3, 3, 2}, TL_SHAPE(3)), 0, 0);
    tl_scope_pop();
}
END_TEST

START_TEST(test_topk_nan_first_like_pytorch)
{
    tl_scope_push();
    /* torch.topk(torch.tensor([1., nan, 3., nan]), 3) -> indices [1, 3, 2] */
    tl_tensor *t = tl_from_f32((const float[]){1, NAN, 3, NAN}, TL_SHAPE(4));
    tl_tensor *values, *indices;
    ck_assert_int_eq(tl_topk(t, 3, &values, &indices), 0);
    assert_i64(indices, (const int64_t[]){1, 3, 2}, 3);
    ck_assert(isnan(tl_item_at(values, 0)) && isnan(tl_item_at(values, 1)));
    ck_assert_double_eq(tl_item_at(values, 2), 3.0);
    tl_scope_pop();
}
END_TEST

START_TEST(test_topk_rows_of_a_batch_and_values_optional)
{
    tl_scope_push();
    tl_tensor *t = tl_from_f32((const float[]){0, 9, 4, 4, 8, -1, 7, 2}, TL_SHAPE(2, 4));
    tl_tensor *indices;
    ck_assert_int_eq(tl_topk(t, 2, NULL, &indices), 0);
    ck_assert_int_eq(indices->ndim, 2);
    ck_assert_int_eq(indices->shape[1], 2);
    assert_i64(indices, (const int64_t[]){1, 2, 0, 2}, 4);
    /* k == n sorts the whole row. */
    tl_tensor *values;
    ck_assert_int_eq(tl_topk(t, 4, &values, &indices), 0);
    assert_i64(indices, (const int64_t[]){1, 2, 3, 0, 0, 2, 3, 1}, 8);
    tl_scope_pop();
}
END_TEST

/* Sorts candidate indices by the same order with qsort: the independent
 * reference for the heap selection. */
static const float *sort_row_;
static int by_rank(const void *pa, const void *pb) {
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    float va = sort_row_[a], vb = sort_row_[b];
    if (va != vb) return va > vb ? -1 : 1;
    return a < b ? -1 : 1;
}

START_TEST(test_topk_matches_full_sort_on_random_rows)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(41);
    for (int trial = 0; trial < 40; trial++) {
        tl_scope_push();
        int64_t n = 1 + tl_pcg32_bounded(&rng, 300);
        int k = 1 + (int)tl_pcg32_bounded(&rng, (uint32_t)n);
        float row[300];
        /* Few distinct values, so ties are common. */
        for (int64_t j = 0; j < n; j++) row[j] = (float)tl_pcg32_bounded(&rng, 20);
        int64_t order[300];
        for (int64_t j = 0; j < n; j++) order[j] = j;
        sort_row_ = row;
        qsort(order, (size_t)n, sizeof order[0], by_rank);
        tl_tensor *values, *indices;
        ck_assert_int_eq(tl_topk(tl_from_f32(row, 1, &n), k, &values, &indices), 0);
        assert_i64(indices, order, k);
        for (int j = 0; j < k; j++) ck_assert_double_eq(tl_item_at(values, j), row[order[j]]);
        tl_scope_pop();
    }
    tl_scope_pop();
}
END_TEST

START_TEST(test_topk_errors_leave_outputs_null)
{
    tl_scope_push();
    tl_tensor *t = tl_zeros(TL_F32, TL_SHAPE(2, 3));
    tl_tensor *values = t, *indices = t;
    tl_clear_error();
    ck_assert_int_eq(tl_topk(t, 4, &values, &indices), -1);
    ck_assert_ptr_null(values);
    ck_assert_ptr_null(indices);
    ck_assert_ptr_nonnull(
        strstr(tl_error(), "k=4 is out of range [1, 3] for the last axis of [2, 3]"));
    tl_clear_error();
    ck_assert_int_eq(tl_topk(t, 0, &values, &indices), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "k=0"));
    tl_clear_error();
    ck_assert_int_eq(tl_topk(t, 1, &values, NULL), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "indices"));
    tl_clear_error();
    ck_assert_int_eq(tl_topk(tl_scalar(1), 1, &values, &indices), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "scalar"));
    tl_clear_error();
    ck_assert_int_eq(tl_topk(NULL, 1, &values, &indices), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "topk"));
    tl_clear_error();
    tl_scope_pop();
}
END_TEST
