/* kernels.c: the hot loops of inference (contracts/tinyllm/kernels.h).
 *
 * Decode multiplies every weight matrix by one vector per token, so it reads
 * each weight exactly once and does 2 flops per weight: it is bound by memory
 * bandwidth, not arithmetic. The matrix-vector products therefore aim to keep
 * the memory bus busy and nothing more:
 *   - rows are cut into blocks that the threads take one by one
 *     (tl_parallel_chunks, pool.c: a thread the system has not scheduled
 *     delays nothing), each block a long stream of W;
 *   - each row is a dot product with several independent accumulators, so the
 *     loop is limited by loads, not by the latency of one add chain;
 *   - the AVX2 loops ask for W a few KB ahead of use (PREFETCH_BYTES);
 *   - bf16 weights are widened to f32 in registers (a 16-bit left shift, as in
 *     bf16.h), so they cost half the bytes of f32 and no conversion pass.
 * `make bench-kernels` (bench/bench_kernels.c) measures them against the
 * machine's read bandwidth.
 *
 * Vector instructions. We build without -march=native so one binary runs on
 * any x86-64 (other CPUs get the portable loops). The dot products exist
 * up to three times: AVX-512 (the GEMVs' rows) and AVX2+FMA versions
 * written with intrinsics (compiled for those instructions by target
 * attributes) and a portable version gcc vectorises itself (`omp simd`,
 * SSE2 on x86-64). The choice is made at run time with
 * __builtin_cpu_supports. Why not target_clones on the portable loop: in ISO
 * C mode (-std=c11) gcc does not fuse a*b+c into FMA, and its vectorised
 * reduction keeps one accumulator, whose add latency caps a core below what
 * the memory bus can deliver. TINYLLM_SIMD=avx2 stops at AVX2 and
 * TINYLLM_SIMD=0 forces the portable version (the tests check all three).
 *
 * Summation order. Each row's sum is blocked (lanes, then accumulators), so
 * it differs from a left-to-right float sum by rounding only; it does not
 * depend on the thread count, since one thread computes a whole row.
 *
 * GEMM (prefill, training) goes to OpenBLAS on one thread per block of
 * columns, the blocks shared by our pool's threads as the GEMVs' rows are
 * (one set of threads in the process: see sync_blas_threads); a BF16
 * weight's GEMM goes to AMX tiles where the CPU has them (gemm_amx.c), and
 * A @ B^T to AVX-512 tiles of our own where OpenBLAS runs AVX2 kernels on an
 * AVX-512 CPU (gemm_avx512.c).
 *
 * Reading ahead. After each one-row product the pool's idle helpers are
 * handed the memory the next products will read (prefetch.c plans it,
 * pool.c reads it): see tl_prefetch_after_product.
 */
#include "tinyllm/kernels.h"

#include <cblas.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernels_internal.h"
#include "tinyllm/bf16.h"
#include "tinyllm/tensor.h"

#define MAX_THREADS 1024

/* ---- thread count ------------------------------------------------------ */

int tl_num_threads(void) {
    /* Read at every call (a getenv is cheap beside a product), so a tool or
     * a test may change it between calls. An empty value counts as unset. */
    const char *s = getenv("TINYLLM_THREADS");
    if (s && *s) {
        char *end;
        errno = 0;
        long n = strtol(s, &end, 10);
        if (errno == 0 && end != s && *end == '\0' && n >= 1 && n <= MAX_THREADS)
            return (int)n;
        static atomic_flag warned = ATOMIC_FLAG_INIT;
        if (!atomic_flag_test_and_set(&warned))
            fprintf(stderr,
                    "tinyllm: TINYLLM_THREADS='%s' is not a thread count (a whole number "
                    "from 1 to %d); using all %d cores. Set it to e.g. 2, or unset it.\n",
                    s, MAX_THREADS, omp_get_num_procs());
    }
    return omp_get_num_procs();
}

/* ---- portable row and column loops ------------------------------------- */

/* A block of rows [begin, end): what one thread computes. W is f32 or bf16. */
typedef void rows_fn(const void *W, const float *x, float *y, int64_t cols, int64_t begin,
                     int64_t end);
/* Rows [begin, end) of the first quarter, each with its partners a quarter,
 * a half and three quarters on (the AVX-512 loops' four streams). */
typedef void quads_fn(const void *W, const float *x, float *y, int64_t cols, int64_t quarter,
                      int64_t begin, int64_t end);

static void rows_f32_portable(const void *W, const float *x, float *y, int64_t cols,
                              int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; r++)
        y[r] = dot_f32_portable((const float *)W + r * cols, x, cols);
}

static void rows_bf16_portable(const void *W, const float *x, float *y, int64_t cols,
                               int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; r++)
        y[r] = dot_bf16_portable((const uint16_t *)W + r * cols, x, cols);
}

/* y[c] = sum_r p[r] W[r, c] for c in [begin, end): the product of a row
 * vector p with a matrix stored row by row (attention's weights times V).
 * One thread's column block; every row is read, each for its block only. */
typedef void cols_fn(const void *W, const float *p, float *y, int64_t rows, int64_t cols,
                     int64_t begin, int64_t end);

static void cols_f32_portable(const void *W, const float *p, float *y, int64_t rows,
                              int64_t cols, int64_t begin, int64_t end) {
    const float *w = W;
    for (int64_t c = begin; c < end; c++) y[c] = 0.0f;
    for (int64_t r = 0; r < rows; r++) {
        const float *row = w + r * cols;
        float pr = p[r];
#pragma omp simd
        for (int64_t c = begin; c < end; c++) y[c] += pr * row[c];
    }
}

static void cols_bf16_portable(const void *W, const float *p, float *y, int64_t rows,
                               int64_t cols, int64_t begin, int64_t end) {
    const uint16_t *w = W;
    for (int64_t c = begin; c < end; c++) y[c] = 0.0f;
    for (int64_t r = 0; r < rows; r++) {
        const uint16_t *row = w + r * cols;
        float pr = p[r];
#pragma omp simd
        for (int64_t c = begin; c < end; c++) y[c] += pr * tl_bf16_to_f32(row[c]);
    }
}

/* ---- AVX2 + FMA dot products -------------------------------------------- */
#ifdef TL_HAVE_X86

/* Four accumulators of 8 lanes: 32 weights per step, four FMA chains in
 * flight, and a prefetch per 64-byte line read. The tail (n mod 32) goes 8
 * at a time, then one at a time. */
__attribute__((target("avx2,fma")))
static inline float dot_f32_avx2(const float *w, const float *x, int64_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t c = 0;
    for (; c + 32 <= n; c += 32) {
        prefetch_ahead(w + c);
        prefetch_ahead(w + c + 16);
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + c), _mm256_loadu_ps(x + c), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + c + 8), _mm256_loadu_ps(x + c + 8), a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w + c + 16), _mm256_loadu_ps(x + c + 16), a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w + c + 24), _mm256_loadu_ps(x + c + 24), a3);
    }
    for (; c + 8 <= n; c += 8)
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + c), _mm256_loadu_ps(x + c), a0);
    float sum = hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; c < n; c++) sum += w[c] * x[c];
    return sum;
}

__attribute__((target("avx2,fma")))
static inline float dot_bf16_avx2(const uint16_t *w, const float *x, int64_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t c = 0;
    for (; c + 32 <= n; c += 32) {
        prefetch_ahead(w + c);
        a0 = _mm256_fmadd_ps(load8_bf16(w + c), _mm256_loadu_ps(x + c), a0);
        a1 = _mm256_fmadd_ps(load8_bf16(w + c + 8), _mm256_loadu_ps(x + c + 8), a1);
        a2 = _mm256_fmadd_ps(load8_bf16(w + c + 16), _mm256_loadu_ps(x + c + 16), a2);
        a3 = _mm256_fmadd_ps(load8_bf16(w + c + 24), _mm256_loadu_ps(x + c + 24), a3);
    }
    for (; c + 8 <= n; c += 8)
        a0 = _mm256_fmadd_ps(load8_bf16(w + c), _mm256_loadu_ps(x + c), a0);
    float sum = hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; c < n; c++) sum += tl_bf16_to_f32(w[c]) * x[c];
    return sum;
}

