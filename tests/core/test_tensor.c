/* The tensor (L0.1): creation, dtypes, element access, copies and casts.
 * Values are written out by hand; each test names the rule it checks. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "tinyllm/autograd.h"
#include "tinyllm/bf16.h"
#include "tinyllm/testing.h"

START_TEST(dtype_sizes_and_names)
{
    ck_assert_uint_eq(tl_dtype_size(TL_F32), 4);
    ck_assert_uint_eq(tl_dtype_size(TL_BF16), 2);
    ck_assert_uint_eq(tl_dtype_size(TL_I32), 4);
    ck_assert_uint_eq(tl_dtype_size(TL_I64), 8);
    ck_assert_uint_eq(tl_dtype_size(TL_BOOL), 1);
    ck_assert_str_eq(tl_dtype_name(TL_BF16), "BF16");
    ck_assert_str_eq(tl_dtype_name(TL_BOOL), "BOOL");
    ck_assert(tl_dtype_is_float(TL_F32) && tl_dtype_is_float(TL_BF16));
    ck_assert(!tl_dtype_is_float(TL_I64) && !tl_dtype_is_float(TL_BOOL));
}
END_TEST

START_TEST(new_tensor_is_contiguous_row_major)
{
    tl_tensor *t = tl_zeros(TL_F32, TL_SHAPE(2, 3, 4));
    tl_assert_ok(t);
    ck_assert_int_eq(t->ndim, 3);
    ck_assert_int_eq(t->strides[0], 12);
    ck_assert_int_eq(t->strides[1], 4);
    ck_assert_int_eq(t->strides[2], 1);
    ck_assert_int_eq(tl_numel(t), 24);
    ck_assert(tl_is_contiguous(t));
    ck_assert(!t->requires_grad && !t->grad && !t->grad_fn && !t->owned);
    for (int64_t i = 0; i < 24; i++) ck_assert(tl_item_at(t, i) == 0.0);
}
END_TEST

START_TEST(shape_str_and_dim_with_negative_axis)
{
    char buf[64];
    tl_tensor *t = tl_zeros(TL_F32, TL_SHAPE(2, 5, 16));
    ck_assert_str_eq(tl_shape_str(t, buf, sizeof buf), "[2, 5, 16]");
    ck_assert_str_eq(tl_shape_str(tl_scalar(1), buf, sizeof buf), "[]");
    ck_assert_str_eq(tl_shape_str(t, buf, 5), "[2, ");   /* truncated, still terminated */
    ck_assert_int_eq(tl_dim(t, -1), 16);
    ck_assert_int_eq(tl_dim(t, 0), 2);
    ck_assert_int_eq(tl_axis(-3, 3), 0);
    ck_assert_int_eq(tl_axis(3, 3), -1);
    tl_assert_error(tl_dim(t, 3) == -1 ? NULL : t, "axis 3 is out of range for shape [2, 5, 16]");
}
END_TEST

START_TEST(full_and_ones_fill_every_dtype)
{
    ck_assert(tl_item_at(tl_full(TL_F32, TL_SHAPE(2), 2.5), 1) == 2.5);
    ck_assert(tl_item_at(tl_full(TL_BF16, TL_SHAPE(2), 2.5), 0) == 2.5);
    ck_assert(tl_item_at(tl_full(TL_I32, TL_SHAPE(2), -7.9), 1) == -7.0);   /* truncates */
    ck_assert(tl_item_at(tl_full(TL_I64, TL_SHAPE(3), 42), 2) == 42.0);
    ck_assert(tl_item_at(tl_full(TL_BOOL, TL_SHAPE(3), 0.5), 2) == 1.0);
    ck_assert(tl_item_at(tl_ones(TL_I64, TL_SHAPE(2, 2)), 3) == 1.0);
    tl_tensor *s = tl_scalar(-3.25);
    ck_assert_int_eq(s->ndim, 0);
    ck_assert_int_eq(tl_numel(s), 1);
    ck_assert(tl_item(s) == -3.25);
}
END_TEST

