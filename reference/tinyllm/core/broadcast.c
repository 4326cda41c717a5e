/* broadcast.c: NumPy broadcasting (L0.2): align trailing axes; a size-1 axis
 * stretches. The shape two operands broadcast to, the strides that read an
 * operand as that shape, and the sum that undoes it for a gradient.
 */
#include <string.h>

#include "internal.h"

int tl_broadcast_shape(const char *op, const tl_tensor *a, const tl_tensor *b, int *ndim,
                       int64_t *shape) {
    int n = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int i = n - 1; i >= 0; i--) {
        int ia = i - (n - a->ndim), ib = i - (n - b->ndim);
        int64_t sa = ia >= 0 ? a->shape[ia] : 1, sb = ib >= 0 ? b->shape[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            char x[96], y[96];
            return tl_fail_status("%s: shapes %s and %s do not broadcast at axis %d (%lld vs "
                                  "%lld); sizes must match or be 1", op,
                                  tl_shape_str(a, x, sizeof x), tl_shape_str(b, y, sizeof y), i,
                                  (long long)sa, (long long)sb);
        }
        shape[i] = sa == 1 ? sb : sa;
    }
    *ndim = n;
    return 0;
}

void tl_broadcast_strides(const tl_tensor *t, int ndim, const int64_t *shape, int64_t *strides) {
    for (int i = ndim - 1; i >= 0; i--) {
        int j = i - (ndim - t->ndim);
        strides[i] = j < 0 || (t->shape[j] == 1 && shape[i] != 1) ? 0 : t->strides[j];
    }
}

/* Adds every element of g into the slot it was broadcast from. */
tl_tensor *tl_sum_to_shape(tl_tensor *g, int ndim, const int64_t *shape) {
    if (!tl_inputs_ok("sum_to_shape", 1, g)) return NULL;
    tl_tensor target = { .ndim = ndim };
    memcpy(target.shape, shape, sizeof(int64_t) * (size_t)ndim);
    if (tl_same_shape(g, &target)) return g;
    int n;
    int64_t bshape[TL_MAX_DIMS];
    if (ndim > g->ndim || tl_broadcast_shape("sum_to_shape", &target, g, &n, bshape) != 0 ||
        n != g->ndim) {
        char a[96], b[96];
        return tl_fail("sum_to_shape: gradient %s cannot be summed down to %s",
                       tl_shape_str(g, a, sizeof a), tl_shape_str(&target, b, sizeof b));
    }
    tl_tensor *out = tl_zeros(TL_F32, ndim, shape);
    if (!out) return NULL;
    int64_t out_strides[TL_MAX_DIMS];
    tl_broadcast_strides(out, g->ndim, g->shape, out_strides);
    float *o = out->storage->data;
    tl_iter in, to;
    tl_iter_init(&in, g->ndim, g->shape, g->strides, g->offset);
    tl_iter_init(&to, g->ndim, g->shape, out_strides, 0);
    for (int64_t i = 0, count = tl_numel(g); i < count; i++, tl_iter_next(&in), tl_iter_next(&to))
        o[to.offset] += (float)tl_load_as_double(g->storage->data, g->dtype, in.offset);
    return out;
}
