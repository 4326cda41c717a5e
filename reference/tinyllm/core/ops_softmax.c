/* ops_softmax.c: softmax, log-softmax and cross-entropy (L0.2).
 *
 * Every row is shifted by its maximum before exp, so the largest term is
 * exp(0) = 1 and no logit, however large, overflows. Sums run in double and
 * results are stored in float32, as PyTorch's fp32 softmax.
 *
 * A tensor is seen as [outer, n, inner] around the softmax axis: element j
 * of row (o, i) sits at (o * n + j) * inner + i. Like PyTorch, a row holding
 * a NaN, or only -inf, gives NaN (attention masks use a large finite
 * negative value, not -inf, for that reason).
 */
#include <math.h>

#include "internal.h"
#include "tinyllm/kernels.h"

/* Splits t's shape around axis into outer x n x inner. */
static void split_axis(const tl_tensor *t, int axis, int64_t *outer, int64_t *n, int64_t *inner) {
    *outer = *inner = 1;
    for (int d = 0; d < axis; d++) *outer *= t->shape[d];
    for (int d = axis + 1; d < t->ndim; d++) *inner *= t->shape[d];
    *n = t->shape[axis];
}

/* The row's maximum and log(sum(exp(x - max))); both NaN for a NaN row. */
static void row_stats(const float *x, int64_t n, int64_t stride, float *max_out,
                      double *log_sum_out) {
    float m = -INFINITY;
    bool nan = false;
    for (int64_t j = 0; j < n; j++) {
        float v = x[j * stride];
        if (isnan(v)) nan = true;
        if (v > m) m = v;
    }
    double s = 0;
    for (int64_t j = 0; j < n; j++) s += exp((double)x[j * stride] - m);
    *max_out = nan ? NAN : m;
    *log_sum_out = nan ? NAN : log(s);
}

/* Softmax over contiguous rows, in three passes over a group of rows that
 * stays in L1: each row shifted by its max, one tl_exp_f32_n over the group
 * (in float32, as PyTorch's float softmax), then each row divided by its sum
 * (in double), or (x - max) - log(sum) when take_log. A NaN anywhere in a
 * row, or a row of -inf only, gives NaN throughout that row. Each element is
 * computed alike however the rows are grouped or shared, and on any CPU (the
 * sum in a fixed order: tl_sum_f32_fixed). */
enum { GROUP_ROWS = 64, GROUP_ELEMENTS = 1 << 12 };

/* y = x - max(x) over one row; returns the max (NaN for a NaN row). */
ELEMENTWISE_CLONES static float shift_row(const float *x, float *y, int64_t n) {
    float m = -INFINITY;
    int nan = 0;
#pragma omp simd reduction(max : m) reduction(| : nan)
    for (int64_t j = 0; j < n; j++) {
        nan |= x[j] != x[j];
        m = x[j] > m ? x[j] : m;
    }
    if (nan) m = NAN;
#pragma omp simd
    for (int64_t j = 0; j < n; j++) y[j] = x[j] - m;
    return m;
}

/* y holds e^(x - m); divides it by its sum, or writes the log-softmax. */
ELEMENTWISE_CLONES static void finish_row(const float *x, float *y, int64_t n, float m,
                                          bool take_log) {
    double sum = tl_sum_f32_fixed(y, n);
    if (take_log) {
        double log_sum = log(sum);
        for (int64_t j = 0; j < n; j++) y[j] = (float)((double)x[j] - m - log_sum);
    } else {
        float inv = (float)(1.0 / sum);
#pragma omp simd
        for (int64_t j = 0; j < n; j++) y[j] *= inv;
    }
}

static void softmax_rows(const float *x, float *y, int64_t rows, int64_t n, bool take_log) {
    int64_t group = n > 0 && GROUP_ELEMENTS / n > 1 ? GROUP_ELEMENTS / n : 1;
    if (group > GROUP_ROWS) group = GROUP_ROWS;
    float max[GROUP_ROWS];
    for (int64_t g = 0; g < rows; g += group) {
        int64_t count = rows - g < group ? rows - g : group;
        const float *gx = x + g * n;
        float *gy = y + g * n;
        for (int64_t r = 0; r < count; r++) max[r] = shift_row(gx + r * n, gy + r * n, n);
        tl_exp_f32_n(gy, gy, count * n);
        for (int64_t r = 0; r < count; r++)
            finish_row(gx + r * n, gy + r * n, n, max[r], take_log);
    }
}

