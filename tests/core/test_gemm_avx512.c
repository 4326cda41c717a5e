/* The f32 GEMM on AVX-512 FMAs (gemm_avx512.c) and the OpenBLAS path it
 * replaces on CPUs whose OpenBLAS runs AVX2 kernels: under TINYLLM_GEMM=avx512
 * and =blas, every C[m, n] of tl_sgemm (A @ B^T and A @ B, at leading
 * dimensions wider than the rows) and of tl_gemm_bf16_nt lies within
 * K * 2^-24 * sum |a b| of the exact product (in double), at shapes around
 * the 8 x 32 tiles, the 16-wide steps of k and the 256-deep panels, and
 * nothing past a row of C is written. The AVX-512 kernel sums each element
 * the same way wherever it sits (a full tile or an edge, the first panel of
 * k or a later one), so every element equals that element multiplied alone,
 * bit for bit; and C does not depend on how many threads share the blocks.
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

/* n floats uniform in [-1, 1). */
static float *random_floats(tl_pcg32 *rng, int64_t n) {
    float *v = checked_malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) v[i] = uniform(rng);
    return v;
}

/* n floats of 42, to see what a product writes past its rows. */
static float *marked_floats(int64_t n) {
    float *v = checked_malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) v[i] = 42.0f;
    return v;
}

static const char *const CHOICES[] = {"avx512", "blas"};

/* M, N, K: tails of both tile sides, k around 16, and SmolLM2's widths. */
static const int64_t SHAPES[][3] = {{1, 1, 1},     {4, 6, 16},    {5, 7, 17},
                                    {3, 5, 15},    {9, 13, 33},   {8, 12, 64},
                                    {33, 300, 576}, {130, 70, 1536}, {2, 1031, 40},
                                    {17, 33, 257}, {384, 64, 128}, {40, 48, 9}};
#define N_SHAPES (int)(sizeof SHAPES / sizeof SHAPES[0])

static void set_choice(const char *choice) { setenv("TINYLLM_GEMM", choice, 1); }

