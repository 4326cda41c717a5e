/* The f32 GEMM on AVX-512 FMAs (gemm_avx512.c) and the OpenBLAS path it
 * replaces on CPUs whose OpenBLAS runs AVX2 kernels: under TINYLLM_GEMM=avx512
 * and =blas, every C[m, n] of tl_sgemm (A @ B^T, at leading dimensions wider
 * than the rows) and of tl_gemm_bf16_nt lies within K * 2^-24 * sum |a b| of
 * the exact product (in double), at shapes around the 4 x 6 tiles and the
 * 16-wide steps of k, and nothing past a row of C is written. The AVX-512
 * kernel sums each element the same way wherever it sits (a full tile or an
 * edge), so every element equals that element multiplied alone, bit for bit.
 * On a CPU without AVX-512 both settings take OpenBLAS and the bounds hold. */
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

static float uniform(tl_pcg32 *rng) { return 2.0f * tl_pcg32_uniform(rng) - 1.0f; }

static const char *const CHOICES[] = {"avx512", "blas"};

/* M, N, K: tails of both tile sides, k around 16, and SmolLM2's widths. */
static const int64_t SHAPES[][3] = {{1, 1, 1},   {4, 6, 16},   {5, 7, 17},    {3, 5, 15},
                                    {9, 13, 33}, {8, 12, 64},  {33, 300, 576}, {130, 70, 1536},
                                    {2, 1031, 40}};
#define N_SHAPES (int)(sizeof SHAPES / sizeof SHAPES[0])

static void set_choice(const char *choice) { setenv("TINYLLM_GEMM", choice, 1); }

START_TEST(avx512_gemm_matches_the_exact_product_in_f32_and_bf16) {
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 41, 6);
    for (int c = 0; c < 2; c++) {
        set_choice(CHOICES[c]);
        for (int s = 0; s < N_SHAPES; s++) {
            int64_t M = SHAPES[s][0], N = SHAPES[s][1], K = SHAPES[s][2];
            int64_t lda = K + 3, ldb = K + 5, ldc = N + 2;
            float *A = checked_malloc((size_t)(M * lda) * 4);
            float *B = checked_malloc((size_t)(N * ldb) * 4);
            float *C = checked_malloc((size_t)(M * ldc) * 4);
            float *Cb = checked_malloc((size_t)(M * N) * 4);
            uint16_t *B16 = checked_malloc((size_t)(N * K) * 2);
            for (int64_t i = 0; i < M * lda; i++) A[i] = uniform(&rng);
            for (int64_t i = 0; i < N * ldb; i++) B[i] = uniform(&rng);
            for (int64_t n = 0; n < N; n++)
                for (int64_t k = 0; k < K; k++) B16[n * K + k] = tl_f32_to_bf16(B[n * ldb + k]);
            for (int64_t i = 0; i < M * ldc; i++) C[i] = 42.0f;
            float *Ad = checked_malloc((size_t)(M * K) * 4);   /* A dense, for the bf16 form */
            for (int64_t m = 0; m < M; m++) memcpy(Ad + m * K, A + m * lda, (size_t)K * 4);
            tl_sgemm(false, true, M, N, K, A, lda, B, ldb, C, ldc);
            ck_assert_int_eq(tl_gemm_bf16_nt(Ad, B16, Cb, M, N, K), 0);
            for (int64_t m = 0; m < M; m++) {
                for (int64_t n = 0; n < N; n++) {
                    double exact = 0, exact_b = 0, mag = 0, mag_b = 0;
                    for (int64_t k = 0; k < K; k++) {
                        double a = A[m * lda + k], p = a * B[n * ldb + k];
                        double pb = a * tl_bf16_to_f32(B16[n * K + k]);
                        exact += p, mag += fabs(p), exact_b += pb, mag_b += fabs(pb);
                    }
                    double tol = (double)K * 0x1p-24 * mag + DBL_MIN;
                    double tol_b = (double)K * 0x1p-24 * mag_b + DBL_MIN;
                    ck_assert_msg(fabs(C[m * ldc + n] - exact) <= tol &&
                                      fabs(Cb[m * N + n] - exact_b) <= tol_b,
                                  "TINYLLM_GEMM=%s [%lld, %lld, %lld]: C[%lld, %lld] = %.9g "
                                  "(exact %.9g, tolerance %.3g), bf16 %.9g (exact %.9g)",
                                  CHOICES[c], (long long)M, (long long)N, (long long)K,
                                  (long long)m, (long long)n, (double)C[m * ldc + n], exact, tol,
                                  (double)Cb[m * N + n], exact_b);
                }
                for (int64_t n = N; n < ldc; n++)
                    ck_assert_msg(C[m * ldc + n] == 42.0f,
                                  "TINYLLM_GEMM=%s: C[%lld, %lld], past row %lld's %lld columns, "
                                  "was written", CHOICES[c], (long long)m, (long long)n,
                                  (long long)m, (long long)N);
            }
            free(A), free(Ad), free(B), free(B16), free(C), free(Cb);
        }
    }
    unsetenv("TINYLLM_GEMM");
}
END_TEST

