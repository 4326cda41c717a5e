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
#include "tinyllm/kernels.h"   /* tl_parallel_range: pool.c, layer 0 */

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

/* An iterator over ndim axes placed at element `flat` of the walk. */
static void iter_at(tl_iter *it, int ndim, const int64_t *shape, const int64_t *strides,
                    int64_t offset, int64_t flat) {
    tl_iter_init(it, ndim, shape, strides, offset);
    for (int d = ndim - 1; d >= 0; d--) {
        it->index[d] = flat % shape[d];
        it->offset += it->index[d] * strides[d];
        flat /= shape[d];
    }
}

typedef struct {
    int ndim;   /* of the rows' walk: the copy's axes but the last */
    const int64_t *shape, *src_strides, *dst_strides;
    int64_t src_offset, dst_offset, row;
    const char *src;
    char *dst;
    size_t src_elem, dst_elem;
    tl_row_copy *copy;
} rows_copy;

static void copy_row_block(void *ctx, int64_t begin, int64_t end) {
    const rows_copy *c = ctx;
    tl_iter in, out;   /* over the rows' first elements */
    iter_at(&in, c->ndim, c->shape, c->src_strides, c->src_offset, begin);
    iter_at(&out, c->ndim, c->shape, c->dst_strides, c->dst_offset, begin);
    for (int64_t r = begin; r < end; r++, tl_iter_next(&in), tl_iter_next(&out)) {
        const char *from = c->src + in.offset * (int64_t)c->src_elem;
        char *to = c->dst + out.offset * (int64_t)c->dst_elem;
        if (c->copy) c->copy(from, to, (size_t)c->row);
        else memmove(to, from, (size_t)c->row * c->src_elem);
    }
}

/* Large copies share their rows among threads (internal.h:
 * SHARE_MIN_ELEMENTS): a prefill's activations, gathered into heads and
 * back, were serial work between shared ops. */

void tl_copy_row_by_row(int ndim, const int64_t *shape, const char *src, size_t src_elem,
                        const int64_t *src_strides, int64_t src_offset, char *dst,
                        size_t dst_elem, const int64_t *dst_strides, int64_t dst_offset,
                        tl_row_copy *copy, int threads) {
    if (ndim <= 0) return;
    int64_t row = shape[ndim - 1], rows = 1;
    for (int d = 0; d < ndim - 1; d++) rows *= shape[d];
    if (row <= 0) return;
    rows_copy c = {ndim - 1, shape, src_strides, dst_strides, src_offset, dst_offset, row,
                   src, dst, src_elem, dst_elem, copy};
    if (rows * row < SHARE_MIN_ELEMENTS) threads = 1;
    tl_parallel_range(threads, rows, SHARE_BLOCK_ELEMENTS / row + 1, copy_row_block, &c);
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
