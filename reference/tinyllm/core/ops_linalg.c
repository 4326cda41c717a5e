/* ops_linalg.c: matmul and linear (L0.2), on the kernels of kernels.h.
 *
 * A matrix operand is read where it lies whenever one of its last two axes
 * has unit stride: "rows" (element [i, j] at i * ld + j) or "columns" (at
 * j * ld + i). That covers a contiguous matrix, a narrowed one, a transposed
 * view, and the batch axes of an expanded view (stride 0: GQA's key heads
 * shared by a group of query heads). Any other layout is copied to F32 once.
 *
 * Which kernel runs:
 *   - up to MULTI_ROWS_* rows of a (decode's x @ W^T; q @ K^T and p @ V for
 *     the query rows of one key head: a GQA group, or a few new tokens over
 *     the cache): the multi-row GEMV kernels, which read b once for all the
 *     rows, F32 or BF16, in place at any row stride; the batches (heads) are
 *     spread over the threads when each product alone is too small to share;
 *   - more rows (prefill, training): GEMM, OpenBLAS's sgemm on F32 read in
 *     place; a BF16 weight goes to tl_gemm_bf16_nt, widened a block of rows
 *     at a time, never whole.
 * tl_linear's weight [out, in] is b^T of that description: up to
 * MULTI_ROWS_* rows of x go to tl_gemv_multi_*, more to one GEMM.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kernels_internal.h"
#include "tinyllm/bf16.h"
#include "tinyllm/kernels.h"

/* The crossovers from the multi-row GEMVs to GEMM, by b's dtype, measured
 * by bench/bench_multi.c (make bench-multi) on SmolLM2-135M's projections:
 * up to them one pass over b beats GEMM's packing (and, for BF16, its block
 * widening, so BF16 gains up to M = 48: 1.5-2x at 32); above, OpenBLAS's
 * AVX-512 kernels win the arithmetic (F32 from M = 12 on). Where GEMM runs
 * on gemm_avx512.c, whose panels of B^T cost a pass over b that reads it at
 * a third of a GEMV's rate, the multi-row GEMVs win up to M = 8, either
 * dtype (Zen 5, one thread, GEMM over the GEMVs: M = 8 F32 1.05-1.24x, BF16
 * 0.93-1.06x; two threads BF16 1.57x; M = 12 0.78x; README 4.11). */
#define MULTI_ROWS_F32 8
#define MULTI_ROWS_BF16 32
#define MULTI_ROWS_AVX512_GEMM 8

static int64_t multi_rows_max(tl_dtype b) {
    if (tl_gemm_on_avx512()) return MULTI_ROWS_AVX512_GEMM;
    return b == TL_BF16 ? MULTI_ROWS_BF16 : MULTI_ROWS_F32;
}

/* Rows few enough for the multi-row GEMVs. One row always is: a decode step
 * asks this of every product, and the answer for more rows reads the
 * environment and OpenBLAS's core name (tl_gemm_on_avx512). */
static bool few_rows(int64_t rows, tl_dtype b) { return rows <= 1 || rows <= multi_rows_max(b); }

/* Batches are shared among threads when each product reads fewer weights
 * than this (kernels.c runs such a product on one thread). */
#define BATCH_PARALLEL_MIN (64 * 1024)

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* How the last two axes of a tensor lie in memory, a rows x cols matrix. */
typedef struct {
    const char *data;         /* element [0, 0] of the first matrix */
    tl_dtype dtype;           /* F32 or BF16 */
    bool by_rows;             /* [i, j] at i * ld + j; else at j * ld + i */
    int64_t ld;
} matrix_layout;

/* True when t's last two axes have one of the two layouts. The stride of an
 * axis of size 1 never matters, so it is not checked. */
static bool layout_of(const tl_tensor *t, matrix_layout *m) {
    int64_t rows = t->shape[t->ndim - 2], cols = t->shape[t->ndim - 1];
    int64_t rs = t->strides[t->ndim - 2], cs = t->strides[t->ndim - 1];
    m->data = tl_data(t);
    m->dtype = t->dtype;
    if (cols == 1 || cs == 1) {
        m->by_rows = true;
        m->ld = rows == 1 ? max64(cols, 1) : rs;
        if (m->ld >= max64(cols, 1)) return true;
    }
    if (rows == 1 || rs == 1) {
        m->by_rows = false;
        m->ld = cols == 1 ? max64(rows, 1) : cs;
        if (m->ld >= max64(rows, 1)) return true;
    }
    return false;
}

/* t itself when it is F32 or BF16 (as allowed) in a readable layout, else a
 * contiguous F32 copy. */
