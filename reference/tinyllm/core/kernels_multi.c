/* kernels_multi.c: a few input rows against one matrix read once
 * (tl_gemv_multi_* and tl_gemv_t_multi_*, contracts/tinyllm/kernels.h).
 *
 * Why. A short prompt, a chat turn, or attention's g query heads sharing one
 * key head multiply M = 2..16 rows by the same matrix. Through GEMM that
 * costs, for a BF16 weight, a widened copy of every block per call, and
 * OpenBLAS packs its operand again; at such M both cost several passes over
 * W. Here each row of W streams from memory once and meets all M inputs
 * while it is in L1: the memory traffic of one GEMV, the arithmetic of M.
 *
 * Register tiles (AVX2+FMA, 16 ymm registers):
 *   - W @ x (rows of W against rows of X): two rows of W against four
 *     inputs, eight accumulators; per 8 columns 2 loads of W (widened once
 *     for bf16), 4 of X, 8 independent FMAs. Inputs go four at a time (the
 *     last group 1 to 3), rows two at a time (an odd last row is paired with
 *     itself, computed twice and stored once).
 *   - p @ W (tl_gemv_t_multi: rows of P weight the rows of W, attention's
 *     probabilities times V): 16 columns against four inputs, eight
 *     accumulators, down every row of W.
 * AVX-512 (32 zmm registers), the last columns under a mask into the same
 * sums:
 *   - W @ x: one row of W against eight inputs, one sequential stream of W
 *     (two rows' interleaved streams held Zen 5 to half its read rate);
 *     rows of up to SHORT_ROW_MAX columns (attention's keys) four at a time
 *     against four inputs, the four rows' sums in one shuffle tree;
 *   - p @ W: the column tile at sixteen lanes, over up to 64 columns (a
 *     head_dim of 64 in one pass down V).
 * Each result element is one thread's blocked sum, as in kernels.c, so the
 * result does not depend on the thread count; it may differ from
 * tl_gemv_*'s by rounding (another blocking), except at M = 1 on a dense W,
 * which is tl_gemv_* itself.
 */
#include <stdint.h>
#include <string.h>

#include "kernels_internal.h"
#include "tinyllm/bf16.h"
#include "tinyllm/kernels.h"
#include "tinyllm/tensor.h"

/* Inputs per register tile. */
#define TILE_X 4

/* How many rows ahead p @ W's tiles ask for a row (software prefetch, as
 * PREFETCH_BYTES in kernels.c; past the end of W is harmless). */
#define PREFETCH_ROWS 16
#define PREFETCH_SPAN_MAX 1024

/* Rows up to this many columns go four at a time through the AVX-512 tile
 * (tile_quad_rows): their horizontal sums, not their loads, set the pace. */
#define SHORT_ROW_MAX 256
/* How far ahead tile_quad_rows asks for its rows (2 KB: eight rows of a
 * head_dim of 64; 0, 1 and 4 KB measured no better, README 4.18). */
#define QUAD_PREFETCH_BYTES 2048

/* One thread's share: rows [begin, end) of W (or columns, for the _t form). */
typedef struct {
    const void *W;
    int64_t ldw;
    const float *X;   /* X for W @ x, P for p @ W */
    int64_t ldx;
    float *Y;
    int64_t M, rows, cols;
} multi_args;

typedef void multi_fn(const multi_args *a, int64_t begin, int64_t end);

/* ---- portable loops ------------------------------------------------------- */

static void rows_f32_portable(const multi_args *a, int64_t begin, int64_t end) {
    const float *W = a->W;
    for (int64_t r = begin; r < end; r++)
        for (int64_t m = 0; m < a->M; m++)
            a->Y[m * a->rows + r] = dot_f32_portable(W + r * a->ldw, a->X + m * a->ldx, a->cols);
}

static void rows_bf16_portable(const multi_args *a, int64_t begin, int64_t end) {
    const uint16_t *W = a->W;
    for (int64_t r = begin; r < end; r++)
        for (int64_t m = 0; m < a->M; m++)
            a->Y[m * a->rows + r] = dot_bf16_portable(W + r * a->ldw, a->X + m * a->ldx,
                                                      a->cols);
}

/* Y[m, c] for columns [begin, end): each row of W scaled by P[m, r] and added. */
static void cols_f32_portable(const multi_args *a, int64_t begin, int64_t end) {
    const float *W = a->W;
    for (int64_t m = 0; m < a->M; m++) {
        float *y = a->Y + m * a->cols;
        const float *p = a->X + m * a->ldx;
        for (int64_t c = begin; c < end; c++) y[c] = 0.0f;
        for (int64_t r = 0; r < a->rows; r++) {
            const float *w = W + r * a->ldw;
            float pr = p[r];
#pragma omp simd
            for (int64_t c = begin; c < end; c++) y[c] += pr * w[c];
        }
    }
}