START_TEST(avx512_gemm_matches_the_exact_product_in_f32_and_bf16) {
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 41, 6);
    for (int c = 0; c < 2; c++) {
        set_choice(CHOICES[c]);
        for (int s = 0; s < N_SHAPES; s++) {
            int64_t M = SHAPES[s][0], N = SHAPES[s][1], K = SHAPES[s][2];
            int64_t lda = K + 3, ldb = K + 5, ldc = N + 2, ldbt = N + 5;
            float *A = random_floats(&rng, M * lda), *B = random_floats(&rng, N * ldb);
            float *C = marked_floats(M * ldc), *Cb = checked_malloc((size_t)(M * N) * 4);
            float *Bt = checked_malloc((size_t)(K * ldbt) * 4), *Ct = marked_floats(M * ldc);
            uint16_t *B16 = checked_malloc((size_t)(N * K) * 2);
            for (int64_t n = 0; n < N; n++)
                for (int64_t k = 0; k < K; k++) {
                    B16[n * K + k] = tl_f32_to_bf16(B[n * ldb + k]);
                    Bt[k * ldbt + n] = B[n * ldb + k];   /* the same B as [K, N]: A @ B */
                }
            float *Ad = checked_malloc((size_t)(M * K) * 4);   /* A dense, for the bf16 form */
            for (int64_t m = 0; m < M; m++) memcpy(Ad + m * K, A + m * lda, (size_t)K * 4);
            tl_sgemm(false, true, M, N, K, A, lda, B, ldb, C, ldc);
            tl_sgemm(false, false, M, N, K, A, lda, Bt, ldbt, Ct, ldc);
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
                                      fabs(Ct[m * ldc + n] - exact) <= tol &&
                                      fabs(Cb[m * N + n] - exact_b) <= tol_b,
                                  "TINYLLM_GEMM=%s [%lld, %lld, %lld]: C[%lld, %lld] = %.9g "
                                  "(exact %.9g, tolerance %.3g), A @ B %.9g, bf16 %.9g (exact "
                                  "%.9g)", CHOICES[c], (long long)M, (long long)N, (long long)K,
                                  (long long)m, (long long)n, (double)C[m * ldc + n], exact, tol,
                                  (double)Ct[m * ldc + n], (double)Cb[m * N + n], exact_b);
                }
                for (int64_t n = N; n < ldc; n++)
                    ck_assert_msg(C[m * ldc + n] == 42.0f && Ct[m * ldc + n] == 42.0f,
                                  "TINYLLM_GEMM=%s: C[%lld, %lld], past row %lld's %lld columns, "
                                  "was written", CHOICES[c], (long long)m, (long long)n,
                                  (long long)m, (long long)N);
            }
            free(A), free(Ad), free(B), free(Bt), free(B16), free(C), free(Ct), free(Cb);
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
    const int64_t lengths[] = {1, 15, 16, 17, 63, 256, 257, 577};
    for (int i = 0; i < 8; i++) {
        int64_t K = lengths[i];
        float *A = random_floats(&rng, M * K), *B = random_floats(&rng, N * K);
        float *C = checked_malloc((size_t)(M * N) * 4);
        tl_gemm_f32_nt(A, B, C, M, N, K);
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                float one, one_nn;
                tl_gemm_f32_nt(A + m * K, B + n * K, &one, 1, 1, K);
                tl_sgemm(false, false, 1, 1, K, A + m * K, K, B + n * K, 1, &one_nn, 1);
                ck_assert_msg(memcmp(&one, &one_nn, sizeof one) == 0,
                              "K = %lld: A @ B^T and A @ B of one element differ (%.9g, %.9g)",
                              (long long)K, (double)one, (double)one_nn);
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

/* A product's blocks of rows and columns depend on its shape alone, so its
 * bits do not depend on how many threads share them: A @ B^T, A @ B and the
 * BF16 form at 1, 2 and 3 threads, on both GEMMs, at shapes that cut rows
 * (few columns) and columns. */
START_TEST(gemm_is_identical_for_any_thread_count) {
    static const int64_t CUTS[][3] = {{384, 64, 128}, {200, 70, 300}, {128, 576, 64}};
    static const char *const COUNTS[] = {"1", "2", "3"};
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 53, 4);
    char *saved = getenv("TINYLLM_THREADS") ? strdup(getenv("TINYLLM_THREADS")) : NULL;
    for (int c = 0; c < 2; c++) {
        set_choice(CHOICES[c]);
        for (int s = 0; s < 3; s++) {
            int64_t M = CUTS[s][0], N = CUTS[s][1], K = CUTS[s][2];
            float *A = random_floats(&rng, M * K), *B = random_floats(&rng, N * K);
            uint16_t *B16 = checked_malloc((size_t)(N * K) * 2);
            float *C[3][3];
            for (int64_t i = 0; i < N * K; i++) B16[i] = tl_f32_to_bf16(B[i]);
            for (int t = 0; t < 3; t++) {
                setenv("TINYLLM_THREADS", COUNTS[t], 1);
                for (int f = 0; f < 3; f++) C[t][f] = checked_malloc((size_t)(M * N) * 4);
                tl_sgemm(false, true, M, N, K, A, K, B, K, C[t][0], N);
                tl_sgemm(false, false, M, N, K, A, K, B, N, C[t][1], N);   /* B read as [K, N] */
                ck_assert_int_eq(tl_gemm_bf16_nt(A, B16, C[t][2], M, N, K), 0);
            }
            for (int t = 1; t < 3; t++)
                for (int f = 0; f < 3; f++) {
                    ck_assert_msg(memcmp(C[0][f], C[t][f], (size_t)(M * N) * 4) == 0,
                                  "TINYLLM_GEMM=%s [%lld, %lld, %lld], %s: %s threads differ "
                                  "from 1", CHOICES[c], (long long)M, (long long)N, (long long)K,
                                  f == 0 ? "A @ B^T" : f == 1 ? "A @ B" : "bf16", COUNTS[t]);
                }
            for (int t = 0; t < 3; t++)
                for (int f = 0; f < 3; f++) free(C[t][f]);
            free(A), free(B), free(B16);
        }
    }
    if (saved) setenv("TINYLLM_THREADS", saved, 1); else unsetenv("TINYLLM_THREADS");
    free(saved);
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