static tl_tensor *operand(const char *op, tl_tensor *t, bool bf16_ok, matrix_layout *m) {
    if ((t->dtype == TL_F32 || (bf16_ok && t->dtype == TL_BF16)) && layout_of(t, m)) return t;
    tl_tensor *c = tl_float_input(op, t);
    if (c) layout_of(c, m);
    return c;
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

/* One batch of a matmul: c [M, N] = a [M, K] @ b [K, N], each matrix given by
 * its first element and its layout's ld. */
typedef struct {
    int64_t M, N, K;
    matrix_layout a, b;
} product;

static size_t elem(tl_dtype dt) { return dt == TL_BF16 ? 2 : 4; }

/* c = a @ b for one batch through the multi-row GEMVs, b read once for all
 * of a's rows: b stored as K rows of N is p @ W (t_multi); b stored as N rows
 * of K (a transposed K or weight) is W @ x (multi). Either at b's row stride. */
static void product_gemv(const product *p, const char *a, const char *b, float *c) {
    const float *x = (const float *)a;
    if (p->b.by_rows && p->b.dtype == TL_F32)
        tl_gemv_t_multi_f32((const float *)b, p->b.ld, x, p->a.ld, c, p->M, p->K, p->N);
    else if (p->b.by_rows)
        tl_gemv_t_multi_bf16((const uint16_t *)b, p->b.ld, x, p->a.ld, c, p->M, p->K, p->N);
    else if (p->b.dtype == TL_F32)
        tl_gemv_multi_f32((const float *)b, p->b.ld, x, p->a.ld, c, p->M, p->N, p->K);
    else
        tl_gemv_multi_bf16((const uint16_t *)b, p->b.ld, x, p->a.ld, c, p->M, p->N, p->K);
}

/* c = a @ b for one batch through GEMM; a is F32. A BF16 b stored as N rows
 * of K (a weight) goes to tl_gemm_bf16_nt; any other BF16 b is widened whole
 * (a small matrix: attention's K or V of one head). Returns 0 or -1. */
static int product_gemm(const product *p, const char *a, const char *b, float *c) {
    if (p->b.dtype == TL_BF16) {
        if (!p->b.by_rows && p->b.ld == p->K && p->a.by_rows && p->a.ld == p->K) {
            return tl_gemm_bf16_nt((const float *)a, (const uint16_t *)b, c, p->M, p->N, p->K);
        }
        int64_t outer = p->b.by_rows ? p->K : p->N, inner = p->b.by_rows ? p->N : p->K;
        float *wide = malloc((size_t)(outer * inner) * sizeof *wide);
        if (!wide) return tl_fail_status("matmul: out of memory widening a BF16 operand");
        for (int64_t r = 0; r < outer; r++)
            tl_bf16_to_f32_n((const uint16_t *)b + r * p->b.ld, wide + r * inner,
                             (size_t)inner);
        tl_sgemm(!p->a.by_rows, !p->b.by_rows, p->M, p->N, p->K, (const float *)a, p->a.ld,
                 wide, inner, c, p->N);
        free(wide);
        return 0;
    }
    tl_sgemm(!p->a.by_rows, !p->b.by_rows, p->M, p->N, p->K, (const float *)a, p->a.ld,
             (const float *)b, p->b.ld, c, p->N);
    return 0;
}

/* The batches of a matmul: batch i's matrices are found from its index. */
typedef struct {
    const product *p;
    int nb;
    const int64_t *shape, *as, *bs;   /* batch shape; element strides of a and b */
    float *c;
} batch_job;

static void batch_at(const batch_job *j, int64_t i, const char **ai, const char **bi) {
    int64_t oa = 0, ob = 0;
    for (int d = j->nb - 1; d >= 0; d--) {
        int64_t at = i % j->shape[d];
        i /= j->shape[d];
        oa += at * j->as[d];
        ob += at * j->bs[d];
    }
    *ai = j->p->a.data + (size_t)oa * elem(j->p->a.dtype);
    *bi = j->p->b.data + (size_t)ob * elem(j->p->b.dtype);
}

/* One batch through the GEMV kernels: a chunk of tl_parallel_chunks. */
static void batch_gemv(void *ctx, int64_t i) {
    const batch_job *j = ctx;
    const char *ai, *bi;
    batch_at(j, i, &ai, &bi);
    product_gemv(j->p, ai, bi, j->c + i * j->p->M * j->p->N);
}

/* One F32 batch through GEMM, a chunk of tl_parallel_chunks: attention's
 * heads at prefill are many small products, too small to split one by one
 * (the GEMM inside runs on this thread). */
static void batch_gemm(void *ctx, int64_t i) {
    const batch_job *j = ctx;
    const char *ai, *bi;
    batch_at(j, i, &ai, &bi);
    product_gemm(j->p, ai, bi, j->c + i * j->p->M * j->p->N);
}

/* Tells the prefetcher (prefetch.c) what b's batches read: blocks evenly
 * apart, as attention's K or V of each kv head in a cache (one block when b
 * is shared). Only the first, second and last batches are compared: an
 * uneven layout that passes costs wrong prefetches, never a result. */
static void learn_operand(const batch_job *j, int64_t batches) {
    const product *p = j->p;
    int64_t outer = p->b.by_rows ? p->K : p->N, inner = p->b.by_rows ? p->N : p->K;
    size_t block = (size_t)((outer - 1) * p->b.ld + inner) * elem(p->b.dtype);
    const char *a, *b0, *b1 = NULL, *last;
    batch_at(j, 0, &a, &b0);
    if (batches > 1) {
        batch_at(j, 1, &a, &b1);
        batch_at(j, batches - 1, &a, &last);
        if (last - b0 != (b1 - b0) * (batches - 1)) return;   /* not evenly apart */
    }
    bool one = batches == 1 || b1 == b0;
    tl_prefetch_after_product(&(tl_region){b0, block, one ? 1 : batches, one ? 0 : b1 - b0});
}

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
    if (!blas_fits("matmul", M * batches, N, K, 0, 0)) return NULL;

    /* a is read as F32 rows (a copy when it is not: activations are small);
     * b in place, F32 or BF16. */
    product p = {M, N, K, {0}, {0}};
    tl_tensor *ac = operand("matmul", a, false, &p.a), *bc = operand("matmul", b, true, &p.b);
    if (!ac || !bc) return NULL;
    if (!blas_fits("matmul", 0, 0, 0, p.a.ld, p.b.ld)) return NULL;

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
    if (b_shared && p.a.by_rows && rows_fold(as, shape, nb, M * p.a.ld)) {
        p.M *= batches;
        batches = 1;
    }

    bool gemv = p.a.by_rows && few_rows(p.M, p.b.dtype);
    bool share_batches = gemv && batches > 1 && K * N < BATCH_PARALLEL_MIN &&
                         batches * p.M * K * N >= BATCH_PARALLEL_MIN;
    batch_job job = {&p, nb, shape, as, bs, c};
    if (gemv) {
        tl_prefetch_hold(true);   /* the products of one matmul are learned as one */
        tl_parallel_chunks(share_batches ? tl_num_threads() : 1, batches, batch_gemv, &job);
        tl_prefetch_hold(false);
        learn_operand(&job, batches);
        return out;
    }
    if (p.b.dtype == TL_F32 && batches > 1) {   /* cannot fail: the batches share threads */
        tl_parallel_chunks(tl_num_threads(), batches, batch_gemm, &job);
        return out;
    }
    for (int64_t i = 0; i < batches; i++) {
        const char *ai, *bi;
        batch_at(&job, i, &ai, &bi);
        if (product_gemm(&p, ai, bi, c + i * p.M * N) != 0) return NULL;
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

/* y [rows, out] = x [rows, in] @ w^T for any float weight [out, in]. */
static int linear_forward(const float *x, tl_tensor *w, float *y, int64_t rows, int64_t in,
                          int64_t out) {
    if (rows == 0 || out == 0) return 0;
    if (in == 0) {
        memset(y, 0, (size_t)(rows * out) * sizeof(float));
        return 0;
    }
    if (!blas_fits("linear", rows, in, out, 0, 0)) return -1;
    matrix_layout mw;
    if (w->dtype == TL_BF16 && layout_of(w, &mw) && mw.by_rows) {
        /* Read in place: a few rows in one pass, more block-widened by GEMM. */
        const uint16_t *wb = (const uint16_t *)mw.data;
        /* Up to the old crossover a strided weight stays here: GEMM would
         * widen a copy of it. */
        if (few_rows(rows, TL_BF16) || (rows <= MULTI_ROWS_BF16 && mw.ld != in)) {
            tl_gemv_multi_bf16(wb, mw.ld, x, in, y, rows, out, in);
            return 0;
        }
        if (mw.ld == in) return tl_gemm_bf16_nt(x, wb, y, rows, out, in);
    }
    tl_tensor *wc = operand("linear", w, false, &mw);
    if (!wc) return -1;
    if (!blas_fits("linear", mw.ld, 0, 0, 0, 0)) return -1;
    if (few_rows(rows, TL_F32) && mw.by_rows) {
        tl_gemv_multi_f32((const float *)mw.data, mw.ld, x, in, y, rows, out, in);
        return 0;
    }
    /* op(B) must be w^T: a weight stored [out, in] is read transposed, a
     * transposed view (stored [in, out]) as it is. */
    tl_sgemm(false, mw.by_rows, rows, out, in, x, in, (const float *)mw.data, mw.ld, y, out);
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

/* ---- a part of a fused weight (nn.h: tl_linear_fuse) --------------------- */

/* The part of f that w is (its rows, exactly, in f's storage), or -1. */
static int fused_part(const tl_fused_rows *f, const tl_tensor *w) {
    if (w->shape[1] != f->cols || w->strides[1] != 1 || w->strides[0] != f->cols) return -1;
    int64_t at = w->offset - f->offset;
    if (at < 0 || at % f->cols != 0) return -1;
    for (int k = 0; k < f->n_parts; k++)
        if (f->part_row[k] == at / f->cols && f->part_row[k + 1] - f->part_row[k] == w->shape[0])
            return k;
    return -1;
}

/* The last fused product, per thread: whose (the record's id), its input (a
 * copy, to recognise it), y [x_rows, the fused rows], and which parts have
 * taken their columns. One per thread, so memory stays that of one product
 * (at most FUSED_MAX_OUTPUTS floats: 16 MiB); a larger one multiplies the
 * parts apart. At a prefill's rows the fused GEMM pays on OpenBLAS and AMX,
 * which pack the activations per block: [128, 192] k and v products made
 * blocks of 64 columns, each packing them again; on gemm_avx512.c it does not. */
#define FUSED_MAX_OUTPUTS ((double)(4 << 20))
static _Thread_local struct {
    uint64_t owner;
    float *x, *y;
    int64_t x_rows, x_capacity, y_capacity;
    unsigned served;
} last_fused;

/* y [rows, out] = x @ w^T for w, part k of the fused weight f, through one
 * product of x with all of f's rows: the first part asked computes them all
 * (one pass over the weights, one job for the threads), each sibling asked
 * next with the same input (compared by value) takes its columns. Once every
 * part has taken them, when a part asks twice, or when another fused weight
 * was multiplied in between, the next call computes again, so a weight
 * changed between two forwards (training) is never served from an old
 * product. At few rows each column is the same dot product, in the same
 * order, as w alone gives (the GEMVs compute row by row); a GEMM cuts the
 * fused columns in other blocks, which may change the last bit. Returns 0,
 * or -1 (nothing written: the caller multiplies by w alone) for a product
 * above FUSED_MAX_OUTPUTS, past the GEMVs' rows on gemm_avx512.c, or when
 * memory for the saved product runs out. */
static int fused_linear(const tl_fused_rows *f, int k, tl_tensor *w, const float *x, float *y,
                        int64_t rows) {
    if ((double)rows * (double)f->rows > FUSED_MAX_OUTPUTS) return -1;
    /* gemm_avx512.c packs nothing of x and cuts any product into 32-column
     * groups, so past the GEMVs' rows the parts multiplied apart are the same
     * work without copying the product out: 2-thread prefill 5 to 9% faster. */
    if (!few_rows(rows, w->dtype) && tl_gemm_on_avx512()) return -1;
    int64_t in = f->cols, n = rows * in, out = w->shape[0];
    bool same = last_fused.owner == f->id && last_fused.x_rows == rows &&
                !(last_fused.served & (1u << k)) &&
                memcmp(last_fused.x, x, (size_t)n * sizeof *x) == 0;
    if (!same) {
        if (last_fused.x_capacity < n || last_fused.y_capacity < rows * f->rows) {
            free(last_fused.x);
            free(last_fused.y);
            last_fused.x = malloc((size_t)n * sizeof *x);
            last_fused.y = malloc((size_t)(rows * f->rows) * sizeof *y);
            bool ok = last_fused.x && last_fused.y;
            last_fused.x_capacity = ok ? n : 0;
            last_fused.y_capacity = ok ? rows * f->rows : 0;
            last_fused.owner = 0;
            if (!ok) {
                free(last_fused.x);
                free(last_fused.y);
                last_fused.x = last_fused.y = NULL;
                return -1;
            }
        }
        tl_tensor whole = *w;   /* a header over the fused rows, for linear_forward */
        whole.shape[0] = f->rows;
        whole.offset = f->offset;
        last_fused.owner = 0;   /* not valid until the product is there */
        if (linear_forward(x, &whole, last_fused.y, rows, in, f->rows) < 0) return -1;
        memcpy(last_fused.x, x, (size_t)n * sizeof *x);
        last_fused.owner = f->id;
        last_fused.x_rows = rows;
        last_fused.served = 0;
    }
    int64_t first = f->part_row[k];
    for (int64_t r = 0; r < rows; r++)
        memcpy(y + r * out, last_fused.y + r * f->rows + first, (size_t)out * sizeof *y);
    last_fused.served |= 1u << k;
    if (last_fused.served == (1u << f->n_parts) - 1) last_fused.owner = 0;   /* all served */
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
    const tl_fused_rows *fused = w->storage->fused;
    int part = fused && !tl_grad_enabled() ? fused_part(fused, w) : -1;
    if (part < 0 || fused_linear(fused, part, w, (const float *)tl_data(xf), y, rows) != 0) {
        if (linear_forward((const float *)tl_data(xf), w, y, rows, in_f, out_f) < 0) return NULL;
    }
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