static void cols_bf16_portable(const multi_args *a, int64_t begin, int64_t end) {
    const uint16_t *W = a->W;
    for (int64_t m = 0; m < a->M; m++) {
        float *y = a->Y + m * a->cols;
        const float *p = a->X + m * a->ldx;
        for (int64_t c = begin; c < end; c++) y[c] = 0.0f;
        for (int64_t r = 0; r < a->rows; r++) {
            const uint16_t *w = W + r * a->ldw;
            float pr = p[r];
#pragma omp simd
            for (int64_t c = begin; c < end; c++) y[c] += pr * tl_bf16_to_f32(w[c]);
        }
    }
}

/* ---- AVX2 + FMA tiles ----------------------------------------------------- */
#ifdef TL_HAVE_X86

/* Eight weights of row w at column c, as f32: one tile body serves both
 * dtypes (bf16 is widened in registers, as in kernels.c). */
__attribute__((target("avx2,fma"), always_inline))
static inline __m256 load8_w(const void *w, int64_t c, bool bf16) {
    return bf16 ? load8_bf16((const uint16_t *)w + c) : _mm256_loadu_ps((const float *)w + c);
}

__attribute__((always_inline))
static inline float weight_at(const void *w, int64_t c, bool bf16) {
    return bf16 ? tl_bf16_to_f32(((const uint16_t *)w)[c]) : ((const float *)w)[c];
}

/* The eight horizontal sums of a two-row tile at once (a hadd tree, then
 * the two halves added): short rows (attention's head_dim of 64) spend as
 * long on eight separate sums as on their FMAs. s gets w0.x0 w1.x0 w0.x1
 * w1.x1 ... w0.x3 w1.x3; inputs from nx on add zeros. */
__attribute__((target("avx2"), always_inline))
static inline void sum_tiles(__m256 a0[TILE_X], __m256 a1[TILE_X], int nx, float s[8]) {
    #pragma GCC unroll 4
    for (int m = nx; m < TILE_X; m++) a0[m] = a1[m] = _mm256_setzero_ps();
    __m256 h0 = _mm256_hadd_ps(a0[0], a1[0]), h1 = _mm256_hadd_ps(a0[1], a1[1]);
    __m256 h2 = _mm256_hadd_ps(a0[2], a1[2]), h3 = _mm256_hadd_ps(a0[3], a1[3]);
    h0 = _mm256_hadd_ps(h0, h1);   /* w0.x0 w1.x0 w0.x1 w1.x1, per 128-bit half */
    h2 = _mm256_hadd_ps(h2, h3);   /* w0.x2 w1.x2 w0.x3 w1.x3, likewise */
    __m256 sums = _mm256_add_ps(_mm256_permute2f128_ps(h0, h2, 0x20),
                                _mm256_permute2f128_ps(h0, h2, 0x31));
    _mm256_storeu_ps(s, sums);
}

/* Rows w0 and w1 of W against inputs x[0..nx) (x + m * ldx): y0[m * ldy] and
 * y1[m * ldy]. Always inlined with constant nx and bf16, and the loops over m
 * unrolled, so the accumulators live in registers (gcc keeps some of the
 * loops otherwise, and the accumulators in memory: 30% slower). */
__attribute__((target("avx2,fma"), always_inline))
static inline void tile_rows(const void *w0, const void *w1, const float *x, int64_t ldx,
                             int nx, int64_t n, bool bf16, float *y0, float *y1, int64_t ldy) {
    __m256 a0[TILE_X], a1[TILE_X];
    #pragma GCC unroll 4
    for (int m = 0; m < nx; m++) a0[m] = a1[m] = _mm256_setzero_ps();
    int64_t c = 0;
    for (; c + 8 <= n; c += 8) {
        if ((c & 15) == 0) {   /* one prefetch per 64-byte line of f32, two of bf16 */
            prefetch_ahead((const char *)w0 + c * (bf16 ? 2 : 4));
            prefetch_ahead((const char *)w1 + c * (bf16 ? 2 : 4));
        }
        __m256 v0 = load8_w(w0, c, bf16), v1 = load8_w(w1, c, bf16);
        #pragma GCC unroll 4
        for (int m = 0; m < nx; m++) {
            __m256 xv = _mm256_loadu_ps(x + m * ldx + c);
            a0[m] = _mm256_fmadd_ps(v0, xv, a0[m]);
            a1[m] = _mm256_fmadd_ps(v1, xv, a1[m]);
        }
    }
    float s[8];
    sum_tiles(a0, a1, nx, s);
    #pragma GCC unroll 4
    for (int m = 0; m < nx; m++) {
        float s0 = s[2 * m], s1 = s[2 * m + 1];
        const float *xm = x + m * ldx;
        for (int64_t t = c; t < n; t++) {
            s0 += weight_at(w0, t, bf16) * xm[t];
            s1 += weight_at(w1, t, bf16) * xm[t];
        }
        y1[m * ldy] = s1;   /* y1 first: when w1 is w0, y1 is y0 and both sums agree */
        y0[m * ldy] = s0;
    }
}

