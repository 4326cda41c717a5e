/* gemm_avx512.c: an f32 GEMM on AVX-512 FMAs, for CPUs on which OpenBLAS
 * runs AVX2 kernels (declared in kernels_internal.h).
 *
 * Why. Debian's OpenBLAS (0.3.21) runs its Haswell kernels on AMD's Zen 4 and
 * Zen 5, which have AVX-512: on the course's Zen 5 a core then multiplies at
 * 95 to 100 GFLOP/s, where its AVX-512 FMAs reach 215. Prefill is GEMMs, so
 * a prefill ran at half the core's arithmetic. This kernel runs SmolLM2's
 * Linear products at 166 to 190 GFLOP/s a core there, B in cache (course/
 * MS-L7/README.md 4.11); where OpenBLAS has AVX-512 kernels of its own
 * (SkylakeX and later) they are used instead.
 *
 * One tile: 8 rows of A by 32 columns of C, 16 sums of 16 lanes in
 * registers; per k, two loads of B's row k, one broadcast of A[i, k] per row
 * and 16 FMAs, and no sum across lanes (the 4 x 6 tile this replaced summed
 * each element's 16 lanes at its end: a quarter of its instructions at
 * K = 576, most of them at attention's K = 64). A @ B (attention's p @ v) reads B's rows in
 * place. A @ B^T (every Linear, and q @ k^T) first writes 32 rows of B, and
 * 256 of k, transposed into a panel of 32 KB (in L1; a BF16 B widened on
 * the way), which every tile of A's rows then reads. Writing the panels is
 * 6 to 11% of a product's time. (Asking for the next block's lines while
 * the tiles ran did not help: the hardware's prefetchers find them.)
 *
 * Each element of C is one chain of FMAs over k in order (a later panel of
 * k resumes the chain from C's value, which is the chain's exact state), the
 * same wherever the element sits (a full tile or an edge): C does not depend
 * on how the caller cuts the product into blocks or threads. Layer 0: calls
 * only libc.
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
    NN_ROWS = 8,                /* rows of A a tile takes */
    NN_COLS = 32,               /* columns of C it takes: two vectors */
    PANEL_K = 256,              /* depth of a panel of B^T: 32 KB, in L1 */
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

/* rows x 32 columns of C = A @ B for B row-major [K, N] (ldb): per k, one
 * broadcast of A[i, k] per row and two 16-lane loads of B's row k, 2 * rows
 * sums in registers and no sum across lanes. Masks m0 and m1 keep the first
 * and second 16 columns (a tile cut short by N; masked lanes are neither
 * read nor written). Each element of C is one sum over k in order, the same
 * wherever the element sits. */
