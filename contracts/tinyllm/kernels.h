/* tinyllm/kernels.h: the hot loops of inference, on raw row-major arrays.
 * Decode reads every weight once per token, so a matrix-vector product is
 * bound by memory bandwidth: these kernels stream each weight row once,
 * split rows across OpenMP threads (TINYLLM_THREADS, default: all cores),
 * and widen bf16 to f32 in registers. */
#ifndef TINYLLM_KERNELS_H
#define TINYLLM_KERNELS_H

#include <stdint.h>

/* y[r] = sum_c W[r, c] * x[c] for r < rows; W is [rows, cols] row-major. */
void tl_gemv_f32(const float *W, const float *x, float *y, int64_t rows, int64_t cols);
void tl_gemv_bf16(const uint16_t *W, const float *x, float *y, int64_t rows, int64_t cols);
/* C[M, N] = A[M, K] @ B[N, K]^T (the Linear layout), through OpenBLAS. */
void tl_gemm_f32_nt(const float *A, const float *B, float *C, int64_t M, int64_t N, int64_t K);
/* Threads the kernels use: TINYLLM_THREADS when set, else every core. */
int tl_num_threads(void);

#endif