START_TEST(from_data_copies_values)
{
    float data[6] = { 1, 2, 3, 4, 5, 6 };
    tl_tensor *t = tl_from_f32(data, TL_SHAPE(2, 3));
    data[0] = 100;   /* the tensor holds its own copy */
    ck_assert(tl_get(t, (int64_t[]){ 0, 0 }) == 1.0);
    ck_assert(tl_get(t, (int64_t[]){ 1, 2 }) == 6.0);
    int64_t ids[3] = { 5, INT64_MAX, -2 };
    tl_tensor *i = tl_from_i64(ids, TL_SHAPE(3));
    ck_assert(((int64_t *)tl_data(i))[1] == INT64_MAX);
    ck_assert(tl_item_at(i, 2) == -2.0);
}
END_TEST

START_TEST(arange_counts_up_as_i64)
{
    tl_tensor *t = tl_arange(3, 7);
    tl_assert_ok(t);
    ck_assert_int_eq(t->dtype, TL_I64);
    ck_assert_int_eq(tl_numel(t), 4);
    for (int i = 0; i < 4; i++) ck_assert(tl_item_at(t, i) == 3 + i);
    ck_assert_int_eq(tl_numel(tl_arange(5, 5)), 0);
    tl_assert_error(tl_arange(5, 4), "stop 4 is below start 5");
}
END_TEST

START_TEST(like_constructors_copy_shape_and_dtype)
{
    tl_tensor *t = tl_full(TL_BF16, TL_SHAPE(3, 1), 9);
    tl_tensor *z = tl_zeros_like(t), *o = tl_ones_like(t);
    ck_assert(tl_same_shape(z, t) && z->dtype == TL_BF16 && tl_item_at(z, 2) == 0.0);
    ck_assert(tl_same_shape(o, t) && o->dtype == TL_BF16 && tl_item_at(o, 2) == 1.0);
}
END_TEST

START_TEST(set_and_get_one_element)
{
    tl_tensor *t = tl_zeros(TL_I32, TL_SHAPE(2, 3));
    ck_assert_int_eq(tl_set(t, (int64_t[]){ 1, 2 }, 41), 0);
    ck_assert(tl_get(t, (int64_t[]){ 1, 2 }) == 41.0);
    ck_assert(tl_item_at(t, 5) == 41.0);
    tl_clear_error();
    ck_assert_int_eq(tl_set(t, (int64_t[]){ 2, 0 }, 1), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "index 2 is out of range at axis 0 of shape [2, 3]"));
    tl_clear_error();
    ck_assert(isnan(tl_get(t, (int64_t[]){ 0, -1 })));
    ck_assert_ptr_nonnull(strstr(tl_error(), "index -1 is out of range at axis 1"));
    tl_clear_error();
    ck_assert(isnan(tl_item(t)));
    ck_assert_ptr_nonnull(strstr(tl_error(), "has 6 elements, not one"));
    tl_clear_error();
}
END_TEST

START_TEST(f32_pointer_only_for_dense_f32)
{
    tl_tensor *t = tl_zeros(TL_F32, TL_SHAPE(2, 3));
    ck_assert_ptr_eq(tl_f32(t), tl_data(t));
    tl_assert_error(tl_f32(tl_zeros(TL_BF16, TL_SHAPE(2))), "is BF16, not F32");
    tl_assert_error(tl_f32(tl_transpose(t, 0, 1)), "strided view");
}
END_TEST

START_TEST(copy_into_casts_and_checks_shape)
{
    tl_tensor *src = tl_from_f32((float[]){ 1.5f, -2.5f, 3.0f }, TL_SHAPE(3));
    tl_tensor *dst = tl_zeros(TL_I64, TL_SHAPE(3));
    ck_assert_int_eq(tl_copy_into(dst, src), 0);
    ck_assert(tl_item_at(dst, 0) == 1.0 && tl_item_at(dst, 1) == -2.0);
    tl_clear_error();
    ck_assert_int_eq(tl_copy_into(tl_zeros(TL_F32, TL_SHAPE(4)), src), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "destination [4] and source [3] differ in shape"));
    tl_clear_error();
}
END_TEST

START_TEST(copy_into_keeps_large_i64_exact)
{
    int64_t big = (INT64_C(1) << 62) + 1;   /* not representable as a double */
    tl_tensor *src = tl_from_i64((int64_t[]){ big, 1, 2, 3 }, TL_SHAPE(2, 2));
    tl_tensor *dst = tl_zeros(TL_I64, TL_SHAPE(2, 2));
    ck_assert_int_eq(tl_copy_into(dst, tl_transpose(src, 0, 1)), 0);
    ck_assert(((int64_t *)tl_data(dst))[0] == big);
    ck_assert(((int64_t *)tl_data(dst))[1] == 2);
}
END_TEST

