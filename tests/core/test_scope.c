/* Scopes (tensor.h): tensors belong to the innermost scope and die with it;
 * tl_scope_keep hands one tensor (and the history its gradient needs) to the
 * enclosing scope. ASan and valgrind runs of this file check the freeing. */
#include <check.h>
#include <string.h>

#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"

START_TEST(push_returns_depth_and_pop_unwinds)
{
    int base = tl_scope_push();
    ck_assert_int_ge(base, 1);
    ck_assert_int_eq(tl_scope_push(), base + 1);
    ck_assert_int_eq(tl_scope_pop(), 0);
    ck_assert_int_eq(tl_scope_pop(), 0);
}
END_TEST

START_TEST(popping_the_bottom_scope_is_an_error)
{
    tl_clear_error();
    ck_assert_int_eq(tl_scope_pop(), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "no scope is open"));
    tl_clear_error();
    tl_assert_ok(tl_zeros(TL_F32, TL_SHAPE(2)));   /* the bottom scope still works */
}
END_TEST

START_TEST(many_scopes_of_many_tensors_free_everything)
{
    for (int round = 0; round < 50; round++) {
        tl_scope_push();
        tl_tensor *acc = tl_zeros(TL_F32, TL_SHAPE(64));
        for (int i = 0; i < 40; i++) acc = tl_add_scalar(acc, 1.0);
        tl_tensor *big = tl_ones(TL_F32, TL_SHAPE(300, 300));   /* a block of its own */
        ck_assert(tl_item_at(acc, 63) == 40.0 && tl_item_at(big, 89999) == 1.0);
        tl_scope_pop();
    }
}
END_TEST

START_TEST(keep_returns_the_same_tensor_alive_in_the_parent)
{
    tl_scope_push();
    tl_scope_push();
    tl_tensor *t = tl_add_scalar(tl_ones(TL_F32, TL_SHAPE(3)), 1.0);
    ck_assert_ptr_eq(tl_scope_keep(t), t);
    tl_scope_pop();
    ck_assert(tl_item_at(t, 2) == 2.0);   /* survives the inner pop */
    tl_scope_pop();
}
END_TEST

START_TEST(keep_of_a_strided_view_keeps_its_values)
{
    tl_scope_push();
    tl_tensor *outer = tl_from_f32((float[]){ 1, 2, 3, 4, 5, 6 }, TL_SHAPE(2, 3));
    tl_scope_push();
    tl_tensor *base = tl_clone(outer);
    tl_tensor *col = tl_narrow(tl_transpose(base, 0, 1), 0, 1, 2);   /* [[2, 5], [3, 6]] */
    tl_scope_keep(col);
    tl_tensor *view_of_outer = tl_transpose(outer, 0, 1);
    tl_scope_keep(view_of_outer);
    tl_scope_pop();
    ck_assert(tl_item_at(col, 0) == 2 && tl_item_at(col, 1) == 5 && tl_item_at(col, 3) == 6);
    ck_assert(tl_item_at(view_of_outer, 1) == 4);
    ck_assert_ptr_eq(view_of_outer->storage, outer->storage);   /* outer storage: no copy */
    tl_scope_pop();
}
END_TEST

/* Each way of copying a kept tensor out of its scope keeps every value: a
 * contiguous view with an offset (one copy), rows apart with a dense last axis
 * (row by row), and a transposed view (element by element); x[i][j][k] is
 * 100 i + 10 j + k. */
