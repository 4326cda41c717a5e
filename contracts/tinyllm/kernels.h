/* tinyllm/kernels.h: the hot loops of inference, on raw row-major arrays.
 *
 * Decode reads every weight once per token, so a matrix-vector product is
 * bound by memory bandwidth: these kernels stream each weight row once,
 * share blocks of rows among threads (TINYLLM_THREADS, default: all cores;
 * a product under 64K weights runs on the calling thread; tl_parallel_chunks
 * below), and widen bf16 to f32 in registers. Each result element is
 * computed by one thread, so results do not depend on the thread count.
 * AVX-512 or AVX2+FMA loops are chosen at run time by the CPU
 * (TINYLLM_SIMD=avx2 stops at AVX2, TINYLLM_SIMD=0 forces the portable ones).
 *
 * Arrays are the caller's; nothing is allocated but the BF16 GEMM scratch. Bad
 * arguments write nothing and set an error (tensor.h): "<kernel>: NULL W for a
 * [3, 4] product; pass the weight, input and output arrays", or, for GEMM,
 * "<kernel>: NULL B for [2, 4] @ [3, 4]^T; pass all three arrays" and
 * "<kernel>: [M, K] @ [N, K]^T has a size above 2147483647, the largest
 * OpenBLAS accepts; split the product into smaller blocks". An empty output
 * (rows, cols, M or N <= 0) is no work and no error; an empty inner size
 * writes zeros.
 */
#ifndef TINYLLM_KERNELS_H
#define TINYLLM_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

/* y[r] = sum_c W[r, c] * x[c] for r < rows; W is [rows, cols] row-major
 * (a Linear weight [out, in], or K [T, D] against one query). */
void tl_gemv_f32(const float *W, const float *x, float *y, int64_t rows, int64_t cols);
void tl_gemv_bf16(const uint16_t *W, const float *x, float *y, int64_t rows, int64_t cols);
/* y[c] = sum_r p[r] * W[r, c] for c < cols: the row vector p [rows] times W
 * [rows, cols] row-major (attention weights [T] times V [T, D]). Threads split
 * the columns. */
void tl_gemv_t_f32(const float *W, const float *p, float *y, int64_t rows, int64_t cols);
void tl_gemv_t_bf16(const uint16_t *W, const float *p, float *y, int64_t rows, int64_t cols);
/* A few inputs against one matrix, read once for all of them (a short
 * prefill's rows against a weight; attention's query heads of one group
 * against their shared K or V), arithmetic M times a GEMV's, memory traffic
 * one GEMV's. Row r of W is at W + r * ldw (ldw >= cols: a narrowed or
 * strided cache view is read in place), row m of X or P at X + m * ldx
 * (ldx >= the row's length); Y is [M, rows] (multi) or [M, cols] (t_multi),
 * row-major, dense. Threads split W's rows (multi) or columns (t_multi),
 * as the GEMVs do; each element is one thread's sum, so Y does not depend
 * on the thread count. At M = 1 with ldw = cols they are tl_gemv_* and
 * tl_gemv_t_* exactly; otherwise results may differ from those by rounding
 * only (another order of the same sum).
 *   multi:   Y[m, r] = sum_c W[r, c] * X[m, c]   for m < M, r < rows
 *   t_multi: Y[m, c] = sum_r P[m, r] * W[r, c]   for m < M, c < cols
 * Errors: NULL arrays, as the GEMVs ("tl_gemv_multi_f32: NULL W for 3
 * inputs against a [4, 5] matrix; pass ..."), and a leading dimension below
 * its row's length ("...: leading dimensions ldw=4, ldx=5 are below the row
 * lengths 5 and 5 ..."): nothing is written. M or the output's width <= 0
 * is no work; an empty inner size writes zeros. */
void tl_gemv_multi_f32(const float *W, int64_t ldw, const float *X, int64_t ldx, float *Y,
                       int64_t M, int64_t rows, int64_t cols);
void tl_gemv_multi_bf16(const uint16_t *W, int64_t ldw, const float *X, int64_t ldx, float *Y,
                        int64_t M, int64_t rows, int64_t cols);
void tl_gemv_t_multi_f32(const float *W, int64_t ldw, const float *P, int64_t ldp, float *Y,
                         int64_t M, int64_t rows, int64_t cols);
void tl_gemv_t_multi_bf16(const uint16_t *W, int64_t ldw, const float *P, int64_t ldp,
                          float *Y, int64_t M, int64_t rows, int64_t cols);