__attribute__((target(AVX512), always_inline)) static inline void
tile_nn(const float *A, int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc,
        int64_t K, int rows, __mmask16 m0, __mmask16 m1, bool resume) {
    __m512 lo[NN_ROWS], hi[NN_ROWS];
#pragma GCC unroll 8
    for (int i = 0; i < rows; i++) {
        lo[i] = resume ? _mm512_maskz_loadu_ps(m0, C + i * ldc) : _mm512_setzero_ps();
        hi[i] = resume ? _mm512_maskz_loadu_ps(m1, C + i * ldc + 16) : _mm512_setzero_ps();
    }
    for (int64_t k = 0; k < K; k++) {
        __m512 b0 = _mm512_maskz_loadu_ps(m0, B + k * ldb);
        __m512 b1 = _mm512_maskz_loadu_ps(m1, B + k * ldb + 16);
#pragma GCC unroll 8
        for (int i = 0; i < rows; i++) {
            __m512 a = _mm512_set1_ps(A[i * lda + k]);
            lo[i] = _mm512_fmadd_ps(a, b0, lo[i]);
            hi[i] = _mm512_fmadd_ps(a, b1, hi[i]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < rows; i++) {
        _mm512_mask_storeu_ps(C + i * ldc, m0, lo[i]);
        _mm512_mask_storeu_ps(C + i * ldc + 16, m1, hi[i]);
    }
}

/* A tile of `rows` rows, rows a constant per case so each unrolls. */
__attribute__((target(AVX512))) static void rows_nn(const float *A, int64_t lda, const float *B,
                                                    int64_t ldb, float *C, int64_t ldc,
                                                    int64_t K, int rows, __mmask16 m0,
                                                    __mmask16 m1, bool resume) {
    switch (rows) {
    case 8: tile_nn(A, lda, B, ldb, C, ldc, K, 8, m0, m1, resume); break;
    case 7: tile_nn(A, lda, B, ldb, C, ldc, K, 7, m0, m1, resume); break;
    case 6: tile_nn(A, lda, B, ldb, C, ldc, K, 6, m0, m1, resume); break;
    case 5: tile_nn(A, lda, B, ldb, C, ldc, K, 5, m0, m1, resume); break;
    case 4: tile_nn(A, lda, B, ldb, C, ldc, K, 4, m0, m1, resume); break;
    case 3: tile_nn(A, lda, B, ldb, C, ldc, K, 3, m0, m1, resume); break;
    case 2: tile_nn(A, lda, B, ldb, C, ldc, K, 2, m0, m1, resume); break;
    default: tile_nn(A, lda, B, ldb, C, ldc, K, 1, m0, m1, resume); break;
    }
}

static __mmask16 first_lanes(int64_t n) {
    return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}

/* Each 32-column panel of B is swept by every tile of A's rows before the
 * next panel. */
void tl_avx512_gemm_nn(const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
                       int64_t ldc, int64_t M, int64_t N, int64_t K) {
    for (int64_t n = 0; n < N; n += NN_COLS) {
        __mmask16 m0 = first_lanes(N - n), m1 = first_lanes(N - n - 16);
        for (int64_t m = 0; m < M; m += NN_ROWS) {
            int rows = M - m < NN_ROWS ? (int)(M - m) : NN_ROWS;
            rows_nn(A + m * lda, lda, B + n, ldb, C + m * ldc + n, ldc, K, rows, m0, m1, false);
        }
    }
}

/* r[i] (16 floats each) becomes column i of the 16 x 16 block: element j of
 * r[i] is element i of the old r[j]. Within each 128-bit lane, pairs and
 * then quads of rows are interleaved; then the four lanes of each group of
 * four vectors are exchanged as a 4 x 4 transpose. */
__attribute__((target(AVX512), always_inline)) static inline void transpose16(__m512 r[16]) {
    __m512 t[16];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {   /* r[4i + j], lane L: rows 4i..4i+3 at column 4L + j */
        r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {   /* column 4L + j: lane L of r[j], r[4+j], r[8+j], r[12+j] */
        __m512 s0 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x44);
        __m512 s1 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xEE);
        __m512 s2 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x44);
        __m512 s3 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xEE);
        t[j] = _mm512_shuffle_f32x4(s0, s2, 0x88);
        t[4 + j] = _mm512_shuffle_f32x4(s0, s2, 0xDD);
        t[8 + j] = _mm512_shuffle_f32x4(s1, s3, 0x88);
        t[12 + j] = _mm512_shuffle_f32x4(s1, s3, 0xDD);
    }
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++) r[i] = t[i];
}

/* A block of B's rows and columns, f32 or bf16 (one of the two is NULL). */
typedef struct {
    const float *f32;
    const uint16_t *bf16;
    int64_t ldb;
    int rows;          /* at most NN_COLS */
    int64_t depth;     /* at most PANEL_K */
} b_block;

static b_block block_at(const float *B, const uint16_t *B16, int64_t ldb, int64_t n, int64_t N,
                        int64_t k, int64_t K) {
    b_block b = {B ? B + n * ldb + k : NULL, B16 ? B16 + n * ldb + k : NULL, ldb,
                 N - n < NN_COLS ? (int)(N - n) : NN_COLS, K - k < PANEL_K ? K - k : PANEL_K};
    return b;
}

/* Sixteen full rows of the block, from row `first`, at columns [k, k + 16)
 * (lanes past m zero), transposed into the panel's rows k.. and columns
 * first..first + 15; `width` of its rows are written. */
__attribute__((target(AVX512))) static void pack16(const b_block *b, int first, int64_t k,
                                                   int width, float *panel) {
    __m512 r[16];
    __mmask16 m = (__mmask16)((1u << width) - 1);
    const uint16_t *half = b->bf16 ? b->bf16 + first * b->ldb + k : NULL;
    const float *full = b->f32 ? b->f32 + first * b->ldb + k : NULL;
    if (half && width == 16) {
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) r[i] = load16_bf16(half + i * b->ldb);
    } else if (half) {
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) r[i] = load_tail_bf16(half + i * b->ldb, m);
    } else if (width == 16) {   /* two 32-byte loads: a row rarely starts on a line */
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) r[i] = load16_f32(full + i * b->ldb);
    } else {
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) r[i] = _mm512_maskz_loadu_ps(m, full + i * b->ldb);
    }
    transpose16(r);
    float *dst = panel + k * NN_COLS + first;
    if (width == 16) {
#pragma GCC unroll 16
        for (int c = 0; c < 16; c++) _mm512_store_ps(dst + c * NN_COLS, r[c]);
    } else {
        for (int c = 0; c < width; c++) _mm512_store_ps(dst + c * NN_COLS, r[c]);
    }
}

