/* embedding, gather, concat and split: hand values, index dtypes, BF16
 * tables, scatter-add backwards with repeated indices, errors that name the
 * bad index, and gradients.
 *
 * Gradcheck tolerance: float32 forward, central differences with eps = 1e-3
 * (rounding ~1e-4 relative); these ops only move values (worst measured
 * here: 2.5e-5), so GRAD_TOL = 2e-3 is loose, and a wrong gradient (a lost
 * or misplaced row) is off by O(1).
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "tinyllm/testing.h"
#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"

#define GRAD_TOL 2e-3

static tl_tensor *grad_leaf(tl_pcg32 *rng, int ndim, const int64_t *shape) {
    return tl_requires_grad(tl_randn(rng, ndim, shape), true);
}

static tl_tensor *f_embedding(tl_tensor *const *in, void *ctx) {
    return tl_embedding(in[0], (tl_tensor *)ctx);
}

/* ctx: the index tensor; gathers along axis 1. */
static tl_tensor *f_gather_axis1(tl_tensor *const *in, void *ctx) {
    return tl_gather(in[0], 1, (tl_tensor *)ctx);
}

/* Six inputs joined on axis 1: more than a node's input slots. */
static tl_tensor *f_concat6(tl_tensor *const *in, void *ctx) {
    (void)ctx;
    return tl_concat(in, 6, 1);
}

static tl_tensor *f_concat2_axis0(tl_tensor *const *in, void *ctx) {
    (void)ctx;
    return tl_concat(in, 2, 0);
}

/* Splits [4, 5] into columns of 2 and 3 and multiplies parts of both. */
static tl_tensor *f_split_then_mix(tl_tensor *const *in, void *ctx) {
    (void)ctx;
    tl_tensor *parts[2];
    if (tl_split(in[0], 1, (const int64_t[]){2, 3}, 2, parts) != 0) return NULL;
    return tl_mul(parts[0], tl_narrow(parts[1], 1, 1, 2));
}

/* ---- embedding --------------------------------------------------------- */

START_TEST(test_embedding_picks_rows_for_ids_of_any_shape)
{
    tl_scope_push();
    tl_tensor *w = tl_from_f32((const float[]){0, 1, 10, 11, 20, 21, 30, 31}, TL_SHAPE(4, 2));
    tl_tensor *ids = tl_from_i64((const int64_t[]){3, 0, 2, 2, 1, 3}, TL_SHAPE(2, 3));
    tl_tensor *e = tl_embedding(w, ids);
    tl_assert_ok(e);
    ck_assert_int_eq(e->ndim, 3);
    tl_assert_close(e, tl_from_f32((const float[]){30, 31, 0, 1, 20, 21, 20, 21, 10, 11, 30, 31},
                                   TL_SHAPE(2, 3, 2)),
                    0, 0);
    /* A rank-0 id gives one row [D]. */
    tl_tensor *one =
        tl_embedding(w, tl_reshape(tl_from_i64((const int64_t[]){2}, TL_SHAPE(1)), 0, NULL));
    tl_assert_ok(one);
    tl_assert_close(one, tl_from_f32((const float[]){20, 21}, TL_SHAPE(2)), 0, 0);
    tl_scope_pop();
}
END_TEST

START_TEST(test_embedding_i32_ids_and_bf16_table)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(31);
    tl_tensor *w = tl_randn(&rng, TL_SHAPE(10, 6));
    tl_tensor *ids64 = tl_from_i64((const int64_t[]){9, 4, 4, 0}, TL_SHAPE(4));
    tl_tensor *ids32 = tl_cast(ids64, TL_I32);
    tl_assert_close(tl_embedding(w, ids32), tl_embedding(w, ids64), 0, 0);
    /* BF16: each row widened exactly, as a whole-table cast would. */
    tl_tensor *w16 = tl_cast(w, TL_BF16);
    tl_tensor *e16 = tl_embedding(w16, ids64);
    tl_assert_ok(e16);
    ck_assert_int_eq(e16->dtype, TL_F32);
    tl_assert_close(e16, tl_embedding(tl_cast(w16, TL_F32), ids64), 0, 0);
    /* A transposed view as the table. */
    tl_tensor *wt = tl_transpose(tl_contiguous(tl_transpose(w, 0, 1)), 0, 1);
    tl_assert_close(tl_embedding(wt, ids64), tl_embedding(w, ids64), 0, 0);
    tl_scope_pop();
}
END_TEST