START_TEST(avx512_gemm_sums_every_element_as_it_would_alone) {
    if (!tl_avx512_gemm_wanted("Haswell")) {
        fprintf(stderr, "gemm_avx512: no AVX-512 on this CPU: the OpenBLAS path\n");
        return;
    }
    set_choice("avx512");
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 43, 2);
    const int64_t M = 11, N = 17;
    const int64_t lengths[] = {1, 15, 16, 17, 63, 577};
    for (int i = 0; i < 6; i++) {
        int64_t K = lengths[i];
        float *A = checked_malloc((size_t)(M * K) * 4), *B = checked_malloc((size_t)(N * K) * 4);
        float *C = checked_malloc((size_t)(M * N) * 4);
        for (int64_t j = 0; j < M * K; j++) A[j] = uniform(&rng);
        for (int64_t j = 0; j < N * K; j++) B[j] = uniform(&rng);
        tl_gemm_f32_nt(A, B, C, M, N, K);
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                float one;
                tl_gemm_f32_nt(A + m * K, B + n * K, &one, 1, 1, K);
                ck_assert_msg(memcmp(&one, &C[m * N + n], sizeof one) == 0,
                              "[%lld, %lld, %lld]: C[%lld, %lld] = %.9g in the product, %.9g "
                              "alone", (long long)M, (long long)N, (long long)K, (long long)m,
                              (long long)n, (double)C[m * N + n], (double)one);
            }
        free(A), free(B), free(C);
    }
    unsetenv("TINYLLM_GEMM");
}
END_TEST

/* Which GEMM runs: OpenBLAS's own AVX-512 cores keep OpenBLAS; TINYLLM_GEMM
 * and TINYLLM_SIMD decide over the core. */
START_TEST(avx512_gemm_is_chosen_only_where_openblas_runs_avx2) {
    unsetenv("TINYLLM_GEMM");
    ck_assert(!tl_avx512_gemm_wanted("SkylakeX"));
    ck_assert(!tl_avx512_gemm_wanted("SapphireRapids"));
    setenv("TINYLLM_GEMM", "blas", 1);
    ck_assert(!tl_avx512_gemm_wanted("Haswell"));
    setenv("TINYLLM_SIMD", "avx2", 1);
    setenv("TINYLLM_GEMM", "avx512", 1);
    ck_assert(!tl_avx512_gemm_wanted("Haswell"));   /* no AVX-512 asked for */
    unsetenv("TINYLLM_SIMD");
    unsetenv("TINYLLM_GEMM");
    __builtin_cpu_init();
    bool cpu = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl");
    ck_assert_msg(tl_avx512_gemm_wanted("Haswell") == cpu && tl_avx512_gemm_wanted("Zen") == cpu,
                  "an AVX2 core of OpenBLAS on a CPU %s AVX-512", cpu ? "with" : "without");
}
END_TEST
