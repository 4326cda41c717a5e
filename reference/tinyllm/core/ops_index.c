/* ops_index.c: embedding, gather, concat and split (L0.2).
 *
 * Embedding and gather read rows or elements at given indices; their
 * backward adds each output gradient back where it was read (scatter-add),
 * so an index used twice collects both gradients. An index out of range is
 * an error that names the index, where it sits and the valid range.
 * Embedding reads a BF16 table one row at a time: a large vocabulary is
 * never widened whole.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "tinyllm/kernels.h"
#include "tinyllm/bf16.h"

/* Writes the C-order multi-index of flat position p in shape as "[1, 2]". */
static char *position_str(int64_t p, int ndim, const int64_t *shape, char *buf, size_t size) {
    int64_t idx[TL_MAX_DIMS];
    for (int d = ndim - 1; d >= 0; d--) {
        idx[d] = shape[d] ? p % shape[d] : 0;
        p = shape[d] ? p / shape[d] : 0;
    }
    size_t len = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndim && len < size; d++)
        len += (size_t)snprintf(buf + len, size - len, d ? ", %lld" : "%lld", (long long)idx[d]);
    if (len < size) snprintf(buf + len, size - len, "]");
    return buf;
}

/* ---- embedding ------------------------------------------------------- */

/* saved[0]: the ids as I64, contiguous. */
static int embedding_backward(tl_node *node, tl_tensor *grad_out, tl_tensor **grad_in) {
    tl_tensor *weight = node->inputs[0], *ids = node->saved[0];
    tl_tensor *g = tl_float_input("embedding", grad_out);
    tl_tensor *dw = g ? tl_zeros(TL_F32, 2, weight->shape) : NULL;
    if (!dw) return -1;
    int64_t D = weight->shape[1], n = tl_numel(ids);
    const int64_t *id = (const int64_t *)tl_data(ids);
    const float *gv = (const float *)tl_data(g);
    float *d = (float *)tl_data(dw);
    for (int64_t p = 0; p < n; p++)
        for (int64_t k = 0; k < D; k++) d[id[p] * D + k] += gv[p * D + k];
    grad_in[0] = dw;
    return 0;
}

tl_tensor *tl_embedding(tl_tensor *weight, tl_tensor *ids) {
    if (!tl_inputs_ok("embedding", 2, weight, ids)) return NULL;
    char ws[96], is[96];
    if (weight->ndim != 2 || !tl_dtype_is_float(weight->dtype))
        return tl_fail("embedding: the weight must be a float table [V, D]; got %s %s",
                       tl_dtype_name(weight->dtype), tl_shape_str(weight, ws, sizeof ws));
    if (ids->ndim + 1 > TL_MAX_DIMS)
        return tl_fail("embedding: ids %s have rank %d; the result would exceed %d axes",
                       tl_shape_str(ids, is, sizeof is), ids->ndim, TL_MAX_DIMS);
    tl_tensor *id_t = tl_index_input("embedding", ids);
    if (!id_t) return NULL;
    int64_t V = weight->shape[0], D = weight->shape[1], n = tl_numel(id_t);
    const int64_t *id = (const int64_t *)tl_data(id_t);
    for (int64_t p = 0; p < n; p++) {
        if (id[p] < 0 || id[p] >= V) {
            char pos[96];
            return tl_fail("embedding: id %lld at position %s of ids %s is out of range [0, "
                           "V=%lld) for the table %s (a tokenizer/vocabulary mismatch?)",
                           (long long)id[p],
                           position_str(p, ids->ndim, ids->shape, pos, sizeof pos),
                           tl_shape_str(ids, is, sizeof is), (long long)V,
                           tl_shape_str(weight, ws, sizeof ws));
        }
    }

    int64_t shape[TL_MAX_DIMS];
    memcpy(shape, ids->shape, sizeof(int64_t) * (size_t)ids->ndim);
    shape[ids->ndim] = D;
    tl_tensor *out = tl_new_f32(ids->ndim + 1, shape);
    if (!out) return NULL;
    float *y = (float *)tl_data(out);
    int64_t rs = weight->strides[0], cs = weight->strides[1];
    for (int64_t p = 0; p < n; p++) {
        float *row = y + p * D;
        if (weight->dtype == TL_F32) {
            const float *src = (const float *)tl_data(weight) + id[p] * rs;
            for (int64_t k = 0; k < D; k++) row[k] = src[k * cs];
        } else {   /* BF16: widen this row only */
            const uint16_t *src = (const uint16_t *)tl_data(weight) + id[p] * rs;
            for (int64_t k = 0; k < D; k++) row[k] = tl_bf16_to_f32(src[k * cs]);
        }
    }
    tl_node *node = tl_record(out, "embedding", embedding_backward, 1, &weight);
    if (node) node->saved[0] = id_t;
    return out;
}

