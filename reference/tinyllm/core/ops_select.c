/* ops_select.c: argmax and top-k (L0.2). Selection has no gradient.
 *
 * Both rank values by one total order, PyTorch's: a larger value ranks
 * first, NaN ranks above every number (as torch.argmax and torch.topk
 * treat it), and among equal values (or NaNs) the lower index ranks first.
 * Greedy decoding therefore picks the same token as PyTorch, ties included.
 */
#include <math.h>
#include <string.h>

#include "internal.h"

/* True when value a at index ia ranks before value b at index ib. */
static bool ranks_before(float a, int64_t ia, float b, int64_t ib) {
    bool an = isnan(a), bn = isnan(b);
    if (an != bn) return an;
    if (!an && a != b) return a > b;
    return ia < ib;
}

tl_tensor *tl_argmax(tl_tensor *t, int axis, bool keepdim) {
    if (!tl_inputs_ok("argmax", 1, t)) return NULL;
    char ts[96];
    int ax = tl_axis(axis, t->ndim);
    if (ax < 0)
        return tl_fail("argmax: axis %d is out of range for %s of rank %d", axis,
                       tl_shape_str(t, ts, sizeof ts), t->ndim);
    int64_t n = t->shape[ax];
    if (n == 0)
        return tl_fail("argmax: axis %d of %s is empty; there is no largest element", ax,
                       tl_shape_str(t, ts, sizeof ts));
    tl_tensor *tf = tl_float_input("argmax", t);
    if (!tf) return NULL;

    int64_t shape[TL_MAX_DIMS], outer = 1, inner = 1;
    int nd = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (d < ax) outer *= t->shape[d];
        if (d > ax) inner *= t->shape[d];
        if (d != ax || keepdim) shape[nd++] = d == ax ? 1 : t->shape[d];
    }
    tl_tensor *out = tl_new(TL_I64, nd, shape);
    if (!out) return NULL;
    const float *x = (const float *)tl_data(tf);
    int64_t *best = (int64_t *)tl_data(out);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            const float *row = x + o * n * inner + i;
            int64_t b = 0;
            for (int64_t j = 1; j < n; j++)
                if (ranks_before(row[j * inner], j, row[b * inner], b)) b = j;
            best[o * inner + i] = b;
        }
    }
    return out;
}

/* ---- top-k ----------------------------------------------------------- */

/* heap[0 .. size) holds indices into row, the one that ranks last at the
 * root: a candidate joins only when it ranks before the root. */
static void sift_down(int64_t *heap, int64_t size, const float *row, int64_t at) {
    for (;;) {
        int64_t worst = at, l = 2 * at + 1, r = l + 1;
        if (l < size && ranks_before(row[heap[worst]], heap[worst], row[heap[l]], heap[l]))
            worst = l;
        if (r < size && ranks_before(row[heap[worst]], heap[worst], row[heap[r]], heap[r]))
            worst = r;
        if (worst == at) return;
        int64_t tmp = heap[at];
        heap[at] = heap[worst];
        heap[worst] = tmp;
        at = worst;
    }
}

/* Writes the indices of row's k first-ranked elements into top, in rank
 * order: a bounded heap (n log k), then the heap emptied from the back. */
static void top_indices(const float *row, int64_t n, int64_t k, int64_t *top) {
    for (int64_t j = 0; j < k; j++) top[j] = j;
    for (int64_t at = k / 2 - 1; at >= 0; at--) sift_down(top, k, row, at);
    for (int64_t j = k; j < n; j++) {
        if (ranks_before(row[j], j, row[top[0]], top[0])) {
            top[0] = j;
            sift_down(top, k, row, 0);
        }
    }
    for (int64_t size = k; size > 1; size--) {   /* root = last-ranked: to the end */
        int64_t tmp = top[0];
        top[0] = top[size - 1];
        top[size - 1] = tmp;
        sift_down(top, size - 1, row, 0);
    }
}

int tl_topk(tl_tensor *t, int k, tl_tensor **values, tl_tensor **indices) {
    if (values) *values = NULL;
    if (indices) *indices = NULL;
    if (!tl_inputs_ok("topk", 1, t)) return -1;
    char ts[96];
    if (!indices) {
        return tl_fail_status("topk: indices must not be NULL (values may be)");
    }
    if (t->ndim == 0) {
        return tl_fail_status("topk: needs at least one axis; got a scalar");
    }
    int64_t n = t->shape[t->ndim - 1];
    if (k < 1 || k > n) {
        return tl_fail_status("topk: k=%d is out of range [1, %lld] for the last axis of %s", k,
                              (long long)n, tl_shape_str(t, ts, sizeof ts));
    }
    tl_tensor *tf = tl_float_input("topk", t);
    if (!tf) return -1;
    int64_t shape[TL_MAX_DIMS];
    memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    shape[t->ndim - 1] = k;
    tl_tensor *idx = tl_new(TL_I64, t->ndim, shape);
    tl_tensor *val = values ? tl_new_f32(t->ndim, shape) : NULL;
    if (!idx || (values && !val)) return -1;

    const float *x = (const float *)tl_data(tf);
    int64_t *iv = (int64_t *)tl_data(idx), rows = tl_numel(tf) / n;
    float *vv = val ? (float *)tl_data(val) : NULL;
    for (int64_t r = 0; r < rows; r++) {
        top_indices(x + r * n, n, k, iv + r * k);
        for (int64_t j = 0; vv && j < k; j++) vv[r * k + j] = x[r * n + iv[r * k + j]];
    }
    *indices = idx;
    if (values) *values = val;
    return 0;
}
