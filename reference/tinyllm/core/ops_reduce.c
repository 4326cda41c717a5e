/* ops_reduce.c: sums, means and maxima over an axis, or over everything (L0.2).
 *
 * A reduction sees its input as [outer, n, inner] with n the reduced axis,
 * and sums in double: float32 accumulation drifts on long rows.
 */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "tinyllm/kernels.h"

typedef struct {
    int axis;
    int64_t outer, n, inner;
    int ndim;                       /* of the result */
    int64_t shape[TL_MAX_DIMS];
} reduction;

static bool plan(const char *op, const tl_tensor *t, int axis, bool keepdim, reduction *r) {
    r->axis = tl_axis(axis, t->ndim);
    if (r->axis < 0) {
        char s[96];
        return tl_fail("%s: axis %d is out of range for shape %s", op, axis,
                       tl_shape_str(t, s, sizeof s)), false;
    }
    r->outer = r->inner = 1;
    r->n = t->shape[r->axis];
    r->ndim = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (d < r->axis) r->outer *= t->shape[d];
        if (d > r->axis) r->inner *= t->shape[d];
        if (d != r->axis) r->shape[r->ndim++] = t->shape[d];
        else if (keepdim) r->shape[r->ndim++] = 1;
    }
    return true;
}

/* Large sums over the last axis (a prefill's norms) share their rows among
 * threads (internal.h: SHARE_MIN_ELEMENTS); a row is one thread's, so
 * results do not depend on the thread count. */
typedef struct {
    const float *x;
    float *out;
    int64_t n;
    double scale;
} last_axis_job;

/* Compiled per CPU (ELEMENTWISE_CLONES; the baseline summed two doubles at
 * a time), each row summed in the same order on every CPU (tl_sum_f32_fixed). */
ELEMENTWISE_CLONES static void sum_last_axis(void *ctx, int64_t begin, int64_t end) {
    const last_axis_job *j = ctx;
    for (int64_t o = begin; o < end; o++)
        j->out[o] = (float)(tl_sum_f32_fixed(j->x + o * j->n, j->n) * j->scale);
}

/* out[o, j] = scale * sum_k x[o, k, j] */
static void sum_rows(const reduction *r, const float *x, float *out, double scale, double *acc) {
    if (r->inner == 1) {   /* the last axis: one contiguous row per output */
        last_axis_job j = {x, out, r->n, scale};
        bool share = r->outer > 1 && r->outer * r->n >= SHARE_MIN_ELEMENTS;
        tl_parallel_range(share ? tl_num_threads() : 1, r->outer,
                          SHARE_BLOCK_ELEMENTS / (r->n ? r->n : 1) + 1, sum_last_axis, &j);
        return;
    }
    for (int64_t o = 0; o < r->outer; o++) {
        for (int64_t j = 0; j < r->inner; j++) acc[j] = 0.0;
        for (int64_t k = 0; k < r->n; k++) {
            const float *row = x + (o * r->n + k) * r->inner;
            for (int64_t j = 0; j < r->inner; j++) acc[j] += row[j];
        }
        for (int64_t j = 0; j < r->inner; j++) out[o * r->inner + j] = (float)(acc[j] * scale);
    }
}

/* The gradient of a sum spreads g back over the reduced axis. */
static int sum_backward(tl_node *node, tl_tensor *g, tl_tensor **grad_in) {
    const tl_tensor *in = node->inputs[0];
    if (!node->i[1]) g = tl_unsqueeze(g, (int)node->i[0]);
    if (node->f[0] != 1.0) g = tl_mul_scalar(g, node->f[0]);   /* mean: 1/n */
    grad_in[0] = tl_expand(g, in->ndim, in->shape);
    return grad_in[0] ? 0 : -1;
}