/* ---- gather ---------------------------------------------------------- */

/* The offset in contiguous t (shape tshape) of output position idx, with
 * the index value taking the place of idx[axis]. */
static int64_t gather_offset(const int64_t *idx, const int64_t *tshape, int ndim, int axis,
                             int64_t along) {
    int64_t off = 0;
    for (int d = 0; d < ndim; d++) off = off * tshape[d] + (d == axis ? along : idx[d]);
    return off;
}

/* saved[0]: the index as I64, contiguous; i[0]: the axis. */
static int gather_backward(tl_node *node, tl_tensor *grad_out, tl_tensor **grad_in) {
    tl_tensor *t = node->inputs[0], *index = node->saved[0];
    int axis = (int)node->i[0];
    tl_tensor *g = tl_float_input("gather", grad_out);
    tl_tensor *dt = g ? tl_zeros(TL_F32, t->ndim, t->shape) : NULL;
    if (!dt) return -1;
    const int64_t *iv = (const int64_t *)tl_data(index);
    const float *gv = (const float *)tl_data(g);
    float *d = (float *)tl_data(dt);
    int64_t idx[TL_MAX_DIMS] = {0}, n = tl_numel(index);
    for (int64_t p = 0; p < n; p++) {
        d[gather_offset(idx, t->shape, t->ndim, axis, iv[p])] += gv[p];
        for (int k = index->ndim - 1; k >= 0 && ++idx[k] == index->shape[k]; k--) idx[k] = 0;
    }
    grad_in[0] = dt;
    return 0;
}

tl_tensor *tl_gather(tl_tensor *t, int axis, tl_tensor *index) {
    if (!tl_inputs_ok("gather", 2, t, index)) return NULL;
    char ts[96], is[96];
    int ax = tl_axis(axis, t->ndim);
    if (ax < 0)
        return tl_fail("gather: axis %d is out of range for t %s of rank %d", axis,
                       tl_shape_str(t, ts, sizeof ts), t->ndim);
    if (index->ndim != t->ndim)
        return tl_fail("gather: index %s must have the rank of t %s (%d)",
                       tl_shape_str(index, is, sizeof is), tl_shape_str(t, ts, sizeof ts), t->ndim);
    for (int d = 0; d < t->ndim; d++)
        if (d != ax && index->shape[d] > t->shape[d])
            return tl_fail("gather: index %s is larger than t %s on axis %d (%lld > %lld); "
                           "only the gather axis %d may be larger",
                           tl_shape_str(index, is, sizeof is), tl_shape_str(t, ts, sizeof ts), d,
                           (long long)index->shape[d], (long long)t->shape[d], ax);
    tl_tensor *tf = tl_float_input("gather", t);
    tl_tensor *it = tl_index_input("gather", index);
    tl_tensor *out = tf && it ? tl_new_f32(index->ndim, index->shape) : NULL;
    if (!out) return NULL;
    const float *x = (const float *)tl_data(tf);
    const int64_t *iv = (const int64_t *)tl_data(it);
    float *y = (float *)tl_data(out);
    int64_t idx[TL_MAX_DIMS] = {0}, n = tl_numel(it), size = t->shape[ax];
    for (int64_t p = 0; p < n; p++) {
        if (iv[p] < 0 || iv[p] >= size) {
            char pos[96];
            return tl_fail("gather: index value %lld at position %s is out of range [0, %lld) for "
                           "axis %d of t %s", (long long)iv[p],
                           position_str(p, index->ndim, index->shape, pos, sizeof pos),
                           (long long)size, ax, tl_shape_str(t, ts, sizeof ts));
        }
        y[p] = x[gather_offset(idx, t->shape, t->ndim, ax, iv[p])];
        for (int k = index->ndim - 1; k >= 0 && ++idx[k] == index->shape[k]; k--) idx[k] = 0;
    }
    tl_node *node = tl_record(out, "gather", gather_backward, 1, &t);
    if (node) {
        node->saved[0] = it;
        node->i[0] = ax;
    }
    return out;
}

/* ---- concat and split ------------------------------------------------ */

/* i[0]: the axis; i[1 + k]: the size of input k along it. */
static int concat_backward(tl_node *node, tl_tensor *grad_out, tl_tensor **grad_in) {
    int axis = (int)node->i[0];
    int64_t start = 0;
    for (int k = 0; k < node->n_inputs; k++) {
        int64_t len = node->i[1 + k];
        if (node->inputs[k]->requires_grad) {
            grad_in[k] = tl_narrow(grad_out, axis, start, len);
            if (!grad_in[k]) return -1;
        }
        start += len;
    }
    return 0;
}