__attribute__((target("avx2,fma"), always_inline))
static inline void rows_avx2(const multi_args *a, int64_t begin, int64_t end, bool bf16) {
    size_t esize = bf16 ? 2 : 4;
    const char *W = a->W;
    for (int64_t r = begin; r < end; r += 2) {
        int64_t r1 = r + 1 < end ? r + 1 : r;
        const void *w0 = W + (size_t)(r * a->ldw) * esize, *w1 = W + (size_t)(r1 * a->ldw) * esize;
        for (int64_t m = 0; m < a->M; m += TILE_X) {
            const float *x = a->X + m * a->ldx;
            float *y0 = a->Y + m * a->rows + r, *y1 = a->Y + m * a->rows + r1;
            switch (a->M - m < TILE_X ? a->M - m : TILE_X) {
            case 1: tile_rows(w0, w1, x, a->ldx, 1, a->cols, bf16, y0, y1, a->rows); break;
            case 2: tile_rows(w0, w1, x, a->ldx, 2, a->cols, bf16, y0, y1, a->rows); break;
            case 3: tile_rows(w0, w1, x, a->ldx, 3, a->cols, bf16, y0, y1, a->rows); break;
            default: tile_rows(w0, w1, x, a->ldx, 4, a->cols, bf16, y0, y1, a->rows); break;
            }
        }
    }
}

__attribute__((target("avx2,fma")))
static void rows_f32_avx2(const multi_args *a, int64_t begin, int64_t end) {
    rows_avx2(a, begin, end, false);
}

__attribute__((target("avx2,fma")))
static void rows_bf16_avx2(const multi_args *a, int64_t begin, int64_t end) {
    rows_avx2(a, begin, end, true);
}

/* Columns [c, c + 8 * nv) (nv = 1 or 2 vectors) of p[0..nx) @ W, written to
 * y + m * ldy + c. */
__attribute__((target("avx2,fma"), always_inline))
static inline void tile_cols(const void *W, int64_t ldw, const float *p, int64_t ldp, int nx,
                             int nv, int64_t rows, int64_t c, bool bf16, float *y, int64_t ldy,
                             int64_t span) {
    size_t esize = bf16 ? 2 : 4;
    __m256 a0[TILE_X], a1[TILE_X];
    #pragma GCC unroll 4
    for (int m = 0; m < nx; m++) a0[m] = a1[m] = _mm256_setzero_ps();
    for (int64_t r = 0; r < rows; r++) {
        const char *w = (const char *)W + (size_t)(r * ldw) * esize;
        /* The first tile asks for the whole span of columns PREFETCH_ROWS
         * rows down, for itself and the tiles after it: the rows are apart
         * (V's rows of head_dim), too short a stream for the hardware
         * prefetchers, and the loop would wait on every line. */
        const char *ahead = w + (size_t)(PREFETCH_ROWS * ldw + c) * esize;
        for (int64_t at = 0; at < span; at += 64) _mm_prefetch(ahead + at, _MM_HINT_T0);
        __m256 v0 = load8_w(w, c, bf16), v1 = nv == 2 ? load8_w(w, c + 8, bf16) : v0;
        #pragma GCC unroll 4
        for (int m = 0; m < nx; m++) {
            __m256 pm = _mm256_broadcast_ss(p + m * ldp + r);
            a0[m] = _mm256_fmadd_ps(pm, v0, a0[m]);
            if (nv == 2) a1[m] = _mm256_fmadd_ps(pm, v1, a1[m]);
        }
    }
    #pragma GCC unroll 4
    for (int m = 0; m < nx; m++) {
        _mm256_storeu_ps(y + m * ldy + c, a0[m]);
        if (nv == 2) _mm256_storeu_ps(y + m * ldy + c + 8, a1[m]);
    }
}

/* How the column tiles of [begin, end) ask for W ahead: a short span
 * (attention's head_dim) whole by the first tile (*first bytes), a long one
 * line by line, each tile its own (*each); the first tiles' start now. */
static inline void cols_prefetch_plan(const multi_args *a, int64_t begin, int64_t end,
                                      size_t esize, int64_t *first, int64_t *each) {
    int64_t span = (end - begin) * (int64_t)esize;
    *first = span, *each = 0;
    if (span > PREFETCH_SPAN_MAX) *first = 0, *each = 64;
    for (int64_t r = 0; r < PREFETCH_ROWS && r < a->rows; r++)
        for (int64_t at = 0; at < (*first ? span : 64); at += 64)
            _mm_prefetch((const char *)a->W + (size_t)(r * a->ldw + begin) * esize + at,
                         _MM_HINT_T0);
}

