/* ops_binary.c: broadcasting elementwise ops (L0.2).
 *
 * The output has the broadcast shape and is walked row by row (a row is the
 * last axis); each operand contributes a start offset and a step along the
 * row, 0 where it is stretched. Equal contiguous shapes are one long row, so
 * the common case is a plain loop the compiler vectorises. A large output
 * (a prefill's activations) is cut into one part per thread
 * (tl_parallel_range), so a thread takes the same rows of each op in turn;
 * each element is computed alike on any thread.
 */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "tinyllm/kernels.h"

/* ---- the row walk -------------------------------------------------------- */

enum { MAX_OPERANDS = 3 };

typedef struct {
    int n_ops;
    int64_t rows, row_len;
    int64_t step[MAX_OPERANDS];                   /* stride along the row */
    int64_t strides[MAX_OPERANDS][TL_MAX_DIMS];   /* broadcast strides */
    tl_iter outer[MAX_OPERANDS];                  /* over every axis but the last */
} row_walk;

static void row_walk_init(row_walk *w, int n_ops, tl_tensor *const *ops, int ndim,
                          const int64_t *shape) {
    w->n_ops = n_ops;
    bool flat = true;   /* same shape and contiguous: one row */
    for (int k = 0; k < n_ops; k++) {
        int64_t broadcast_numel = 1;
        for (int d = 0; d < ndim; d++) broadcast_numel *= shape[d];
        flat &= tl_is_contiguous(ops[k]) && tl_numel(ops[k]) == broadcast_numel;
    }
    int64_t numel = 1;
    for (int d = 0; d < ndim; d++) numel *= shape[d];
    w->row_len = flat || ndim == 0 ? numel : shape[ndim - 1];
    w->rows = w->row_len ? numel / w->row_len : 0;
    for (int k = 0; k < n_ops; k++) {
        tl_broadcast_strides(ops[k], ndim, shape, w->strides[k]);
        w->step[k] = flat ? 1 : ndim ? w->strides[k][ndim - 1] : 0;
        int outer = flat || ndim == 0 ? 0 : ndim - 1;
        tl_iter_init(&w->outer[k], outer, shape, w->strides[k], ops[k]->offset);
    }
}

static void row_walk_next(row_walk *w) {
    for (int k = 0; k < w->n_ops; k++) tl_iter_next(&w->outer[k]);
}

/* ---- a op b -------------------------------------------------------------- */

typedef enum { ADD, SUB, MUL, DIV, MIN, MAX, PICK_MIN, PICK_MAX } binop;

/* PICK_* give 1 where a is the chosen operand (ties and NaN go to a), else 0.
 * A row against one broadcast value (stride 0: RMSNorm's x * r) has a loop of
 * its own, which vectorises; the general strided loop does not. */
#define ROW(expr)                                                               \
    do {                                                                        \
        if (sa == 1 && sb == 1) {                                               \
            for (int64_t i = 0; i < n; i++) { float x = a[i], y = b[i]; o[i] = (expr); } \
        } else if (sa == 1 && sb == 0) {                                        \
            const float y = b[0];                                               \
            for (int64_t i = 0; i < n; i++) { float x = a[i]; o[i] = (expr); }  \
        } else if (sa == 0 && sb == 1) {                                        \
            const float x = a[0];                                               \
            for (int64_t i = 0; i < n; i++) { float y = b[i]; o[i] = (expr); }  \
        } else {                                                                \
            for (int64_t i = 0; i < n; i++) {                                   \
                float x = a[i * sa], y = b[i * sb];                             \
                o[i] = (expr);                                                  \
            }                                                                   \
        }                                                                       \
    } while (0)

ELEMENTWISE_CLONES static void binary_row(binop op, float *o, const float *a, int64_t sa,
                                          const float *b, int64_t sb, int64_t n) {
    switch (op) {
    case ADD: ROW(x + y); break;
    case SUB: ROW(x - y); break;
    case MUL: ROW(x * y); break;
    case DIV: ROW(x / y); break;
    case MIN: ROW(x < y || isnan(x) ? x : y); break;
    case MAX: ROW(x > y || isnan(x) ? x : y); break;
    case PICK_MIN: ROW(x <= y || isnan(x) ? 1.0f : 0.0f); break;
    case PICK_MAX: ROW(x >= y || isnan(x) ? 1.0f : 0.0f); break;
    }
}

/* Where operand k's row r starts: r taken apart over the outer axes. */
static int64_t row_start(const row_walk *w, int k, int64_t r) {
    const tl_iter *it = &w->outer[k];
    int64_t offset = it->offset;   /* the iterator's start: row 0 */
    for (int d = it->ndim - 1; d >= 0; d--) {
        offset += (r % it->shape[d]) * w->strides[k][d];
        r /= it->shape[d];
    }
    return offset;
}

/* A block of the output for one thread: whole rows, or a stretch of the one
 * long row. */
typedef struct {
    binop op;
    const row_walk *w;
    const float *a, *b;
    float *o;
} binary_job;

