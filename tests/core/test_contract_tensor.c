/* tensor.h keeps its promises: each function's documented failures give the
 * documented failure value (NULL, -1 or NaN) and the message quoted in the
 * header (issue 7, item 5). The error model's two rules themselves are
 * test_errors.c's. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tinyllm/ops.h"
#include "tinyllm/testing.h"

#define assert_null(expr, needle)                                                       \
    do {                                                                                \
        tl_clear_error();                                                               \
        const void *r_ = (const void *)(expr);                                          \
        const char *e_ = tl_error();                                                    \
        ck_assert_msg(r_ == NULL, "%s succeeded; expected '%s'", #expr, needle);       \
        ck_assert_msg(e_ && strstr(e_, needle), "%s failed with '%s'; expected '%s'",   \
                      #expr, e_ ? e_ : "(no message)", needle);                         \
    } while (0)

#define assert_status(expr, needle)                                                     \
    do {                                                                                \
        tl_clear_error();                                                               \
        long long s_ = (long long)(expr);                                               \
        const char *e_ = tl_error();                                                    \
        ck_assert_msg(s_ == -1, "%s returned %lld; expected -1 and '%s'", #expr, s_, needle); \
        ck_assert_msg(e_ && strstr(e_, needle), "%s failed with '%s'; expected '%s'",   \
                      #expr, e_ ? e_ : "(no message)", needle);                         \
    } while (0)

#define assert_nan(expr, needle)                                                        \
    do {                                                                                \
        tl_clear_error();                                                               \
        double v_ = (expr);                                                             \
        const char *e_ = tl_error();                                                    \
        ck_assert_msg(isnan(v_), "%s gave %g; expected NaN and '%s'", #expr, v_, needle); \
        ck_assert_msg(e_ && strstr(e_, needle), "%s failed with '%s'; expected '%s'",   \
                      #expr, e_ ? e_ : "(no message)", needle);                         \
    } while (0)

START_TEST(scope_pop_and_keep_fail_outside_a_scope)
{
    /* Check runs each test in a fresh process (CK_FORK): only the bottom scope. */
    assert_status(tl_scope_pop(), "tl_scope_pop: no scope is open (each tl_scope_pop needs a "
                                  "tl_scope_push)");
    tl_tensor *t = tl_ones(TL_F32, TL_SHAPE(2));
    assert_null(tl_scope_keep(t), "tl_scope_keep: no enclosing scope to keep the tensor in");
    assert_null(tl_scope_keep(NULL), "tl_scope_keep: tensor is NULL");
    tl_fail("cause");
    ck_assert_ptr_null(tl_scope_keep(NULL));
    ck_assert_str_eq(tl_error(), "cause");
    tl_scope_push();
    tl_tensor *owned = tl_tensor_new_owned(TL_F32, TL_SHAPE(1));
    ck_assert_ptr_eq(tl_scope_keep(owned), owned);   /* already outlives the scope */
    tl_scope_pop();
    tl_tensor_free(owned);
    tl_clear_error();
}
END_TEST

START_TEST(dim_and_queries_on_bad_input)
{
    tl_tensor *t = tl_ones(TL_F32, TL_SHAPE(2, 3));
    assert_status(tl_dim(t, 2), "tl_dim: axis 2 is out of range for shape [2, 3] (rank 2)");
    assert_status(tl_dim(NULL, 0), "tl_dim: tensor is NULL");
    ck_assert_int_eq(tl_dim(t, -1), 3);
    ck_assert_int_eq(tl_numel(NULL), 0);
    ck_assert(!tl_is_contiguous(NULL));
    ck_assert(!tl_same_shape(t, NULL));
    char buf[8];
    ck_assert_str_eq(tl_shape_str(NULL, buf, sizeof buf), "(null)");
    ck_assert_str_eq(tl_shape_str(tl_scalar(1), buf, sizeof buf), "[]");
    ck_assert_str_eq(tl_shape_str(tl_ones(TL_F32, TL_SHAPE(12345, 6789)), buf, 6), "[1234");
    tl_clear_error();
    ck_assert_int_eq(tl_axis(3, 3), -1);
    ck_assert_ptr_null(tl_error());   /* tl_axis sets no message */
    ck_assert_int_eq(tl_dtype_size((tl_dtype)9), 0);
}
END_TEST