static tl_tensor *sum_scaled(const char *op, tl_tensor *t, int axis, bool keepdim, bool mean) {
    reduction r;
    tl_tensor *x = tl_float_input(op, t);
    if (!x || !plan(op, t, axis, keepdim, &r)) return NULL;
    tl_tensor *out = tl_new_f32(r.ndim, r.shape);
    double *acc = tl_scope_alloc(sizeof(double) * (size_t)(r.inner ? r.inner : 1));
    if (!out || !acc) return NULL;
    double scale = mean ? 1.0 / (double)r.n : 1.0;   /* a mean over 0 elements is NaN */
    sum_rows(&r, tl_data(x), out->storage->data, scale, acc);
    tl_node *node = tl_record(out, op, sum_backward, 1, &t);
    if (node) {
        node->i[0] = r.axis;
        node->i[1] = keepdim;
        node->f[0] = scale;
    }
    return out;
}

tl_tensor *tl_sum(tl_tensor *t, int axis, bool keepdim) {
    return sum_scaled("sum", t, axis, keepdim, false);
}

tl_tensor *tl_mean(tl_tensor *t, int axis, bool keepdim) {
    return sum_scaled("mean", t, axis, keepdim, true);
}

/* sum_all and mean_all: t flattened to one axis, reduced to rank 0. */
static tl_tensor *reduce_all(const char *op, tl_tensor *t, bool mean) {
    if (!tl_inputs_ok(op, 1, t)) return NULL;
    return sum_scaled(op, tl_reshape(t, 1, (int64_t[]){ -1 }), 0, false, mean);
}

tl_tensor *tl_sum_all(tl_tensor *t) { return reduce_all("sum_all", t, false); }
tl_tensor *tl_mean_all(tl_tensor *t) { return reduce_all("mean_all", t, true); }

/* The gradient of a max goes to the first maximal element (saved[0] holds
 * its index along the axis for every output element). */
static int max_backward(tl_node *node, tl_tensor *g, tl_tensor **grad_in) {
    const tl_tensor *in = node->inputs[0];
    tl_tensor *gc = tl_float_input("max", g);
    tl_tensor *gin = gc ? tl_zeros(TL_F32, in->ndim, in->shape) : NULL;
    if (!gin) return -1;
    const int64_t *arg = node->saved[0]->storage->data, n = node->i[0], inner = node->i[1];
    const float *pg = tl_data(gc);
    float *o = gin->storage->data;
    for (int64_t e = 0, count = tl_numel(gc); e < count; e++)
        o[(e / inner * n + arg[e]) * inner + e % inner] = pg[e];
    grad_in[0] = gin;
    return 0;
}

tl_tensor *tl_max(tl_tensor *t, int axis, bool keepdim) {
    reduction r;
    tl_tensor *x = tl_float_input("max", t);
    if (!x || !plan("max", t, axis, keepdim, &r)) return NULL;
    if (r.n == 0) {
        char s[96];
        return tl_fail("max: axis %d of shape %s is empty; a maximum needs one element", r.axis,
                       tl_shape_str(t, s, sizeof s));
    }
    tl_tensor *out = tl_new_f32(r.ndim, r.shape);
    tl_tensor *arg = tl_new(TL_I64, r.ndim, r.shape);
    if (!out || !arg) return NULL;
    const float *px = tl_data(x);
    float *po = out->storage->data;
    int64_t *pa = arg->storage->data;
    for (int64_t o = 0; o < r.outer; o++)
        for (int64_t j = 0; j < r.inner; j++) {
            const float *col = px + o * r.n * r.inner + j;
            int64_t best = 0;
            for (int64_t k = 1; k < r.n; k++) {   /* NaN wins, as in PyTorch */
                float v = col[k * r.inner], b = col[best * r.inner];
                if (v > b || (isnan(v) && !isnan(b))) best = k;
            }
            po[o * r.inner + j] = col[best * r.inner];
            pa[o * r.inner + j] = best;
        }
    tl_node *node = tl_record(out, "max", max_backward, 1, &t);
    if (node) {
        node->saved[0] = arg;
        node->i[0] = r.n;
        node->i[1] = r.inner;
    }
    return out;
}