/* The output dtype: the inputs' own when they agree, F32 for a mix of float
 * dtypes; -1 for a mix that involves an index or mask dtype. */
static int concat_dtype(tl_tensor *const *ts, int n) {
    bool same = true, floats = true;
    for (int k = 0; k < n; k++) {
        same = same && ts[k]->dtype == ts[0]->dtype;
        floats = floats && tl_dtype_is_float(ts[k]->dtype);
    }
    return same ? (int)ts[0]->dtype : floats ? (int)TL_F32 : -1;
}

/* True when t, seen as [outer, len, inner] around axis ax, is `outer` dense
 * blocks of len * inner elements, each `step` elements after the last: a
 * contiguous tensor, or a narrow of one along ax (rope's halves). */
static bool as_blocks(const tl_tensor *t, int ax, int64_t *step) {
    int64_t dense = 1;
    for (int d = t->ndim - 1; d >= ax; d--) {
        if (t->shape[d] != 1 && t->strides[d] != dense) return false;
        dense *= t->shape[d];
    }
    /* The outer axes, innermost first: the first one longer than 1 sets the
     * step, and each further one must stride over all blocks inside it. */
    *step = dense;
    int64_t blocks = 0;
    for (int d = ax - 1; d >= 0; d--) {
        if (t->shape[d] == 1) continue;
        if (blocks == 0) *step = t->strides[d];
        else if (t->strides[d] != *step * blocks) return false;
        blocks = (blocks ? blocks : 1) * t->shape[d];
    }
    return true;
}

typedef struct {
    tl_tensor *out;
    tl_tensor *const *ts;
    const bool *blocks;       /* input k goes block by block */
    const int64_t *steps;
    int n, ax;
    int64_t inner;
} concat_job;

/* Blocks [begin, end) of the outer axes, from every input that has them. */
static void concat_range(void *ctx, int64_t begin, int64_t end) {
    const concat_job *j = ctx;
    size_t es = tl_dtype_size(j->out->dtype);
    char *dst = tl_data(j->out);
    int64_t start = 0, total = j->out->shape[j->ax];
    for (int k = 0; k < j->n; k++) {
        int64_t len = j->ts[k]->shape[j->ax];
        if (j->blocks[k]) {
            const char *src = (const char *)j->ts[k]->storage->data +
                              (size_t)j->ts[k]->offset * es;
            size_t block = (size_t)(len * j->inner) * es;
            for (int64_t o = begin; o < end; o++)
                memcpy(dst + (size_t)((o * total + start) * j->inner) * es,
                       src + (size_t)(o * j->steps[k]) * es, block);
        }
        start += len;
    }
}

/* Copies each input into its slice of out along ax. Seen as [outer, size,
 * inner], an input of out's dtype laid out as blocks (as_blocks) is copied
 * block by block, shared among threads when out is large; any other goes
 * element by element through tl_copy_into. */
static int concat_copy(tl_tensor *out, tl_tensor *const *ts, int n, int ax) {
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < ax; d++) outer *= out->shape[d];
    for (int d = ax + 1; d < out->ndim; d++) inner *= out->shape[d];
    bool *blocks = tl_scope_alloc(sizeof(bool) * (size_t)n);
    int64_t *steps = tl_scope_alloc(sizeof(int64_t) * (size_t)n);
    if (!blocks || !steps) return -1;
    bool any = false;
    for (int k = 0; k < n; k++) {
        blocks[k] = ts[k]->shape[ax] > 0 && ts[k]->dtype == out->dtype &&
                    as_blocks(ts[k], ax, &steps[k]);
        any = any || blocks[k];
    }
    if (any && outer > 0) {
        concat_job j = {out, ts, blocks, steps, n, ax, inner};
        int64_t row = out->shape[ax] * inner;
        int threads = outer * row >= SHARE_MIN_ELEMENTS ? tl_num_threads() : 1;
        tl_parallel_range(threads, outer, SHARE_BLOCK_ELEMENTS / (row ? row : 1) + 1,
                          concat_range, &j);
    }
    int64_t start = 0;
    for (int k = 0; k < n; k++) {
        int64_t len = ts[k]->shape[ax];
        if (len > 0 && !blocks[k]) {
            tl_tensor *slice = tl_narrow(out, ax, start, len);
            if (!slice || tl_copy_into(slice, ts[k]) < 0) return -1;
        }
        start += len;
    }
    return 0;
}