START_TEST(creation_refuses_bad_shapes_and_dtypes)
{
    assert_null(tl_zeros((tl_dtype)9, TL_SHAPE(2)), "tensor: unknown dtype 9");
    assert_null(tl_empty(TL_F32, 7, (const int64_t[]){1, 1, 1, 1, 1, 1, 1}),
                "tensor: rank 7 is out of range (0 to TL_MAX_DIMS = 6)");
    assert_null(tl_ones(TL_F32, 2, NULL), "tensor: rank 2 but the shape is NULL");
    assert_null(tl_full(TL_I64, TL_SHAPE(-1), 3), "tensor: size -1 at axis 0 is negative");
    assert_null(tl_zeros(TL_F32, TL_SHAPE(1LL << 40, 1LL << 30)),
                "tensor: shape at axis 0 makes the tensor too large");
    assert_null(tl_from_f32(NULL, TL_SHAPE(2)), "tl_from_f32: data is NULL");
    assert_null(tl_from_i64(NULL, TL_SHAPE(2)), "tl_from_i64: data is NULL");
    tl_assert_ok(tl_from_f32(NULL, TL_SHAPE(0)));   /* nothing to copy */
    assert_null(tl_arange(3, 1), "tl_arange: stop 1 is below start 3");
    assert_null(tl_zeros_like(NULL), "tl_zeros_like: input 1 is NULL");
    assert_null(tl_ones_like(NULL), "tl_ones_like: input 1 is NULL");
    assert_null(tl_clone(NULL), "clone: input 1 is NULL");
    assert_null(tl_tensor_new_owned(TL_F32, TL_SHAPE(-3)), "tensor: size -3 at axis 0");
    assert_null(tl_tensor_copy_owned(NULL), "tl_tensor_copy_owned: input 1 is NULL");
    assert_null(tl_tensor_wrap_external(NULL, TL_F32, TL_SHAPE(2)),
                "tl_tensor_wrap_external: data is NULL");
    tl_tensor *full = tl_full(TL_I32, TL_SHAPE(2), 1e12);   /* clamped, as documented */
    ck_assert_double_eq(tl_item_at(full, 0), 2147483647.0);
    ck_assert_double_eq(tl_item_at(tl_full(TL_I64, TL_SHAPE(1), -2.7), 0), -2.0);
    tl_clear_error();
}
END_TEST

START_TEST(tensor_free_refuses_a_scoped_tensor)
{
    tl_tensor *t = tl_ones(TL_F32, TL_SHAPE(2));
    tl_clear_error();
    tl_tensor_free(t);
    ck_assert_ptr_nonnull(tl_error());
    ck_assert(strstr(tl_error(), "tl_tensor_free: the tensor belongs to a scope (tl_scope_pop "
                                 "frees it)"));
    ck_assert_double_eq(tl_item_at(t, 1), 1.0);   /* untouched */
    tl_tensor_free(NULL);
    tl_clear_error();
}
END_TEST

START_TEST(element_access_errors)
{
    tl_tensor *t = tl_ones(TL_F32, TL_SHAPE(2, 3)), *ids = tl_arange(0, 3);
    assert_null(tl_data(NULL), "tl_data: tensor is NULL");
    assert_null(tl_f32(NULL), "tl_f32: tensor is NULL");
    assert_null(tl_f32(ids), "tl_f32: tensor [3] is I64, not F32 (convert it with "
                             "tl_cast(t, TL_F32))");
    assert_null(tl_f32(tl_transpose(t, 0, 1)), "tl_f32: tensor [3, 2] is a strided view (make "
                                               "it dense with tl_contiguous)");
    assert_nan(tl_get(NULL, (const int64_t[]){0}), "tl_get: tensor is NULL");
    assert_nan(tl_get(t, NULL), "tl_get: index array is NULL");
    assert_nan(tl_get(ids, (const int64_t[]){3}), "tl_get: index 3 is out of range at axis 0 of "
                                                  "shape [3]");
    assert_nan(tl_item_at(NULL, 0), "tl_item_at: tensor is NULL");
    assert_nan(tl_item_at(t, 6), "tl_item_at: element 6 is out of range for shape [2, 3] (6 "
                                 "elements)");
    assert_nan(tl_item(NULL), "tl_item: tensor is NULL");
    assert_nan(tl_item(t), "tl_item: tensor [2, 3] has 6 elements, not one (use tl_item_at or "
                           "tl_get)");
    assert_status(tl_set(t, (const int64_t[]){2, 0}, 1), "tl_set: index 2 is out of range at "
                                                         "axis 0 of shape [2, 3]");
    assert_status(tl_set(NULL, (const int64_t[]){0}, 1), "tl_set: tensor is NULL");
    float backing[2] = {1, 2};
    tl_tensor *ro = tl_tensor_wrap_external(backing, TL_F32, TL_SHAPE(2));
    assert_status(tl_set(ro, (const int64_t[]){0}, 5), "tl_set: tensor is read-only (it maps a "
                                                       "file); copy it first with tl_clone or "
                                                       "tl_tensor_copy_owned");
    assert_status(tl_copy_into(ro, tl_zeros(TL_F32, TL_SHAPE(2))), "tl_copy_into: tensor is "
                                                                   "read-only");
    ck_assert(backing[0] == 1.0f && backing[1] == 2.0f);
    tl_tensor_free(ro);
    assert_status(tl_copy_into(NULL, t), "tl_copy_into: input 1 is NULL");
    assert_status(tl_copy_into(t, tl_ones(TL_F32, TL_SHAPE(3, 2))),
                  "tl_copy_into: destination [2, 3] and source [3, 2] differ in shape");
    float out[6];
    assert_status(tl_to_f32_buffer(NULL, out, 6), "tl_to_f32_buffer: tensor is NULL");
    assert_status(tl_to_f32_buffer(t, NULL, 6), "tl_to_f32_buffer: output buffer is NULL");
    assert_status(tl_to_f32_buffer(t, out, 5), "tl_to_f32_buffer: buffer holds 5 floats but "
                                               "tensor [2, 3] has 6 elements");
    tl_clear_error();
}
END_TEST