static void binary_block(void *ctx, int64_t begin, int64_t end) {
    const binary_job *j = ctx;
    const row_walk *w = j->w;
    if (w->rows == 1) {
        binary_row(j->op, j->o + begin, j->a + w->outer[0].offset + begin * w->step[0],
                   w->step[0], j->b + w->outer[1].offset + begin * w->step[1], w->step[1],
                   end - begin);
        return;
    }
    for (int64_t r = begin; r < end; r++)
        binary_row(j->op, j->o + r * w->row_len, j->a + row_start(w, 0, r), w->step[0],
                   j->b + row_start(w, 1, r), w->step[1], w->row_len);
}

static tl_tensor *binary(const char *name, binop op, tl_tensor *a, tl_tensor *b,
                         tl_backward_fn backward) {
    if (!tl_inputs_ok(name, 2, a, b)) return NULL;
    int ndim;
    int64_t shape[TL_MAX_DIMS];
    if (tl_broadcast_shape(name, a, b, &ndim, shape) != 0) return NULL;
    /* F32 is read in place, whatever its strides; BF16 is widened first */
    tl_tensor *af = a->dtype == TL_F32 ? a : tl_float_input(name, a);
    tl_tensor *bf = b->dtype == TL_F32 ? b : tl_float_input(name, b);
    tl_tensor *out = af && bf ? tl_new_f32(ndim, shape) : NULL;
    if (!out) return NULL;
    row_walk w;
    row_walk_init(&w, 2, (tl_tensor *[]){ af, bf }, ndim, shape);
    const float *pa = af->storage->data, *pb = bf->storage->data;
    float *o = out->storage->data;
    int64_t numel = w.rows * w.row_len;
    if (numel >= SHARE_MIN_ELEMENTS && tl_num_threads() > 1) {
        binary_job j = {op, &w, pa, pb, o};
        int64_t rows_per_block = SHARE_BLOCK_ELEMENTS / (w.row_len ? w.row_len : 1) + 1;
        if (w.rows == 1)
            tl_parallel_range(tl_num_threads(), w.row_len, SHARE_BLOCK_ELEMENTS, binary_block, &j);
        else
            tl_parallel_range(tl_num_threads(), w.rows, rows_per_block, binary_block, &j);
    } else {
        for (int64_t r = 0; r < w.rows; r++, row_walk_next(&w))
            binary_row(op, o + r * w.row_len, pa + w.outer[0].offset, w.step[0],
                       pb + w.outer[1].offset, w.step[1], w.row_len);
    }
    if (backward) tl_record(out, name, backward, 2, (tl_tensor *[]){ a, b });
    return out;
}

static bool wants(const tl_node *node, int i) { return node->inputs[i]->requires_grad; }

static int add_backward(tl_node *node, tl_tensor *g, tl_tensor **grad_in) {
    (void)node;
    grad_in[0] = grad_in[1] = g;
    return 0;
}

static int sub_backward(tl_node *node, tl_tensor *g, tl_tensor **grad_in) {
    grad_in[0] = g;
    if (wants(node, 1) && !(grad_in[1] = tl_neg(g))) return -1;
    return 0;
}

static int mul_backward(tl_node *node, tl_tensor *g, tl_tensor **grad_in) {
    if (wants(node, 0) && !(grad_in[0] = tl_mul(g, node->inputs[1]))) return -1;
    if (wants(node, 1) && !(grad_in[1] = tl_mul(g, node->inputs[0]))) return -1;
    return 0;
}

/* d(a/b)/da = 1/b; d(a/b)/db = -(a/b)/b */
static int div_backward(tl_node *node, tl_tensor *g, tl_tensor **grad_in) {
    tl_tensor *b = node->inputs[1];
    if (wants(node, 0) && !(grad_in[0] = tl_div(g, b))) return -1;
    if (wants(node, 1) && !(grad_in[1] = tl_neg(tl_div(tl_mul(g, node->out), b)))) return -1;
    return 0;
}

/* The gradient goes to whichever operand was chosen (ties to a). */
static int pick_backward(tl_node *node, tl_tensor *g, tl_tensor **grad_in, binop pick) {
    tl_tensor *chose_a = binary("pick", pick, node->inputs[0], node->inputs[1], NULL);
    grad_in[0] = tl_mul(g, chose_a);
    grad_in[1] = tl_sub(g, grad_in[0]);
    return grad_in[1] ? 0 : -1;
}

static int min_backward(tl_node *node, tl_tensor *g, tl_tensor **grad_in) {
    return pick_backward(node, g, grad_in, PICK_MIN);
}

static int max_backward(tl_node *node, tl_tensor *g, tl_tensor **grad_in) {
    return pick_backward(node, g, grad_in, PICK_MAX);
}

