/* ops_scatter.c: index_select and index_add along one axis (added for L7.8).
 *
 * A mixture of experts sends each token to a few experts: it gathers the
 * rows an expert owns (index_select), runs the expert on them, and adds the
 * results back at the same rows (index_add), as torch.index_select and
 * torch.Tensor.index_add do. Each is the other's backward. A tensor is read
 * as [outer, size, inner] around the axis, so any rank works with one loop.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* outer * size * inner == numel, with size the extent of axis. */
static void split_axis(const tl_tensor *t, int axis, int64_t *outer, int64_t *inner) {
    *outer = 1;
    *inner = 1;
    for (int d = 0; d < axis; d++) *outer *= t->shape[d];
    for (int d = axis + 1; d < t->ndim; d++) *inner *= t->shape[d];
}

/* The axis of t (normalised) and the index as contiguous I64 of rank 1 whose
 * values lie in [0, t->shape[axis]); NULL/-1 with an error naming op. */
static tl_tensor *checked_index(const char *op, tl_tensor *t, int axis, tl_tensor *index,
                                int *ax) {
    char ts[96], is[96];
    *ax = tl_axis(axis, t->ndim);
    if (*ax < 0)
        return tl_fail("%s: axis %d is out of range for %s of rank %d", op, axis,
                       tl_shape_str(t, ts, sizeof ts), t->ndim);
    if (index->ndim != 1)
        return tl_fail("%s: index %s must have rank 1 (a list of positions along axis %d)", op,
                       tl_shape_str(index, is, sizeof is), *ax);
    tl_tensor *it = tl_index_input(op, index);
    if (!it) return NULL;
    const int64_t *iv = (const int64_t *)tl_data(it);
    int64_t size = t->shape[*ax];
    for (int64_t j = 0; j < tl_numel(it); j++)
        if (iv[j] < 0 || iv[j] >= size)
            return tl_fail("%s: index value %lld at position %lld is out of range [0, %lld) for "
                           "axis %d of %s", op, (long long)iv[j], (long long)j, (long long)size,
                           *ax, tl_shape_str(t, ts, sizeof ts));
    return it;
}

/* dst[o][iv[j]][k] += src[o][j][k]; dst has `size` slices, src has n. */
static void scatter_add(float *dst, const float *src, const int64_t *iv, int64_t n, int64_t outer,
                        int64_t size, int64_t inner) {
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < n; j++) {
            float *d = dst + (o * size + iv[j]) * inner;
            const float *s = src + (o * n + j) * inner;
            for (int64_t k = 0; k < inner; k++) d[k] += s[k];
        }
}

/* dst[o][j][k] = src[o][iv[j]][k]. */
static void gather_slices(float *dst, const float *src, const int64_t *iv, int64_t n,
                          int64_t outer, int64_t size, int64_t inner) {
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < n; j++)
            memcpy(dst + (o * n + j) * inner, src + (o * size + iv[j]) * inner,
                   sizeof(float) * (size_t)inner);
}

/* ---- index_select ------------------------------------------------------- */

/* saved[0]: the index (I64, contiguous); i[0]: the axis. */
static int index_select_backward(tl_node *node, tl_tensor *grad_out, tl_tensor **grad_in) {
    tl_tensor *t = node->inputs[0], *index = node->saved[0];
    int ax = (int)node->i[0];
    tl_tensor *g = tl_float_input("index_select", grad_out);
    tl_tensor *dt = g ? tl_zeros(TL_F32, t->ndim, t->shape) : NULL;
    if (!dt) return -1;
    int64_t outer, inner;
    split_axis(t, ax, &outer, &inner);
    scatter_add(tl_data(dt), tl_data(g), tl_data(index), tl_numel(index), outer, t->shape[ax],
                inner);
    grad_in[0] = dt;
    return 0;
}

tl_tensor *tl_index_select(tl_tensor *t, int axis, tl_tensor *index) {
    if (!tl_inputs_ok("index_select", 2, t, index)) return NULL;
    int ax;
    tl_tensor *it = checked_index("index_select", t, axis, index, &ax);
    tl_tensor *tf = it ? tl_float_input("index_select", t) : NULL;
    if (!tf) return NULL;
    int64_t shape[TL_MAX_DIMS], outer, inner, n = tl_numel(it);
    memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    shape[ax] = n;
    tl_tensor *out = tl_new_f32(t->ndim, shape);
    if (!out) return NULL;
    split_axis(t, ax, &outer, &inner);
    gather_slices(tl_data(out), tl_data(tf), tl_data(it), n, outer, t->shape[ax], inner);
    tl_node *node = tl_record(out, "index_select", index_select_backward, 1, &t);
    if (node) {
        node->saved[0] = it;
        node->i[0] = ax;
    }
    return out;
}

/* ---- index_add ------------------------------------------------------------ */

/* saved[0]: the index; i[0]: the axis. t's gradient passes through; src's
 * is read back from the rows it was added to. */
static int index_add_backward(tl_node *node, tl_tensor *grad_out, tl_tensor **grad_in) {
    tl_tensor *t = node->inputs[0], *src = node->inputs[1], *index = node->saved[0];
    int ax = (int)node->i[0];
    if (t->requires_grad) grad_in[0] = grad_out;
    if (src->requires_grad) {
        tl_tensor *g = tl_float_input("index_add", grad_out);
        tl_tensor *ds = g ? tl_new_f32(src->ndim, src->shape) : NULL;
        if (!ds) return -1;
        int64_t outer, inner;
        split_axis(t, ax, &outer, &inner);
        gather_slices(tl_data(ds), tl_data(g), tl_data(index), tl_numel(index), outer,
                      t->shape[ax], inner);
        grad_in[1] = ds;
    }
    return 0;
}

tl_tensor *tl_index_add(tl_tensor *t, int axis, tl_tensor *index, tl_tensor *src) {
    if (!tl_inputs_ok("index_add", 3, t, index, src)) return NULL;
    int ax;
    tl_tensor *it = checked_index("index_add", t, axis, index, &ax);
    if (!it) return NULL;
    bool fits = src->ndim == t->ndim;
    for (int d = 0; fits && d < t->ndim; d++)
        fits = src->shape[d] == (d == ax ? tl_numel(it) : t->shape[d]);
    if (!fits) {
        char ts[96], ss[96], is[96];
        return tl_fail("index_add: src %s must have the shape of t %s with axis %d replaced by "
                       "the %lld positions of index %s", tl_shape_str(src, ss, sizeof ss),
                       tl_shape_str(t, ts, sizeof ts), ax, (long long)tl_numel(it),
                       tl_shape_str(index, is, sizeof is));
    }
    tl_tensor *tf = tl_float_input("index_add", t);
    tl_tensor *sf = tf ? tl_float_input("index_add", src) : NULL;
    tl_tensor *out = sf ? tl_new_f32(t->ndim, t->shape) : NULL;
    if (!out) return NULL;
    memcpy(tl_data(out), tl_data(tf), sizeof(float) * (size_t)tl_numel(t));
    int64_t outer, inner;
    split_axis(t, ax, &outer, &inner);
    scatter_add(tl_data(out), tl_data(sf), tl_data(it), tl_numel(it), outer, t->shape[ax], inner);
    tl_node *node = tl_record(out, "index_add", index_add_backward, 2, (tl_tensor *[]){t, src});
    if (node) {
        node->saved[0] = it;
        node->i[0] = ax;
    }
    return out;
}