/* The block transposed into the panel: panel[k * 32 + n] = B[n, k]. Rows
 * past a multiple of 16 (a block cut short by N) go one value at a time;
 * the columns past the block's rows are left as they are (the tiles' masks
 * never read them). */
static void pack_panel(const b_block *b, float *panel) {
    int full = b->rows / 16 * 16;
    for (int64_t k0 = 0; k0 < b->depth; k0 += 16) {
        int width = b->depth - k0 < 16 ? (int)(b->depth - k0) : 16;
        for (int first = 0; first < full; first += 16) pack16(b, first, k0, width, panel);
    }
    for (int n = full; n < b->rows; n++)
        for (int64_t k = 0; k < b->depth; k++)
            panel[k * NN_COLS + n] = b->bf16 ? tl_bf16_to_f32(b->bf16[n * b->ldb + k])
                                             : b->f32[n * b->ldb + k];
}

/* The calling thread's panel (PANEL_K x 32 floats at most), kept for its
 * next product. */
static _Thread_local float *panel_floats;
static _Thread_local int64_t panel_k;

static float *panel_for(int64_t K) {
    if (panel_k < K) {
        free(panel_floats);
        panel_floats = aligned_alloc(64, (size_t)K * NN_COLS * sizeof(float));
        panel_k = panel_floats ? K : 0;
    }
    return panel_floats;
}

/* Per block of 32 rows of B and PANEL_K of k: the block packed as a panel of
 * B^T (in L1), then every tile of A's rows over it, resuming C's sums after
 * the first block of k. Resuming from C continues each element's chain of
 * FMAs exactly, so C is what one pass over all of k would give. */
static bool gemm_nt(const float *A, int64_t lda, const float *B, const uint16_t *B16,
                    int64_t ldb, float *C, int64_t ldc, int64_t M, int64_t N, int64_t K) {
    float *panel = panel_for(K < PANEL_K ? K : PANEL_K);
    if (!panel) return false;
    int tiles = (int)((M + NN_ROWS - 1) / NN_ROWS);
    for (int64_t n = 0; n < N; n += NN_COLS) {
        for (int64_t k = 0; k < K; k += PANEL_K) {
            b_block here = block_at(B, B16, ldb, n, N, k, K);
            pack_panel(&here, panel);
            __mmask16 m0 = first_lanes(here.rows), m1 = first_lanes(here.rows - 16);
            for (int t = 0; t < tiles; t++) {
                int64_t m = (int64_t)t * NN_ROWS;
                int rows = M - m < NN_ROWS ? (int)(M - m) : NN_ROWS;
                rows_nn(A + m * lda + k, lda, panel, NN_COLS, C + m * ldc + n, ldc, here.depth,
                        rows, m0, m1, k > 0);
            }
        }
    }
    return true;
}

bool tl_avx512_gemm_nt(const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
                       int64_t ldc, int64_t M, int64_t N, int64_t K) {
    return gemm_nt(A, lda, B, NULL, ldb, C, ldc, M, N, K);
}

bool tl_avx512_gemm_bf16_nt(const float *A, int64_t lda, const uint16_t *B, int64_t ldb,
                            float *C, int64_t ldc, int64_t M, int64_t N, int64_t K) {
    return gemm_nt(A, lda, NULL, B, ldb, C, ldc, M, N, K);
}
#else
void tl_avx512_gemm_nn(const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
                       int64_t ldc, int64_t M, int64_t N, int64_t K) {
    (void)A, (void)lda, (void)B, (void)ldb, (void)C, (void)ldc, (void)M, (void)N, (void)K;
    abort();   /* tl_avx512_gemm_wanted is false on this build: never called */
}

bool tl_avx512_gemm_nt(const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
                       int64_t ldc, int64_t M, int64_t N, int64_t K) {
    (void)A, (void)lda, (void)B, (void)ldb, (void)C, (void)ldc, (void)M, (void)N, (void)K;
    abort();
}

bool tl_avx512_gemm_bf16_nt(const float *A, int64_t lda, const uint16_t *B, int64_t ldb,
                            float *C, int64_t ldc, int64_t M, int64_t N, int64_t K) {
    (void)A, (void)lda, (void)B, (void)ldb, (void)C, (void)ldc, (void)M, (void)N, (void)K;
    abort();
}
#endif