START_TEST(test_embedding_out_of_range_id_names_id_position_and_v)
{
    tl_scope_push();
    tl_tensor *w = tl_zeros(TL_F32, TL_SHAPE(5, 3));
    tl_tensor *ids = tl_from_i64((const int64_t[]){0, 1, 2, 4, 7, 1}, TL_SHAPE(2, 3));
    tl_assert_error(tl_embedding(w, ids),
                    "id 7 at position [1, 1] of ids [2, 3] is out of range [0, V=5)");
    tl_assert_error(tl_embedding(w, tl_from_i64((const int64_t[]){-1}, TL_SHAPE(1))),
                    "id -1 at position [0]");
    tl_assert_error(tl_embedding(w, tl_zeros(TL_F32, TL_SHAPE(2))), "embedding");
    tl_assert_error(tl_embedding(tl_zeros(TL_F32, TL_SHAPE(5)), ids), "[V, D]");
    tl_assert_error(tl_embedding(NULL, ids), "embedding");
    tl_scope_pop();
}
END_TEST

START_TEST(test_embedding_backward_scatter_adds_repeated_ids)
{
    tl_scope_push();
    tl_tensor *w = tl_requires_grad(tl_zeros(TL_F32, TL_SHAPE(4, 2)), true);
    tl_tensor *ids = tl_from_i64((const int64_t[]){1, 3, 1, 1}, TL_SHAPE(4));
    ck_assert_int_eq(tl_backward(tl_sum_all(tl_embedding(w, ids))), 0);
    /* Row 1 was read three times, row 3 once, rows 0 and 2 never. */
    tl_assert_close(w->grad, tl_from_f32((const float[]){0, 0, 3, 3, 0, 0, 1, 1}, TL_SHAPE(4, 2)),
                    0, 0);
    tl_scope_pop();
}
END_TEST

START_TEST(test_embedding_gradcheck)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(32);
    tl_tensor *in[] = {grad_leaf(&rng, TL_SHAPE(5, 3))};
    tl_tensor *ids = tl_from_i64((const int64_t[]){4, 0, 4, 2, 2, 2}, TL_SHAPE(2, 3));
    tl_assert_gradcheck(f_embedding, ids, in, 1, GRAD_TOL);
    tl_scope_pop();
}
END_TEST

/* ---- gather ------------------------------------------------------------ */

START_TEST(test_gather_matches_torch_example_on_both_axes)
{
    tl_scope_push();
    tl_tensor *t = tl_from_f32((const float[]){1, 2, 3, 4}, TL_SHAPE(2, 2));
    tl_tensor *idx = tl_from_i64((const int64_t[]){0, 0, 1, 0}, TL_SHAPE(2, 2));
    /* torch.gather(torch.tensor([[1,2],[3,4]]), 1, torch.tensor([[0,0],[1,0]])) */
    tl_assert_close(tl_gather(t, 1, idx), tl_from_f32((const float[]){1, 1, 4, 3}, TL_SHAPE(2, 2)),
                    0, 0);
    /* ... and along axis 0: out[i][j] = t[idx[i][j]][j]. */
    tl_assert_close(tl_gather(t, 0, idx), tl_from_f32((const float[]){1, 2, 3, 2}, TL_SHAPE(2, 2)),
                    0, 0);
    /* A smaller index and a negative axis: [3, 4] gathered by [2, 1] on -1. */
    tl_tensor *t3 = tl_cast(tl_reshape(tl_arange(0, 12), TL_SHAPE(3, 4)), TL_F32);
    tl_tensor *small = tl_cast(tl_from_i64((const int64_t[]){3, 1}, TL_SHAPE(2, 1)), TL_I32);
    tl_assert_close(tl_gather(t3, -1, small), tl_from_f32((const float[]){3, 5}, TL_SHAPE(2, 1)), 0,
                    0);
    tl_scope_pop();
}
END_TEST

START_TEST(test_gather_errors_name_index_and_axis)
{
    tl_scope_push();
    tl_tensor *t = tl_zeros(TL_F32, TL_SHAPE(2, 3));
    tl_assert_error(tl_gather(t, 1, tl_from_i64((const int64_t[]){0, 3}, TL_SHAPE(2, 1))),
                    "index value 3 at position [1, 0] is out of range [0, 3) for axis 1");
    tl_assert_error(tl_gather(t, 1, tl_from_i64((const int64_t[]){0}, TL_SHAPE(1))), "rank");
    tl_assert_error(tl_gather(t, 1, tl_zeros(TL_I64, TL_SHAPE(3, 1))), "axis 0 (3 > 2)");
    tl_assert_error(tl_gather(t, 2, tl_zeros(TL_I64, TL_SHAPE(2, 1))), "axis 2 is out of range");
    tl_assert_error(tl_gather(t, 0, tl_zeros(TL_F32, TL_SHAPE(2, 1))), "gather");
    tl_scope_pop();
}
END_TEST