START_TEST(to_f32_buffer_reads_in_c_order)
{
    tl_tensor *t = tl_from_f32((float[]){ 1, 2, 3, 4, 5, 6 }, TL_SHAPE(2, 3));
    float out[6];
    ck_assert_int_eq(tl_to_f32_buffer(tl_transpose(t, 0, 1), out, 6), 0);
    const float want[6] = { 1, 4, 2, 5, 3, 6 };
    for (int i = 0; i < 6; i++) ck_assert(out[i] == want[i]);
    tl_clear_error();
    ck_assert_int_eq(tl_to_f32_buffer(t, out, 5), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "buffer holds 5 floats but tensor [2, 3] has 6"));
    tl_clear_error();
}
END_TEST

START_TEST(cast_to_bf16_rounds_to_nearest_even)
{
    /* 1 + 2^-8 is halfway between bf16 1.0 and 1 + 2^-7: ties go to the even 1.0;
     * 1 + 3*2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: goes to the even 1 + 2^-6. */
    float in[4] = { 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-20f, NAN };
    tl_tensor *b = tl_cast(tl_from_f32(in, TL_SHAPE(4)), TL_BF16);
    tl_assert_ok(b);
    const uint16_t *bits = tl_data(b);
    ck_assert_uint_eq(bits[0], 0x3F80);
    ck_assert_uint_eq(bits[1], 0x3F82);
    ck_assert_uint_eq(bits[2], 0x3F81);   /* above the tie: rounds up */
    ck_assert_uint_eq(bits[3], 0x7FC0);   /* every NaN becomes the quiet NaN */
}
END_TEST

START_TEST(cast_from_bf16_is_exact)
{
    tl_tensor *b = tl_zeros(TL_BF16, TL_SHAPE(3));
    uint16_t *bits = tl_data(b);
    bits[0] = 0x3F81;   /* 1 + 2^-7 */
    bits[1] = 0xC2F7;   /* -123.5 */
    bits[2] = 0x0001;   /* the smallest subnormal, 2^-133 */
    tl_tensor *f = tl_cast(b, TL_F32);
    ck_assert(tl_item_at(f, 0) == 1.0 + 0x1p-7);
    ck_assert(tl_item_at(f, 1) == -123.5);
    ck_assert(tl_item_at(f, 2) == 0x1p-133);
}
END_TEST

START_TEST(cast_to_integers_truncates_and_saturates)
{
    tl_tensor *f = tl_from_f32((float[]){ 2.9f, -2.9f, 3e9f, NAN }, TL_SHAPE(4));
    tl_tensor *i = tl_cast(f, TL_I32);
    ck_assert(tl_item_at(i, 0) == 2 && tl_item_at(i, 1) == -2);
    ck_assert(tl_item_at(i, 2) == INT32_MAX && tl_item_at(i, 3) == 0);
    tl_tensor *m = tl_cast(f, TL_BOOL);
    ck_assert(tl_item_at(m, 0) == 1 && tl_item_at(m, 3) == 1);
}
END_TEST

START_TEST(owned_tensor_outlives_scopes_and_is_zeroed)
{
    tl_scope_push();
    tl_tensor *p = tl_tensor_new_owned(TL_F32, TL_SHAPE(4));
    tl_scope_pop();
    ck_assert(p->owned);
    ck_assert(tl_item_at(p, 3) == 0.0);
    ck_assert_int_eq(tl_set(p, (int64_t[]){ 3 }, 7), 0);
    tl_tensor *c = tl_tensor_copy_owned(p);
    ck_assert(c->owned && tl_item_at(c, 3) == 7.0);
    ck_assert_ptr_ne(c->storage, p->storage);
    tl_tensor_free(p);
    tl_tensor_free(c);
    tl_tensor_free(NULL);   /* a no-op */
}
END_TEST

START_TEST(freeing_a_scope_tensor_is_refused)
{
    tl_clear_error();
    tl_tensor *t = tl_zeros(TL_F32, TL_SHAPE(2));
    tl_tensor_free(t);
    ck_assert_ptr_nonnull(strstr(tl_error(), "belongs to a scope"));
    ck_assert(tl_item_at(t, 1) == 0.0);   /* still alive */
    tl_clear_error();
}
END_TEST

