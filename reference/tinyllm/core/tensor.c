/* tensor.c: creation and element access (L0.1).
 *
 * A tensor reads element (i0, i1, ...) at storage offset
 * offset + i0*strides[0] + i1*strides[1] + ...; every function here is that
 * formula, a loop around it, or a check that the indices are in range.
 * Storage comes from scope.c; dtypes and shapes are shape.c's; reading and
 * writing one element in any dtype is elements.c's.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "tinyllm/kernels.h"
#include "tinyllm/bf16.h"

/* ---- creation --------------------------------------------------------- */

tl_tensor *tl_empty(tl_dtype dt, int ndim, const int64_t *shape) { return tl_new(dt, ndim, shape); }

tl_tensor *tl_full(tl_dtype dt, int ndim, const int64_t *shape, double value) {
    tl_tensor *t = tl_new(dt, ndim, shape);
    if (!t) return NULL;
    int64_t n = tl_numel(t);
    if (dt == TL_F32) {
        float *p = t->storage->data, v = (float)value;
        for (int64_t i = 0; i < n; i++) p[i] = v;
    } else {
        for (int64_t i = 0; i < n; i++) tl_store_double(t->storage->data, dt, i, value);
    }
    return t;
}

tl_tensor *tl_zeros(tl_dtype dt, int ndim, const int64_t *shape) {
    tl_tensor *t = tl_new(dt, ndim, shape);
    if (t) memset(t->storage->data, 0, t->storage->nbytes);
    return t;
}

tl_tensor *tl_ones(tl_dtype dt, int ndim, const int64_t *shape) {
    return tl_full(dt, ndim, shape, 1.0);
}

tl_tensor *tl_scalar(double value) { return tl_full(TL_F32, 0, NULL, value); }

static tl_tensor *from_data(tl_dtype dt, const void *data, int ndim, const int64_t *shape) {
    tl_tensor *t = tl_new(dt, ndim, shape);
    if (!t) return NULL;
    if (!data && t->storage->nbytes > 0) return tl_fail("tl_from_%s: data is NULL",
                                                        dt == TL_F32 ? "f32" : "i64");
    if (t->storage->nbytes) memcpy(t->storage->data, data, t->storage->nbytes);
    return t;
}

tl_tensor *tl_from_f32(const float *data, int ndim, const int64_t *shape) {
    return from_data(TL_F32, data, ndim, shape);
}

tl_tensor *tl_from_i64(const int64_t *data, int ndim, const int64_t *shape) {
    return from_data(TL_I64, data, ndim, shape);
}

tl_tensor *tl_arange(int64_t start, int64_t stop) {
    if (stop < start)
        return tl_fail("tl_arange: stop %lld is below start %lld", (long long)stop,
                       (long long)start);
    tl_tensor *t = tl_new(TL_I64, 1, (int64_t[]){ stop - start });
    if (!t) return NULL;
    int64_t *p = t->storage->data;
    for (int64_t i = 0; i < stop - start; i++) p[i] = start + i;
    return t;
}

tl_tensor *tl_zeros_like(const tl_tensor *t) {
    if (!tl_inputs_ok("tl_zeros_like", 1, t)) return NULL;
    return tl_zeros(t->dtype, t->ndim, t->shape);
}

tl_tensor *tl_ones_like(const tl_tensor *t) {
    if (!tl_inputs_ok("tl_ones_like", 1, t)) return NULL;
    return tl_ones(t->dtype, t->ndim, t->shape);
}

tl_tensor *tl_tensor_copy_owned(const tl_tensor *t) {
    if (!tl_inputs_ok("tl_tensor_copy_owned", 1, t)) return NULL;
    tl_tensor *c = tl_tensor_new_owned(t->dtype, t->ndim, t->shape);
    if (c && tl_copy_into(c, t) != 0) {
        tl_tensor_free(c);
        return NULL;
    }
    return c;
}

/* ---- element access ---------------------------------------------------- */

void *tl_data(const tl_tensor *t) {
    if (!t) return tl_propagate("tl_data: tensor is NULL");
    return (char *)t->storage->data + (size_t)t->offset * tl_dtype_size(t->dtype);
}

float *tl_f32(const tl_tensor *t) {
    if (!t) return tl_propagate("tl_f32: tensor is NULL");
    char s[96];
    if (t->dtype != TL_F32)
        return tl_fail("tl_f32: tensor %s is %s, not F32 (convert it with tl_cast(t, TL_F32))",
                       tl_shape_str(t, s, sizeof s), tl_dtype_name(t->dtype));
    if (!tl_is_contiguous(t))
        return tl_fail("tl_f32: tensor %s is a strided view (make it dense with tl_contiguous)",
                       tl_shape_str(t, s, sizeof s));
    return tl_data(t);
}

/* The storage offset of idx, or -1 (with an error naming op) when an index is
 * out of range. */
static int64_t offset_of(const char *op, const tl_tensor *t, const int64_t *idx) {
    if (!t) return tl_propagate_status("%s: tensor is NULL", op);
    if (t->ndim > 0 && !idx) return tl_fail_status("%s: index array is NULL", op);
    int64_t off = t->offset;
    for (int i = 0; i < t->ndim; i++) {
        if (idx[i] < 0 || idx[i] >= t->shape[i]) {
            char s[96];
            return tl_fail_status("%s: index %lld is out of range at axis %d of shape %s", op,
                                  (long long)idx[i], i, tl_shape_str(t, s, sizeof s));
        }
        off += idx[i] * t->strides[i];
    }
    return off;
}

double tl_get(const tl_tensor *t, const int64_t *idx) {
    int64_t off = offset_of("tl_get", t, idx);
    return off < 0 ? NAN : tl_load_as_double(t->storage->data, t->dtype, off);
}