/* Calls TILE(NX, NV) with every (nx, nv) pair as constants, so that each
 * tile is inlined with its loops unrolled. */
#define EVERY_TILE(nx, nv, TILE)        \
    switch ((nx) * 2 + (nv) - 1) {      \
    case 2: TILE(1, 1); break;          \
    case 3: TILE(1, 2); break;          \
    case 4: TILE(2, 1); break;          \
    case 5: TILE(2, 2); break;          \
    case 6: TILE(3, 1); break;          \
    case 7: TILE(3, 2); break;          \
    case 8: TILE(4, 1); break;          \
    default: TILE(4, 2); break;         \
    }

__attribute__((target("avx2,fma"), always_inline))
static inline void cols_avx2(const multi_args *a, int64_t begin, int64_t end, bool bf16) {
    int64_t first, each;
    cols_prefetch_plan(a, begin, end, bf16 ? 2 : 4, &first, &each);
    int64_t c = begin;
    while (c + 8 <= end) {
        int nv = c + 16 <= end ? 2 : 1;
        for (int64_t m = 0; m < a->M; m += TILE_X) {
            const float *p = a->X + m * a->ldx;
            float *y = a->Y + m * a->cols;
            int nx = a->M - m < TILE_X ? (int)(a->M - m) : TILE_X;
#define TILE(NX, NV) \
    tile_cols(a->W, a->ldw, p, a->ldx, NX, NV, a->rows, c, bf16, y, a->cols, \
              c == begin && m == 0 ? first : each)
            EVERY_TILE(nx, nv, TILE)
#undef TILE
        }
        c += 8 * nv;
    }
    if (c < end) (bf16 ? cols_bf16_portable : cols_f32_portable)(a, c, end);
}

__attribute__((target("avx2,fma")))
static void cols_f32_avx2(const multi_args *a, int64_t begin, int64_t end) {
    cols_avx2(a, begin, end, false);
}

__attribute__((target("avx2,fma")))
static void cols_bf16_avx2(const multi_args *a, int64_t begin, int64_t end) {
    cols_avx2(a, begin, end, true);
}

/* ---- AVX-512 tiles -------------------------------------------------------- */

/* Sixteen lanes; a row tile's sums are folded to eight lanes, then summed as
 * the AVX2 tile's. On Zen 5 the AVX2 tiles' pairs of rows read a weight at
 * half a core's rate: 1.9 GEMV passes at M = 2 where this tile takes 1.2
 * (README 4.10). */

__attribute__((target(AVX512), always_inline))
static inline __m512 load16_w(const void *w, int64_t c, bool bf16) {
    return bf16 ? load16_bf16((const uint16_t *)w + c) : load16_f32((const float *)w + c);
}

__attribute__((target(AVX512), always_inline))
static inline __m512 load_tail_w(const void *w, int64_t c, __mmask16 k, bool bf16) {
    return bf16 ? load_tail_bf16((const uint16_t *)w + c, k)
                : _mm512_maskz_loadu_ps(k, (const float *)w + c);
}