START_TEST(test_gather_backward_scatter_adds_repeats)
{
    tl_scope_push();
    tl_tensor *t = tl_requires_grad(tl_zeros(TL_F32, TL_SHAPE(2, 3)), true);
    tl_tensor *idx = tl_from_i64((const int64_t[]){2, 2, 0, 1, 1, 1, 1, 1}, TL_SHAPE(2, 4));
    ck_assert_int_eq(tl_backward(tl_sum_all(tl_gather(t, 1, idx))), 0);
    tl_assert_close(t->grad, tl_from_f32((const float[]){1, 1, 2, 0, 4, 0}, TL_SHAPE(2, 3)), 0, 0);
    tl_scope_pop();
}
END_TEST

START_TEST(test_gather_gradcheck)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(33);
    tl_tensor *in[] = {grad_leaf(&rng, TL_SHAPE(3, 4))};
    tl_tensor *idx = tl_from_i64((const int64_t[]){3, 3, 0, 1, 2, 1}, TL_SHAPE(2, 3));
    tl_assert_gradcheck(f_gather_axis1, idx, in, 1, GRAD_TOL);
    tl_scope_pop();
}
END_TEST

/* ---- concat ------------------------------------------------------------ */

START_TEST(test_concat_joins_along_each_axis)
{
    tl_scope_push();
    tl_tensor *a = tl_from_f32((const float[]){1, 2, 3, 4}, TL_SHAPE(2, 2));
    tl_tensor *b = tl_from_f32((const float[]){5, 6}, TL_SHAPE(2, 1));
    tl_tensor *c = tl_from_f32((const float[]){7, 8}, TL_SHAPE(1, 2));
    tl_assert_close(tl_concat((tl_tensor *[]){a, b}, 2, 1),
                    tl_from_f32((const float[]){1, 2, 5, 3, 4, 6}, TL_SHAPE(2, 3)), 0, 0);
    tl_assert_close(tl_concat((tl_tensor *[]){a, c, a}, 3, -2),
                    tl_from_f32((const float[]){1, 2, 3, 4, 7, 8, 1, 2, 3, 4}, TL_SHAPE(5, 2)), 0,
                    0);
    /* A transposed view joins by its values, not its storage order. */
    tl_assert_close(tl_concat((tl_tensor *[]){tl_transpose(a, 0, 1), b}, 2, 1),
                    tl_from_f32((const float[]){1, 3, 5, 2, 4, 6}, TL_SHAPE(2, 3)), 0, 0);
    tl_scope_pop();
}
END_TEST

START_TEST(test_concat_middle_axis_of_3d_blocks)
{
    tl_scope_push();
    tl_tensor *a = tl_cast(tl_reshape(tl_arange(0, 12), TL_SHAPE(2, 3, 2)), TL_F32);
    tl_tensor *b = tl_cast(tl_reshape(tl_arange(100, 104), TL_SHAPE(2, 1, 2)), TL_F32);
    tl_tensor *c = tl_concat((tl_tensor *[]){a, b}, 2, 1);
    tl_assert_ok(c);
    ck_assert_int_eq(c->shape[1], 4);
    for (int64_t i = 0; i < 2; i++)
        for (int64_t j = 0; j < 4; j++)
            for (int64_t k = 0; k < 2; k++) {
                double want = j < 3 ? tl_get(a, (const int64_t[]){i, j, k})
                                    : tl_get(b, (const int64_t[]){i, j - 3, k});
                ck_assert_double_eq(tl_get(c, (const int64_t[]){i, j, k}), want);
            }
    tl_scope_pop();
}
END_TEST

START_TEST(test_concat_keeps_a_shared_dtype_and_widens_mixed_floats)
{
    tl_scope_push();
    tl_tensor *i1 = tl_from_i64((const int64_t[]){1, 2}, TL_SHAPE(2));
    tl_tensor *i2 = tl_from_i64((const int64_t[]){3}, TL_SHAPE(1));
    tl_tensor *ids = tl_concat((tl_tensor *[]){i1, i2}, 2, 0);
    tl_assert_ok(ids);
    ck_assert_int_eq(ids->dtype, TL_I64);
    ck_assert_double_eq(tl_item_at(ids, 2), 3.0);
    tl_tensor *f = tl_from_f32((const float[]){0.5f}, TL_SHAPE(1));
    tl_tensor *mixed = tl_concat((tl_tensor *[]){f, tl_cast(f, TL_BF16)}, 2, 0);
    tl_assert_ok(mixed);
    ck_assert_int_eq(mixed->dtype, TL_F32);
    tl_assert_error(tl_concat((tl_tensor *[]){f, i2}, 2, 0), "cast first");
    tl_scope_pop();
}
END_TEST

