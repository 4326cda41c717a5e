/* kernels_internal.h: what the kernel files (kernels.c, kernels_multi.c)
 * share: thresholds, the portable and AVX2 building blocks, the choice of
 * code path, and how work is cut among threads. Not a contract. */
#ifndef TINYLLM_CORE_KERNELS_INTERNAL_H
#define TINYLLM_CORE_KERNELS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tinyllm/bf16.h"
#include "tinyllm/kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TL_HAVE_X86 1
#endif

/* Below this many weights a product is too short to share: waking the other
 * threads costs microseconds, while 64K f32 weights (256 KB) take one core
 * only about 20 us to read. */
#define PARALLEL_MIN_WEIGHTS (64 * 1024)

/* How far ahead of its loads a dot product asks for W (software prefetch).
 * Hardware prefetchers alone left these loops about 20% short of the read
 * bandwidth on a 2-core KVM guest. The distance must cover memory latency
 * at one core's stream rate (100 ns x 12 GB/s ~ 1.2 KB) with room for
 * latency spikes, while the lines still fit in L1 (48 KB) until used;
 * 4 to 16 KB measured alike, 1-2 KB were slower. Prefetching past the end of
 * W is harmless: a prefetch never faults. */
#define PREFETCH_BYTES 8192

/* Memory a product reads: `blocks` blocks of block_bytes, stride bytes apart
 * (attention's K of each kv head, a weight as one block). */
typedef struct {
    const void *base;
    size_t block_bytes;
    int64_t blocks, stride;
} tl_region;

/* Hands n regions (n <= TL_PREFETCH_REGIONS) to the pool's helpers to pull
 * into cache, in order, while they have no job (pool.c); replaces the run
 * handed before. Each block is cut into pieces of TL_PREFETCH_PIECE bytes
 * (the last one shorter), a helper's unit of work between two looks for a job. */
#define TL_PREFETCH_REGIONS 8
#define TL_PREFETCH_PIECE 4096
void tl_pool_prefetch(const tl_region *regions, int n);

/* The pieces of a run, and piece i's first byte and length (false past the
 * end): how helpers walk it. */
int64_t tl_pool_run_pieces(const tl_region *regions, int n);
bool tl_pool_piece_span(const tl_region *regions, int n, int64_t piece, uintptr_t *start,
                        size_t *bytes);

/* Pieces of the current run no helper has taken yet, and pieces helpers have
 * prefetched since the process began (for tests). */
int64_t tl_pool_prefetch_left(void);
uint64_t tl_pool_prefetched_pieces(void);

/* True on a thread running a chunk of tl_parallel_chunks (pool.c). */
bool tl_pool_inside_chunk(void);

/* Learns that `operand` was read after the calling thread's last product,
 * and fills run (TL_PREFETCH_REGIONS at most) with what the products learned
 * to follow it read; returns how many regions (prefetch.c). */
int tl_prefetch_plan(const tl_region *operand, tl_region *run);

/* After a product that read `operand`, on a thread not inside a chunk and
 * with threads to spare: plans and hands the plan to the idle helpers
 * (kernels.c). TINYLLM_PREFETCH=0 turns it off, to measure what it buys. */
void tl_prefetch_after_product(const tl_region *operand);

/* While held (per thread), products are not reported one by one: a caller
 * that runs many, as a batched matmul, reports them as one region. */
void tl_prefetch_hold(bool on);

/* The BF16-weight GEMM on AMX tiles (gemm_amx.c). tl_amx_ready: the CPU has
 * AMX-BF16 and AVX512-BF16, Linux granted the tile state, and TINYLLM_AMX is
 * not "0". tl_amx_pack_block splits block b (of tl_amx_blocks(M), 16 rows
 * each, the last padded with zeros) of A [M, K] (row stride lda; K a
 * multiple of 32) into its place among tl_amx_packed_elements(M, K) BF16
 * values; the blocks are independent. With all packed, tl_amx_gemm_rows
 * writes C[m, r] = A[m, :] . W[r, :] for m < M and r < rows (a multiple of
 * 16), W [rows, K] dense, C at row stride ldc. */
bool tl_amx_ready(void);
int64_t tl_amx_padded_rows(int64_t M);
int64_t tl_amx_blocks(int64_t M);
size_t tl_amx_packed_elements(int64_t M, int64_t K);
void tl_amx_pack_block(const float *A, int64_t lda, int64_t M, int64_t K, uint16_t *packed,
                       int64_t b);
void tl_amx_gemm_rows(const uint16_t *packed, int64_t M, int64_t K, const uint16_t *W,
                      int64_t rows, float *C, int64_t ldc);

/* The f32 GEMM on AVX-512 FMAs (gemm_avx512.c). tl_avx512_gemm_wanted: the
 * CPU has the AVX-512 loops (use_avx512) and OpenBLAS's core blas_core has
 * no AVX-512 kernels; TINYLLM_GEMM=blas keeps OpenBLAS, =avx512 takes this
 * one whatever the core. tl_avx512_gemm_nt writes C[m, n] = A[m, :] . B[n, :]
 * for m < M, n < N, over K > 0, at row strides lda, ldb and ldc;
 * tl_avx512_gemm_nn writes C[m, n] = sum over k of A[m, k] B[k, n]. */
bool tl_avx512_gemm_wanted(const char *blas_core);
bool tl_gemm_on_avx512(void);   /* tl_avx512_gemm_wanted for this run's OpenBLAS core */
bool tl_avx512_gemm_nt(const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
                       int64_t ldc, int64_t M, int64_t N, int64_t K);
