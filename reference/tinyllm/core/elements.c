/* elements.c: one element at a time, in any dtype (L0.1): the strided walk
 * every loop over a view uses, and reading or writing an element as double.
 *
 * Every read goes through double, which holds F32, BF16 and I32 exactly (and
 * I64 up to 2^53). BF16 is widened exactly and narrowed round-to-nearest-even
 * by bf16.c.
 */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "tinyllm/bf16.h"

/* ---- the strided walk ---------------------------------------------------- */

void tl_iter_init(tl_iter *it, int ndim, const int64_t *shape, const int64_t *strides,
                  int64_t offset) {
    it->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        it->shape[i] = shape[i];
        it->index[i] = 0;
    }
    it->offset = offset;
    it->strides = strides;
}

void tl_iter_next(tl_iter *it) {
    for (int d = it->ndim - 1; d >= 0; d--) {
        it->offset += it->strides[d];
        if (++it->index[d] < it->shape[d]) return;
        it->offset -= it->strides[d] * it->shape[d];
        it->index[d] = 0;
    }
}

void tl_copy_row_by_row(int ndim, const int64_t *shape, const char *src, size_t src_elem,
                        const int64_t *src_strides, int64_t src_offset, char *dst,
                        size_t dst_elem, const int64_t *dst_strides, int64_t dst_offset,
                        tl_row_copy *copy) {
    if (ndim <= 0) return;
    int64_t row = shape[ndim - 1], rows = 1;
    for (int d = 0; d < ndim - 1; d++) rows *= shape[d];
    if (row <= 0) return;
    tl_iter in, out;   /* over the rows' first elements */
    tl_iter_init(&in, ndim - 1, shape, src_strides, src_offset);
    tl_iter_init(&out, ndim - 1, shape, dst_strides, dst_offset);
    for (int64_t r = 0; r < rows; r++, tl_iter_next(&in), tl_iter_next(&out)) {
        const char *from = src + in.offset * (int64_t)src_elem;
        char *to = dst + out.offset * (int64_t)dst_elem;
        if (copy) copy(from, to, (size_t)row);
        else memmove(to, from, (size_t)row * src_elem);
    }
}

/* ---- loading and storing ------------------------------------------------ */

double tl_load_as_double(const void *base, tl_dtype dt, int64_t offset) {
    switch (dt) {
    case TL_F32: return ((const float *)base)[offset];
    case TL_BF16: return tl_bf16_to_f32(((const uint16_t *)base)[offset]);
    case TL_I32: return ((const int32_t *)base)[offset];
    case TL_I64: return (double)((const int64_t *)base)[offset];
    case TL_BOOL: return ((const uint8_t *)base)[offset] ? 1.0 : 0.0;
    }
    return NAN;
}

/* Integers: truncated toward zero and clamped to the type's range (NaN -> 0),
 * so no conversion is undefined behaviour. */
static int64_t to_int(double v, double lo, double hi) {
    if (isnan(v)) return 0;
    if (v <= lo) return (int64_t)lo;
    if (v >= hi) return (int64_t)hi;
    return (int64_t)v;
}

void tl_store_double(void *base, tl_dtype dt, int64_t offset, double v) {
    switch (dt) {
    case TL_F32: ((float *)base)[offset] = (float)v; break;
    case TL_BF16: ((uint16_t *)base)[offset] = tl_f32_to_bf16((float)v); break;
    case TL_I32: ((int32_t *)base)[offset] = (int32_t)to_int(v, INT32_MIN, INT32_MAX); break;
    case TL_I64:
        /* 2^63 is the first double above INT64_MAX */
        ((int64_t *)base)[offset] = v >= 0x1p63 ? INT64_MAX : to_int(v, -0x1p63, 0x1p63);
        break;
    case TL_BOOL: ((uint8_t *)base)[offset] = v != 0.0; break;
    }
}