/* C[M, N] = A[M, K] @ B[N, K]^T (the Linear layout), through OpenBLAS's sgemm
 * on one thread per block: tl_num_threads() threads of our pool take blocks
 * of C's columns (B's rows), at most 512 columns, at least 4 blocks when N
 * allows blocks of 64, a multiple of 16, cut by N alone, so C does not
 * depend on the thread count (a product under 2^20 multiply-adds runs on the
 * calling thread). The bf16 version widens each block of B into the
 * thread's scratch (up to 512 x K floats, kept for its next block) just
 * before multiplying it: B is never widened whole.
 * Without that scratch a block falls back to dot products (slow, correct).
 * On a CPU with AMX-BF16 (and TINYLLM_AMX not "0"), a product of at least
 * 16 rows with K a multiple of 32 multiplies BF16 tiles instead: A is split
 * into three BF16 parts whose sum is exact, so C keeps an f32 GEMM's
 * accuracy (gemm_amx.c); W is read in place.
 * tl_gemm_bf16_nt returns 0, or -1 on bad arguments (as above). */
void tl_gemm_f32_nt(const float *A, const float *B, float *C, int64_t M, int64_t N, int64_t K);
int tl_gemm_bf16_nt(const float *A, const uint16_t *B, float *C, int64_t M, int64_t N,
                    int64_t K);
/* BLAS's sgemm with alpha 1 and beta 0, row-major, threaded as above: C[M, N]
 * (row stride ldc) = op(A) @ op(B), where op(A) is [M, K] (A stored [M, K]
 * at row stride lda, or [K, M] when trans_a) and op(B) is [K, N] (B stored
 * [K, N] at row stride ldb, or [N, K] when trans_b: the Linear layout).
 * Errors as tl_gemm_f32_nt's, naming tl_sgemm, and a leading dimension above
 * 2147483647: nothing is written. */
void tl_sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A,
              int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc);
/* y[i] = e^x[i] for i < n (x and y may be the same array), within 2 ulp
 * of the exact value; +inf above 88.72, 0 below -87.33 (e^x subnormal: a
 * masked score's weight is exactly 0), NaN for NaN. The exp of softmax,
 * sigmoid and SiLU. Never fails. */
void tl_exp_f32_n(const float *x, float *y, int64_t n);
/* Runs fn(ctx, c) for every chunk c in [0, chunks), on up to `threads`
 * threads: the caller and helper threads the runtime starts on first use
 * (they sleep when idle). Chunks are taken one at a time by whichever thread
 * is free, so a helper the system has not scheduled delays nothing: the
 * caller does the work itself. Returns when every chunk is done. Calls from
 * inside a chunk, or while another thread's call is running, run on the
 * calling thread alone. fn must not fail: it has no way to report. The
 * kernels above use it; a benchmark may too. */
typedef void (*tl_chunk_fn)(void *ctx, int64_t chunk);
void tl_parallel_chunks(int threads, int64_t chunks, tl_chunk_fn fn, void *ctx);
/* Runs fn(ctx, begin, end) over blocks that cover [0, n) once, on up to
 * `threads` threads as tl_parallel_chunks does: [0, n) is cut into one part
 * per thread (on multiples of `least`), each thread runs its part front to
 * back in blocks of `least`, then takes the back half of what is left of
 * the fullest other part, until nothing is left. So each thread reads its
 * part as one stream, threads finish within a block of each other, and a
 * helper the system has not scheduled has its part done by the others.
 * Every block is a multiple of `least` long but one (when least does not
 * divide n). Blocks depend on timing, so fn must give each item the same
 * result in any block (the GEMV rows do). An n of 2^32 or more runs on the
 * calling thread alone, as does a call from inside a chunk. */
typedef void (*tl_range_fn)(void *ctx, int64_t begin, int64_t end);
void tl_parallel_range(int threads, int64_t n, int64_t least, tl_range_fn fn, void *ctx);
/* Threads the kernels use: TINYLLM_THREADS when it is a whole number from 1
 * to 1024, else (once warning on stderr when it is set but invalid) every
 * core. Read at every call. */
int tl_num_threads(void);
/* Readies OpenBLAS for a call and returns the name of the kernels it runs
 * ("SkylakeX", "Haswell", "Prescott", ...): once per process, when OpenBLAS
 * fell back to pre-AVX kernels on a CPU it did not recognise although the CPU
 * has AVX2 (or AVX-512), it is asked to choose again by instruction set,
 * unless OPENBLAS_CORETYPE is set (the user's choice is kept); then its
 * thread count is set to 1 (the GEMMs above thread through our pool). Every
 * GEMM here and in ops.h calls it first. */
const char *tl_blas_prepare(void);

/* Which kernels the f32 GEMMs' A @ B^T products run on, for reports:
 * "AVX-512 tiles (gemm_avx512.c)" where the CPU has AVX-512 and OpenBLAS's
 * core does not use it (TINYLLM_GEMM=blas or =avx512 decides instead), else
 * "OpenBLAS <core>". A static string; calls tl_blas_prepare. */
const char *tl_gemm_kernels(void);

#endif