tl_tensor *tl_concat(tl_tensor *const *ts, int n, int axis) {
    if (!ts || n < 1) return tl_fail("concat: needs at least one tensor (got %d)", ts ? n : 0);
    for (int k = 0; k < n; k++)
        if (!ts[k]) return tl_propagate("concat: tensor %d of %d is NULL", k, n);
    char s0[96], sk[96];
    int ax = tl_axis(axis, ts[0]->ndim);
    if (ax < 0)
        return tl_fail("concat: axis %d is out of range for tensor 0 %s of rank %d", axis,
                       tl_shape_str(ts[0], s0, sizeof s0), ts[0]->ndim);
    int64_t shape[TL_MAX_DIMS];
    memcpy(shape, ts[0]->shape, sizeof(int64_t) * (size_t)ts[0]->ndim);
    shape[ax] = 0;
    bool recording = false;
    for (int k = 0; k < n; k++) {
        bool fits = ts[k]->ndim == ts[0]->ndim;
        for (int d = 0; fits && d < ts[0]->ndim; d++)
            fits = d == ax || ts[k]->shape[d] == ts[0]->shape[d];
        if (!fits)
            return tl_fail("concat: tensor %d %s does not fit tensor 0 %s: shapes may differ only "
                           "on the concat axis %d", k, tl_shape_str(ts[k], sk, sizeof sk),
                           tl_shape_str(ts[0], s0, sizeof s0), ax);
        shape[ax] += ts[k]->shape[ax];
        recording = recording || ts[k]->requires_grad;
    }
    int dt = concat_dtype(ts, n);
    if (dt < 0)
        return tl_fail("concat: cannot mix index or mask dtypes with others (tensor 0 is %s); "
                       "cast first",
                       tl_dtype_name(ts[0]->dtype));
    recording = recording && tl_grad_enabled();

    /* A node holds at most TL_NODE_MAX_INPUTS inputs: when recording, join
     * groups of that many, then join the groups. */
    if (recording && n > TL_NODE_MAX_INPUTS) {
        int ngroups = (n + TL_NODE_MAX_INPUTS - 1) / TL_NODE_MAX_INPUTS;
        tl_tensor **groups = tl_scope_alloc(sizeof(tl_tensor *) * (size_t)ngroups);
        if (!groups) return NULL;
        for (int g = 0; g < ngroups; g++) {
            int first = g * TL_NODE_MAX_INPUTS, count = n - first;
            if (count > TL_NODE_MAX_INPUTS) count = TL_NODE_MAX_INPUTS;
            groups[g] = tl_concat(ts + first, count, ax);
            if (!groups[g]) return NULL;
        }
        return tl_concat(groups, ngroups, ax);
    }

    tl_tensor *out = tl_new((tl_dtype)dt, ts[0]->ndim, shape);
    if (!out || concat_copy(out, ts, n, ax) < 0) return NULL;
    if (recording) {
        tl_node *node = tl_record(out, "concat", concat_backward, n, ts);
        if (node) {
            node->i[0] = ax;
            for (int k = 0; k < n; k++) node->i[1 + k] = ts[k]->shape[ax];
        }
    }
    return out;
}

int tl_split(tl_tensor *t, int axis, const int64_t *sizes, int n, tl_tensor **out) {
    if (out)
        for (int k = 0; k < n; k++) out[k] = NULL;
    if (!tl_inputs_ok("split", 1, t)) return -1;
    char ts[96];
    if (!sizes || !out || n < 1) {
        return tl_fail_status("split: needs n >= 1 sizes and an output array (got n=%d)", n);
    }
    int ax = tl_axis(axis, t->ndim);
    if (ax < 0) {
        return tl_fail_status("split: axis %d is out of range for %s of rank %d", axis,
                              tl_shape_str(t, ts, sizeof ts), t->ndim);
    }
    int64_t total = 0;
    for (int k = 0; k < n; k++) {
        if (sizes[k] < 0) {
            return tl_fail_status("split: size %d is negative (%lld)", k, (long long)sizes[k]);
        }
        total += sizes[k];
    }
    if (total != t->shape[ax]) {
        return tl_fail_status("split: the %d sizes add up to %lld but axis %d of %s has %lld", n,
                              (long long)total, ax, tl_shape_str(t, ts, sizeof ts),
                              (long long)t->shape[ax]);
    }
    int64_t start = 0;
    for (int k = 0; k < n; k++) {
        out[k] = tl_narrow(t, ax, start, sizes[k]);
        if (!out[k]) {
            for (int j = 0; j < n; j++) out[j] = NULL;
            return -1;
        }
        start += sizes[k];
    }
    return 0;
}
