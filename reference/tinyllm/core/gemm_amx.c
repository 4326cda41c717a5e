/* gemm_amx.c: a BF16-weight GEMM on Intel AMX tiles (declared in kernels_internal.h).
 *
 * C[M, N] = A[M, K] @ W[N, K]^T with A in f32 and W in BF16 is prefill's
 * product on a BF16 checkpoint. Without BF16 arithmetic the runtime widens W
 * and runs OpenBLAS's sgemm; with AMX one TDPBF16PS multiplies a 16 x 32 BF16
 * tile by a 32 x 16 one into 16 x 16 f32 sums, many times an AVX-512 FMA's
 * rate. It multiplies BF16 by BF16, so A is split into three BF16 parts,
 * hi + mid + lo, whose sum is A's f32 value (8 significant bits each: 24, a
 * float's). Each part times a BF16 weight is exact in f32, and the sums are
 * f32, so C is as accurate as an f32 GEMM's (the kernel tests hold it to the
 * same bound as the GEMVs), at three tile products per one.
 *
 * Roles: W is the tiles' left operand, read in place (16 rows of 32 weights,
 * W's row stride apart): the weights are never copied. A's parts are packed
 * once per product into the right operand's layout (pairs of k per 32-bit
 * element, 16 tokens across), zero rows up to a multiple of 32 tokens. Each
 * step multiplies 2 x 16 weight rows by 2 x 16 tokens into four 16 x 16 sums
 * of C's transpose, stored through a small buffer. Needs K a multiple of 32
 * (one tile row) and weight rows in multiples of 16; the caller does the rest.
 *
 * Linux gives a process the tiles' 8 KB of state only when asked
 * (arch_prctl ARCH_REQ_XCOMP_PERM), once, here. Layer 0: calls only libc. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_internal.h"

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#define TL_AMX 1
#endif

#ifdef TL_AMX

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

enum { TILE_ROWS = 16, TILE_K = 32, PARTS = 3 };

/* The tile configuration (palette 1) in the layout LDTILECFG reads. */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t bytes_per_row[16];
    uint8_t rows[16];
} tile_config;

static bool cpu_has_amx_bf16(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    bool tiles = (d >> 24) & 1, bf16_tiles = (d >> 22) & 1;
    bool avx512f = (b >> 16) & 1, avx512bw = (b >> 30) & 1;
    if (!tiles || !bf16_tiles || !avx512f || !avx512bw) return false;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d) || !((a >> 5) & 1)) return false;   /* BF16 */
    if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1)) return false;   /* OSXSAVE */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    const unsigned avx512_state = 0xE6, tile_state = 3u << 17;
    return (lo & avx512_state) == avx512_state && (lo & tile_state) == tile_state;
}

static bool amx_granted;

static void request_amx(void) {
    amx_granted = cpu_has_amx_bf16() &&
                  syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

bool tl_amx_ready(void) {
    const char *s = getenv("TINYLLM_AMX");
    if (s && strcmp(s, "0") == 0) return false;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, request_amx);
    return amx_granted;
}

int64_t tl_amx_blocks(int64_t M) { return tl_amx_padded_rows(M) / TILE_ROWS; }

int64_t tl_amx_padded_rows(int64_t M) {
    return (M + 2 * TILE_ROWS - 1) / (2 * TILE_ROWS) * (2 * TILE_ROWS);
}

size_t tl_amx_packed_elements(int64_t M, int64_t K) {
    return (size_t)tl_amx_padded_rows(M) * (size_t)K * PARTS;
}

/* Sixteen BF16 values (as 16-bit integers) back to f32. */
__attribute__((target("avx512f,avx512bw"))) static inline __m512 widen16(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* Splits 16 floats into hi + mid + lo, each rounded to nearest even. An
 * infinity or NaN is its own hi (its remainder would be NaN); a finite value
 * that rounds up to infinity keeps its truncated top bits as hi instead. */
__attribute__((target("avx512f,avx512bw,avx512bf16,avx512vl,avx512dq"))) static void
split16(__m512 a, __m256i part[PARTS]) {
    const int NOT_FINITE = 0x01 | 0x08 | 0x10 | 0x80;   /* QNaN, +inf, -inf, SNaN */
    __mmask16 finite = (__mmask16)~_mm512_fpclass_ps_mask(a, NOT_FINITE);
    __m256i hi = (__m256i)_mm512_cvtneps_pbh(a);
    __mmask16 overflow = finite & _mm512_fpclass_ps_mask(widen16(hi), 0x08 | 0x10);
    __m256i truncated = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(a), 16));
    hi = _mm256_mask_mov_epi16(hi, overflow, truncated);
    __m512 rest = _mm512_maskz_sub_ps(finite, a, widen16(hi));
    __m256i mid = (__m256i)_mm512_cvtneps_pbh(rest);
    rest = _mm512_sub_ps(rest, widen16(mid));
    part[0] = hi;
    part[1] = mid;
    part[2] = (__m256i)_mm512_cvtneps_pbh(rest);
}

/* Packed layout: for each block b of 16 tokens, each k step s of 32 and each
 * part p, one 1 KB tile at ((b * steps + s) * PARTS + p) * 512 elements:
 * row r holds, for tokens 0..15, the pair (k = 32s + 2r, 32s + 2r + 1).
 * A block's step is split token by token into a small buffer (a token's 16
 * pairs are one row there), then each tile row gathers one pair per token. */