tl_tensor *tl_add(tl_tensor *a, tl_tensor *b) { return binary("add", ADD, a, b, add_backward); }
tl_tensor *tl_sub(tl_tensor *a, tl_tensor *b) { return binary("sub", SUB, a, b, sub_backward); }
tl_tensor *tl_mul(tl_tensor *a, tl_tensor *b) { return binary("mul", MUL, a, b, mul_backward); }
tl_tensor *tl_div(tl_tensor *a, tl_tensor *b) { return binary("div", DIV, a, b, div_backward); }
tl_tensor *tl_minimum(tl_tensor *a, tl_tensor *b) {
    return binary("minimum", MIN, a, b, min_backward);
}
tl_tensor *tl_maximum(tl_tensor *a, tl_tensor *b) {
    return binary("maximum", MAX, a, b, max_backward);
}

/* ---- selection by a mask ---------------------------------------------- */

static bool is_mask(const char *op, const tl_tensor *m) {
    if (m->dtype == TL_BOOL) return true;
    char s[96];
    return tl_fail("%s: mask %s is %s; it must be BOOL", op, tl_shape_str(m, s, sizeof s),
                   tl_dtype_name(m->dtype)), false;
}

/* out = cond ? a : b over the broadcast of all three (a, b F32, any strides). */
static tl_tensor *select(int ndim, const int64_t *shape, tl_tensor *cond, tl_tensor *a,
                         tl_tensor *b) {
    tl_tensor *out = tl_new_f32(ndim, shape);
    if (!out) return NULL;
    row_walk w;
    row_walk_init(&w, 3, (tl_tensor *[]){ cond, a, b }, ndim, shape);
    const uint8_t *c = cond->storage->data;
    const float *pa = a->storage->data, *pb = b->storage->data;
    float *o = out->storage->data;
    for (int64_t r = 0; r < w.rows; r++, row_walk_next(&w)) {
        const uint8_t *cr = c + w.outer[0].offset;
        const float *ar = pa + w.outer[1].offset, *br = pb + w.outer[2].offset;
        float *orow = o + r * w.row_len;
        for (int64_t i = 0; i < w.row_len; i++)
            orow[i] = cr[i * w.step[0]] ? ar[i * w.step[1]] : br[i * w.step[2]];
    }
    return out;
}

static int where_backward(tl_node *node, tl_tensor *g, tl_tensor **grad_in) {
    tl_tensor *zero = tl_scalar(0.0), *cond = node->inputs[0];
    if (wants(node, 1) && !(grad_in[1] = tl_where(cond, g, zero))) return -1;
    if (wants(node, 2) && !(grad_in[2] = tl_where(cond, zero, g))) return -1;
    return 0;
}

tl_tensor *tl_where(tl_tensor *cond, tl_tensor *a, tl_tensor *b) {
    if (!tl_inputs_ok("where", 3, cond, a, b) || !is_mask("where", cond)) return NULL;
    int n1, n2;
    int64_t s1[TL_MAX_DIMS], s2[TL_MAX_DIMS];
    if (tl_broadcast_shape("where", a, b, &n1, s1) != 0) return NULL;
    tl_tensor ab = { .ndim = n1 };
    memcpy(ab.shape, s1, sizeof s1);
    if (tl_broadcast_shape("where", cond, &ab, &n2, s2) != 0) return NULL;
    tl_tensor *af = a->dtype == TL_F32 ? a : tl_float_input("where", a);
    tl_tensor *bf = b->dtype == TL_F32 ? b : tl_float_input("where", b);
    tl_tensor *out = af && bf ? select(n2, s2, cond, af, bf) : NULL;
    tl_record(out, "where", where_backward, 3, (tl_tensor *[]){ cond, a, b });
    return out;
}

static int masked_fill_backward(tl_node *node, tl_tensor *g, tl_tensor **grad_in) {
    grad_in[0] = tl_masked_fill(g, node->inputs[1], 0.0);
    return grad_in[0] ? 0 : -1;
}

tl_tensor *tl_masked_fill(tl_tensor *t, tl_tensor *mask, double value) {
    if (!tl_inputs_ok("masked_fill", 2, t, mask) || !is_mask("masked_fill", mask)) return NULL;
    int ndim;
    int64_t shape[TL_MAX_DIMS];
    if (tl_broadcast_shape("masked_fill", t, mask, &ndim, shape) != 0) return NULL;
    tl_tensor bshape = { .ndim = ndim };
    memcpy(bshape.shape, shape, sizeof shape);
    if (!tl_same_shape(&bshape, t)) {
        char a[96], b[96];
        return tl_fail("masked_fill: mask %s is larger than the tensor %s; it must broadcast "
                       "to the tensor's shape", tl_shape_str(mask, a, sizeof a),
                       tl_shape_str(t, b, sizeof b));
    }
    tl_tensor *tf = t->dtype == TL_F32 ? t : tl_float_input("masked_fill", t);
    tl_tensor *fill = tl_scalar(value);
    tl_tensor *out = tf && fill ? select(ndim, shape, mask, fill, tf) : NULL;
    tl_record(out, "masked_fill", masked_fill_backward, 2, (tl_tensor *[]){ t, mask });
    return out;
}