/* Two rows at once, each summed exactly as dot_*_avx2 sums it alone (the
 * same four accumulators over the same columns, the same tails), so the
 * bits do not change: the two streams share each load of x and halve the
 * per-row work around the loop (the horizontal sums, the loop's start and
 * end), which two threads sharing the memory bus could not hide. */
__attribute__((target("avx2,fma")))
static inline void dot2_f32_avx2(const float *w0, const float *w1, const float *x, int64_t n,
                                 float *y0, float *y1) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    __m256 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    int64_t c = 0;
    for (; c + 32 <= n; c += 32) {
        prefetch_ahead(w0 + c);
        prefetch_ahead(w0 + c + 16);
        prefetch_ahead(w1 + c);
        prefetch_ahead(w1 + c + 16);
        __m256 x0 = _mm256_loadu_ps(x + c), x1 = _mm256_loadu_ps(x + c + 8);
        __m256 x2 = _mm256_loadu_ps(x + c + 16), x3 = _mm256_loadu_ps(x + c + 24);
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + c), x0, a0);
        b0 = _mm256_fmadd_ps(_mm256_loadu_ps(w1 + c), x0, b0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + c + 8), x1, a1);
        b1 = _mm256_fmadd_ps(_mm256_loadu_ps(w1 + c + 8), x1, b1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + c + 16), x2, a2);
        b2 = _mm256_fmadd_ps(_mm256_loadu_ps(w1 + c + 16), x2, b2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + c + 24), x3, a3);
        b3 = _mm256_fmadd_ps(_mm256_loadu_ps(w1 + c + 24), x3, b3);
    }
    for (; c + 8 <= n; c += 8) {
        __m256 xv = _mm256_loadu_ps(x + c);
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + c), xv, a0);
        b0 = _mm256_fmadd_ps(_mm256_loadu_ps(w1 + c), xv, b0);
    }
    float s0 = hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    float s1 = hsum256(_mm256_add_ps(_mm256_add_ps(b0, b1), _mm256_add_ps(b2, b3)));
    for (; c < n; c++) {
        s0 += w0[c] * x[c];
        s1 += w1[c] * x[c];
    }
    *y0 = s0;
    *y1 = s1;
}

__attribute__((target("avx2,fma")))
static inline void dot2_bf16_avx2(const uint16_t *w0, const uint16_t *w1, const float *x,
                                  int64_t n, float *y0, float *y1) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    __m256 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    int64_t c = 0;
    for (; c + 32 <= n; c += 32) {
        prefetch_ahead(w0 + c);
        prefetch_ahead(w1 + c);
        __m256 x0 = _mm256_loadu_ps(x + c), x1 = _mm256_loadu_ps(x + c + 8);
        __m256 x2 = _mm256_loadu_ps(x + c + 16), x3 = _mm256_loadu_ps(x + c + 24);
        a0 = _mm256_fmadd_ps(load8_bf16(w0 + c), x0, a0);
        b0 = _mm256_fmadd_ps(load8_bf16(w1 + c), x0, b0);
        a1 = _mm256_fmadd_ps(load8_bf16(w0 + c + 8), x1, a1);
        b1 = _mm256_fmadd_ps(load8_bf16(w1 + c + 8), x1, b1);
        a2 = _mm256_fmadd_ps(load8_bf16(w0 + c + 16), x2, a2);
        b2 = _mm256_fmadd_ps(load8_bf16(w1 + c + 16), x2, b2);
        a3 = _mm256_fmadd_ps(load8_bf16(w0 + c + 24), x3, a3);
        b3 = _mm256_fmadd_ps(load8_bf16(w1 + c + 24), x3, b3);
    }
    for (; c + 8 <= n; c += 8) {
        __m256 xv = _mm256_loadu_ps(x + c);
        a0 = _mm256_fmadd_ps(load8_bf16(w0 + c), xv, a0);
        b0 = _mm256_fmadd_ps(load8_bf16(w1 + c), xv, b0);
    }
    float s0 = hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    float s1 = hsum256(_mm256_add_ps(_mm256_add_ps(b0, b1), _mm256_add_ps(b2, b3)));
    for (; c < n; c++) {
        s0 += tl_bf16_to_f32(w0[c]) * x[c];
        s1 += tl_bf16_to_f32(w1[c]) * x[c];
    }
    *y0 = s0;
    *y1 = s1;
}

/* The same target as the dot products, so they inline into the row loop. */
__attribute__((target("avx2,fma")))
static void rows_f32_avx2(const void *W, const float *x, float *y, int64_t cols, int64_t begin,
                          int64_t end) {
    const float *w = W;
    int64_t r = begin;
    for (; r + 2 <= end; r += 2)
        dot2_f32_avx2(w + r * cols, w + (r + 1) * cols, x, cols, y + r, y + r + 1);
    if (r < end) y[r] = dot_f32_avx2(w + r * cols, x, cols);
}

__attribute__((target("avx2,fma")))
static void rows_bf16_avx2(const void *W, const float *x, float *y, int64_t cols, int64_t begin,
                           int64_t end) {
    const uint16_t *w = W;
    int64_t r = begin;
    for (; r + 2 <= end; r += 2)
        dot2_bf16_avx2(w + r * cols, w + (r + 1) * cols, x, cols, y + r, y + r + 1);
    if (r < end) y[r] = dot_bf16_avx2(w + r * cols, x, cols);
}

/* 32 columns at a time in four registers, over every row; then 8 at a time,
 * then one at a time. */
__attribute__((target("avx2,fma")))
static void cols_f32_avx2(const void *W, const float *p, float *y, int64_t rows, int64_t cols,
                          int64_t begin, int64_t end) {
    const float *w = W;
    int64_t c = begin;
    for (; c + 32 <= end; c += 32) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t r = 0; r < rows; r++) {
            const float *q = w + r * cols + c;
            __m256 pr = _mm256_set1_ps(p[r]);
            a0 = _mm256_fmadd_ps(pr, _mm256_loadu_ps(q), a0);
            a1 = _mm256_fmadd_ps(pr, _mm256_loadu_ps(q + 8), a1);
            a2 = _mm256_fmadd_ps(pr, _mm256_loadu_ps(q + 16), a2);
            a3 = _mm256_fmadd_ps(pr, _mm256_loadu_ps(q + 24), a3);
        }
        _mm256_storeu_ps(y + c, a0);
        _mm256_storeu_ps(y + c + 8, a1);
        _mm256_storeu_ps(y + c + 16, a2);
        _mm256_storeu_ps(y + c + 24, a3);
    }
    for (; c + 8 <= end; c += 8) {
        __m256 a = _mm256_setzero_ps();
        for (int64_t r = 0; r < rows; r++)
            a = _mm256_fmadd_ps(_mm256_set1_ps(p[r]), _mm256_loadu_ps(w + r * cols + c), a);
        _mm256_storeu_ps(y + c, a);
    }
    if (c < end) cols_f32_portable(W, p, y, rows, cols, c, end);
}