double tl_item_at(const tl_tensor *t, int64_t i) {
    if (!t) return tl_propagate("tl_item_at: tensor is NULL"), NAN;
    int64_t n = tl_numel(t);
    if (i < 0 || i >= n) {
        char s[96];
        tl_fail("tl_item_at: element %lld is out of range for shape %s (%lld elements)",
                (long long)i, tl_shape_str(t, s, sizeof s), (long long)n);
        return NAN;
    }
    int64_t off = t->offset;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (i % t->shape[d]) * t->strides[d];
        i /= t->shape[d];
    }
    return tl_load_as_double(t->storage->data, t->dtype, off);
}

double tl_item(const tl_tensor *t) {
    if (!t) return tl_propagate("tl_item: tensor is NULL"), NAN;
    if (tl_numel(t) != 1) {
        char s[96];
        tl_fail("tl_item: tensor %s has %lld elements, not one (use tl_item_at or tl_get)",
                tl_shape_str(t, s, sizeof s), (long long)tl_numel(t));
        return NAN;
    }
    return tl_item_at(t, 0);
}

static bool writable(const char *op, const tl_tensor *t) {
    if (t->storage->readonly)
        return tl_fail("%s: tensor is read-only (it maps a file); copy it first "
                       "with tl_clone or tl_tensor_copy_owned", op), false;
    return true;
}

int tl_set(tl_tensor *t, const int64_t *idx, double value) {
    int64_t off = offset_of("tl_set", t, idx);
    if (off < 0 || !writable("tl_set", t)) return -1;
    tl_store_double(t->storage->data, t->dtype, off, value);
    return 0;
}

int tl_to_f32_buffer(const tl_tensor *t, float *out, int64_t n) {
    if (!t) return tl_propagate_status("tl_to_f32_buffer: tensor is NULL");
    if (!out) return tl_fail_status("tl_to_f32_buffer: output buffer is NULL");
    if (n != tl_numel(t)) {
        char s[96];
        return tl_fail_status("tl_to_f32_buffer: buffer holds %lld floats but tensor %s has %lld "
                              "elements", (long long)n, tl_shape_str(t, s, sizeof s),
                              (long long)tl_numel(t));
    }
    tl_iter it;
    tl_iter_init(&it, t->ndim, t->shape, t->strides, t->offset);
    for (int64_t i = 0; i < n; i++, tl_iter_next(&it))
        out[i] = (float)tl_load_as_double(t->storage->data, t->dtype, it.offset);
    return 0;
}

/* When both tensors have unit stride along their last axis (a narrowed or
 * permuted view whose rows are intact: attention's heads, a cache slot), row
 * by row: a memmove, or a widening/narrowing loop between F32 and BF16.
 * Returns -1 (nothing done) for any other layout or dtype pair. */
static void widen_row(const void *from, void *to, size_t n) { tl_bf16_to_f32_n(from, to, n); }
static void narrow_row(const void *from, void *to, size_t n) { tl_f32_to_bf16_n(from, to, n); }

static int copy_rows(tl_tensor *dst, const tl_tensor *src) {
    int last = src->ndim - 1;
    if (last < 0) return -1;
    int64_t len = src->shape[last];
    bool rows = len == 1 || (src->strides[last] == 1 && dst->strides[last] == 1);
    bool same = dst->dtype == src->dtype;
    bool widen = src->dtype == TL_BF16 && dst->dtype == TL_F32;
    bool narrow = src->dtype == TL_F32 && dst->dtype == TL_BF16;
    if (!rows || !(same || widen || narrow)) return -1;
    tl_copy_row_by_row(src->ndim, src->shape, src->storage->data, tl_dtype_size(src->dtype),
                       src->strides, src->offset, dst->storage->data,
                       tl_dtype_size(dst->dtype), dst->strides, dst->offset,
                       same ? NULL : widen ? widen_row : narrow_row,
                       tl_numel(src) < SHARE_MIN_ELEMENTS ? 1 : tl_num_threads());
    return 0;
}

int tl_copy_into(tl_tensor *dst, const tl_tensor *src) {
    if (!tl_inputs_ok("tl_copy_into", 2, dst, src)) return -1;
    if (!tl_same_shape(dst, src)) {
        char a[96], b[96];
        return tl_fail_status("tl_copy_into: destination %s and source %s differ in shape",
                              tl_shape_str(dst, a, sizeof a), tl_shape_str(src, b, sizeof b));
    }
    if (!writable("tl_copy_into", dst)) return -1;
    int64_t n = tl_numel(src);
    if (dst->dtype == src->dtype && tl_is_contiguous(dst) && tl_is_contiguous(src)) {
        memmove(tl_data(dst), tl_data(src), (size_t)n * tl_dtype_size(src->dtype));
        return 0;
    }
    if (n > 0 && copy_rows(dst, src) == 0) return 0;
    tl_iter in, out;
    tl_iter_init(&in, src->ndim, src->shape, src->strides, src->offset);
    tl_iter_init(&out, dst->ndim, dst->shape, dst->strides, dst->offset);
    size_t es = tl_dtype_size(src->dtype);
    for (int64_t i = 0; i < n; i++, tl_iter_next(&in), tl_iter_next(&out)) {
        if (dst->dtype == src->dtype)   /* bit for bit: an I64 may not fit a double */
            memcpy((char *)dst->storage->data + out.offset * (int64_t)es,
                   (const char *)src->storage->data + in.offset * (int64_t)es, es);
        else
            tl_store_double(dst->storage->data, dst->dtype, out.offset,
                            tl_load_as_double(src->storage->data, src->dtype, in.offset));
    }
    return 0;
}