START_TEST(test_concat_errors_name_the_misfit)
{
    tl_scope_push();
    tl_tensor *a = tl_zeros(TL_F32, TL_SHAPE(2, 3));
    tl_tensor *b = tl_zeros(TL_F32, TL_SHAPE(3, 3));
    tl_assert_error(tl_concat((tl_tensor *[]){a, b}, 2, 1),
                    "tensor 1 [3, 3] does not fit tensor 0 [2, 3]");
    tl_assert_error(tl_concat((tl_tensor *[]){a, tl_zeros(TL_F32, TL_SHAPE(6))}, 2, 0),
                    "tensor 1 [6]");
    tl_assert_error(tl_concat((tl_tensor *[]){a, NULL}, 2, 0), "tensor 1 of 2 is NULL");
    tl_assert_error(tl_concat((tl_tensor *[]){a}, 0, 0), "at least one");
    tl_assert_error(tl_concat((tl_tensor *[]){a}, 1, 2), "axis 2 is out of range");
    tl_scope_pop();
}
END_TEST

START_TEST(test_concat_gradcheck_two_and_six_inputs)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(34);
    tl_tensor *two[] = {grad_leaf(&rng, TL_SHAPE(1, 3)), grad_leaf(&rng, TL_SHAPE(2, 3))};
    tl_assert_gradcheck(f_concat2_axis0, NULL, two, 2, GRAD_TOL);
    tl_tensor *six[6];
    for (int k = 0; k < 6; k++) six[k] = grad_leaf(&rng, TL_SHAPE(2, 1 + k % 3));
    tl_assert_gradcheck(f_concat6, NULL, six, 6, GRAD_TOL);
    tl_scope_pop();
}
END_TEST

START_TEST(test_concat_of_many_inputs_without_grad)
{
    tl_scope_push();
    tl_tensor *parts[9];
    for (int k = 0; k < 9; k++) parts[k] = tl_full(TL_F32, TL_SHAPE(1, 2), k);
    tl_tensor *all = tl_concat(parts, 9, 0);
    tl_assert_ok(all);
    ck_assert_int_eq(all->shape[0], 9);
    for (int k = 0; k < 9; k++) ck_assert_double_eq(tl_get(all, (const int64_t[]){k, 1}), k);
    tl_scope_pop();
}
END_TEST

/* ---- split ------------------------------------------------------------- */

START_TEST(test_split_gives_views_of_the_requested_sizes)
{
    tl_scope_push();
    tl_tensor *t = tl_cast(tl_reshape(tl_arange(0, 12), TL_SHAPE(2, 6)), TL_F32);
    tl_tensor *parts[3];
    ck_assert_int_eq(tl_split(t, -1, (const int64_t[]){1, 3, 2}, 3, parts), 0);
    ck_assert_int_eq(parts[1]->shape[1], 3);
    for (int k = 0; k < 3; k++) ck_assert_ptr_eq(parts[k]->storage, t->storage);
    tl_assert_close(parts[1], tl_from_f32((const float[]){1, 2, 3, 7, 8, 9}, TL_SHAPE(2, 3)), 0, 0);
    tl_assert_close(parts[2], tl_from_f32((const float[]){4, 5, 10, 11}, TL_SHAPE(2, 2)), 0, 0);
    /* Joining the parts gives back the whole. */
    tl_assert_close(tl_concat(parts, 3, 1), t, 0, 0);
    tl_scope_pop();
}
END_TEST

START_TEST(test_split_errors_leave_outputs_null)
{
    tl_scope_push();
    tl_tensor *t = tl_zeros(TL_F32, TL_SHAPE(2, 8));
    tl_tensor *parts[2] = {t, t};
    tl_clear_error();
    ck_assert_int_eq(tl_split(t, 1, (const int64_t[]){3, 4}, 2, parts), -1);
    ck_assert_ptr_null(parts[0]);
    ck_assert_ptr_null(parts[1]);
    ck_assert_ptr_nonnull(strstr(tl_error(), "sizes add up to 7 but axis 1 of [2, 8] has 8"));
    tl_clear_error();
    ck_assert_int_eq(tl_split(t, 1, (const int64_t[]){9, -1}, 2, parts), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "negative"));
    tl_clear_error();
    ck_assert_int_eq(tl_split(t, 3, (const int64_t[]){1, 1}, 2, parts), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "axis 3 is out of range"));
    tl_clear_error();
    ck_assert_int_eq(tl_split(NULL, 0, (const int64_t[]){1, 1}, 2, parts), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "split"));
    tl_clear_error();
    tl_scope_pop();
}
END_TEST

