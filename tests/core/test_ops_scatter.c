/* index_select and index_add: hand values along each axis, repeated and
 * empty indices, BF16 and strided inputs, a round trip through both, the
 * errors that name the bad value or shape, and gradients (each op's
 * backward is the other op).
 *
 * Gradcheck tolerance: these ops only move and add values, so the float32
 * forward's rounding is all central differences see (worst measured here:
 * ~1e-5); GRAD_TOL = 2e-3 is loose, and a lost or misplaced slice is off by
 * O(1).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>

#include "tinyllm/testing.h"
#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"

#define GRAD_TOL 2e-3

static void assert_values(const tl_tensor *t, const float *want, int64_t n) {
    ck_assert_msg(t != NULL, "NULL: %s", tl_error() ? tl_error() : "?");
    ck_assert_int_eq(tl_numel(t), n);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(tl_item_at(t, i) == want[i], "element %lld: got %g, want %g", (long long)i,
                      tl_item_at(t, i), want[i]);
}

START_TEST(test_index_select_rows_and_columns)
{
    tl_scope_push();
    tl_tensor *t = tl_from_f32((const float[]){0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32},
                               TL_SHAPE(4, 3));
    /* rows 3, 0, 3 (a repeat), in the order given */
    tl_tensor *rows = tl_index_select(t, 0, tl_from_i64((const int64_t[]){3, 0, 3}, TL_SHAPE(3)));
    ck_assert_int_eq(rows->shape[0], 3);
    ck_assert_int_eq(rows->shape[1], 3);
    assert_values(rows, (const float[]){30, 31, 32, 0, 1, 2, 30, 31, 32}, 9);
    /* columns 2, 1 of each row (axis -1), with I32 indices */
    tl_tensor *i32 = tl_cast(tl_from_i64((const int64_t[]){2, 1}, TL_SHAPE(2)), TL_I32);
    tl_tensor *cols = tl_index_select(t, -1, i32);
    ck_assert_int_eq(cols->shape[0], 4);
    ck_assert_int_eq(cols->shape[1], 2);
    assert_values(cols, (const float[]){2, 1, 12, 11, 22, 21, 32, 31}, 8);
    /* the middle axis of a rank-3 tensor */
    tl_tensor *r3 = tl_reshape(tl_arange(0, 12), TL_SHAPE(2, 3, 2));
    tl_tensor *mid = tl_index_select(tl_cast(r3, TL_F32), 1,
                                     tl_from_i64((const int64_t[]){2}, TL_SHAPE(1)));
    ck_assert_int_eq(mid->shape[1], 1);
    assert_values(mid, (const float[]){4, 5, 10, 11}, 4);
    /* nothing selected: an empty axis */
    tl_tensor *none = tl_index_select(t, 0, tl_zeros(TL_I64, TL_SHAPE(0)));
    tl_assert_ok(none);
    ck_assert_int_eq(none->shape[0], 0);
    ck_assert_int_eq(none->shape[1], 3);
    tl_scope_pop();
}
END_TEST

START_TEST(test_index_select_reads_views_and_bf16)
{
    tl_scope_push();
    tl_tensor *t = tl_from_f32((const float[]){1, 2, 3, 4, 5, 6}, TL_SHAPE(2, 3));
    tl_tensor *tt = tl_transpose(t, 0, 1);   /* [3, 2]: rows (1, 4), (2, 5), (3, 6) */
    tl_tensor *idx = tl_from_i64((const int64_t[]){2, 0}, TL_SHAPE(2));
    assert_values(tl_index_select(tt, 0, idx), (const float[]){3, 6, 1, 4}, 4);
    tl_tensor *b = tl_index_select(tl_cast(tt, TL_BF16), 0, idx);
    ck_assert_int_eq(b->dtype, TL_F32);
    assert_values(b, (const float[]){3, 6, 1, 4}, 4);
    tl_scope_pop();
}
END_TEST

START_TEST(test_index_add_accumulates_in_index_order)
{
    tl_scope_push();
    tl_tensor *t = tl_from_f32((const float[]){1, 1, 2, 2, 3, 3}, TL_SHAPE(3, 2));
    tl_tensor *src = tl_from_f32((const float[]){10, 20, 100, 200, 1000, 2000}, TL_SHAPE(3, 2));
    /* row 2 gets slices 0 and 2, row 0 slice 1, row 1 nothing */
    tl_tensor *idx = tl_from_i64((const int64_t[]){2, 0, 2}, TL_SHAPE(3));
    tl_tensor *out = tl_index_add(t, 0, idx, src);
    assert_values(out, (const float[]){101, 201, 2, 2, 1013, 2023}, 6);
    /* t itself is unchanged */
    assert_values(t, (const float[]){1, 1, 2, 2, 3, 3}, 6);
    /* along the last axis: columns 1 and 0 of a [2, 3] */
    tl_tensor *cols = tl_index_add(tl_zeros(TL_F32, TL_SHAPE(2, 3)), 1,
                                   tl_from_i64((const int64_t[]){1, 0}, TL_SHAPE(2)),
                                   tl_from_f32((const float[]){5, 6, 7, 8}, TL_SHAPE(2, 2)));
    assert_values(cols, (const float[]){6, 5, 0, 8, 7, 0}, 6);
    /* an empty index adds nothing; BF16 inputs are widened */
    tl_tensor *same = tl_index_add(tl_cast(t, TL_BF16), 0, tl_zeros(TL_I64, TL_SHAPE(0)),
                                   tl_zeros(TL_F32, TL_SHAPE(0, 2)));
    ck_assert_int_eq(same->dtype, TL_F32);
    assert_values(same, (const float[]){1, 1, 2, 2, 3, 3}, 6);
    tl_scope_pop();
}
END_TEST