START_TEST(keep_copies_contiguous_row_strided_and_transposed_views_exactly)
{
    tl_scope_push();
    tl_scope_push();
    float v[4 * 3 * 5];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 5; k++) v[(i * 3 + j) * 5 + k] = (float)(100 * i + 10 * j + k);
    tl_tensor *x = tl_from_f32(v, TL_SHAPE(4, 3, 5));
    tl_tensor *blocks = tl_narrow(x, 0, 1, 2);                     /* [2, 3, 5] from i = 1 */
    tl_tensor *rows = tl_narrow(x, 1, 1, 2);                       /* [4, 2, 5] from j = 1 */
    tl_tensor *cols = tl_transpose(tl_narrow(x, 2, 2, 3), 1, 2);   /* [4, 3, 3] from k = 2 */
    tl_tensor *kept[3] = {tl_scope_keep(blocks), tl_scope_keep(rows), tl_scope_keep(cols)};
    tl_scope_pop();
    for (int c = 0; c < 3; c++) {
        tl_tensor *t = kept[c];
        ck_assert_ptr_nonnull(t);
        ck_assert(tl_is_contiguous(t));
        for (int64_t a = 0; a < t->shape[0]; a++)
            for (int64_t b = 0; b < t->shape[1]; b++)
                for (int64_t d = 0; d < t->shape[2]; d++) {
                    int64_t i = c == 0 ? a + 1 : a, j = c == 1 ? b + 1 : c == 2 ? d : b;
                    int64_t k = c == 2 ? b + 2 : d;
                    double want = 100.0 * (double)i + 10.0 * (double)j + (double)k;
                    double got = tl_item_at(t, (a * t->shape[1] + b) * t->shape[2] + d);
                    ck_assert_msg(got == want, "case %d at [%lld, %lld, %lld]: %g, want %g", c,
                                  (long long)a, (long long)b, (long long)d, got, want);
                }
    }
    tl_scope_pop();
}
END_TEST

/* A kept tensor that is the whole of a large storage (a block of its own, as
 * a prefill layer's [128, 576] output) keeps that very memory: no copy. The
 * block is the enclosing scope's after the pop, and what that scope makes
 * next does not land in it. */
START_TEST(keep_of_a_whole_large_tensor_moves_its_block_without_a_copy)
{
    tl_scope_push();
    tl_scope_push();
    tl_tensor *y = tl_add_scalar(tl_full(TL_F32, TL_SHAPE(128, 576), 2.0), 1.0);   /* 288 KiB */
    tl_assert_ok(y);
    const void *data = tl_data(y);
    ck_assert_ptr_eq(tl_scope_keep(y), y);
    tl_scope_pop();
    ck_assert_ptr_eq(tl_data(y), data);
    tl_tensor *after[3] = {tl_full(TL_F32, TL_SHAPE(128, 576), 7.0),
                           tl_full(TL_F32, TL_SHAPE(5), 8.0),
                           tl_full(TL_F32, TL_SHAPE(64, 1024), 9.0)};
    for (int i = 0; i < 3; i++) {
        tl_assert_ok(after[i]);
        ck_assert_ptr_ne(after[i]->storage, y->storage);
    }
    const float *v = tl_f32(y);
    for (int64_t i = 0; i < 128 * 576; i++)
        ck_assert_msg(v[i] == 3.0f, "element %lld is %g after the pop", (long long)i, (double)v[i]);
    tl_scope_pop();
}
END_TEST

/* When a view left in the scope shares the large storage, keep copies as it
 * always did: writing through the view afterwards does not reach the kept
 * tensor. */
START_TEST(keep_copies_a_large_tensor_that_a_view_left_behind_shares)
{
    tl_scope_push();
    tl_scope_push();
    tl_tensor *y = tl_add_scalar(tl_full(TL_F32, TL_SHAPE(128, 576), 1.0), 1.0);
    tl_tensor *row = tl_narrow(y, 0, 0, 1);
    tl_assert_ok(row);
    const void *data = tl_data(y);
    tl_scope_keep(y);
    ck_assert_ptr_ne(tl_data(y), data);
    ((float *)tl_data(row))[0] = 99.0f;
    tl_scope_pop();
    ck_assert(tl_item_at(y, 0) == 2.0 && tl_item_at(y, 128 * 576 - 1) == 2.0);
    tl_scope_pop();
}
END_TEST

/* A prefill keeps each of its 30 layers' outputs in the forward's scope: with
 * the blocks moved, not copied, the memory held stops growing after the
 * first forwards (not under AddressSanitizer, which keeps nothing). */