START_TEST(test_split_gradcheck)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(35);
    tl_tensor *in[] = {grad_leaf(&rng, TL_SHAPE(4, 5))};
    tl_assert_gradcheck(f_split_then_mix, NULL, in, 1, GRAD_TOL);
    tl_scope_pop();
}
END_TEST

/* Concats of 2^16 elements and more share their blocks among threads. Rope's
 * rotate joins [-x2, x1] (a contiguous tensor and a narrow view); a narrow
 * along axis 1 joined on axis 1 is evenly spaced blocks, joined on axis 3
 * it is not and goes element by element, as does a transposed input. Each
 * element of x is its own index, so every output is exact by construction,
 * on 1 and 3 threads. */
START_TEST(large_concats_of_views_are_exact_on_any_thread_count)
{
    enum { B = 2, T = 130, H = 3, D = 64 };   /* 49,920 elements; joined: 99,840 */
    tl_tensor *x = tl_empty(TL_F32, TL_SHAPE(B, T, H, D));
    tl_assert_ok(x);
    for (int64_t i = 0; i < tl_numel(x); i++) tl_f32(x)[i] = (float)i;
    const char *counts[] = {"1", "3"};
    for (int c = 0; c < 2; c++) {
        setenv("TINYLLM_THREADS", counts[c], 1);
        tl_tensor *halves[2] = {tl_neg(tl_narrow(x, 3, D / 2, D / 2)), tl_narrow(x, 3, 0, D / 2)};
        tl_tensor *rot = tl_concat(halves, 2, 3);
        tl_tensor *rows[2] = {tl_narrow(x, 1, 5, 100), x};   /* [B, 100 + T, H, D] */
        tl_tensor *tall = tl_concat(rows, 2, 1);
        tl_tensor *wide[2] = {x, tl_transpose(tl_transpose(x, 0, 1), 0, 1)};
        tl_tensor *both = tl_concat(wide, 2, 3);
        tl_tensor *cuts[2] = {tl_narrow(x, 1, 5, 100), tl_narrow(x, 1, 0, 100)};
        tl_tensor *cut = tl_concat(cuts, 2, 3);                    /* [B, 100, H, 2D] */
        tl_assert_ok(cut);
        for (int64_t i = 0; i < tl_numel(cut); i++) {
            int64_t d = i % (2 * D), h = i / (2 * D) % H, t = i / (2 * D * H) % 100;
            int64_t b = i / (2 * D * H * 100), xt = d < D ? t + 5 : t;
            if (tl_f32(cut)[i] != (float)(((b * T + xt) * H + h) * D + d % D))
                ck_abort_msg("%s threads: cut element %lld", counts[c], (long long)i);
        }
        tl_assert_ok(rot);
        tl_assert_ok(tall);
        tl_assert_ok(both);
        for (int64_t b = 0; b < B; b++)
            for (int64_t t = 0; t < T + 100; t++)
                for (int64_t h = 0; h < H; h++)
                    for (int64_t d = 0; d < 2 * D; d++) {
                        int64_t xt = t < 100 ? t + 5 : t - 100;
                        float want_tall = (float)(((b * T + xt) * H + h) * D + d % D);
                        if (d < D && tl_f32(tall)[((b * (T + 100) + t) * H + h) * D + d] !=
                                         want_tall)
                            ck_abort_msg("%s threads: tall [%lld, %lld, %lld, %lld]", counts[c],
                                         (long long)b, (long long)t, (long long)h, (long long)d);
                        if (t >= T) continue;
                        float v = (float)(((b * T + t) * H + h) * D + d % D);
                        int64_t at = ((b * T + t) * H + h) * 2 * D + d;
                        float want_rot = d < D / 2 ? -(v + D / 2) : v - D / 2;
                        if ((d < D && tl_f32(rot)[((b * T + t) * H + h) * D + d] != want_rot) ||
                            tl_f32(both)[at] != v)
                            ck_abort_msg("%s threads: rot/both [%lld, %lld, %lld, %lld]",
                                         counts[c], (long long)b, (long long)t, (long long)h,
                                         (long long)d);
                    }
    }
    unsetenv("TINYLLM_THREADS");
}
END_TEST