__attribute__((target("avx2,fma")))
static void cols_bf16_avx2(const void *W, const float *p, float *y, int64_t rows,
                           int64_t cols, int64_t begin, int64_t end) {
    const uint16_t *w = W;
    int64_t c = begin;
    for (; c + 32 <= end; c += 32) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t r = 0; r < rows; r++) {
            const uint16_t *q = w + r * cols + c;
            __m256 pr = _mm256_set1_ps(p[r]);
            a0 = _mm256_fmadd_ps(pr, load8_bf16(q), a0);
            a1 = _mm256_fmadd_ps(pr, load8_bf16(q + 8), a1);
            a2 = _mm256_fmadd_ps(pr, load8_bf16(q + 16), a2);
            a3 = _mm256_fmadd_ps(pr, load8_bf16(q + 24), a3);
        }
        _mm256_storeu_ps(y + c, a0);
        _mm256_storeu_ps(y + c + 8, a1);
        _mm256_storeu_ps(y + c + 16, a2);
        _mm256_storeu_ps(y + c + 24, a3);
    }
    for (; c + 8 <= end; c += 8) {
        __m256 a = _mm256_setzero_ps();
        for (int64_t r = 0; r < rows; r++)
            a = _mm256_fmadd_ps(_mm256_set1_ps(p[r]), load8_bf16(w + r * cols + c), a);
        _mm256_storeu_ps(y + c, a);
    }
    if (c < end) cols_bf16_portable(W, p, y, rows, cols, c, end);
}

/* ---- AVX-512 dot products (GEMV rows) ------------------------------------ */

/* As the AVX2 ones, at 16 lanes: two accumulators per row over 32 columns a
 * step, then 16, then a masked tail; dot2 sums each row exactly as dot does
 * alone (rows are paired by where a thread's block begins), and dot, which
 * also runs rows one after another (gemv_row_order), takes two steps a
 * turn without software prefetch. On CPUs with AVX-512 the AVX2 loops'
 * widening and FMAs held a core below its read rate (BF16 at 1 thread: 10.3
 * GB/s in decode of 13 measured). */

__attribute__((target(AVX512))) static inline float dot_f32_avx512(const float *w,
                                                                    const float *x, int64_t n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0;
    int64_t c = 0;
    for (; c + 64 <= n; c += 64) {   /* two of the 32-column steps below */
        a0 = _mm512_fmadd_ps(load16_f32(w + c), _mm512_loadu_ps(x + c), a0);
        a1 = _mm512_fmadd_ps(load16_f32(w + c + 16), _mm512_loadu_ps(x + c + 16), a1);
        a0 = _mm512_fmadd_ps(load16_f32(w + c + 32), _mm512_loadu_ps(x + c + 32), a0);
        a1 = _mm512_fmadd_ps(load16_f32(w + c + 48), _mm512_loadu_ps(x + c + 48), a1);
    }
    if (c + 32 <= n) {
        a0 = _mm512_fmadd_ps(load16_f32(w + c), _mm512_loadu_ps(x + c), a0);
        a1 = _mm512_fmadd_ps(load16_f32(w + c + 16), _mm512_loadu_ps(x + c + 16), a1);
        c += 32;
    }
    if (c + 16 <= n) {
        a0 = _mm512_fmadd_ps(load16_f32(w + c), _mm512_loadu_ps(x + c), a0);
        c += 16;
    }
    if (c < n) {
        __mmask16 m = tail_mask(n - c);
        a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w + c), _mm512_maskz_loadu_ps(m, x + c), a1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

__attribute__((target(AVX512))) static inline void dot2_f32_avx512(const float *w0,
                                                                    const float *w1,
                                                                    const float *x, int64_t n,
                                                                    float *y0, float *y1) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, b0 = a0, b1 = a0;
    int64_t c = 0;
    for (; c + 32 <= n; c += 32) {
        prefetch_ahead(w0 + c);
        prefetch_ahead(w0 + c + 16);
        prefetch_ahead(w1 + c);
        prefetch_ahead(w1 + c + 16);
        __m512 x0 = _mm512_loadu_ps(x + c), x1 = _mm512_loadu_ps(x + c + 16);
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + c), x0, a0);
        b0 = _mm512_fmadd_ps(_mm512_loadu_ps(w1 + c), x0, b0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + c + 16), x1, a1);
        b1 = _mm512_fmadd_ps(_mm512_loadu_ps(w1 + c + 16), x1, b1);
    }
    if (c + 16 <= n) {
        __m512 xv = _mm512_loadu_ps(x + c);
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + c), xv, a0);
        b0 = _mm512_fmadd_ps(_mm512_loadu_ps(w1 + c), xv, b0);
        c += 16;
    }
    if (c < n) {
        __mmask16 m = tail_mask(n - c);
        __m512 xv = _mm512_maskz_loadu_ps(m, x + c);
        a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w0 + c), xv, a1);
        b1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w1 + c), xv, b1);
    }
    *y0 = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    *y1 = _mm512_reduce_add_ps(_mm512_add_ps(b0, b1));
}