START_TEST(external_tensor_is_read_only)
{
    const float data[4] = { 1, 2, 3, 4 };
    tl_tensor *t = tl_tensor_wrap_external(data, TL_F32, TL_SHAPE(2, 2));
    tl_assert_ok(t);
    ck_assert_ptr_eq(tl_data(t), data);   /* no copy */
    ck_assert(tl_get(t, (int64_t[]){ 1, 0 }) == 3.0);
    tl_clear_error();
    ck_assert_int_eq(tl_set(t, (int64_t[]){ 0, 0 }, 9), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "read-only"));
    tl_clear_error();
    ck_assert_int_eq(tl_copy_into(tl_narrow(t, 0, 0, 1), tl_zeros(TL_F32, TL_SHAPE(1, 2))), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "read-only"));   /* views of it too */
    tl_clear_error();
    ck_assert(data[0] == 1.0f);
    tl_tensor *c = tl_clone(t);   /* the way to a writable copy */
    ck_assert_int_eq(tl_set(c, (int64_t[]){ 0, 0 }, 9), 0);
    tl_tensor_free(t);
}
END_TEST

START_TEST(creation_rejects_bad_shapes)
{
    tl_assert_error(tl_zeros(TL_F32, TL_SHAPE(2, -1)), "size -1 at axis 1 is negative");
    tl_assert_error(tl_zeros(TL_F32, 7, (int64_t[]){ 1, 1, 1, 1, 1, 1, 1 }), "rank 7");
    tl_assert_error(tl_zeros(TL_F32, TL_SHAPE(INT64_MAX / 2, 4)), "too large");
    tl_assert_error(tl_tensor_new_owned(TL_F32, TL_SHAPE(-3)), "negative");
    tl_tensor *empty = tl_zeros(TL_F32, TL_SHAPE(0, 3));
    tl_assert_ok(empty);
    ck_assert_int_eq(tl_numel(empty), 0);
}
END_TEST

/* tl_copy_into row by row (unit stride on the last axis) gives the values of
 * the element walk, for every dtype pair it handles: views of heads, a cache
 * slot, F32 to BF16 rounded to nearest even and back exactly. */
START_TEST(copy_into_strided_rows_matches_the_element_walk)
{
    tl_pcg32 rng = tl_test_rng(9);
    tl_tensor *x = tl_randn(&rng, TL_SHAPE(2, 5, 3, 8));
    tl_tensor *view = tl_narrow(tl_transpose(x, 1, 2), 2, 1, 3);   /* [2, 3, 3, 8] */
    tl_tensor *dst = tl_zeros(TL_F32, TL_SHAPE(2, 3, 3, 8));
    ck_assert_int_eq(tl_copy_into(dst, view), 0);
    for (int64_t i = 0; i < tl_numel(dst); i++)
        ck_assert_double_eq(tl_item_at(dst, i), tl_item_at(view, i));
    tl_tensor *cache = tl_zeros(TL_BF16, TL_SHAPE(1, 3, 10, 8));
    tl_tensor *slot = tl_narrow(cache, 2, 4, 3);                     /* [1, 3, 3, 8] */
    tl_tensor *k = tl_narrow(view, 0, 1, 1);
    ck_assert_int_eq(tl_copy_into(slot, k), 0);
    for (int64_t i = 0; i < tl_numel(slot); i++)
        ck_assert_double_eq(tl_item_at(slot, i), tl_item_at(tl_cast(tl_cast(k, TL_BF16),
                                                                    TL_F32), i));
    ck_assert_double_eq(tl_get(cache, (const int64_t[]){0, 0, 3, 0}), 0.0);   /* untouched */
    tl_tensor *back = tl_zeros(TL_F32, TL_SHAPE(1, 3, 3, 8));
    ck_assert_int_eq(tl_copy_into(back, slot), 0);
    for (int64_t i = 0; i < tl_numel(back); i++)
        ck_assert_double_eq(tl_item_at(back, i), tl_item_at(slot, i));
    tl_tensor *ids = tl_arange(0, 24), *ids2 = tl_zeros(TL_I64, TL_SHAPE(24));
    ck_assert_int_eq(tl_copy_into(ids2, tl_narrow(ids, 0, 0, 24)), 0);   /* I64 bit for bit */
    ck_assert_double_eq(tl_item_at(ids2, 23), 23.0);
}
END_TEST