START_TEST(view_errors)
{
    tl_tensor *t = tl_ones(TL_F32, TL_SHAPE(2, 3)), *c = tl_ones(TL_F32, TL_SHAPE(2, 1));
    const char *ops[] = {"reshape", "permute", "transpose", "narrow", "expand", "unsqueeze",
                         "squeeze", "contiguous", "cast"};
    for (int i = 0; i < 9; i++) {
        tl_clear_error();
        tl_tensor *r = i == 0 ? tl_reshape(NULL, TL_SHAPE(1))
                     : i == 1 ? tl_permute(NULL, (const int[]){0})
                     : i == 2 ? tl_transpose(NULL, 0, 1)
                     : i == 3 ? tl_narrow(NULL, 0, 0, 1)
                     : i == 4 ? tl_expand(NULL, TL_SHAPE(1))
                     : i == 5 ? tl_unsqueeze(NULL, 0)
                     : i == 6 ? tl_squeeze(NULL, 0)
                     : i == 7 ? tl_contiguous(NULL) : tl_cast(NULL, TL_F32);
        char want[64];
        snprintf(want, sizeof want, "%s: input 1 is NULL", ops[i]);
        ck_assert_msg(!r && tl_error() && strcmp(tl_error(), want) == 0, "%s(NULL) said '%s'",
                      ops[i], tl_error() ? tl_error() : "nothing");
    }
    assert_null(tl_reshape(t, 7, (const int64_t[]){1, 1, 1, 1, 1, 1, 6}),
                "reshape: rank 7 is invalid (0 to 6, with a shape array)");
    assert_null(tl_reshape(t, 2, NULL), "reshape: rank 2 is invalid");
    assert_null(tl_reshape(t, TL_SHAPE(-2, -3)), "reshape: size -2 at axis 0 is invalid (one axis "
                                                 "may be -1)");
    assert_null(tl_reshape(t, TL_SHAPE(-1, -1)), "reshape: size -1 at axis 1 is invalid");
    assert_null(tl_reshape(tl_ones(TL_F32, TL_SHAPE(5, 2, 3)), TL_SHAPE(7, -1)),
                "reshape: cannot view [5, 2, 3] (30 elements) as [7, -1]");
    assert_null(tl_permute(t, NULL), "permute: axes is NULL");
    assert_null(tl_permute(t, (const int[]){0, 0}), "permute: axis 0 (position 1) is out of range "
                                                    "or repeated for shape [2, 3]; give each axis "
                                                    "0..1 once");
    assert_null(tl_transpose(t, 0, 2), "transpose: axes 0 and 2: 2 is out of range for shape "
                                       "[2, 3]");
    assert_null(tl_narrow(t, 2, 0, 1), "narrow: axis 2 is out of range for shape [2, 3]");
    assert_null(tl_narrow(t, 0, 1, 5), "narrow: elements 1..5 of axis 0 are out of range for "
                                       "shape [2, 3]");
    assert_null(tl_expand(t, TL_SHAPE(6)), "expand: cannot expand [2, 3] to rank 1 (the rank may "
                                           "only grow, up to 6)");
    assert_null(tl_expand(t, TL_SHAPE(2, 4)), "expand: cannot expand [2, 3] to [2, 4]: axis 1 has "
                                              "size 3, and only size-1 axes stretch");
    assert_null(tl_unsqueeze(tl_ones(TL_F32, TL_SHAPE(2)), 3), "unsqueeze: cannot insert axis 3 "
                                                               "into shape [2]");
    assert_null(tl_unsqueeze(tl_ones(TL_F32, TL_SHAPE(1, 1, 1, 1, 1, 1)), 0),
                "unsqueeze: cannot insert axis 0");
    assert_null(tl_squeeze(c, 2), "squeeze: axis 2 is out of range for shape [2, 1]");
    assert_null(tl_squeeze(c, 0), "squeeze: axis 0 of shape [2, 1] has size 2, not 1");
    assert_null(tl_cast(t, (tl_dtype)9), "tensor: unknown dtype 9");
    tl_clear_error();
}
END_TEST