__attribute__((target(AVX512), always_inline))
static inline __m256 fold16(__m512 v) {
    return _mm256_add_ps(_mm512_castps512_ps256(v),
                         _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

/* Row w of W against inputs x[0..nx) (nx <= 8): y[m * ldy]. One row at a
 * time, without software prefetch: one sequential stream of W, which Zen 5
 * reads at its full rate where two rows' interleaved streams held it to
 * half (kernels.c's GEMV rows, README 4.9); eight inputs give each load of
 * W eight FMAs. */
__attribute__((target(AVX512), always_inline))
static inline void tile_row16(const void *w, const float *x, int64_t ldx, int nx, int64_t n,
                              bool bf16, float *y, int64_t ldy) {
    __m512 acc[2 * TILE_X];
    #pragma GCC unroll 8
    for (int m = 0; m < nx; m++) acc[m] = _mm512_setzero_ps();
    int64_t c = 0;
    for (; c + 16 <= n; c += 16) {
        __m512 v = load16_w(w, c, bf16);
        #pragma GCC unroll 8
        for (int m = 0; m < nx; m++)
            acc[m] = _mm512_fmadd_ps(v, _mm512_loadu_ps(x + m * ldx + c), acc[m]);
    }
    if (c < n) {
        __mmask16 k = tail_mask(n - c);
        __m512 v = load_tail_w(w, c, k, bf16);
        #pragma GCC unroll 8
        for (int m = 0; m < nx; m++)
            acc[m] = _mm512_fmadd_ps(v, _mm512_maskz_loadu_ps(k, x + m * ldx + c), acc[m]);
    }
    __m256 h[2 * TILE_X];   /* inputs 0-3 and 4-7, summed as the AVX2 tile's two rows */
    #pragma GCC unroll 8
    for (int m = 0; m < 2 * TILE_X; m++) h[m] = m < nx ? fold16(acc[m]) : _mm256_setzero_ps();
    float s[8];   /* x0 x4 x1 x5 x2 x6 x3 x7 */
    sum_tiles(h, h + TILE_X, TILE_X, s);
    #pragma GCC unroll 8
    for (int m = 0; m < nx; m++) y[m * ldy] = s[m < TILE_X ? 2 * m : 2 * (m - TILE_X) + 1];
}

/* The four sums of rows a[0..3] (sixteen lanes each), stored to y[0..nr):
 * lanes i and i + 8, then those pairs' halves, then the last four lanes
 * pairwise, so each row's sum has one order whichever rows share the call.
 * One masked store: reading the sums back from a stored vector stalled on
 * store forwarding, a sixth slower than a row at a time from memory. */
__attribute__((target(AVX512), always_inline))
static inline void store_quad_sums(const __m512 a[4], int nr, float *y) {
    __m512 t01 = _mm512_add_ps(_mm512_shuffle_f32x4(a[0], a[1], 0x44),
                               _mm512_shuffle_f32x4(a[0], a[1], 0xEE));
    __m512 t23 = _mm512_add_ps(_mm512_shuffle_f32x4(a[2], a[3], 0x44),
                               _mm512_shuffle_f32x4(a[2], a[3], 0xEE));
    __m512 u = _mm512_add_ps(_mm512_shuffle_f32x4(t01, t23, 0x88),
                             _mm512_shuffle_f32x4(t01, t23, 0xDD));   /* row j in block j */
    u = _mm512_add_ps(u, _mm512_permute_ps(u, _MM_SHUFFLE(2, 3, 0, 1)));
    u = _mm512_add_ps(u, _mm512_permute_ps(u, _MM_SHUFFLE(1, 0, 3, 2)));
    const __m512i firsts = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0);
    __m128 sums = _mm512_castps512_ps128(_mm512_permutexvar_ps(firsts, u));
    _mm_mask_storeu_ps(y, (__mmask8)((1u << nr) - 1), sums);
}

/* Rows w, w + ldw, .. (nr <= 4 of them) of a short-rowed W (attention's
 * keys, head_dim long) against inputs x[0..nx) (nx <= 4): y[m * ldy + j].
 * A row of 64 floats is four FMAs per input, and summing its lanes alone
 * cost as much again; four rows' sums share one shuffle tree. */
__attribute__((target(AVX512), always_inline))
static inline void tile_quad_rows(const void *w, int64_t ldw, int nr, const float *x,
                                  int64_t ldx, int nx, int64_t n, bool bf16, float *y,
                                  int64_t ldy) {
    size_t esize = bf16 ? 2 : 4;
    const char *row[4];
    for (int j = 0; j < 4; j++) row[j] = (const char *)w + (size_t)((j < nr ? j : 0) * ldw) * esize;
    __m512 acc[TILE_X][4];
    #pragma GCC unroll 4
    for (int m = 0; m < nx; m++)
        #pragma GCC unroll 4
        for (int j = 0; j < 4; j++) acc[m][j] = _mm512_setzero_ps();
    /* the rows a few groups on, asked for now: the keys of one head are a
     * short stream (tens of KB) for the hardware prefetchers to find */
    for (int64_t at = 0; at < (int64_t)(4 * ldw * esize); at += 64)
        _mm_prefetch((const char *)w + QUAD_PREFETCH_BYTES + at, _MM_HINT_T0);
    int64_t c = 0;
    for (; c < n; c += 16) {
        __mmask16 k = n - c >= 16 ? (__mmask16)0xFFFF : tail_mask(n - c);
        __m512 xv[TILE_X];
        #pragma GCC unroll 4
        for (int m = 0; m < nx; m++) xv[m] = _mm512_maskz_loadu_ps(k, x + m * ldx + c);
        #pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            if (j >= nr) break;
            __m512 v = k == 0xFFFF ? load16_w(row[j], c, bf16) : load_tail_w(row[j], c, k, bf16);
            #pragma GCC unroll 4
            for (int m = 0; m < nx; m++) acc[m][j] = _mm512_fmadd_ps(v, xv[m], acc[m][j]);
        }
    }
    #pragma GCC unroll 4
    for (int m = 0; m < nx; m++) store_quad_sums(acc[m], nr, y + m * ldy);
}

