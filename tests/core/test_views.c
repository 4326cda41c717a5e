/* Views (tensor.h): new headers over the same storage. A write through one
 * shows in the other; each view is differentiable. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"

static tl_tensor *iota(int ndim, const int64_t *shape) {
    tl_tensor *t = tl_empty(TL_F32, ndim, shape);
    for (int64_t i = 0; i < tl_numel(t); i++) tl_f32(t)[i] = (float)i;
    return t;
}

START_TEST(reshape_of_contiguous_is_a_view)
{
    tl_tensor *t = iota(TL_SHAPE(2, 6));
    tl_tensor *r = tl_reshape(t, TL_SHAPE(3, -1, 2));
    tl_assert_ok(r);
    ck_assert_int_eq(r->shape[1], 2);   /* -1 inferred */
    ck_assert_ptr_eq(r->storage, t->storage);
    tl_set(t, (int64_t[]){ 1, 5 }, 99);
    ck_assert(tl_get(r, (int64_t[]){ 2, 1, 1 }) == 99);   /* the write shows */
}
END_TEST

START_TEST(reshape_of_strided_view_copies)
{
    tl_tensor *t = iota(TL_SHAPE(2, 3));
    tl_tensor *r = tl_reshape(tl_transpose(t, 0, 1), TL_SHAPE(6));
    ck_assert_ptr_ne(r->storage, t->storage);
    const double want[6] = { 0, 3, 1, 4, 2, 5 };
    for (int i = 0; i < 6; i++) ck_assert(tl_item_at(r, i) == want[i]);
}
END_TEST

START_TEST(transpose_swaps_strides_without_copy)
{
    tl_tensor *t = iota(TL_SHAPE(2, 3));
    tl_tensor *tt = tl_transpose(t, -1, 0);
    ck_assert_int_eq(tt->shape[0], 3);
    ck_assert_int_eq(tt->strides[0], 1);
    ck_assert_int_eq(tt->strides[1], 3);
    ck_assert(!tl_is_contiguous(tt));
    ck_assert(tl_get(tt, (int64_t[]){ 2, 1 }) == 5);
    tl_tensor *c = tl_contiguous(tt);
    ck_assert(tl_is_contiguous(c) && c->storage != t->storage);
    ck_assert(tl_item_at(c, 1) == 3);
    ck_assert_ptr_eq(tl_contiguous(t), t);   /* already dense: itself */
}
END_TEST

START_TEST(permute_reorders_axes)
{
    tl_tensor *t = iota(TL_SHAPE(2, 3, 4));
    tl_tensor *p = tl_permute(t, (int[]){ 2, 0, 1 });
    ck_assert_int_eq(p->shape[0], 4);
    ck_assert_int_eq(p->shape[1], 2);
    ck_assert_int_eq(p->shape[2], 3);
    ck_assert(tl_get(p, (int64_t[]){ 3, 1, 2 }) == tl_get(t, (int64_t[]){ 1, 2, 3 }));
    tl_assert_error(tl_permute(t, (int[]){ 0, 0, 1 }), "out of range or repeated");
}
END_TEST

START_TEST(narrow_offsets_into_the_same_storage)
{
    tl_tensor *t = iota(TL_SHAPE(3, 4));
    tl_tensor *n = tl_narrow(t, 1, 1, 2);
    ck_assert_int_eq(n->offset, 1);
    ck_assert(tl_get(n, (int64_t[]){ 2, 1 }) == 10);
    tl_set(n, (int64_t[]){ 0, 0 }, -1);
    ck_assert(tl_get(t, (int64_t[]){ 0, 1 }) == -1);
    tl_assert_error(tl_narrow(t, 1, 3, 2), "narrow: elements 3..4 of axis 1 are out of range "
                                          "for shape [3, 4]");
    ck_assert_int_eq(tl_numel(tl_narrow(t, 0, 3, 0)), 0);   /* an empty slice at the end */
}
END_TEST

