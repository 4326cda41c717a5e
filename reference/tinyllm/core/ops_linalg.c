/* ops_linalg.c: matmul and linear (L0.2), on OpenBLAS's sgemm.
 *
 * BLAS reads a row-major matrix through a leading dimension, either as
 * stored (NoTrans) or transposed (Trans). A tensor whose last two axes have
 * one of those two stride patterns - a contiguous matrix, a narrowed one, a
 * transposed view - is handed to sgemm in place; any other layout (and any
 * BF16 operand of matmul) is first copied to contiguous F32.
 *
 * One row times a matrix stored [N, K] (decode: x @ W^T, q @ K^T) is a
 * matrix-vector product bound by reading the matrix, so it goes to the gemv
 * kernels of kernels.h. tl_linear takes a BF16 weight as it is: one row goes
 * to tl_gemv_bf16, which widens in registers; several rows widen the weight
 * a block of rows at a time (LINEAR_BF16_BLOCK floats of scratch) and call
 * sgemm per block, so the weight is read once and never copied whole (only
 * a non-contiguous BF16 view is first copied to F32).
 */
#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tinyllm/bf16.h"
#include "tinyllm/kernels.h"

/* Scratch for one block of a widened BF16 weight: 4 MiB of floats. */
#define LINEAR_BF16_BLOCK ((int64_t)1 << 20)

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* How BLAS reads the last two axes of a tensor, a rows x cols matrix. */
typedef struct {
    const float *data;        /* element [0, 0] of the first matrix */
    CBLAS_TRANSPOSE trans;    /* NoTrans: rows of length cols, ld apart;
                                 Trans: columns of length rows, ld apart */
    int64_t ld;
} blas_matrix;

/* True when t's last two axes fit one of BLAS's layouts. The stride of an
 * axis of size 1 never matters, so it is not checked. */
static bool blas_layout(const tl_tensor *t, blas_matrix *m) {
    int64_t rows = t->shape[t->ndim - 2], cols = t->shape[t->ndim - 1];
    int64_t rs = t->strides[t->ndim - 2], cs = t->strides[t->ndim - 1];
    m->data = (const float *)tl_data(t);
    if (cols == 1 || cs == 1) {
        m->trans = CblasNoTrans;
        m->ld = rows == 1 ? max64(cols, 1) : rs;
        if (m->ld >= max64(cols, 1)) return true;
    }
    if (rows == 1 || rs == 1) {
        m->trans = CblasTrans;
        m->ld = cols == 1 ? max64(rows, 1) : cs;
        if (m->ld >= max64(rows, 1)) return true;
    }
    return false;
}

/* t itself when BLAS can read it in place, else a contiguous F32 copy (which
 * always fits: the caller has ruled out empty matrices). */
static tl_tensor *blas_operand(const char *op, tl_tensor *t, blas_matrix *m) {
    if (t->dtype == TL_F32 && blas_layout(t, m)) return t;
    tl_tensor *c = tl_float_input(op, t);
    if (c) blas_layout(c, m);
    return c;
}

/* OpenBLAS keeps its own thread pool: size it as the kernels are sized
 * (TINYLLM_THREADS), reading its current count so no cache can go stale. */
static void blas_threads(void) {
    int n = tl_num_threads();
    if (openblas_get_num_threads() != n) openblas_set_num_threads(n);
}

/* BLAS takes int sizes: refuse what does not fit rather than wrap. */
static bool blas_fits(const char *op, int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) {
    if (a <= INT_MAX && b <= INT_MAX && c <= INT_MAX && d <= INT_MAX && e <= INT_MAX) return true;
    tl_fail("%s: a dimension or stride exceeds BLAS's int range (%d); split the operation",
            op, INT_MAX);
    return false;
}

/* True when the batch axes of a step through matrices whose rows are evenly
 * spaced, so every batch is one tall matrix (rows ld apart). */
static bool rows_fold(const int64_t *bstrides, const int64_t *bshape, int nb, int64_t step) {
    for (int d = nb - 1; d >= 0; d--) {
        if (bshape[d] != 1 && bstrides[d] != step) return false;
        step *= bshape[d];
    }
    return true;
}

/* ---- matmul ---------------------------------------------------------- */