__attribute__((target(AVX512))) static inline float dot_bf16_avx512(const uint16_t *w,
                                                                     const float *x, int64_t n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0;
    int64_t c = 0;
    for (; c + 64 <= n; c += 64) {   /* two of the 32-column steps below */
        a0 = _mm512_fmadd_ps(load16_bf16(w + c), _mm512_loadu_ps(x + c), a0);
        a1 = _mm512_fmadd_ps(load16_bf16(w + c + 16), _mm512_loadu_ps(x + c + 16), a1);
        a0 = _mm512_fmadd_ps(load16_bf16(w + c + 32), _mm512_loadu_ps(x + c + 32), a0);
        a1 = _mm512_fmadd_ps(load16_bf16(w + c + 48), _mm512_loadu_ps(x + c + 48), a1);
    }
    if (c + 32 <= n) {
        a0 = _mm512_fmadd_ps(load16_bf16(w + c), _mm512_loadu_ps(x + c), a0);
        a1 = _mm512_fmadd_ps(load16_bf16(w + c + 16), _mm512_loadu_ps(x + c + 16), a1);
        c += 32;
    }
    if (c + 16 <= n) {
        a0 = _mm512_fmadd_ps(load16_bf16(w + c), _mm512_loadu_ps(x + c), a0);
        c += 16;
    }
    if (c < n) {
        __mmask16 m = tail_mask(n - c);
        a1 = _mm512_fmadd_ps(load_tail_bf16(w + c, m), _mm512_maskz_loadu_ps(m, x + c), a1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

__attribute__((target(AVX512))) static inline void dot2_bf16_avx512(const uint16_t *w0,
                                                                     const uint16_t *w1,
                                                                     const float *x, int64_t n,
                                                                     float *y0, float *y1) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, b0 = a0, b1 = a0;
    int64_t c = 0;
    for (; c + 32 <= n; c += 32) {
        prefetch_ahead(w0 + c);
        prefetch_ahead(w1 + c);
        __m512 x0 = _mm512_loadu_ps(x + c), x1 = _mm512_loadu_ps(x + c + 16);
        a0 = _mm512_fmadd_ps(load16_bf16(w0 + c), x0, a0);
        b0 = _mm512_fmadd_ps(load16_bf16(w1 + c), x0, b0);
        a1 = _mm512_fmadd_ps(load16_bf16(w0 + c + 16), x1, a1);
        b1 = _mm512_fmadd_ps(load16_bf16(w1 + c + 16), x1, b1);
    }
    if (c + 16 <= n) {
        __m512 xv = _mm512_loadu_ps(x + c);
        a0 = _mm512_fmadd_ps(load16_bf16(w0 + c), xv, a0);
        b0 = _mm512_fmadd_ps(load16_bf16(w1 + c), xv, b0);
        c += 16;
    }
    if (c < n) {
        __mmask16 m = tail_mask(n - c);
        __m512 xv = _mm512_maskz_loadu_ps(m, x + c);
        a1 = _mm512_fmadd_ps(load_tail_bf16(w0 + c, m), xv, a1);
        b1 = _mm512_fmadd_ps(load_tail_bf16(w1 + c, m), xv, b1);
    }
    *y0 = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    *y1 = _mm512_reduce_add_ps(_mm512_add_ps(b0, b1));
}

__attribute__((target(AVX512))) static void rows_f32_avx512(const void *W, const float *x,
                                                            float *y, int64_t cols,
                                                            int64_t begin, int64_t end) {
    const float *w = W;
    int64_t r = begin;
    for (; r + 2 <= end; r += 2)
        dot2_f32_avx512(w + r * cols, w + (r + 1) * cols, x, cols, y + r, y + r + 1);
    if (r < end) y[r] = dot_f32_avx512(w + r * cols, x, cols);
}

__attribute__((target(AVX512))) static void rows_bf16_avx512(const void *W, const float *x,
                                                             float *y, int64_t cols,
                                                             int64_t begin, int64_t end) {
    const uint16_t *w = W;
    int64_t r = begin;
    for (; r + 2 <= end; r += 2)
        dot2_bf16_avx512(w + r * cols, w + (r + 1) * cols, x, cols, y + r, y + r + 1);
    if (r < end) y[r] = dot_bf16_avx512(w + r * cols, x, cols);
}

/* Sixteen weights from column c of a row, F32 or BF16 widened. */
__attribute__((target(AVX512), always_inline)) static inline __m512 load16_w(const void *w,
                                                                              int64_t c,
                                                                              bool bf16) {
    return bf16 ? load16_bf16((const uint16_t *)w + c) : load16_f32((const float *)w + c);
}

__attribute__((target(AVX512), always_inline)) static inline __m512 load_tail_w(const void *w,
                                                                                 int64_t c,
                                                                                 __mmask16 m,
                                                                                 bool bf16) {
    return bf16 ? load_tail_bf16((const uint16_t *)w + c, m)
                : _mm512_maskz_loadu_ps(m, (const float *)w + c);
}

/* Four rows a quarter of a block apart (w0 + i * quarter_bytes, y + i *
 * ystride), x loaded once for the four: four long streams through W. Each
 * row is summed step for step as dot_*_avx512 sums it alone (its 64-column
 * step is two of these 32-column ones), so the bits do not depend on the
 * order. The sums are named one by one: as arrays, GCC kept them on the
 * stack. */
__attribute__((target(AVX512), always_inline)) static inline void dot4_avx512(
    const char *w0, size_t quarter_bytes, bool bf16, const float *x, int64_t n, float *y,
    int64_t ystride) {
    const char *w1 = w0 + quarter_bytes, *w2 = w1 + quarter_bytes, *w3 = w2 + quarter_bytes;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, b0 = a0, b1 = a0, c0 = a0, c1 = a0, d0 = a0,
           d1 = a0;
    int64_t c = 0;
    for (; c + 32 <= n; c += 32) {
        __m512 x0 = _mm512_loadu_ps(x + c), x1 = _mm512_loadu_ps(x + c + 16);
        a0 = _mm512_fmadd_ps(load16_w(w0, c, bf16), x0, a0);
        a1 = _mm512_fmadd_ps(load16_w(w0, c + 16, bf16), x1, a1);
        b0 = _mm512_fmadd_ps(load16_w(w1, c, bf16), x0, b0);
        b1 = _mm512_fmadd_ps(load16_w(w1, c + 16, bf16), x1, b1);
        c0 = _mm512_fmadd_ps(load16_w(w2, c, bf16), x0, c0);
        c1 = _mm512_fmadd_ps(load16_w(w2, c + 16, bf16), x1, c1);
        d0 = _mm512_fmadd_ps(load16_w(w3, c, bf16), x0, d0);
        d1 = _mm512_fmadd_ps(load16_w(w3, c + 16, bf16), x1, d1);
    }
    if (c + 16 <= n) {
        __m512 xv = _mm512_loadu_ps(x + c);
        a0 = _mm512_fmadd_ps(load16_w(w0, c, bf16), xv, a0);
        b0 = _mm512_fmadd_ps(load16_w(w1, c, bf16), xv, b0);
        c0 = _mm512_fmadd_ps(load16_w(w2, c, bf16), xv, c0);
        d0 = _mm512_fmadd_ps(load16_w(w3, c, bf16), xv, d0);
        c += 16;
    }
    if (c < n) {
        __mmask16 m = tail_mask(n - c);
        __m512 xv = _mm512_maskz_loadu_ps(m, x + c);
        a1 = _mm512_fmadd_ps(load_tail_w(w0, c, m, bf16), xv, a1);
        b1 = _mm512_fmadd_ps(load_tail_w(w1, c, m, bf16), xv, b1);
        c1 = _mm512_fmadd_ps(load_tail_w(w2, c, m, bf16), xv, c1);
        d1 = _mm512_fmadd_ps(load_tail_w(w3, c, m, bf16), xv, d1);
    }
    y[0] = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    y[ystride] = _mm512_reduce_add_ps(_mm512_add_ps(b0, b1));
    y[2 * ystride] = _mm512_reduce_add_ps(_mm512_add_ps(c0, c1));
    y[3 * ystride] = _mm512_reduce_add_ps(_mm512_add_ps(d0, d1));
}

/* Rows [begin, end) of a product's first quarter, each with the rows 1, 2
 * and 3 quarters (quarter rows) further on: four streams through W. */
__attribute__((target(AVX512))) static void quads_f32_avx512(const void *W, const float *x,
                                                             float *y, int64_t cols,
                                                             int64_t quarter, int64_t begin,
                                                             int64_t end) {
    const float *w = W;
    size_t quarter_bytes = (size_t)(quarter * cols) * sizeof *w;
    for (int64_t r = begin; r < end; r++)
        dot4_avx512((const char *)(w + r * cols), quarter_bytes, false, x, cols, y + r, quarter);
}

__attribute__((target(AVX512))) static void quads_bf16_avx512(const void *W, const float *x,
                                                              float *y, int64_t cols,
                                                              int64_t quarter, int64_t begin,
                                                              int64_t end) {
    const uint16_t *w = W;
    size_t quarter_bytes = (size_t)(quarter * cols) * sizeof *w;
    for (int64_t r = begin; r < end; r++)
        dot4_avx512((const char *)(w + r * cols), quarter_bytes, true, x, cols, y + r, quarter);
}

/* One row after another: a single sequential stream of W (see gemv_row_order). */
__attribute__((target(AVX512))) static void rows_f32_avx512_seq(const void *W, const float *x,
                                                                float *y, int64_t cols,
                                                                int64_t begin, int64_t end) {
    const float *w = W;
    for (int64_t r = begin; r < end; r++) y[r] = dot_f32_avx512(w + r * cols, x, cols);
}

__attribute__((target(AVX512))) static void rows_bf16_avx512_seq(const void *W, const float *x,
                                                                 float *y, int64_t cols,
                                                                 int64_t begin, int64_t end) {
    const uint16_t *w = W;
    for (int64_t r = begin; r < end; r++) y[r] = dot_bf16_avx512(w + r * cols, x, cols);
}

#endif /* TL_HAVE_X86 */

/* ---- exp over an array ---------------------------------------------------- */

/* e^x as Cephes's expf computes it, eight lanes at a time: x = n ln2 + r with
 * |r| <= ln2 / 2 (ln2 in two parts, so r is exact), e^r by a degree-7
 * polynomial, times 2^n built in the exponent bits. Within 2 ulp of e^x
 * (tests/core/test_kernels.c measures it against exp in double). Beyond the
 * float range: +inf above 88.72, 0 below -87.33 (where e^x is subnormal or
 * less: a masked attention score gives exactly 0), NaN stays NaN. */
#define EXP_HI 88.7228f
#define EXP_LO -87.3365f

static void exp_portable(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] < EXP_LO ? 0.0f : expf(x[i]);
}

#ifdef TL_HAVE_X86
__attribute__((target("avx2,fma"))) static inline __m256 exp8(__m256 x) {
    const __m256 hi = _mm256_set1_ps(EXP_HI), lo = _mm256_set1_ps(EXP_LO);
    __m256 too_big = _mm256_cmp_ps(x, hi, _CMP_GT_OQ), too_small = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    __m256 v = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(v, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), v);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    /* 2^n for n in [-126, 128]: n = 128 (x near 88.72) as 2^127 * 2. */
    __m256 top = _mm256_cmp_ps(n, _mm256_set1_ps(127.0f), _CMP_GT_OQ);
    n = _mm256_min_ps(n, _mm256_set1_ps(127.0f));
    __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n),
                                                      _mm256_set1_epi32(127)), 23);
    __m256 e = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
    e = _mm256_mul_ps(e, _mm256_blendv_ps(_mm256_set1_ps(1.0f), _mm256_set1_ps(2.0f), top));
    e = _mm256_blendv_ps(e, _mm256_set1_ps(INFINITY), too_big);
    e = _mm256_blendv_ps(e, _mm256_setzero_ps(), too_small);
    return _mm256_blendv_ps(e, x, nan);
}