__attribute__((target("avx512f,avx512bw,avx512bf16,avx512vl,avx512dq"))) void
tl_amx_pack_block(const float *A, int64_t lda, int64_t M, int64_t K, uint16_t *packed,
                  int64_t b) {
    int64_t steps = K / TILE_K;
    const __m512i token_rows = _mm512_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112, 128, 144,
                                                 160, 176, 192, 208, 224, 240);
    for (int64_t s = 0; s < steps; s++) {
        _Alignas(64) uint32_t by_token[PARTS][TILE_ROWS][16];
        for (int64_t t = 0; t < TILE_ROWS; t++) {
            int64_t m = b * TILE_ROWS + t;
            for (int half = 0; half < 2; half++) {
                __m256i part[PARTS];
                if (m < M) {
                    split16(_mm512_loadu_ps(A + m * lda + s * TILE_K + half * 16), part);
                } else {
                    part[0] = part[1] = part[2] = _mm256_setzero_si256();   /* padding */
                }
                for (int p = 0; p < PARTS; p++)
                    _mm256_store_si256((__m256i *)&by_token[p][t][half * 8], part[p]);
            }
        }
        for (int p = 0; p < PARTS; p++) {
            uint32_t *tile = (uint32_t *)packed + ((b * steps + s) * PARTS + p) * 256;
            for (int r = 0; r < TILE_ROWS; r++)
                _mm512_storeu_si512(tile + r * 16,
                                    _mm512_i32gather_epi32(token_rows, &by_token[p][0][r], 4));
        }
    }
}

/* The sums of row_tiles x 2 tiles (C's transpose: weight rows down, tokens
 * across) into C's rows m0.. (those below M) and its first 16 x row_tiles
 * columns. */
static void store_sums(const float sums[4][TILE_ROWS][TILE_ROWS], int row_tiles, float *C,
                       int64_t ldc, int64_t m0, int64_t M) {
    for (int t = 0; t < 2 * row_tiles; t++) {
        int64_t rows0 = (t >> 1) * TILE_ROWS, tokens0 = m0 + (t & 1) * TILE_ROWS;
        for (int64_t m = 0; m < TILE_ROWS && tokens0 + m < M; m++)
            for (int r = 0; r < TILE_ROWS; r++)
                C[(tokens0 + m) * ldc + rows0 + r] = sums[t][r][m];
    }
}

/* Two tiles of weight rows (W, 32 rows) times all tokens, or one (16 rows:
 * W's last, when it has an odd number of tiles). */
__attribute__((target("amx-tile,amx-bf16"))) static void
rows_times_tokens(const uint16_t *packed, int64_t M, int64_t K, const uint16_t *W, int64_t ldw,
                  bool second, float *C, int64_t ldc) {
    int64_t steps = K / TILE_K, blocks = tl_amx_padded_rows(M) / TILE_ROWS;
    _Alignas(64) float sums[4][TILE_ROWS][TILE_ROWS];
    for (int64_t b = 0; b < blocks; b += 2) {
        const uint16_t *t0 = packed + b * steps * PARTS * 512;
        const uint16_t *t1 = t0 + steps * PARTS * 512;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int64_t s = 0; s < steps; s++) {
            _tile_loadd(4, W + s * TILE_K, ldw * 2);
            if (second) _tile_loadd(5, W + TILE_ROWS * ldw + s * TILE_K, ldw * 2);
            for (int p = 0; p < PARTS; p++) {
                _tile_loadd(6, t0 + (s * PARTS + p) * 512, 64);
                _tile_loadd(7, t1 + (s * PARTS + p) * 512, 64);
                _tile_dpbf16ps(0, 4, 6);
                _tile_dpbf16ps(1, 4, 7);
                if (second) {
                    _tile_dpbf16ps(2, 5, 6);
                    _tile_dpbf16ps(3, 5, 7);
                }
            }
        }
        _tile_stored(0, sums[0], 64);
        _tile_stored(1, sums[1], 64);
        _tile_stored(2, sums[2], 64);
        _tile_stored(3, sums[3], 64);
        store_sums((const float(*)[TILE_ROWS][TILE_ROWS])sums, second ? 2 : 1, C, ldc,
                   b * TILE_ROWS, M);
    }
}

__attribute__((target("amx-tile,amx-bf16"))) void
tl_amx_gemm_rows(const uint16_t *packed, int64_t M, int64_t K, const uint16_t *W, int64_t rows,
                 float *C, int64_t ldc) {
    tile_config config = {.palette = 1};
    for (int t = 0; t < 8; t++) {
        config.rows[t] = TILE_ROWS;
        config.bytes_per_row[t] = 64;
    }
    _tile_loadconfig(&config);
    for (int64_t r = 0; r + TILE_ROWS <= rows; r += 2 * TILE_ROWS)
        rows_times_tokens(packed, M, K, W + r * K, K, r + 2 * TILE_ROWS <= rows, C + r, ldc);
    _tile_release();
}

#else

bool tl_amx_ready(void) { return false; }
int64_t tl_amx_blocks(int64_t M) { return tl_amx_padded_rows(M) / TILE_ROWS; }

int64_t tl_amx_padded_rows(int64_t M) { return M; }
size_t tl_amx_packed_elements(int64_t M, int64_t K) { return (size_t)(M * K); }
int64_t tl_amx_blocks(int64_t M) { return M; }
void tl_amx_pack_block(const float *A, int64_t lda, int64_t M, int64_t K, uint16_t *packed,
                       int64_t b) {
    (void)A, (void)lda, (void)M, (void)K, (void)packed, (void)b;
}
void tl_amx_gemm_rows(const uint16_t *packed, int64_t M, int64_t K, const uint16_t *W,
                      int64_t rows, float *C, int64_t ldc) {
    (void)packed, (void)M, (void)K, (void)W, (void)rows, (void)C, (void)ldc;
}

#endif