START_TEST(expand_stretches_size_one_axes_with_stride_zero)
{
    tl_tensor *t = iota(TL_SHAPE(3, 1));
    tl_tensor *e = tl_expand(t, TL_SHAPE(2, 3, 4));
    tl_assert_ok(e);
    ck_assert_int_eq(e->strides[0], 0);
    ck_assert_int_eq(e->strides[2], 0);
    ck_assert(tl_get(e, (int64_t[]){ 1, 2, 3 }) == 2);
    tl_tensor *same = tl_expand(t, TL_SHAPE(-1, 5));   /* -1 keeps a size */
    ck_assert_int_eq(same->shape[0], 3);
    tl_assert_error(tl_expand(t, TL_SHAPE(4, 4)), "cannot expand [3, 1] to [4, 4]: axis 0 has "
                                                  "size 3");
}
END_TEST

START_TEST(unsqueeze_and_squeeze_insert_and_drop_unit_axes)
{
    tl_tensor *t = iota(TL_SHAPE(2, 3));
    tl_tensor *u = tl_unsqueeze(t, -1);
    ck_assert_int_eq(u->ndim, 3);
    ck_assert_int_eq(u->shape[2], 1);
    tl_tensor *u0 = tl_unsqueeze(t, 0);
    ck_assert_int_eq(u0->shape[0], 1);
    ck_assert_int_eq(u0->shape[1], 2);
    tl_tensor *s = tl_squeeze(u0, 0);
    ck_assert(tl_same_shape(s, t) && s->storage == t->storage);
    tl_assert_error(tl_squeeze(t, 1), "squeeze: axis 1 of shape [2, 3] has size 3, not 1");
    tl_assert_error(tl_unsqueeze(t, 4), "unsqueeze: cannot insert axis 4 into shape [2, 3]");
}
END_TEST

START_TEST(clone_and_detach)
{
    tl_tensor *x = tl_requires_grad(iota(TL_SHAPE(3)), true);
    tl_tensor *c = tl_clone(x);
    ck_assert_ptr_ne(c->storage, x->storage);
    ck_assert(c->requires_grad && c->grad_fn);
    tl_tensor *d = tl_detach(x);
    ck_assert_ptr_eq(d->storage, x->storage);
    ck_assert(!d->requires_grad && !d->grad_fn);
}
END_TEST

/* ---- gradients of every view -------------------------------------------- */

static tl_tensor *through_reshape(tl_tensor *const *in, void *ctx) {
    (void)ctx;
    return tl_mul(tl_reshape(in[0], TL_SHAPE(3, 2)), tl_reshape(in[0], TL_SHAPE(-1, 2)));
}
static tl_tensor *through_permute(tl_tensor *const *in, void *ctx) {
    (void)ctx;
    return tl_square(tl_permute(in[0], (int[]){ 1, 2, 0 }));
}
static tl_tensor *through_transpose(tl_tensor *const *in, void *ctx) {
    (void)ctx;
    return tl_mul(tl_transpose(in[0], 0, 1), tl_transpose(in[0], 0, 1));
}
static tl_tensor *through_narrow(tl_tensor *const *in, void *ctx) {
    (void)ctx;
    return tl_square(tl_narrow(in[0], 1, 1, 2));
}
static tl_tensor *through_expand(tl_tensor *const *in, void *ctx) {
    (void)ctx;
    return tl_square(tl_expand(in[0], TL_SHAPE(2, 3, 4)));
}
static tl_tensor *through_squeeze(tl_tensor *const *in, void *ctx) {
    (void)ctx;
    return tl_square(tl_unsqueeze(tl_squeeze(in[0], 1), 0));
}
static tl_tensor *through_contiguous(tl_tensor *const *in, void *ctx) {
    (void)ctx;
    return tl_square(tl_contiguous(tl_transpose(in[0], 0, 1)));
}
static tl_tensor *through_clone_and_cast(tl_tensor *const *in, void *ctx) {
    (void)ctx;   /* F32 -> F32 cast is exact, so differences stay precise */
    return tl_square(tl_cast(tl_clone(in[0]), TL_F32));
}