/* exp8's steps sixteen lanes at a time, the same operations in the same
 * order, so each lane's bits equal exp8's (the tests compare the paths). */
__attribute__((target(AVX512))) static inline __m512 exp16(__m512 x) {
    const __m512 hi = _mm512_set1_ps(EXP_HI), lo = _mm512_set1_ps(EXP_LO);
    __mmask16 too_big = _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ);
    __mmask16 too_small = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
    __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    __m512 v = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(v, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), v);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    __mmask16 top = _mm512_cmp_ps_mask(n, _mm512_set1_ps(127.0f), _CMP_GT_OQ);
    n = _mm512_min_ps(n, _mm512_set1_ps(127.0f));
    __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n),
                                                      _mm512_set1_epi32(127)), 23);
    __m512 e = _mm512_mul_ps(p, _mm512_castsi512_ps(bits));
    e = _mm512_mask_mul_ps(e, top, e, _mm512_set1_ps(2.0f));
    e = _mm512_mask_blend_ps(too_big, e, _mm512_set1_ps(INFINITY));
    e = _mm512_mask_blend_ps(too_small, e, _mm512_setzero_ps());
    return _mm512_mask_blend_ps(nan, e, x);
}

/* The tail through masked loads and stores: its lanes past n read nothing. */
__attribute__((target(AVX512))) static void exp_avx512(const float *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, exp16(_mm512_loadu_ps(x + i)));
    if (i < n) {
        __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(y + i, m, exp16(_mm512_maskz_loadu_ps(m, x + i)));
    }
}

__attribute__((target("avx2,fma"))) static void exp_avx2(const float *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, exp8(_mm256_loadu_ps(x + i)));
    if (i < n) {   /* the tail through one padded vector, so every lane agrees */
        float in[8] = {0}, out[8];
        memcpy(in, x + i, (size_t)(n - i) * sizeof *in);
        _mm256_storeu_ps(out, exp8(_mm256_loadu_ps(in)));
        memcpy(y + i, out, (size_t)(n - i) * sizeof *out);
    }
}
#endif

void tl_exp_f32_n(const float *x, float *y, int64_t n) {
    if (n <= 0) return;
#ifdef TL_HAVE_X86
    if (use_avx512()) {
        exp_avx512(x, y, n);
        return;
    }
    if (use_avx2()) {
        exp_avx2(x, y, n);
        return;
    }
#endif
    exp_portable(x, y, n);
}

/* ---- reading ahead (prefetch.c plans, pool.c reads) ----------------------- */

static _Thread_local bool prefetch_held;

void tl_prefetch_hold(bool on) { prefetch_held = on; }

static bool prefetch_on(void) {
    static atomic_int on = -1;   /* read once: the switch is for a whole run */
    int v = atomic_load_explicit(&on, memory_order_relaxed);
    if (v < 0) {
        const char *s = getenv("TINYLLM_PREFETCH");
        v = !(s && strcmp(s, "0") == 0);
        atomic_store_explicit(&on, v, memory_order_relaxed);
    }
    return v;
}

void tl_prefetch_after_product(const tl_region *operand) {
    if (prefetch_held || tl_pool_inside_chunk() || !prefetch_on() || tl_num_threads() < 2)
        return;
    tl_region run[TL_PREFETCH_REGIONS];
    tl_pool_prefetch(run, tl_prefetch_plan(operand, run));
}

/* ---- matrix-vector products --------------------------------------------- */

/* How the AVX-512 loops take a block's rows (the bits are the same every
 * way): 2, in pairs (dot2: two streams a row apart sharing x's loads), the
 * faster on Intel's Xeons (course/MS-L7/README.md 4.3); 1, one after another
 * (one sequential stream); 4, four streams a quarter of the block apart
 * (dot4). On AMD's Zen 5 the pairs' two short interleaved streams held a
 * core at 0.6-0.7 of its read rate (4.9); one stream reads at 0.83 (bf16) and
 * 0.94 (f32) of a one-stream read loop, four streams at 0.98 and 1.04 of it
 * (4.17). TINYLLM_GEMV_ROWS=1, 2 or 4 chooses. */
static int gemv_row_order(void) {
#ifdef TL_HAVE_X86
    const char *s = getenv("TINYLLM_GEMV_ROWS");
    if (s && (strcmp(s, "1") == 0 || strcmp(s, "2") == 0 || strcmp(s, "4") == 0))
        return s[0] - '0';
    __builtin_cpu_init();
    return __builtin_cpu_is("amd") ? 4 : 2;
#else
    return 2;
#endif
}

/* Null data with a non-empty shape is a caller's bug: say so, touch nothing. */
static bool gemv_args_ok(const char *op, const void *W, const float *x, float *y,
                         int64_t rows, int64_t cols) {
    if (rows <= 0) return false;                  /* nothing to write */
    if (!y || (cols > 0 && (!W || !x))) {
        tl_fail("%s: NULL %s for a [%lld, %lld] product; pass the weight, input and "
                "output arrays", op, !y ? "y" : !W ? "W" : "x", (long long)rows,
                (long long)cols);
        return false;
    }
    return true;
}

/* The smallest block of rows two threads share a product in: 16 KB of BF16. */
enum { ROWS_BLOCK_WEIGHTS = 8192 };

typedef struct {
    rows_fn *fn;
    quads_fn *quads;
    const void *W;
    const float *x;
    float *y;
    int64_t rows, cols, quarter;
} rows_job;

static void rows_range(void *ctx, int64_t begin, int64_t end) {
    const rows_job *j = ctx;
    j->fn(j->W, j->x, j->y, j->cols, begin, end);
}

static void quads_range(void *ctx, int64_t begin, int64_t end) {
    const rows_job *j = ctx;
    j->quads(j->W, j->x, j->y, j->cols, j->quarter, begin, end);
}

/* Rows shared by tl_parallel_range: each thread reads its part of W as one
 * stream, and threads finish within a block of about ROWS_BLOCK_WEIGHTS
 * weights (an even number of rows, so the pairs kernels keep their pairs).
 * With quads, the range is the first quarter's rows, so each thread's part
 * is four streams, one in each quarter; the last rows % 4 go one by one. */
static void split_rows(rows_fn *fn, quads_fn *quads, const void *W, const float *x, float *y,
                       int64_t rows, int64_t cols) {
    rows_job j = {fn, quads, W, x, y, rows, cols, rows / 4};
    int threads = gemv_threads(rows, cols);
    if (quads && j.quarter > 0) {
        int64_t least = ROWS_BLOCK_WEIGHTS / cols / 4;
        tl_parallel_range(threads, j.quarter, least > 1 ? least : 1, quads_range, &j);
        if (rows > 4 * j.quarter) fn(W, x, y, cols, 4 * j.quarter, rows);
        return;
    }
    int64_t least = ROWS_BLOCK_WEIGHTS / cols / 2 * 2;
    tl_parallel_range(threads, rows, least > 2 ? least : 2, rows_range, &j);
}

