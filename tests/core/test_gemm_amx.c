/* The BF16 GEMM on AMX tiles (gemm_amx.c) is as accurate as an f32 GEMM:
 * every C[m, n] lies within K * 2^-24 * sum |a w| of the exact product
 * (computed in double), at values from 2^-30 to 2^30, at shapes with token
 * and weight-row tails, two slabs of tokens and odd tile counts; infinities
 * and NaN in A come out as the OpenBLAS path gives them; and with
 * TINYLLM_AMX=0 the same products take that path. On a CPU without AMX the
 * products take the OpenBLAS path and the bounds still hold. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../reference/tinyllm/core/kernels_internal.h"
#include "tinyllm/bf16.h"
#include "tinyllm/kernels.h"
#include "tinyllm/pcg32.h"

static void *checked_malloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    ck_assert_ptr_nonnull(p);
    return p;
}

/* A value in [-1, 1) times 2^e, e uniform in [-spread, spread]. */
static float scaled(tl_pcg32 *rng, int spread) {
    float v = 2.0f * tl_pcg32_uniform(rng) - 1.0f;
    int e = spread ? (int)(tl_pcg32_uniform(rng) * (2 * spread + 1)) - spread : 0;
    return ldexpf(v, e);
}

/* Row m of A times row n of W in double, and the sum of the products' sizes. */
static double exact_product(const float *A, const uint16_t *W, int64_t m, int64_t n, int64_t K,
                            double *magnitude) {
    double exact = 0;
    *magnitude = 0;
    for (int64_t k = 0; k < K; k++) {
        double p = (double)A[m * K + k] * tl_bf16_to_f32(W[n * K + k]);
        exact += p;
        *magnitude += fabs(p);
    }
    return exact;
}

/* C against the double product, row by row, to an f32 GEMM's bound. */
static void assert_close_to_exact(const float *A, const uint16_t *W, const float *C, int64_t M,
                                  int64_t N, int64_t K) {
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double magnitude, exact = exact_product(A, W, m, n, K, &magnitude);
            double tol = (double)K * 0x1p-24 * magnitude + DBL_MIN;
            ck_assert_msg(fabs(C[m * N + n] - exact) <= tol,
                          "[%lld, %lld, %lld]: C[%lld, %lld] = %.9g, exact %.9g, error %.3g > "
                          "tolerance %.3g", (long long)M, (long long)N, (long long)K,
                          (long long)m, (long long)n, (double)C[m * N + n], exact,
                          fabs(C[m * N + n] - exact), tol);
        }
}

START_TEST(amx_gemm_matches_the_exact_product) {
    /* {M, N, K, exponent spread}: tails of tokens (17, 31, 40) and rows (33,
     * 47: the last rows through OpenBLAS), 2100 rows in blocks of 27 tiles
     * (the single-tile step), 300 tokens at K = 1536 (two slabs). */
    static const int64_t shapes[][4] = {{16, 16, 32, 0},   {17, 33, 64, 0},  {31, 47, 96, 30},
                                        {128, 576, 576, 0}, {40, 1000, 128, 8},
                                        {64, 2100, 576, 0}, {300, 80, 1536, 4}};
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 27, 1);
    printf("amx: %s\n", tl_amx_ready() ? "AMX tiles in use" : "no AMX: the OpenBLAS path");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        int spread = (int)shapes[s][3];
        float *A = checked_malloc((size_t)(M * K) * 4), *C = checked_malloc((size_t)(M * N) * 4);
        uint16_t *W = checked_malloc((size_t)(N * K) * 2);
        for (int64_t i = 0; i < M * K; i++) A[i] = scaled(&rng, spread);
        for (int64_t i = 0; i < N * K; i++) W[i] = tl_f32_to_bf16(scaled(&rng, spread));
        ck_assert_int_eq(tl_gemm_bf16_nt(A, W, C, M, N, K), 0);
        assert_close_to_exact(A, W, C, M, N, K);
        free(A);
        free(W);
        free(C);
    }
}
END_TEST

/* The kernel alone: rows a multiple of 16, C at a wider row stride, and
 * nothing written outside C's [M, rows] corner. */
START_TEST(amx_kernel_writes_only_its_corner) {
    if (!tl_amx_ready()) return;
    enum { M = 20, ROWS = 48, K = 64, LDC = 70 };
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 5, 9);
    float A[M * K], C[M * LDC];
    uint16_t W[ROWS * K];
    for (int i = 0; i < M * K; i++) A[i] = scaled(&rng, 0);
    for (int i = 0; i < ROWS * K; i++) W[i] = tl_f32_to_bf16(scaled(&rng, 0));
    for (int i = 0; i < M * LDC; i++) C[i] = 12345.0f;
    uint16_t *packed = aligned_alloc(64, tl_amx_packed_elements(M, K) * 2);
    ck_assert_ptr_nonnull(packed);
    for (int64_t b = 0; b < tl_amx_blocks(M); b++) tl_amx_pack_block(A, K, M, K, packed, b);
    tl_amx_gemm_rows(packed, M, K, W, ROWS, C, LDC);
    for (int m = 0; m < M; m++)
        for (int c = 0; c < LDC; c++) {
            if (c >= ROWS) {
                ck_assert_msg(C[m * LDC + c] == 12345.0f, "C[%d, %d] written", m, c);
                continue;
            }
            double magnitude, exact = exact_product(A, W, m, c, K, &magnitude);
            ck_assert(fabs(C[m * LDC + c] - exact) <= K * 0x1p-24 * magnitude);
        }
    free(packed);
}
END_TEST

/* Infinities, NaN and a value that rounds up to infinity in BF16 (FLT_MAX):
 * the tiles give what the OpenBLAS path gives (same class, and close when
 * finite, within the bound of the exact product). */
START_TEST(amx_gemm_keeps_infinities_and_nan) {
    enum { M = 32, N = 32, K = 64 };
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 8, 8);
    static float A[M * K], tiles[M * N], blas[M * N];
    static uint16_t W[N * K];
    for (int i = 0; i < M * K; i++) A[i] = scaled(&rng, 0);
    for (int i = 0; i < N * K; i++) W[i] = tl_f32_to_bf16(scaled(&rng, 0) * 1e-3f);
    A[0 * K + 3] = INFINITY;
    A[1 * K + 7] = -INFINITY;
    A[2 * K + 9] = NAN;
    A[3 * K + 1] = FLT_MAX;
    A[4 * K + 2] = -FLT_MAX;
    ck_assert_int_eq(tl_gemm_bf16_nt(A, W, tiles, M, N, K), 0);
    setenv("TINYLLM_AMX", "0", 1);
    ck_assert_int_eq(tl_gemm_bf16_nt(A, W, blas, M, N, K), 0);
    unsetenv("TINYLLM_AMX");
    for (int i = 0; i < M * N; i++) {
        ck_assert_msg(isnan(tiles[i]) == isnan(blas[i]) && isinf(tiles[i]) == isinf(blas[i]),
                      "C[%d, %d]: tiles %g, OpenBLAS %g", i / N, i % N, tiles[i], blas[i]);
        double magnitude, exact = exact_product(A, W, i / N, i % N, K, &magnitude);
        if (isfinite(blas[i]))
            ck_assert_msg(fabs(tiles[i] - exact) <= K * 0x1p-24 * magnitude,
                          "C[%d, %d]: tiles %.9g, exact %.9g", i / N, i % N, tiles[i], exact);
    }
}
END_TEST