START_TEST(a_forward_keeping_every_layers_output_keeps_memory_flat)
{
#if defined(__SANITIZE_ADDRESS__)
    const int forwards = 2;
#else
    const int forwards = 8;
#endif
    size_t after_warmup = 0;
    for (int f = 0; f < forwards; f++) {
        tl_scope_push();
        tl_tensor *h = tl_full(TL_F32, TL_SHAPE(128, 576), 0.0);
        for (int layer = 0; layer < 30; layer++) {
            tl_scope_push();
            tl_tensor *wide = tl_full(TL_F32, TL_SHAPE(128, 1536), 1.0);
            h = tl_scope_keep(tl_add(h, tl_mean(wide, -1, true)));
            tl_scope_pop();
        }
        tl_assert_ok(h);
        ck_assert(tl_item_at(h, 0) == 30.0 && tl_item_at(h, 128 * 576 - 1) == 30.0);
        tl_scope_pop();
        if (f == 2) after_warmup = tl_scope_bytes();
    }
#if !defined(__SANITIZE_ADDRESS__)
    ck_assert_msg(tl_scope_bytes() == after_warmup, "arena grew from %zu to %zu bytes",
                  after_warmup, tl_scope_bytes());
#else
    (void)after_warmup;
#endif
}
END_TEST

START_TEST(keep_without_an_enclosing_scope_is_an_error)
{
    tl_tensor *t = tl_zeros(TL_F32, TL_SHAPE(1));
    tl_assert_error(tl_scope_keep(t), "no enclosing scope");
    tl_assert_error(tl_scope_keep(NULL), "tl_scope_keep: tensor is NULL");
}
END_TEST

START_TEST(keep_of_an_older_tensor_changes_nothing)
{
    tl_tensor *outer = tl_ones(TL_F32, TL_SHAPE(2));
    tl_tensor *owned = tl_tensor_new_owned(TL_F32, TL_SHAPE(2));
    tl_scope_push();
    ck_assert_ptr_eq(tl_scope_keep(outer), outer);
    ck_assert_ptr_eq(tl_scope_keep(owned), owned);
    tl_scope_pop();
    ck_assert(tl_item_at(outer, 1) == 1.0);
    tl_tensor_free(owned);
}
END_TEST

START_TEST(kept_tensor_keeps_its_gradient_history)
{
    tl_tensor *x = tl_requires_grad(tl_from_f32((float[]){ 1, 2, 3 }, TL_SHAPE(3)), true);
    tl_scope_push();
    tl_tensor *y = tl_mul(tl_exp(x), x);   /* y = x e^x */
    tl_scope_keep(y);
    tl_scope_pop();                        /* the intermediates' scope is gone */
    ck_assert_int_eq(tl_backward(tl_sum_all(y)), 0);
    for (int i = 0; i < 3; i++) {
        double v = i + 1;
        ck_assert_double_eq_tol(tl_item_at(x->grad, i), exp(v) * (1 + v), 1e-4 * exp(v));
    }
}
END_TEST

START_TEST(leaf_gradient_lives_beside_the_leaf)
{
    tl_tensor *x = tl_requires_grad(tl_ones(TL_F32, TL_SHAPE(2)), true);
    tl_scope_push();
    tl_backward(tl_sum_all(tl_mul_scalar(x, 3.0)));
    tl_scope_pop();   /* backward's temporaries go; x->grad stays */
    ck_assert(tl_item_at(x->grad, 0) == 3.0);
    ck_assert(!x->grad->owned);
}
END_TEST

START_TEST(shutdown_frees_the_bottom_scope_and_the_runtime_restarts)
{
    tl_scope_push();
    tl_ones(TL_F32, TL_SHAPE(10));
    tl_shutdown();   /* frees open scopes too */
    tl_tensor *t = tl_ones(TL_F32, TL_SHAPE(2));
    tl_assert_ok(t);
    ck_assert(tl_item_at(t, 1) == 1.0);
    tl_clear_error();
    ck_assert_int_eq(tl_scope_pop(), -1);   /* back at the bottom */
    tl_clear_error();
}
END_TEST

START_TEST(scope_alloc_is_usable_and_aligned)
{
    tl_scope_push();
    /* a view and its base share storage; the arena gives every tensor its own */
    tl_tensor *a = tl_zeros(TL_F32, TL_SHAPE(3)), *b = tl_zeros(TL_F32, TL_SHAPE(5));
    ck_assert_ptr_ne(a->storage, b->storage);
    ck_assert_uint_eq((uintptr_t)tl_data(a) % 64, 0);
    ck_assert_uint_eq((uintptr_t)tl_data(b) % 64, 0);
    tl_scope_pop();
}
END_TEST