/* a [..., M, K] @ b [..., K, N] for rank >= 2, K already checked. */
static tl_tensor *matmul_nd(tl_tensor *a, tl_tensor *b) {
    int an = a->ndim, bn = b->ndim, nb = (an > bn ? an : bn) - 2;
    int64_t M = a->shape[an - 2], K = a->shape[an - 1], N = b->shape[bn - 1];

    /* Batch axes broadcast as NumPy's, aligned from the right. */
    int64_t shape[TL_MAX_DIMS];
    int a_off = nb - (an - 2), b_off = nb - (bn - 2);
    for (int d = 0; d < nb; d++) {
        int64_t sa = d >= a_off ? a->shape[d - a_off] : 1;
        int64_t sb = d >= b_off ? b->shape[d - b_off] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            char as[96], bs[96];
            return tl_fail("matmul: batch axes of a %s and b %s do not broadcast: "
                           "batch axis %d has sizes %lld and %lld (each must match or be 1)",
                           tl_shape_str(a, as, sizeof as), tl_shape_str(b, bs, sizeof bs), d,
                           (long long)sa, (long long)sb);
        }
        shape[d] = sa == 1 ? sb : sa;
    }
    shape[nb] = M;
    shape[nb + 1] = N;
    tl_tensor *out = tl_new_f32(nb + 2, shape);
    if (!out) return NULL;
    float *c = (float *)tl_data(out);
    int64_t batches = 1;
    for (int d = 0; d < nb; d++) batches *= shape[d];
    if (batches * M * N == 0) return out;
    if (K == 0) {
        memset(c, 0, (size_t)(batches * M * N) * sizeof(float));
        return out;
    }

    blas_matrix ma, mb;
    tl_tensor *ac = blas_operand("matmul", a, &ma), *bc = blas_operand("matmul", b, &mb);
    if (!ac || !bc) return NULL;
    if (!blas_fits("matmul", M * batches, N, K, ma.ld, mb.ld)) return NULL;

    /* Element strides between consecutive matrices on each batch axis (0 on
     * a stretched or missing axis). */
    int64_t as[TL_MAX_DIMS], bs[TL_MAX_DIMS];
    bool b_shared = true;
    for (int d = 0; d < nb; d++) {
        as[d] = d >= a_off && ac->shape[d - a_off] != 1 ? ac->strides[d - a_off] : 0;
        bs[d] = d >= b_off && bc->shape[d - b_off] != 1 ? bc->strides[d - b_off] : 0;
        if (bs[d] != 0) b_shared = false;
    }

    /* One b for every batch and a's rows evenly spaced: one tall product. */
    if (b_shared && ma.trans == CblasNoTrans && rows_fold(as, shape, nb, M * ma.ld)) {
        M *= batches;
        batches = 1;
    }
    /* One row against a matrix stored [N, K]: the gemv kernel. */
    bool gemv = M == 1 && ma.trans == CblasNoTrans && mb.trans == CblasTrans && mb.ld == K;
    if (!gemv) blas_threads();

    int64_t idx[TL_MAX_DIMS] = {0};
    for (int64_t i = 0; i < batches; i++) {
        int64_t oa = 0, ob = 0;
        for (int d = 0; d < nb; d++) {
            oa += idx[d] * as[d];
            ob += idx[d] * bs[d];
        }
        float *ci = c + i * M * N;
        if (gemv)
            tl_gemv_f32(mb.data + ob, ma.data + oa, ci, N, K);
        else
            cblas_sgemm(CblasRowMajor, ma.trans, mb.trans, (int)M, (int)N, (int)K, 1.0f,
                        ma.data + oa, (int)ma.ld, mb.data + ob, (int)mb.ld, 0.0f, ci, (int)N);
        for (int d = nb - 1; d >= 0 && ++idx[d] == shape[d]; d--) idx[d] = 0;
    }
    return out;
}

/* d(a @ b) = g @ b^T for a and a^T @ g for b; the engine sums a gradient
 * over broadcast batch axes back to the operand's shape. */