void tl_gemv_f32(const float *W, const float *x, float *y, int64_t rows, int64_t cols) {
    if (!gemv_args_ok("tl_gemv_f32", W, x, y, rows, cols)) return;
    if (cols <= 0) { memset(y, 0, (size_t)rows * sizeof *y); return; }
    rows_fn *fn = rows_f32_portable;
    quads_fn *quads = NULL;
#ifdef TL_HAVE_X86
    if (use_avx512()) {
        int order = gemv_row_order();
        fn = order == 2 ? rows_f32_avx512 : rows_f32_avx512_seq;
        if (order == 4) quads = quads_f32_avx512;
    } else if (use_avx2()) {
        fn = rows_f32_avx2;
    }
#endif
    split_rows(fn, quads, W, x, y, rows, cols);
    tl_prefetch_after_product(&(tl_region){W, (size_t)(rows * cols) * sizeof *W, 1, 0});
}

void tl_gemv_bf16(const uint16_t *W, const float *x, float *y, int64_t rows, int64_t cols) {
    if (!gemv_args_ok("tl_gemv_bf16", W, x, y, rows, cols)) return;
    if (cols <= 0) { memset(y, 0, (size_t)rows * sizeof *y); return; }
    rows_fn *fn = rows_bf16_portable;
    quads_fn *quads = NULL;
#ifdef TL_HAVE_X86
    if (use_avx512()) {
        int order = gemv_row_order();
        fn = order == 2 ? rows_bf16_avx512 : rows_bf16_avx512_seq;
        if (order == 4) quads = quads_bf16_avx512;
    } else if (use_avx2()) {
        fn = rows_bf16_avx2;
    }
#endif
    split_rows(fn, quads, W, x, y, rows, cols);
    tl_prefetch_after_product(&(tl_region){W, (size_t)(rows * cols) * sizeof *W, 1, 0});
}

typedef struct {
    cols_fn *fn;
    const void *W;
    const float *p;
    float *y;
    int64_t rows, cols, per_chunk;   /* per_chunk: a multiple of 32 columns */
} cols_job;

static void cols_chunk(void *ctx, int64_t c) {
    const cols_job *j = ctx;
    int64_t begin = c * j->per_chunk, end = begin + j->per_chunk;
    j->fn(j->W, j->p, j->y, j->rows, j->cols, begin, end < j->cols ? end : j->cols);
}

/* Chunks of whole 32-column groups, so each runs the widest loop. */
static void split_cols(cols_fn *fn, const void *W, const float *p, float *y, int64_t rows,
                       int64_t cols) {
    int64_t groups = (cols + 31) / 32;
    int threads = gemv_threads(groups, rows * 32);
    cols_job j = {fn, W, p, y, rows, cols, 32 * chunk_size(groups, (double)rows * 32, threads)};
    tl_parallel_chunks(threads, (cols + j.per_chunk - 1) / j.per_chunk, cols_chunk, &j);
}

void tl_gemv_t_f32(const float *W, const float *p, float *y, int64_t rows, int64_t cols) {
    if (cols <= 0) return;                        /* nothing to write */
    if (!y || (rows > 0 && (!W || !p))) {
        tl_fail("tl_gemv_t_f32: NULL %s for a [%lld, %lld] product; pass the weight, input and "
                "output arrays", !y ? "y" : !W ? "W" : "p", (long long)rows, (long long)cols);
        return;
    }
    if (rows <= 0) { memset(y, 0, (size_t)cols * sizeof *y); return; }
    cols_fn *fn = cols_f32_portable;
#ifdef TL_HAVE_X86
    if (use_avx2()) fn = cols_f32_avx2;
#endif
    split_cols(fn, W, p, y, rows, cols);
}

void tl_gemv_t_bf16(const uint16_t *W, const float *p, float *y, int64_t rows, int64_t cols) {
    if (cols <= 0) return;                        /* nothing to write */
    if (!y || (rows > 0 && (!W || !p))) {
        tl_fail("tl_gemv_t_bf16: NULL %s for a [%lld, %lld] product; pass the weight, input and "
                "output arrays", !y ? "y" : !W ? "W" : "p", (long long)rows, (long long)cols);
        return;
    }
    if (rows <= 0) { memset(y, 0, (size_t)cols * sizeof *y); return; }
    cols_fn *fn = cols_bf16_portable;
#ifdef TL_HAVE_X86
    if (use_avx2()) fn = cols_bf16_avx2;
#endif
    split_cols(fn, W, p, y, rows, cols);
}

/* ---- matrix-matrix product ---------------------------------------------- */

/* Sizes BLAS can take and arrays that are there; false (an error set, or
 * nothing to do) otherwise. */
static bool gemm_args_ok(const char *op, const void *A, const void *B, float *C, int64_t M,
                         int64_t N, int64_t K) {
    if (M <= 0 || N <= 0) return false;
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX) {
        /* OpenBLAS (Debian's build) takes 32-bit int sizes. */
        tl_fail("%s: [%lld, %lld] @ [%lld, %lld]^T has a size above %d, the largest OpenBLAS "
                "accepts; split the product into smaller blocks", op, (long long)M,
                (long long)K, (long long)N, (long long)K, INT_MAX);
        return false;
    }
    if (!C || (K > 0 && (!A || !B))) {
        tl_fail("%s: NULL %s for [%lld, %lld] @ [%lld, %lld]^T; pass all three arrays", op,
                !C ? "C" : !A ? "A" : "B", (long long)M, (long long)K, (long long)N,
                (long long)K);
        return false;
    }
    return true;
}

/* OpenBLAS picks its kernels by CPU model when it loads. Debian 12's 0.3.21
 * does not know recent models (this course's 2-core Xeon, family 6 model
 * 106, among them) and falls back to its Prescott (SSE3) kernels, 4 to 6
 * times slower at prefill's shapes than its AVX-512 ones. Before our first
 * BLAS call, once, we ask it to choose again by the instruction sets the CPU
 * has (SkylakeX for AVX-512 F/CD/BW/DQ/VL, else Haswell for AVX2 and FMA),
 * through the two functions its dynamic builds export for exactly this
 * (gotoblas_dynamic_quit, then gotoblas_dynamic_init, which reads
 * OPENBLAS_CORETYPE). Nothing changes when the user set OPENBLAS_CORETYPE,
 * when OpenBLAS recognised the CPU, or when the library is not a dynamic
 * build (the symbols are weak: absent, they are NULL). */
extern void gotoblas_dynamic_init(void) __attribute__((weak));
extern void gotoblas_dynamic_quit(void) __attribute__((weak));

static bool is_fallback_core(const char *core) {
    static const char *const OLD[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem",
                                      "Atom", "Katmai", "Coppermine", "Northwood", "Banias",
                                      "Unknown"};
    for (size_t i = 0; core && i < sizeof OLD / sizeof OLD[0]; i++)
        if (strcasecmp(core, OLD[i]) == 0) return true;
    return false;
}

static void choose_blas_core(void) {
#ifdef TL_HAVE_X86
    const char *user = getenv("OPENBLAS_CORETYPE");
    if ((user && *user) || !gotoblas_dynamic_init || !gotoblas_dynamic_quit) return;
    if (!is_fallback_core(openblas_get_corename())) return;
    __builtin_cpu_init();
    const char *want = NULL;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        want = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        want = "Haswell";
    if (!want) return;
    setenv("OPENBLAS_CORETYPE", want, 1);
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init();
    unsetenv("OPENBLAS_CORETYPE");   /* leave the environment as we found it */
#endif
}