/* Rows [begin, end) of a short-rowed W, four at a time. */
__attribute__((target(AVX512), always_inline))
static inline void quad_rows_avx512(const multi_args *a, int64_t begin, int64_t end, bool bf16) {
    size_t esize = bf16 ? 2 : 4;
    for (int64_t r = begin; r < end; r += 4) {
        const char *w = (const char *)a->W + (size_t)(r * a->ldw) * esize;
        int nr = end - r < 4 ? (int)(end - r) : 4;
        for (int64_t m = 0; m < a->M; m += TILE_X) {
            const float *x = a->X + m * a->ldx;
            float *y = a->Y + m * a->rows + r;
            int64_t ldw = a->ldw, ldx = a->ldx, n = a->cols, ldy = a->rows;
            switch (a->M - m < TILE_X ? a->M - m : TILE_X) {   /* nx as a constant */
            case 1: tile_quad_rows(w, ldw, nr, x, ldx, 1, n, bf16, y, ldy); break;
            case 2: tile_quad_rows(w, ldw, nr, x, ldx, 2, n, bf16, y, ldy); break;
            case 3: tile_quad_rows(w, ldw, nr, x, ldx, 3, n, bf16, y, ldy); break;
            default: tile_quad_rows(w, ldw, nr, x, ldx, 4, n, bf16, y, ldy); break;
            }
        }
    }
}

__attribute__((target(AVX512), always_inline))
static inline void rows_avx512(const multi_args *a, int64_t begin, int64_t end, bool bf16) {
    size_t esize = bf16 ? 2 : 4;
    const char *W = a->W;
    for (int64_t r = begin; r < end; r++) {
        const void *w = W + (size_t)(r * a->ldw) * esize;
        for (int64_t m = 0; m < a->M; m += 2 * TILE_X) {
            const float *x = a->X + m * a->ldx;
            float *y = a->Y + m * a->rows + r;
            int64_t ldx = a->ldx, n = a->cols, ldy = a->rows;
            switch (a->M - m < 2 * TILE_X ? a->M - m : 2 * TILE_X) {   /* nx as a constant */
            case 1: tile_row16(w, x, ldx, 1, n, bf16, y, ldy); break;
            case 2: tile_row16(w, x, ldx, 2, n, bf16, y, ldy); break;
            case 3: tile_row16(w, x, ldx, 3, n, bf16, y, ldy); break;
            case 4: tile_row16(w, x, ldx, 4, n, bf16, y, ldy); break;
            case 5: tile_row16(w, x, ldx, 5, n, bf16, y, ldy); break;
            case 6: tile_row16(w, x, ldx, 6, n, bf16, y, ldy); break;
            case 7: tile_row16(w, x, ldx, 7, n, bf16, y, ldy); break;
            default: tile_row16(w, x, ldx, 8, n, bf16, y, ldy); break;
            }
        }
    }
}

__attribute__((target(AVX512)))
static void rows_f32_avx512(const multi_args *a, int64_t begin, int64_t end) {
    if (a->cols <= SHORT_ROW_MAX) quad_rows_avx512(a, begin, end, false);
    else rows_avx512(a, begin, end, false);
}

__attribute__((target(AVX512)))
static void rows_bf16_avx512(const multi_args *a, int64_t begin, int64_t end) {
    if (a->cols <= SHORT_ROW_MAX) quad_rows_avx512(a, begin, end, true);
    else rows_avx512(a, begin, end, true);
}

/* Columns [c, c + 16 * nv) (nv <= 4: 64 columns, a head_dim of 64 in one
 * pass down W) of p[0..nx) @ W, the last of the nv vectors under mask k
 * (all ones except at the end of a row). Prefetch as tile_cols. */
__attribute__((target(AVX512), always_inline))
static inline void tile_cols16(const void *W, int64_t ldw, const float *p, int64_t ldp, int nx,
                               int nv, int64_t rows, int64_t c, __mmask16 k, bool bf16,
                               float *y, int64_t ldy, int64_t span) {
    size_t esize = bf16 ? 2 : 4;
    __m512 acc[TILE_X][4];
    #pragma GCC unroll 4
    for (int m = 0; m < nx; m++)
        #pragma GCC unroll 4
        for (int v = 0; v < nv; v++) acc[m][v] = _mm512_setzero_ps();
    for (int64_t r = 0; r < rows; r++) {
        const char *w = (const char *)W + (size_t)(r * ldw) * esize;
        const char *ahead = w + (size_t)(PREFETCH_ROWS * ldw + c) * esize;
        for (int64_t at = 0; at < span; at += 64) _mm_prefetch(ahead + at, _MM_HINT_T0);
        __m512 wv[4];
        #pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            wv[v] = v < nv - 1 ? load16_w(w, c + 16 * v, bf16)
                               : load_tail_w(w, c + 16 * v, k, bf16);
        #pragma GCC unroll 4
        for (int m = 0; m < nx; m++) {
            __m512 pm = _mm512_set1_ps(p[m * ldp + r]);
            #pragma GCC unroll 4
            for (int v = 0; v < nv; v++) acc[m][v] = _mm512_fmadd_ps(pm, wv[v], acc[m][v]);
        }
    }
    #pragma GCC unroll 4
    for (int m = 0; m < nx; m++) {
        #pragma GCC unroll 4
        for (int v = 0; v < nv - 1; v++) _mm512_storeu_ps(y + m * ldy + c + 16 * v, acc[m][v]);
        _mm512_mask_storeu_ps(y + m * ldy + c + 16 * (nv - 1), k, acc[m][nv - 1]);
    }
}

