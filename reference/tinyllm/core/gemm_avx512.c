/* gemm_avx512.c: an f32 GEMM on AVX-512 FMAs, for CPUs on which OpenBLAS
 * runs AVX2 kernels (declared in kernels_internal.h).
 *
 * Why. Debian's OpenBLAS (0.3.21) runs its Haswell kernels on AMD's Zen 4 and
 * Zen 5, which have AVX-512: on the course's Zen 5 a core then multiplies at
 * 95 to 100 GFLOP/s, where its AVX-512 FMAs reach 215. Prefill is GEMMs, so
 * a prefill ran at half the core's arithmetic. This kernel runs the Linear
 * layout's product at 145 to 160 GFLOP/s a core there (course/MS-L7/README.md
 * 4.9); where OpenBLAS has AVX-512 kernels of its own (SkylakeX and later)
 * they are used instead.
 *
 * C[m, n] = A[m, :] . B[n, :]: A's rows (tokens) and B's rows (a weight's
 * output rows) both run over k, so neither is packed. A tile of 4 rows of A
 * by 6 rows of B keeps 24 sums of 16 lanes in registers: per 16 values of k,
 * 10 loads and 24 FMAs. The tile's 6 rows of B (K floats each) stay in L1
 * while it walks a slab of A's rows, which stays in L2.
 *
 * Each element of C is one 16-lane sum over k (the last lanes masked), then
 * its lanes added as _mm512_reduce_add_ps adds them, the same wherever the
 * element sits (a full tile or an edge): C does not depend on how the
 * caller cuts the product into blocks or threads. Layer 0: calls only libc.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TL_GEMM_AVX512 1
#endif

enum {
    TILE_A = 4,                 /* rows of A a tile takes */
    TILE_B = 6,                 /* rows of B a tile takes */
    SLAB_BYTES = 256 << 10,     /* A's rows walked per pass over B: in L2 */
};

/* OpenBLAS's cores with AVX-512 kernels of their own. */
static bool blas_has_avx512(const char *core) {
    static const char *const CORES[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
    for (size_t i = 0; core && i < sizeof CORES / sizeof CORES[0]; i++)
        if (strcmp(core, CORES[i]) == 0) return true;
    return false;
}

bool tl_avx512_gemm_wanted(const char *blas_core) {
#ifdef TL_GEMM_AVX512
    const char *choice = getenv("TINYLLM_GEMM");
    if (choice && strcmp(choice, "blas") == 0) return false;
    if (!use_avx512()) return false;
    return (choice && strcmp(choice, "avx512") == 0) || !blas_has_avx512(blas_core);
#else
    (void)blas_core;
    return false;
#endif
}

#ifdef TL_GEMM_AVX512

/* A rows x b rows of C from A (row stride lda) and B (ldb), K > 0; a and b
 * are constants where it is inlined, so the loops unroll into registers. */
__attribute__((target(AVX512), always_inline)) static inline void
tile(const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc, int64_t K,
     int a, int b) {
    __m512 sum[TILE_A][TILE_B];
#pragma GCC unroll 8
    for (int i = 0; i < a; i++)
#pragma GCC unroll 8
        for (int j = 0; j < b; j++) sum[i][j] = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
        __m512 av[TILE_A];
#pragma GCC unroll 8
        for (int i = 0; i < a; i++) av[i] = _mm512_loadu_ps(A + i * lda + k);
#pragma GCC unroll 8
        for (int j = 0; j < b; j++) {
            __m512 bv = _mm512_loadu_ps(B + j * ldb + k);
#pragma GCC unroll 8
            for (int i = 0; i < a; i++) sum[i][j] = _mm512_fmadd_ps(av[i], bv, sum[i][j]);
        }
    }
    if (k < K) {
        __mmask16 m = (__mmask16)((1u << (K - k)) - 1);
        __m512 av[TILE_A];
#pragma GCC unroll 8
        for (int i = 0; i < a; i++) av[i] = _mm512_maskz_loadu_ps(m, A + i * lda + k);
#pragma GCC unroll 8
        for (int j = 0; j < b; j++) {
            __m512 bv = _mm512_maskz_loadu_ps(m, B + j * ldb + k);
#pragma GCC unroll 8
            for (int i = 0; i < a; i++) sum[i][j] = _mm512_fmadd_ps(av[i], bv, sum[i][j]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < a; i++)
#pragma GCC unroll 8
        for (int j = 0; j < b; j++) C[i * ldc + j] = _mm512_reduce_add_ps(sum[i][j]);
}

__attribute__((target(AVX512))) static void full_tile(const float *A, int64_t lda,
                                                      const float *B, int64_t ldb, float *C,
                                                      int64_t ldc, int64_t K) {
    tile(A, lda, B, ldb, C, ldc, K, TILE_A, TILE_B);
}

/* One row of A against b < TILE_B or fewer rows of B, b a constant per case
 * so each unrolls: a tile cut short by M or N, each element summed as in a
 * full one. */
__attribute__((target(AVX512))) static void edge_row(const float *A, const float *B,
                                                     int64_t ldb, float *C, int64_t K, int b) {
    switch (b) {
    case 6: tile(A, 0, B, ldb, C, 0, K, 1, 6); break;
    case 5: tile(A, 0, B, ldb, C, 0, K, 1, 5); break;
    case 4: tile(A, 0, B, ldb, C, 0, K, 1, 4); break;
    case 3: tile(A, 0, B, ldb, C, 0, K, 1, 3); break;
    case 2: tile(A, 0, B, ldb, C, 0, K, 1, 2); break;
    default: tile(A, 0, B, ldb, C, 0, K, 1, 1); break;
    }
}

/* Slabs of A's rows of at most SLAB_BYTES, as even as TILE_A allows (128
 * rows of 576 floats: two slabs of 64, not one of 112 and one of 16). */
static int64_t slab_rows(int64_t M, int64_t K) {
    int64_t slabs = (int64_t)(((size_t)M * (size_t)K * sizeof(float) + SLAB_BYTES - 1) /
                              SLAB_BYTES);
    if (slabs < 1) slabs = 1;
    int64_t rows = (M + slabs - 1) / slabs;
    return (rows + TILE_A - 1) / TILE_A * TILE_A;
}

void tl_avx512_gemm_nt(const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
                       int64_t ldc, int64_t M, int64_t N, int64_t K) {
    int64_t slab = slab_rows(M, K);
    for (int64_t m0 = 0; m0 < M; m0 += slab) {
        int64_t m_end = M - m0 < slab ? M : m0 + slab;
        for (int64_t n = 0; n < N; n += TILE_B) {
            int b = N - n < TILE_B ? (int)(N - n) : TILE_B;
            for (int64_t m = m0; m < m_end; m += TILE_A) {
                int a = m_end - m < TILE_A ? (int)(m_end - m) : TILE_A;
                if (a == TILE_A && b == TILE_B) {
                    full_tile(A + m * lda, lda, B + n * ldb, ldb, C + m * ldc + n, ldc, K);
                    continue;
                }
                for (int i = 0; i < a; i++)
                    edge_row(A + (m + i) * lda, B + n * ldb, ldb, C + (m + i) * ldc + n, K, b);
            }
        }
    }
}
#else
void tl_avx512_gemm_nt(const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
                       int64_t ldc, int64_t M, int64_t N, int64_t K) {
    (void)A, (void)lda, (void)B, (void)ldb, (void)C, (void)ldc, (void)M, (void)N, (void)K;
    abort();   /* tl_avx512_gemm_wanted is false on this build: never called */
}
#endif