/* OpenBLAS runs on one thread: our pool (pool.c) splits every GEMM, so that
 * there is one set of threads in the process. With OpenBLAS's own threads
 * as well, each pool's threads spun for the core the other pool's were
 * working on, every time a prefill went from a GEMM to a widening or an
 * element-wise op: a BF16 GEMM on two threads ran no faster than on one.
 * Told to use one thread, OpenBLAS's pthread build still keeps the server
 * threads it started as it loaded, which spin (sched_yield) for a few
 * hundred milliseconds before they sleep, on the core our second thread
 * needs, just as a program loads a model and runs its first prefill (a
 * 2-thread BF16 prefill in a fresh process: 130 to 200 ms, against 130
 * without them). So as the program starts they are stopped, through the
 * function OpenBLAS itself runs before a fork (weak: absent in other
 * builds). The count is set here only: 0.3.21's openblas_set_num_threads
 * starts a stopped server again. */
extern void blas_thread_shutdown_(void) __attribute__((weak));

__attribute__((constructor)) static void one_blas_thread(void) {
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_) blas_thread_shutdown_();
}

static void sync_blas_threads(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, choose_blas_core);
}

const char *tl_blas_prepare(void) {
    sync_blas_threads();
    return openblas_get_corename();
}

bool tl_gemm_on_avx512(void) { return tl_avx512_gemm_wanted(tl_blas_prepare()); }

const char *tl_gemm_kernels(void) {
    static _Thread_local char name[64];
    const char *core = tl_blas_prepare();
    if (tl_avx512_gemm_wanted(core)) return "AVX-512 tiles (gemm_avx512.c)";
    snprintf(name, sizeof name, "OpenBLAS %s", core);
    return name;
}

/* How GEMM work is cut among threads: C's columns (B's rows in the Linear
 * layout) in blocks of at most GEMM_BLOCK_MAX, at least gemm_blocks_min of
 * them when N allows blocks of 64: two threads then share even a [576, 576]
 * projection. On OpenBLAS a block is a multiple of 16 columns (its widest
 * tile), and each block is one call, which packs A again (at 112-column
 * blocks that was 6% of a prefill), hence 4 blocks. gemm_avx512.c packs
 * nothing of A, and its tiles are 32 columns wide: a multiple of 32, 6
 * blocks, so that N = 576 is 6 blocks of 96, not 4 of 144, each ending in a
 * half-empty tile (2 threads, 128 x 576 x 1536: 669 -> 602 us). On OpenBLAS
 * a block of a BF16 B is widened into the thread's scratch (at most 512 x K
 * floats, in L2 at SmolLM2's widths) just before its product; gemm_avx512.c
 * widens it into its panels instead. Blocks depend on N and the GEMM alone,
 * so C does not depend on the thread count (OpenBLAS's sums do depend on how
 * a product is cut). Under GEMM_PARALLEL_MIN multiply-adds a product runs on
 * the calling thread. When N gives fewer than gemm_blocks_min blocks
 * (attention's products: N is 64 or the keys' count), A's rows are cut too,
 * in blocks of a multiple of 8 rows that depend on M and N alone. */
enum { GEMM_BLOCK_MAX = 512, GEMM_BLOCK_LEAST = 64, GEMM_ROWS_LEAST = 32 };
#define GEMM_PARALLEL_MIN ((double)(1 << 20))

static int64_t gemm_blocks_min(bool avx512) { return avx512 ? 6 : 4; }

static int64_t gemm_block_cols(int64_t N, bool avx512) {
    int64_t step = avx512 ? 32 : 16;
    int64_t blocks = (N + GEMM_BLOCK_MAX - 1) / GEMM_BLOCK_MAX;
    int64_t most = (N + GEMM_BLOCK_LEAST - 1) / GEMM_BLOCK_LEAST;   /* blocks of 64 */
    int64_t want = most < gemm_blocks_min(avx512) ? most : gemm_blocks_min(avx512);
    if (blocks < want) blocks = want;
    if (blocks < 1) blocks = 1;
    int64_t cols = (N + blocks - 1) / blocks;
    return (cols + step - 1) / step * step;
}

static int64_t gemm_block_rows(int64_t M, int64_t col_blocks, bool avx512) {
    int64_t want = (gemm_blocks_min(avx512) + col_blocks - 1) / col_blocks;
    int64_t most = M / GEMM_ROWS_LEAST;
    int64_t blocks = want < most ? want : most;
    if (blocks <= 1) return M;
    int64_t rows = (M + blocks - 1) / blocks;
    return (rows + 7) / 8 * 8;
}

typedef struct {
    bool trans_a, trans_b;
    int64_t M, N, K, lda, ldb, ldc, block, row_block;
    const float *A, *B;
    const uint16_t *B16;      /* instead of B: BF16 [N, K], dense */
    const uint16_t *packed;   /* A split for AMX tiles (gemm_amx.c), or NULL */
    float *C;
    bool avx512;              /* on AVX-512 FMAs (gemm_avx512.c), not OpenBLAS */
} gemm_job;

/* A thread's widened block of a BF16 B, kept for its next block. */
static _Thread_local float *widened;
static _Thread_local size_t widened_floats;

static float *widen_scratch(size_t floats) {
    if (widened_floats < floats) {
        free(widened);
        widened = malloc(floats * sizeof *widened);
        widened_floats = widened ? floats : 0;
    }
    return widened;
}

/* C's columns [c0, c0 + n) of a BF16 product by dot products: the block
 * when its scratch cannot be had (a chunk has no way to fail). */
static void gemm_bf16_by_dots(const gemm_job *j, int64_t m0, int64_t rows, int64_t c0,
                              int64_t n) {
    for (int64_t m = m0; m < m0 + rows; m++)
        for (int64_t c = c0; c < c0 + n; c++)
            j->C[m * j->ldc + c] = dot_bf16_portable(j->B16 + c * j->K, j->A + m * j->lda, j->K);
}

/* C's rows [m0, m0 + rows) by columns [c0, c0 + n) through gemm_avx512.c
 * or OpenBLAS (for which a BF16 B is widened first). */
static void gemm_block(const gemm_job *j, int64_t m0, int64_t rows, int64_t c0, int64_t n) {
    const float *b = j->trans_b ? j->B + c0 * j->ldb : j->B + c0;
    const float *a = j->trans_a ? j->A + m0 : j->A + m0 * j->lda;
    float *c = j->C + m0 * j->ldc + c0;
    int64_t ldb = j->ldb;
    if (j->avx512 && !j->trans_a) {   /* BF16 read in place; false: no scratch for a panel */
        if (j->B16 && tl_avx512_gemm_bf16_nt(a, j->lda, j->B16 + c0 * j->K, j->K, c, j->ldc,
                                             rows, n, j->K))
            return;
        if (!j->B16 && j->trans_b && tl_avx512_gemm_nt(a, j->lda, b, ldb, c, j->ldc, rows, n,
                                                       j->K))
            return;
        if (!j->B16 && !j->trans_b) {
            tl_avx512_gemm_nn(a, j->lda, b, ldb, c, j->ldc, rows, n, j->K);
            return;
        }
    }
    if (j->B16) {
        float *wide = widen_scratch((size_t)(n * j->K));
        if (!wide) {
            gemm_bf16_by_dots(j, m0, rows, c0, n);
            return;
        }
        tl_bf16_to_f32_n(j->B16 + c0 * j->K, wide, (size_t)(n * j->K));
        b = wide;
        ldb = j->K;
    }
    bool trans_b = j->trans_b || j->B16;
    cblas_sgemm(CblasRowMajor, j->trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, (int)rows, (int)n, (int)j->K, 1.0f, a,
                (int)j->lda, b, (int)ldb, 0.0f, c, (int)j->ldc);
}