/* A decode loop pushes and pops a scope per token: after the first steps the
 * arena reuses its blocks, so the memory a thread holds stops growing (not
 * under AddressSanitizer, where every tensor gets a block of its own). */
START_TEST(a_scope_per_step_keeps_memory_flat)
{
    tl_tensor *h = tl_tensor_new_owned(TL_F32, TL_SHAPE(1, 576));
    size_t after_warmup = 0;
#if defined(__SANITIZE_ADDRESS__)
    const int steps = 12;    /* every tensor has its own block there: nothing to measure */
#else
    const int steps = 100;
#endif
    for (int step = 0; step < steps; step++) {
        tl_scope_push();
        tl_tensor *x = h;
        for (int op = 0; op < 100; op++) x = tl_add(tl_mul_scalar(x, 0.5), h);   /* ~0.5 MB */
        tl_assert_ok(x);
        tl_scope_pop();
        if (step == 10) after_warmup = tl_scope_bytes();
    }
#if !defined(__SANITIZE_ADDRESS__)
    ck_assert_msg(tl_scope_bytes() == after_warmup, "arena grew from %zu to %zu bytes",
                  after_warmup, tl_scope_bytes());
    ck_assert_msg(after_warmup <= 16u << 20, "%zu bytes kept", after_warmup);
#else
    (void)after_warmup;
#endif
    tl_tensor_free(h);
}
END_TEST

/* A prefill pushes and pops a scope per layer, each making the same large
 * activations (their own blocks): popped large blocks are kept and reused,
 * so the memory a thread holds stops growing there too, and it stays within
 * the 32 MiB kept plus what one scope holds. */
START_TEST(large_tensors_reuse_popped_blocks)
{
#if defined(__SANITIZE_ADDRESS__)
    const int steps = 3;     /* nothing is kept there: a reused block would hide a bug */
#else
    const int steps = 40;
#endif
    size_t after_warmup = 0;
    for (int step = 0; step < steps; step++) {
        tl_scope_push();
        /* [128, 576] and [128, 1536] F32: 288 KiB and 768 KiB, above 64 KiB */
        tl_tensor *x = tl_full(TL_F32, TL_SHAPE(128, 576), 1.0);
        for (int op = 0; op < 8; op++) {
            tl_tensor *wide = tl_full(TL_F32, TL_SHAPE(128, 1536), (double)op);
            x = tl_add(x, tl_sum(wide, -1, true));
        }
        tl_assert_ok(x);
        ck_assert_msg(tl_f32(x)[0] == 1.0f + 1536.0f * 28.0f, "a reused block gave %g",
                      (double)tl_f32(x)[0]);
        tl_scope_pop();
        if (step == 2) after_warmup = tl_scope_bytes();
    }
#if !defined(__SANITIZE_ADDRESS__)
    ck_assert_msg(tl_scope_bytes() == after_warmup, "arena grew from %zu to %zu bytes",
                  after_warmup, tl_scope_bytes());
    ck_assert_msg(after_warmup <= (32u << 20) + (16u << 20), "%zu bytes kept", after_warmup);
#else
    (void)after_warmup;
#endif
}
END_TEST

/* Owned storage is counted while alive and released with the last tensor. */
START_TEST(owned_bytes_follow_owned_tensors)
{
    size_t before = tl_owned_bytes();
    tl_tensor *small = tl_tensor_new_owned(TL_F32, TL_SHAPE(10));
    tl_tensor *large = tl_tensor_new_owned(TL_F32, TL_SHAPE(1024, 1024));   /* own pages */
    ck_assert_uint_eq(tl_owned_bytes(), before + 40 + (4u << 20));
    float *p = tl_data(large);
    ck_assert(p[0] == 0.0f && p[(1 << 20) - 1] == 0.0f);   /* zero-filled */
    p[12345] = 3.0f;
    ck_assert_double_eq(tl_item_at(large, 12345), 3.0);
    tl_tensor_free(large);
    tl_tensor_free(small);
    ck_assert_uint_eq(tl_owned_bytes(), before);
    float buf[4] = {0};
    tl_tensor *ext = tl_tensor_wrap_external(buf, TL_F32, TL_SHAPE(4));
    ck_assert_uint_eq(tl_owned_bytes(), before);   /* wrapped memory is not ours */
    tl_tensor_free(ext);
}
END_TEST