/* Calls TILE(NX, NV) with every (nx, nv) pair of the 16-lane tiles as
 * constants, as EVERY_TILE does for the 8-lane ones. */
#define EVERY_TILE16(nx, nv, TILE)                  \
    switch (((nx) - 1) * 4 + (nv) - 1) {            \
    case 0: TILE(1, 1); break;                      \
    case 1: TILE(1, 2); break;                      \
    case 2: TILE(1, 3); break;                      \
    case 3: TILE(1, 4); break;                      \
    case 4: TILE(2, 1); break;                      \
    case 5: TILE(2, 2); break;                      \
    case 6: TILE(2, 3); break;                      \
    case 7: TILE(2, 4); break;                      \
    case 8: TILE(3, 1); break;                      \
    case 9: TILE(3, 2); break;                      \
    case 10: TILE(3, 3); break;                     \
    case 11: TILE(3, 4); break;                     \
    case 12: TILE(4, 1); break;                     \
    case 13: TILE(4, 2); break;                     \
    case 14: TILE(4, 3); break;                     \
    default: TILE(4, 4); break;                     \
    }

__attribute__((target(AVX512), always_inline))
static inline void cols_avx512(const multi_args *a, int64_t begin, int64_t end, bool bf16) {
    int64_t first, each;
    cols_prefetch_plan(a, begin, end, bf16 ? 2 : 4, &first, &each);
    for (int64_t c = begin; c < end;) {
        int64_t left = end - c;
        int nv = left > 64 ? 4 : (int)((left + 15) / 16);
        int64_t width = left < 16 * nv ? left : 16 * nv;
        __mmask16 k = tail_mask(width - 16 * (nv - 1));
        for (int64_t m = 0; m < a->M; m += TILE_X) {
            const float *p = a->X + m * a->ldx;
            float *y = a->Y + m * a->cols;
            int nx = a->M - m < TILE_X ? (int)(a->M - m) : TILE_X;
#define TILE(NX, NV) \
    tile_cols16(a->W, a->ldw, p, a->ldx, NX, NV, a->rows, c, k, bf16, y, a->cols, \
                c == begin && m == 0 ? first : each)
            EVERY_TILE16(nx, nv, TILE)
#undef TILE
        }
        c += width;
    }
}

__attribute__((target(AVX512)))
static void cols_f32_avx512(const multi_args *a, int64_t begin, int64_t end) {
    cols_avx512(a, begin, end, false);
}

__attribute__((target(AVX512)))
static void cols_bf16_avx512(const multi_args *a, int64_t begin, int64_t end) {
    cols_avx512(a, begin, end, true);
}

#endif /* TL_HAVE_X86 */

/* ---- splitting among threads ---------------------------------------------- */

typedef struct {
    multi_fn *fn;
    const multi_args *a;
    int64_t per_chunk, total;   /* units (rows or columns) per chunk; all units */
} multi_job;

static void multi_chunk(void *ctx, int64_t c) {
    const multi_job *j = ctx;
    int64_t begin = c * j->per_chunk, end = begin + j->per_chunk;
    j->fn(j->a, begin, end < j->total ? end : j->total);
}

/* Cuts `total` units of `unit_weights` weights each into chunks of whole
 * groups of `group` units (the tile's width), shared as the GEMVs share
 * theirs; the M inputs multiply the arithmetic, not the bytes, so the
 * threshold for threads counts each weight M times. */
static void split(multi_fn *fn, const multi_args *a, int64_t total, int64_t unit_weights,
                  int64_t group) {
    int64_t groups = (total + group - 1) / group;
    int threads = gemv_threads(groups, unit_weights * group * a->M);
    int64_t per = group * chunk_size(groups, (double)(unit_weights * group), threads);
    multi_job j = {fn, a, per, total};
    tl_parallel_chunks(threads, (total + per - 1) / per, multi_chunk, &j);
}

/* Bad arguments set an error and write nothing; false also when there is
 * nothing to write. */