bool tl_avx512_gemm_bf16_nt(const float *A, int64_t lda, const uint16_t *B, int64_t ldb,
                            float *C, int64_t ldc, int64_t M, int64_t N, int64_t K);
void tl_avx512_gemm_nn(const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
                       int64_t ldc, int64_t M, int64_t N, int64_t K);

/* The one-row GEMVs share rows through tl_parallel_range (a part of W per
 * thread, read as one stream, the rest taken by whoever is done first), so no
 * thread waits for another's last chunk (README 4.13). The column and
 * multi-row GEMVs cut their work into chunks any thread may take
 * (tl_parallel_chunks):
 * about CHUNKS_PER_THREAD per thread, each at least CHUNK_MIN_WEIGHTS
 * weights, so each thread still streams long runs of W. Each chunk starts a
 * new stream (the prefetchers ramp up again) and claims a ticket on a line
 * both cores write: at 8 a thread, BF16 decode on two Zen 5 threads took
 * 7.13 ms a token, at 4 6.97, at 2 6.66-6.73 (README 4.10). Two still leave
 * a late helper's chunk to the caller (pool.c). */
#define CHUNKS_PER_THREAD 2
#define CHUNK_MIN_WEIGHTS (32 * 1024)

/* Threads for a product of rows x cols weights: none to spare on a small one,
 * and never more than there are rows. */
static inline int gemv_threads(int64_t rows, int64_t cols) {
    if ((double)rows * (double)cols < PARALLEL_MIN_WEIGHTS) return 1;   /* no overflow */
    int n = tl_num_threads();
    return rows < n ? (int)rows : n;
}

/* How many pieces of `unit` work each to cut n units into, for threads. */
static inline int64_t chunk_size(int64_t n, double unit, int threads) {
    int64_t per = (n + (int64_t)threads * CHUNKS_PER_THREAD - 1) / ((int64_t)threads *
                                                                     CHUNKS_PER_THREAD);
    int64_t least = (int64_t)(CHUNK_MIN_WEIGHTS / (unit > 1 ? unit : 1)) + 1;
    return per > least ? per : least;
}

/* ---- portable dot products ---------------------------------------------- */

static inline float dot_f32_portable(const float *w, const float *x, int64_t n) {
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < n; c++) sum += w[c] * x[c];
    return sum;
}

static inline float dot_bf16_portable(const uint16_t *w, const float *x, int64_t n) {
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < n; c++) sum += tl_bf16_to_f32(w[c]) * x[c];
    return sum;
}

#ifdef TL_HAVE_X86

/* Integer arithmetic, since the address may lie past the end of W. The
 * empty asm hides the address's origin from gcc, which otherwise keeps
 * p + PREFETCH_BYTES in a register and reads W at -8192 from it. Intel's
 * cores take a load whose base register lies on another 4 KB page than its
 * address off their fast path: on a Xeon guest with AMX the F32 pairs loop
 * took 18% longer (course/MS-L7/README.md 4.19). */
static inline void prefetch_ahead(const void *p) {
    uintptr_t at = (uintptr_t)p;
    __asm__("" : "+r"(at));
    _mm_prefetch((const char *)(at + PREFETCH_BYTES), _MM_HINT_T0);
}

__attribute__((target("avx2,fma"))) static inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Eight bf16 become eight f32: zero-extend each 16-bit value to 32 bits,
 * then shift it into the high half (the bits of an f32 whose low mantissa
 * bits are zero). */
__attribute__((target("avx2,fma"))) static inline __m256 load8_bf16(const uint16_t *p) {
    __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

/* The AVX-512 loops' target (kernels.c, kernels_multi.c, gemm_avx512.c),
 * and their bf16 loads: sixteen values widened as load8_bf16 widens eight;
 * the tail's lanes past its mask read nothing and are zero. */
#define AVX512 "avx512f,avx512bw,avx512vl"

__attribute__((target(AVX512))) static inline __m512 load16_bf16(const uint16_t *p) {
    __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

__attribute__((target(AVX512))) static inline __m512 load_tail_bf16(const uint16_t *p,
                                                                     __mmask16 m) {
    __m512i wide = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

/* 16 floats of a weight row as two 32-byte loads. A checkpoint's tensors sit
 * where the safetensors header ends, rarely on a 64-byte line: one 64-byte
 * load then spans two lines, and on AMD's Zen 5 a row read so streamed at
 * 0.7 of the read rate (two 32-byte loads: 0.95). Same lanes, same sums. */
__attribute__((target(AVX512))) static inline __m512 load16_f32(const float *p) {
    __m512d low = _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(p)));
    return _mm512_castpd_ps(_mm512_insertf64x4(low, _mm256_castps_pd(_mm256_loadu_ps(p + 8)), 1));
}

/* The first `left` (1..16) of sixteen lanes. */
static inline __mmask16 tail_mask(int64_t left) { return (__mmask16)((1u << left) - 1); }

#endif /* TL_HAVE_X86 */

/* True when the AVX2 versions may run: the CPU has AVX2 and FMA, and
 * TINYLLM_SIMD is not "0". */
static inline bool use_avx2(void) {
#ifdef TL_HAVE_X86
    const char *s = getenv("TINYLLM_SIMD");
    if (s && strcmp(s, "0") == 0) return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

/* True when the AVX-512 GEMV rows may run (F, BW and VL), and TINYLLM_SIMD
 * is neither "0" nor "avx2" (which stops at the AVX2 loops). */
static inline bool use_avx512(void) {
#ifdef TL_HAVE_X86
    const char *s = getenv("TINYLLM_SIMD");
    if (s && (strcmp(s, "0") == 0 || strcmp(s, "avx2") == 0)) return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
#else
    return false;
#endif
}

#endif