/* A block of C: on AMX tiles its columns' multiple of 16 (every block but
 * N's last is one), the rest through gemm_block. */
static void gemm_chunk(void *ctx, int64_t chunk) {
    const gemm_job *j = ctx;
    int64_t col_blocks = (j->N + j->block - 1) / j->block;
    int64_t m0 = chunk / col_blocks * j->row_block, c0 = chunk % col_blocks * j->block;
    int64_t rows = j->M - m0 < j->row_block ? j->M - m0 : j->row_block;
    int64_t n = j->N - c0 < j->block ? j->N - c0 : j->block;
    int64_t tiled = j->packed ? n / 16 * 16 : 0;   /* AMX: row_block is M */
    if (tiled > 0)
        tl_amx_gemm_rows(j->packed, j->M, j->K, j->B16 + c0 * j->K, tiled, j->C + c0, j->ldc);
    if (tiled < n) gemm_block(j, m0, rows, c0 + tiled, n - tiled);
}

/* Columns [begin * 32, end * 32) of C, all of A's rows (tl_parallel_range). */
static void gemm_cols_range(void *ctx, int64_t begin, int64_t end) {
    const gemm_job *j = ctx;
    int64_t c0 = begin * 32, stop = end * 32 < j->N ? end * 32 : j->N;
    gemm_block(j, 0, j->M, c0, stop - c0);
}

static void gemm_run(gemm_job *j) {
    sync_blas_threads();
    j->avx512 = tl_avx512_gemm_wanted(openblas_get_corename());
    j->block = gemm_block_cols(j->N, j->avx512);
    int64_t col_blocks = (j->N + j->block - 1) / j->block;
    j->row_block = j->packed ? j->M : gemm_block_rows(j->M, col_blocks, j->avx512);
    bool small = (double)j->M * (double)j->N * (double)j->K < GEMM_PARALLEL_MIN;
    /* On gemm_avx512.c's A @ B^T each element of C is one chain of FMAs however
     * the product is cut, so threads share groups of 32 columns (a tile's width)
     * through tl_parallel_range and finish within a group of each other; with
     * blocks fixed in advance one thread waited up to a block, a sixth of the
     * product, for the other (README 4.13). */
    if (j->avx512 && !j->trans_a && !j->packed && (j->B16 || j->trans_b) && !small &&
        j->row_block == j->M) {
        tl_parallel_range(tl_num_threads(), (j->N + 31) / 32, 1, gemm_cols_range, j);
        return;
    }
    tl_parallel_chunks(small ? 1 : tl_num_threads(),
                       col_blocks * ((j->M + j->row_block - 1) / j->row_block), gemm_chunk, j);
}

void tl_sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A,
              int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc) {
    if (!gemm_args_ok("tl_sgemm", A, B, C, M, N, K)) return;
    if (lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX) {
        tl_fail("tl_sgemm: leading dimensions %lld, %lld, %lld: one is above %d, the largest "
                "OpenBLAS accepts; split the product into smaller blocks", (long long)lda,
                (long long)ldb, (long long)ldc, INT_MAX);
        return;
    }
    if (K <= 0) {
        for (int64_t m = 0; m < M; m++) memset(C + m * ldc, 0, (size_t)N * sizeof *C);
        return;
    }
    gemm_job j = {.trans_a = trans_a, .trans_b = trans_b, .M = M, .N = N, .K = K, .lda = lda,
                  .ldb = ldb, .ldc = ldc, .A = A, .B = B, .C = C};
    gemm_run(&j);
}

void tl_gemm_f32_nt(const float *A, const float *B, float *C, int64_t M, int64_t N, int64_t K) {
    if (!gemm_args_ok("tl_gemm_f32_nt", A, B, C, M, N, K)) return;
    if (K <= 0) { memset(C, 0, (size_t)M * (size_t)N * sizeof *C); return; }
    gemm_job j = {.trans_b = true, .M = M, .N = N, .K = K, .lda = K, .ldb = K, .ldc = N,
                  .A = A, .B = B, .C = C};
    gemm_run(&j);
}

/* A's parts for the AMX tiles, the calling thread's (at most AMX_SLAB_BYTES,
 * kept for its next product): the pool's threads pack it, then every block's
 * product reads it. */
static _Thread_local uint16_t *amx_packed;
static _Thread_local size_t amx_packed_elements;

static uint16_t *amx_scratch(size_t elements) {
    if (amx_packed_elements < elements) {
        free(amx_packed);
        amx_packed = aligned_alloc(64, (elements * sizeof *amx_packed + 63) / 64 * 64);
        amx_packed_elements = amx_packed ? elements : 0;
    }
    return amx_packed;
}

/* With AMX (gemm_amx.c), a product of at least AMX_MIN_ROWS rows and K a
 * multiple of 32 goes to the tiles, A packed in slabs of rows whose parts
 * fit AMX_SLAB_BYTES (in L2, read by every block): W is read once per slab. */
enum { AMX_MIN_ROWS = 16, AMX_SLAB_BYTES = 2 << 20 };

typedef struct {
    const float *A;
    int64_t M, K;
    uint16_t *packed;
} amx_pack_job;

static void amx_pack_chunk(void *ctx, int64_t block) {
    const amx_pack_job *j = ctx;
    tl_amx_pack_block(j->A, j->K, j->M, j->K, j->packed, block);
}

static bool gemm_bf16_amx(const float *A, const uint16_t *B, float *C, int64_t M, int64_t N,
                          int64_t K) {
    if (M < AMX_MIN_ROWS || K % 32 != 0 || N < 16 || !tl_amx_ready()) return false;
    size_t row_bytes = tl_amx_packed_elements(32, K) / 32 * sizeof(uint16_t);   /* a row, split */
    int64_t slab = (int64_t)(AMX_SLAB_BYTES / row_bytes) / 32 * 32;
    if (slab < 32) slab = 32;
    if (slab > M) slab = M;
    uint16_t *packed = amx_scratch(tl_amx_packed_elements(slab, K));
    if (!packed) return false;
    for (int64_t m0 = 0; m0 < M; m0 += slab) {
        int64_t rows = M - m0 < slab ? M - m0 : slab;
        amx_pack_job pack = {A + m0 * K, rows, K, packed};
        tl_parallel_chunks(tl_num_threads(), tl_amx_blocks(rows), amx_pack_chunk, &pack);
        gemm_job j = {.trans_b = true, .M = rows, .N = N, .K = K, .lda = K, .ldb = K, .ldc = N,
                      .A = A + m0 * K, .B16 = B, .packed = packed, .C = C + m0 * N};
        gemm_run(&j);
    }
    return true;
}

/* BLAS has no bf16 GEMM that reads f32 activations, so each thread widens
 * the block of B it is about to multiply (gemm_chunk): B is read once and
 * never widened whole, and the widened block is still in L2 when OpenBLAS
 * packs it. gemm_avx512.c reads the BF16 block into its panels. A CPU with
 * AMX multiplies BF16 tiles instead (gemm_amx.c). */
int tl_gemm_bf16_nt(const float *A, const uint16_t *B, float *C, int64_t M, int64_t N,
                    int64_t K) {
    if (M <= 0 || N <= 0) return 0;
    if (!gemm_args_ok("tl_gemm_bf16_nt", A, B, C, M, N, K)) return -1;
    if (K <= 0) { memset(C, 0, (size_t)M * (size_t)N * sizeof *C); return 0; }
    if (gemm_bf16_amx(A, B, C, M, N, K)) return 0;
    gemm_job j = {.trans_b = true, .M = M, .N = N, .K = K, .lda = K, .ldb = K, .ldc = N,
                  .A = A, .B16 = B, .C = C};
    gemm_run(&j);
    return 0;
}