/* Gathering a permutation of rows and adding them back where they came from
 * rebuilds the tensor exactly: the dispatch and combine of an expert. */
START_TEST(test_select_then_add_back_is_the_identity)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(801);
    tl_tensor *t = tl_randn(&rng, TL_SHAPE(5, 4));
    tl_tensor *perm = tl_from_i64((const int64_t[]){3, 1, 4, 0, 2}, TL_SHAPE(5));
    tl_tensor *back = tl_index_add(tl_zeros(TL_F32, TL_SHAPE(5, 4)), 0, perm,
                                   tl_index_select(t, 0, perm));
    tl_assert_close(back, t, 0.0, 0.0);
    tl_scope_pop();
}
END_TEST

START_TEST(test_index_ops_errors)
{
    tl_scope_push();
    tl_tensor *t = tl_zeros(TL_F32, TL_SHAPE(4, 3));
    tl_tensor *ok = tl_from_i64((const int64_t[]){0, 3}, TL_SHAPE(2));
    tl_assert_error(tl_index_select(t, 2, ok), "index_select: axis 2 is out of range for [4, 3]");
    tl_assert_error(tl_index_select(t, 0, tl_from_i64((const int64_t[]){0, 4}, TL_SHAPE(2))),
                    "index value 4 at position 1 is out of range [0, 4) for axis 0 of [4, 3]");
    tl_assert_error(tl_index_select(t, 1, tl_from_i64((const int64_t[]){-1}, TL_SHAPE(1))),
                    "index value -1");
    tl_assert_error(tl_index_select(t, 0, tl_zeros(TL_I64, TL_SHAPE(1, 2))), "must have rank 1");
    tl_assert_error(tl_index_select(t, 0, tl_zeros(TL_F32, TL_SHAPE(2))), "I32 or I64");
    tl_assert_error(tl_index_select(NULL, 0, ok), "index_select");
    tl_assert_error(tl_index_add(t, 0, ok, tl_zeros(TL_F32, TL_SHAPE(3, 3))),
                    "index_add: src [3, 3] must have the shape of t [4, 3] with axis 0 replaced "
                    "by the 2 positions of index [2]");
    tl_assert_error(tl_index_add(t, 0, tl_from_i64((const int64_t[]){7}, TL_SHAPE(1)),
                                 tl_zeros(TL_F32, TL_SHAPE(1, 3))), "index_add: index value 7");
    tl_assert_error(tl_index_add(t, 0, ok, NULL), "index_add");
    /* A NULL input keeps the message of the call that failed first. */
    tl_clear_error();
    tl_tensor *bad = tl_reshape(t, TL_SHAPE(5, 5));
    ck_assert_ptr_nonnull(tl_error());
    char first[1024];   /* a copy: tl_error() is one buffer */
    snprintf(first, sizeof first, "%s", tl_error());
    ck_assert_ptr_null(tl_index_select(bad, 0, ok));
    ck_assert_str_eq(tl_error(), first);
    tl_clear_error();
    tl_scope_pop();
}
END_TEST

static tl_tensor *f_select(tl_tensor *const *in, void *ctx) {
    return tl_index_select(in[0], 1, (tl_tensor *)ctx);
}

/* in[0] = t [3, 4], in[1] = src [3, 5]: columns added with repeats. */
static tl_tensor *f_add(tl_tensor *const *in, void *ctx) {
    return tl_mul(tl_index_add(in[0], 1, (tl_tensor *)ctx, in[1]), in[0]);
}

START_TEST(test_index_ops_gradcheck)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(802);
    tl_tensor *idx = tl_from_i64((const int64_t[]){2, 0, 2, 3, 2}, TL_SHAPE(5));
    tl_tensor *t[1] = {tl_requires_grad(tl_randn(&rng, TL_SHAPE(3, 4)), true)};
    tl_assert_gradcheck(f_select, idx, t, 1, GRAD_TOL);
    /* a repeated position collects every gradient: d sum(select) / dt */
    tl_zero_grad(t[0]);
    ck_assert_int_eq(tl_backward(tl_sum_all(tl_index_select(t[0], 1, idx))), 0);
    assert_values(t[0]->grad, (const float[]){1, 0, 3, 1, 1, 0, 3, 1, 1, 0, 3, 1}, 12);
    tl_zero_grad(t[0]);

    tl_tensor *in[2] = {tl_requires_grad(tl_randn(&rng, TL_SHAPE(3, 4)), true),
                        tl_requires_grad(tl_randn(&rng, TL_SHAPE(3, 5)), true)};
    tl_assert_gradcheck(f_add, idx, in, 2, GRAD_TOL);
    tl_zero_grad(in[0]);
    tl_zero_grad(in[1]);
    tl_scope_pop();
}
END_TEST