static int matmul_backward(tl_node *node, tl_tensor *g, tl_tensor **grad_in) {
    tl_tensor *a = node->inputs[0], *b = node->inputs[1];
    if (a->requires_grad) {
        grad_in[0] = tl_matmul(g, tl_transpose(b, -1, -2));
        if (!grad_in[0]) return -1;
    }
    if (b->requires_grad) {
        if (b->ndim == 2 && a->ndim > 2) {
            /* Every batch used the same b: one product over all rows. */
            int64_t K = a->shape[a->ndim - 1], N = b->shape[1], rows = 1;
            for (int d = 0; d < a->ndim - 1; d++) rows *= a->shape[d];
            tl_tensor *a2 = tl_reshape(a, 2, (const int64_t[]){rows, K});
            tl_tensor *g2 = tl_reshape(g, 2, (const int64_t[]){rows, N});
            grad_in[1] = tl_matmul(tl_transpose(a2, 0, 1), g2);
        } else {
            grad_in[1] = tl_matmul(tl_transpose(a, -1, -2), g);
        }
        if (!grad_in[1]) return -1;
    }
    return 0;
}

tl_tensor *tl_matmul(tl_tensor *a, tl_tensor *b) {
    if (!tl_inputs_ok("matmul", 2, a, b)) return NULL;
    char as[96], bs[96];
    if (a->ndim == 0 || b->ndim == 0)
        return tl_fail("matmul: operands need at least one axis; got a %s and b %s "
                       "(scale by a scalar with tl_mul_scalar)",
                       tl_shape_str(a, as, sizeof as), tl_shape_str(b, bs, sizeof bs));
    int64_t ka = a->shape[a->ndim - 1], kb = b->shape[b->ndim == 1 ? 0 : b->ndim - 2];
    if (ka != kb)
        return tl_fail("matmul: a %s has K=%lld on its last axis but b %s has K=%lld on %s; "
                       "a [..., M, K] @ b [..., K, N] (transpose an operand?)",
                       tl_shape_str(a, as, sizeof as), (long long)ka,
                       tl_shape_str(b, bs, sizeof bs), (long long)kb,
                       b->ndim == 1 ? "its only axis" : "its second-to-last axis");

    /* As NumPy: a vector a is a row [1, K], a vector b a column [K, 1], and
     * the axis added for it is removed from the result. */
    tl_tensor *a2 = a->ndim == 1 ? tl_unsqueeze(a, 0) : a;
    tl_tensor *b2 = b->ndim == 1 ? tl_unsqueeze(b, 1) : b;
    if (!a2 || !b2) return NULL;
    tl_tensor *out = matmul_nd(a2, b2);
    if (!out) return NULL;
    tl_record(out, "matmul", matmul_backward, 2, (tl_tensor *[]){a2, b2});
    if (b->ndim == 1) out = tl_squeeze(out, -1);
    if (a->ndim == 1 && out) out = tl_squeeze(out, b->ndim == 1 ? -1 : -2);
    return out;
}

/* ---- linear ---------------------------------------------------------- */

/* y [rows, out] = x [rows, in] @ W^T, W a BF16 [out, in] contiguous weight. */
static int linear_bf16(const float *x, const uint16_t *w, float *y, int64_t rows, int64_t in,
                       int64_t out) {
    if (rows == 1) {
        tl_gemv_bf16(w, x, y, out, in);
        return 0;
    }
    int64_t block = min64(out, max64(1, LINEAR_BF16_BLOCK / in));
    float *buf = malloc((size_t)(block * in) * sizeof(float));
    if (!buf) {
        return tl_fail_status("linear: out of memory for a %lld x %lld block of the BF16 weight",
                              (long long)block, (long long)in);
    }
    blas_threads();
    for (int64_t r0 = 0; r0 < out; r0 += block) {
        int64_t nr = min64(block, out - r0);
        const uint16_t *src = w + r0 * in;
        for (int64_t k = 0; k < nr * in; k++) buf[k] = tl_bf16_to_f32(src[k]);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)nr, (int)in, 1.0f,
                    x, (int)in, buf, (int)in, 0.0f, y + r0, (int)out);
    }
    free(buf);
    return 0;
}