/* A block of rows for tl_parallel_range. Large softmaxes (attention's scores
 * at prefill) share their rows among threads (internal.h:
 * SHARE_MIN_ELEMENTS); a row is one thread's, so results do not depend on
 * the thread count. */
typedef struct {
    const float *x;
    float *y;
    int64_t rows, n;
    bool take_log;
} rows_job;

static void softmax_block(void *ctx, int64_t begin, int64_t end) {
    const rows_job *j = ctx;
    softmax_rows(j->x + begin * j->n, j->y + begin * j->n, end - begin, j->n, j->take_log);
}

/* Shared forward: softmax, or log-softmax when take_log. */
static tl_tensor *softmax_forward(const char *op, tl_tensor *t, int axis, bool take_log,
                                  int *axis_out) {
    if (!tl_inputs_ok(op, 1, t)) return NULL;
    int ax = tl_axis(axis, t->ndim);
    if (ax < 0) {
        char s[96];
        return tl_fail("%s: axis %d is out of range for a tensor %s of rank %d", op, axis,
                       tl_shape_str(t, s, sizeof s), t->ndim);
    }
    tl_tensor *tf = tl_float_input(op, t);
    tl_tensor *out = tf ? tl_new_f32(t->ndim, t->shape) : NULL;
    if (!out) return NULL;
    const float *x = (const float *)tl_data(tf);
    float *y = (float *)tl_data(out);
    int64_t outer, n, inner;
    split_axis(t, ax, &outer, &n, &inner);
    if (inner == 1) {   /* the last axis: whole rows through the vector exp */
        rows_job j = {x, y, outer, n, take_log};
        bool share = outer * n >= SHARE_MIN_ELEMENTS && outer > 1;
        int64_t rows_per_block = SHARE_BLOCK_ELEMENTS / (n ? n : 1) + 1;
        tl_parallel_range(share ? tl_num_threads() : 1, outer, rows_per_block, softmax_block, &j);
        *axis_out = ax;
        return out;
    }
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * n * inner + i;
            float m;
            double log_sum;
            row_stats(x + base, n, inner, &m, &log_sum);
            for (int64_t j = 0; j < n; j++) {
                double z = (double)x[base + j * inner] - m - log_sum;
                y[base + j * inner] = (float)(take_log ? z : exp(z));
            }
        }
    }
    *axis_out = ax;
    return out;
}

/* y = softmax(x): dx = y * (g - sum_j g_j y_j) along the axis. */
static int softmax_backward(tl_node *node, tl_tensor *grad_out, tl_tensor **grad_in) {
    tl_tensor *g = tl_float_input("softmax", grad_out);
    tl_tensor *dx = g ? tl_new_f32(node->out->ndim, node->out->shape) : NULL;
    if (!dx) return -1;
    const float *gv = (const float *)tl_data(g), *y = (const float *)tl_data(node->out);
    float *d = (float *)tl_data(dx);
    int64_t outer, n, inner;
    split_axis(node->out, (int)node->i[0], &outer, &n, &inner);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * n * inner + i;
            double dot = 0;
            for (int64_t j = 0; j < n; j++)
                dot += (double)gv[base + j * inner] * y[base + j * inner];
            for (int64_t j = 0; j < n; j++) {
                int64_t k = base + j * inner;
                d[k] = (float)(y[k] * (gv[k] - dot));
            }
        }
    }
    grad_in[0] = dx;
    return 0;
}

/* y = log_softmax(x): dx = g - exp(y) * sum_j g_j along the axis. */
static int log_softmax_backward(tl_node *node, tl_tensor *grad_out, tl_tensor **grad_in) {
    tl_tensor *g = tl_float_input("log_softmax", grad_out);
    tl_tensor *dx = g ? tl_new_f32(node->out->ndim, node->out->shape) : NULL;
    if (!dx) return -1;
    const float *gv = (const float *)tl_data(g), *y = (const float *)tl_data(node->out);
    float *d = (float *)tl_data(dx);
    int64_t outer, n, inner;
    split_axis(node->out, (int)node->i[0], &outer, &n, &inner);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * n * inner + i;
            double sum = 0;
            for (int64_t j = 0; j < n; j++) sum += gv[base + j * inner];
            for (int64_t j = 0; j < n; j++) {
                int64_t k = base + j * inner;
                d[k] = (float)(gv[k] - exp((double)y[k]) * sum);
            }
        }
    }
    grad_in[0] = dx;
    return 0;
}

tl_tensor *tl_softmax(tl_tensor *t, int axis) {
    int ax;
    tl_tensor *out = softmax_forward("softmax", t, axis, false, &ax);
    tl_node *node = out ? tl_record(out, "softmax", softmax_backward, 1, &t) : NULL;
    if (node) node->i[0] = ax;
    return out;
}

