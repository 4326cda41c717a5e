/* read_bound.c: reading arrays at the speed of memory (read_bound.h). */
#include <string.h>

#include "tinyllm/kernels.h"
#include "read_bound.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

enum { PIECE_BYTES = 256 << 10, MAX_PIECES = 16384 };

typedef struct {
    const char *data[MAX_PIECES];
    size_t bytes[MAX_PIECES];
    uint64_t sum[MAX_PIECES];
    int n;
} read_job;

static uint64_t sum_portable(const char *data, size_t bytes) {
    uint64_t total = 0, word;
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
        memcpy(&word, data + i, 8);
        total += word;
    }
    return total;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) static uint64_t sum_avx2(const char *data, size_t bytes) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 128 <= bytes; i += 128) {
        _mm_prefetch(data + i + 8192, _MM_HINT_T0);
        _mm_prefetch(data + i + 8192 + 64, _MM_HINT_T0);
        a0 = _mm256_add_epi32(a0, _mm256_loadu_si256((const __m256i *)(data + i)));
        a1 = _mm256_add_epi32(a1, _mm256_loadu_si256((const __m256i *)(data + i + 32)));
        a2 = _mm256_add_epi32(a2, _mm256_loadu_si256((const __m256i *)(data + i + 64)));
        a3 = _mm256_add_epi32(a3, _mm256_loadu_si256((const __m256i *)(data + i + 96)));
    }
    a0 = _mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3));
    uint64_t lanes[4];
    _mm256_storeu_si256((__m256i *)lanes, a0);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3] + sum_portable(data + i, bytes - i);
}
#endif

static void read_piece(void *ctx, int64_t k) {
    read_job *j = ctx;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2")) {
        j->sum[k] = sum_avx2(j->data[k], j->bytes[k]);
        return;
    }
#endif
    j->sum[k] = sum_portable(j->data[k], j->bytes[k]);
}

uint64_t read_regions(const read_region *r, int n, int threads) {
    static read_job j;
    j.n = 0;
    for (int k = 0; k < n; k++)
        for (size_t at = 0; at < r[k].bytes && j.n < MAX_PIECES; at += PIECE_BYTES) {
            j.data[j.n] = (const char *)r[k].data + at;
            j.bytes[j.n++] = r[k].bytes - at < PIECE_BYTES ? r[k].bytes - at : PIECE_BYTES;
        }
    tl_parallel_chunks(threads, j.n, read_piece, &j);
    uint64_t total = 0;
    for (int k = 0; k < j.n; k++) total += j.sum[k];
    return total;
}