/* y [rows, out] = x [rows, in] @ w^T for any float weight [out, in]. */
static int linear_forward(const float *x, tl_tensor *w, float *y, int64_t rows, int64_t in,
                          int64_t out) {
    if (rows == 0 || out == 0) return 0;
    if (in == 0) {
        memset(y, 0, (size_t)(rows * out) * sizeof(float));
        return 0;
    }
    if (!blas_fits("linear", rows, in, out, 0, 0)) return -1;
    if (w->dtype == TL_BF16 && tl_is_contiguous(w))
        return linear_bf16(x, (const uint16_t *)tl_data(w), y, rows, in, out);

    blas_matrix mw;
    tl_tensor *wc = blas_operand("linear", w, &mw);
    if (!wc) return -1;
    if (!blas_fits("linear", mw.ld, 0, 0, 0, 0)) return -1;
    if (rows == 1 && mw.trans == CblasNoTrans && mw.ld == in) {
        tl_gemv_f32(mw.data, x, y, out, in);
        return 0;
    }
    /* op(B) must be w^T: a weight stored [out, in] is read transposed, a
     * transposed view (stored [in, out]) as it is. */
    CBLAS_TRANSPOSE tb = mw.trans == CblasNoTrans ? CblasTrans : CblasNoTrans;
    blas_threads();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, (int)rows, (int)out, (int)in, 1.0f, x, (int)in,
                mw.data, (int)mw.ld, 0.0f, y, (int)out);
    return 0;
}

static int linear_backward(tl_node *node, tl_tensor *g, tl_tensor **grad_in) {
    tl_tensor *x = node->inputs[0], *w = node->inputs[1];
    tl_tensor *bias = node->n_inputs > 2 ? node->inputs[2] : NULL;
    int64_t rows = node->i[0], out = w->shape[0], in = w->shape[1];
    tl_tensor *g2 = tl_reshape(g, 2, (const int64_t[]){rows, out});
    if (!g2) return -1;
    if (x->requires_grad) {   /* dx = g @ w */
        grad_in[0] = tl_reshape(tl_matmul(g2, w), x->ndim, x->shape);
        if (!grad_in[0]) return -1;
    }
    if (w->requires_grad) {   /* dw = g^T @ x, summed over every row */
        tl_tensor *x2 = tl_reshape(x, 2, (const int64_t[]){rows, in});
        grad_in[1] = tl_matmul(tl_transpose(g2, 0, 1), x2);
        if (!grad_in[1]) return -1;
    }
    if (bias && bias->requires_grad) {
        grad_in[2] = tl_sum(g2, 0, false);
        if (!grad_in[2]) return -1;
    }
    return 0;
}

tl_tensor *tl_linear(tl_tensor *x, tl_tensor *w, tl_tensor *bias) {
    if (!tl_inputs_ok("linear", 2, x, w)) return NULL;
    char xs[96], ws[96], bs[96];
    if (w->ndim != 2 || !tl_dtype_is_float(w->dtype))
        return tl_fail("linear: the weight must be a float matrix [out, in]; got %s %s",
                       tl_dtype_name(w->dtype), tl_shape_str(w, ws, sizeof ws));
    int64_t out_f = w->shape[0], in_f = w->shape[1];
    if (x->ndim == 0 || x->shape[x->ndim - 1] != in_f)
        return tl_fail("linear: input %s must end with in=%lld features to match the weight %s "
                       "[out, in]",
                       tl_shape_str(x, xs, sizeof xs), (long long)in_f,
                       tl_shape_str(w, ws, sizeof ws));
    if (bias && (bias->ndim != 1 || bias->shape[0] != out_f))
        return tl_fail("linear: bias %s must be [out] = [%lld] for the weight %s",
                       tl_shape_str(bias, bs, sizeof bs), (long long)out_f,
                       tl_shape_str(w, ws, sizeof ws));

    tl_tensor *xf = tl_float_input("linear", x);
    tl_tensor *bf = bias ? tl_float_input("linear", bias) : NULL;
    if (!xf || (bias && !bf)) return NULL;
    int64_t shape[TL_MAX_DIMS], rows = 1;
    for (int d = 0; d < x->ndim - 1; d++) {
        shape[d] = x->shape[d];
        rows *= x->shape[d];
    }
    shape[x->ndim - 1] = out_f;
    tl_tensor *out = tl_new_f32(x->ndim, shape);
    if (!out) return NULL;
    float *y = (float *)tl_data(out);
    if (linear_forward((const float *)tl_data(xf), w, y, rows, in_f, out_f) < 0) return NULL;
    if (bf) {
        const float *bv = (const float *)tl_data(bf);
        for (int64_t r = 0; r < rows; r++)
            for (int64_t o = 0; o < out_f; o++) y[r * out_f + o] += bv[o];
    }
    tl_node *node = tl_record(out, "linear", linear_backward, bias ? 3 : 2,
                              (tl_tensor *[]){x, w, bias});
    if (node) node->i[0] = rows;
    return out;
}