static bool multi_args_ok(const char *op, const void *W, int64_t ldw, const float *X,
                          int64_t ldx, const float *Y, int64_t M, int64_t rows, int64_t cols,
                          bool transposed) {
    int64_t inner = transposed ? rows : cols, outer = transposed ? cols : rows;
    if (M <= 0 || outer <= 0) return false;
    if (!Y || (inner > 0 && (!W || !X))) {
        tl_fail("%s: NULL %s for %lld inputs against a [%lld, %lld] matrix; pass the weight, "
                "input and output arrays", op, !Y ? "Y" : !W ? "W" : "X", (long long)M,
                (long long)rows, (long long)cols);
        return false;
    }
    if (ldw < cols || ldx < inner) {
        tl_fail("%s: leading dimensions ldw=%lld, ldx=%lld are below the row lengths "
                "%lld and %lld of a [%lld, %lld] matrix and [%lld, %lld] inputs; rows "
                "may be apart, never overlap", op, (long long)ldw, (long long)ldx,
                (long long)cols, (long long)inner, (long long)rows, (long long)cols,
                (long long)M, (long long)inner);
        return false;
    }
    return true;
}

static void multi(const char *op, multi_fn *portable, multi_fn *avx2, multi_fn *avx512,
                  const void *W, int64_t ldw, const float *X, int64_t ldx, float *Y, int64_t M,
                  int64_t rows, int64_t cols, bool transposed) {
    if (!multi_args_ok(op, W, ldw, X, ldx, Y, M, rows, cols, transposed)) return;
    if ((transposed ? rows : cols) <= 0) {
        memset(Y, 0, (size_t)(M * (transposed ? cols : rows)) * sizeof *Y);
        return;
    }
    multi_fn *fn = portable;
#ifdef TL_HAVE_X86
    if (use_avx512()) fn = avx512;
    else if (use_avx2()) fn = avx2;
#else
    (void)avx2, (void)avx512;
#endif
    multi_args a = {W, ldw, X, ldx, Y, M, rows, cols};
    if (transposed) split(fn, &a, cols, rows, 16);
    else split(fn, &a, rows, cols, 2);
}

#ifndef TL_HAVE_X86   /* no SIMD versions: the portable ones stand in */
#define rows_f32_avx2 rows_f32_portable
#define rows_bf16_avx2 rows_bf16_portable
#define cols_f32_avx2 cols_f32_portable
#define cols_bf16_avx2 cols_bf16_portable
#define rows_f32_avx512 rows_f32_portable
#define rows_bf16_avx512 rows_bf16_portable
#define cols_f32_avx512 cols_f32_portable
#define cols_bf16_avx512 cols_bf16_portable
#endif

/* One input on a dense W is the GEMV itself (decode stays as it was). */
void tl_gemv_multi_f32(const float *W, int64_t ldw, const float *X, int64_t ldx, float *Y,
                       int64_t M, int64_t rows, int64_t cols) {
    if (M == 1 && ldw == cols) {
        tl_gemv_f32(W, X, Y, rows, cols);
        return;
    }
    multi("tl_gemv_multi_f32", rows_f32_portable, rows_f32_avx2, rows_f32_avx512, W, ldw, X,
          ldx, Y, M, rows, cols, false);
}

void tl_gemv_multi_bf16(const uint16_t *W, int64_t ldw, const float *X, int64_t ldx, float *Y,
                        int64_t M, int64_t rows, int64_t cols) {
    if (M == 1 && ldw == cols) {
        tl_gemv_bf16(W, X, Y, rows, cols);
        return;
    }
    multi("tl_gemv_multi_bf16", rows_bf16_portable, rows_bf16_avx2, rows_bf16_avx512, W, ldw,
          X, ldx, Y, M, rows, cols, false);
}

void tl_gemv_t_multi_f32(const float *W, int64_t ldw, const float *P, int64_t ldp, float *Y,
                         int64_t M, int64_t rows, int64_t cols) {
    if (M == 1 && ldw == cols) {
        tl_gemv_t_f32(W, P, Y, rows, cols);
        return;
    }
    multi("tl_gemv_t_multi_f32", cols_f32_portable, cols_f32_avx2, cols_f32_avx512, W, ldw, P,
          ldp, Y, M, rows, cols, true);
}

void tl_gemv_t_multi_bf16(const uint16_t *W, int64_t ldw, const float *P, int64_t ldp,
                          float *Y, int64_t M, int64_t rows, int64_t cols) {
    if (M == 1 && ldw == cols) {
        tl_gemv_t_bf16(W, P, Y, rows, cols);
        return;
    }
    multi("tl_gemv_t_multi_bf16", cols_bf16_portable, cols_bf16_avx2, cols_bf16_avx512, W,
          ldw, P, ldp, Y, M, rows, cols, true);
}