tl_tensor *tl_log_softmax(tl_tensor *t, int axis) {
    int ax;
    tl_tensor *out = softmax_forward("log_softmax", t, axis, true, &ax);
    tl_node *node = out ? tl_record(out, "log_softmax", log_softmax_backward, 1, &t) : NULL;
    if (node) node->i[0] = ax;
    return out;
}

/* ---- cross-entropy --------------------------------------------------- */

/* saved[0]: the targets as I64 [N]; saved[1], saved[2]: each row's max and
 * log(sum(exp(x - max))), kept apart so exp(x - max - log_sum) stays exact
 * for large logits; i[0]: ignore_index; f[0]: the number of rows counted. */
static int cross_entropy_backward(tl_node *node, tl_tensor *grad_out, tl_tensor **grad_in) {
    tl_tensor *logits = node->inputs[0];
    tl_tensor *x = tl_float_input("cross_entropy", logits);
    tl_tensor *dx = x ? tl_zeros(TL_F32, 2, logits->shape) : NULL;
    if (!dx) return -1;
    int64_t N = logits->shape[0], C = logits->shape[1];
    const int64_t *target = (const int64_t *)tl_data(node->saved[0]);
    const float *row_max = (const float *)tl_data(node->saved[1]);
    const float *log_sum = (const float *)tl_data(node->saved[2]);
    const float *xv = (const float *)tl_data(x);
    float *d = (float *)tl_data(dx);
    /* Every counted row: (softmax - onehot) * g / count. */
    double scale = tl_item(grad_out) / node->f[0];
    for (int64_t r = 0; r < N; r++) {
        if (target[r] == node->i[0]) continue;
        for (int64_t c = 0; c < C; c++)
            d[r * C + c] = (float)(scale * exp((double)xv[r * C + c] - row_max[r] - log_sum[r]));
        d[r * C + target[r]] -= (float)scale;
    }
    grad_in[0] = dx;
    return 0;
}

tl_tensor *tl_cross_entropy(tl_tensor *logits, tl_tensor *targets, int64_t ignore_index) {
    if (!tl_inputs_ok("cross_entropy", 2, logits, targets)) return NULL;
    char ls[96], ts[96];
    if (logits->ndim != 2 || targets->ndim != 1 || targets->shape[0] != logits->shape[0])
        return tl_fail("cross_entropy: logits must be [N, C] and targets [N]; got logits %s "
                       "and targets %s (flatten batch and time first)",
                       tl_shape_str(logits, ls, sizeof ls), tl_shape_str(targets, ts, sizeof ts));
    tl_tensor *x = tl_float_input("cross_entropy", logits);
    tl_tensor *tgt = tl_index_input("cross_entropy", targets);
    if (!x || !tgt) return NULL;
    int64_t N = logits->shape[0], C = logits->shape[1];
    const float *xv = (const float *)tl_data(x);
    const int64_t *target = (const int64_t *)tl_data(tgt);
    tl_tensor *row_max = tl_new_f32(1, (const int64_t[]){N});
    tl_tensor *log_sum = tl_new_f32(1, (const int64_t[]){N});
    tl_tensor *out = tl_new_f32(0, NULL);
    if (!row_max || !log_sum || !out) return NULL;

    double total = 0;
    int64_t count = 0;
    for (int64_t r = 0; r < N; r++) {
        int64_t t = target[r];
        if (t == ignore_index) continue;
        if (t < 0 || t >= C)
            return tl_fail("cross_entropy: target %lld at row %lld is out of range [0, C=%lld) "
                           "(rows whose target is ignore_index=%lld are skipped)",
                           (long long)t, (long long)r, (long long)C, (long long)ignore_index);
        float m;
        double ls;
        row_stats(xv + r * C, C, 1, &m, &ls);
        ((float *)tl_data(row_max))[r] = m;
        ((float *)tl_data(log_sum))[r] = (float)ls;
        total += (double)m + ls - xv[r * C + t];
        count++;
    }
    /* No counted row: 0 / 0, NaN, as PyTorch's mean reduction gives. */
    *(float *)tl_data(out) = count ? (float)(total / (double)count) : NAN;

    tl_node *node = tl_record(out, "cross_entropy", cross_entropy_backward, 1, &logits);
    if (node) {
        node->saved[0] = tgt;
        node->saved[1] = row_max;
        node->saved[2] = log_sum;
        node->i[0] = ignore_index;
        node->f[0] = (double)count;
    }
    return out;
}