START_TEST(gradcheck_views)
{
    tl_pcg32 rng = tl_test_rng(1);
    struct { tl_grad_fn f; int ndim; int64_t shape[3]; } cases[] = {
        { through_reshape, 2, { 2, 3 } },    { through_permute, 3, { 2, 3, 4 } },
        { through_transpose, 2, { 2, 3 } },  { through_narrow, 2, { 2, 4 } },
        { through_expand, 2, { 3, 1 } },     { through_squeeze, 3, { 2, 1, 3 } },
        { through_contiguous, 2, { 3, 2 } }, { through_clone_and_cast, 2, { 2, 2 } },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tl_tensor *x = tl_requires_grad(tl_randn(&rng, cases[k].ndim, cases[k].shape), true);
        tl_assert_gradcheck(cases[k].f, NULL, &x, 1, 2e-3);
    }
}
END_TEST

START_TEST(bf16_cast_passes_gradient_through)
{
    tl_tensor *x = tl_requires_grad(tl_from_f32((float[]){ 1.5f, -2.0f }, TL_SHAPE(2)), true);
    tl_tensor *y = tl_cast(x, TL_BF16);
    ck_assert(y->requires_grad && y->dtype == TL_BF16);
    ck_assert_int_eq(tl_backward(tl_sum_all(tl_mul_scalar(y, 2.0))), 0);
    ck_assert(tl_item_at(x->grad, 0) == 2.0 && tl_item_at(x->grad, 1) == 2.0);
    ck_assert_int_eq(x->grad->dtype, TL_F32);
}
END_TEST

/* Copies of 2^16 elements and more share their rows among threads: heads
 * gathered from [B, T, H, D] into [B, H, T, D] (tl_contiguous of a permute),
 * a copy into a narrow of a larger tensor (a cache append) and a BF16 view
 * widened into F32 (against its own elements). Integers below 2^24, so every
 * element is exact, on 1 and 3 threads. */
START_TEST(large_strided_copies_are_exact_on_any_thread_count)
{
    enum { B = 2, T = 130, H = 3, D = 200 };   /* 156,000 elements */
    tl_tensor *x = iota(TL_SHAPE(B, T, H, D));
    const char *counts[] = {"1", "3"};
    for (int c = 0; c < 2; c++) {
        setenv("TINYLLM_THREADS", counts[c], 1);
        tl_tensor *heads = tl_contiguous(tl_permute(x, (const int[]){0, 2, 1, 3}));
        tl_tensor *cache = tl_zeros(TL_F32, TL_SHAPE(B, H, T + 7, D));
        tl_tensor *slot = tl_narrow(cache, 2, 7, T);
        ck_assert_int_eq(tl_copy_into(slot, tl_permute(x, (const int[]){0, 2, 1, 3})), 0);
        tl_tensor *half = tl_cast(tl_narrow(x, 3, 0, D / 2), TL_BF16);   /* rounded: its own */
        tl_tensor *wide = tl_empty(TL_F32, TL_SHAPE(B, H, T, D / 2));
        tl_tensor *small = tl_narrow(tl_permute(half, (const int[]){0, 2, 1, 3}), 3, 0, D / 2);
        tl_assert_ok(heads);
        tl_assert_ok(small);
        ck_assert_int_eq(tl_copy_into(wide, small), 0);
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t t = 0; t < T; t++)
                    for (int64_t d = 0; d < D; d++) {
                        float v = (float)(((b * T + t) * H + h) * D + d);
                        int64_t at = ((b * H + h) * T + t) * D + d;
                        int64_t in_cache = ((b * H + h) * (T + 7) + t + 7) * D + d;
                        int64_t widened = ((b * H + h) * T + t) * (D / 2) + d;
                        int64_t in_half = ((b * T + t) * H + h) * (D / 2) + d;
                        if (tl_f32(heads)[at] != v || tl_f32(cache)[in_cache] != v ||
                            (d < D / 2 && tl_f32(wide)[widened] != tl_item_at(half, in_half)))
                            ck_abort_msg("%s threads: [%lld, %lld, %lld, %lld]", counts[c],
                                         (long long)b, (long long)h, (long long)t, (long long)d);
                    }
        for (int64_t i = 0; i < B * H * 7 * D; i++) {   /* the slots before stay zero */
            int64_t row = i / D, d = i % D, bh = row / 7, t = row % 7;
            ck_assert(tl_f32(cache)[(bh * (T + 7) + t) * D + d] == 0.0f);
        }
    }
    unsetenv("TINYLLM_THREADS");
}
END_TEST
