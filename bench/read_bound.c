/* read_bound.c: reading arrays at the speed of memory (read_bound.h).
 *
 * The bound must be the fastest plain read the machine does, or a kernel can
 * beat it (a ratio above 1 says the bound is wrong, not the kernel fast).
 * Which loop is fastest depends on the CPU: on a Sapphire Rapids guest,
 * 64-byte loads without software prefetch read 5-9% faster than 32-byte loads
 * with it, which had been the only loop; on a Zen 5, four streams a quarter
 * of each array apart read 8-15% faster than one (README 4.17), as the
 * GEMVs now read. So the first call at each thread count times every loop
 * the CPU has over the same regions and keeps the fastest for the rest of
 * the run. */
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "tinyllm/kernels.h"
#include "read_bound.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

enum { PIECE_BYTES = 256 << 10, MAX_PIECES = 16384, MAX_THREADS = 256, TRIALS = 3 };

typedef uint64_t sum_fn(const char *data, size_t bytes);
/* Lines [begin, end) of an array's first quarter and of the three quarters
 * after it (quarter bytes apart). */
typedef uint64_t quads_sum_fn(const char *data, size_t quarter, size_t begin, size_t end);

typedef struct {
    const char *data[MAX_PIECES];
    size_t bytes[MAX_PIECES];
    uint64_t sum[MAX_PIECES];
    sum_fn *sum_of;
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
/* 32-byte loads, four adds in flight; with prefetch, the kernels' distance. */
__attribute__((target("avx2"), always_inline)) static inline uint64_t
sum_avx2(const char *data, size_t bytes, bool prefetch) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 128 <= bytes; i += 128) {
        if (prefetch) {
            _mm_prefetch(data + i + 8192, _MM_HINT_T0);
            _mm_prefetch(data + i + 8192 + 64, _MM_HINT_T0);
        }
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

__attribute__((target("avx2"))) static uint64_t sum_avx2_prefetch(const char *d, size_t n) {
    return sum_avx2(d, n, true);
}

__attribute__((target("avx2"))) static uint64_t sum_avx2_plain(const char *d, size_t n) {
    return sum_avx2(d, n, false);
}

/* 64-byte loads, two adds in flight, no software prefetch. */
__attribute__((target("avx512f"))) static uint64_t sum_avx512(const char *data, size_t bytes) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0;
    size_t i = 0;
    for (; i + 128 <= bytes; i += 128) {
        a0 = _mm512_add_epi32(a0, _mm512_loadu_si512(data + i));
        a1 = _mm512_add_epi32(a1, _mm512_loadu_si512(data + i + 64));
    }
    return (uint64_t)_mm512_reduce_add_epi64(_mm512_add_epi64(a0, a1)) +
           sum_portable(data + i, bytes - i);
}

/* 64-byte loads in four streams, as the GEMVs' four rows a quarter apart. */
__attribute__((target("avx512f"))) static uint64_t sum_avx512_quads(const char *d, size_t quarter,
                                                                     size_t begin, size_t end) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = begin * 64; i < end * 64; i += 64) {
        a0 = _mm512_add_epi32(a0, _mm512_loadu_si512(d + i));
        a1 = _mm512_add_epi32(a1, _mm512_loadu_si512(d + quarter + i));
        a2 = _mm512_add_epi32(a2, _mm512_loadu_si512(d + 2 * quarter + i));
        a3 = _mm512_add_epi32(a3, _mm512_loadu_si512(d + 3 * quarter + i));
    }
    return (uint64_t)_mm512_reduce_add_epi64(
        _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
}
#endif

/* One array read as the four-stream GEMVs read a weight: its first quarter's
 * lines shared by tl_parallel_range in blocks of 16 KB, each line with its
 * three partners; the bytes past four whole quarters by the caller. */
typedef struct {
    quads_sum_fn *sum;
    const char *data;
    size_t quarter;
    atomic_uint_fast64_t total;
} quads_job;

static void read_quads_range(void *ctx, int64_t begin, int64_t end) {
    quads_job *j = ctx;
    atomic_fetch_add_explicit(&j->total, j->sum(j->data, j->quarter, (size_t)begin, (size_t)end),
                              memory_order_relaxed);
}

static uint64_t read_quads(quads_sum_fn *sum, const read_region *r, int n, int threads) {
    uint64_t total = 0;
    for (int k = 0; k < n; k++) {
        size_t lines = r[k].bytes / 4 / 64, quarter = lines * 64;
        quads_job j = {sum, r[k].data, quarter, 0};
        if (lines > 0) tl_parallel_range(threads, (int64_t)lines, 256, read_quads_range, &j);
        total += atomic_load(&j.total) + sum_portable((const char *)r[k].data + 4 * quarter,
                                                      r[k].bytes - 4 * quarter);
    }
    return total;
}

static void read_piece(void *ctx, int64_t k) {
    read_job *j = ctx;
    j->sum[k] = j->sum_of(j->data[k], j->bytes[k]);
}

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t run(read_job *j, int threads) {
    tl_parallel_chunks(threads, j->n, read_piece, j);
    uint64_t total = 0;
    for (int k = 0; k < j->n; k++) total += j->sum[k];
    return total;
}

/* A read loop: over pieces (sum) or in four streams an array (quads). */
typedef struct {
    sum_fn *sum;
    quads_sum_fn *quads;
    const char *name;
} read_loop;

static uint64_t run_loop(read_loop loop, read_job *j, const read_region *r, int n, int threads) {
    if (loop.quads) return read_quads(loop.quads, r, n, threads);
    j->sum_of = loop.sum;
    return run(j, threads);
}

/* The loops this CPU has; the fastest over TRIALS reads of the regions. */
static read_loop fastest(read_job *j, const read_region *r, int n_regions, int threads,
                         uint64_t *sink) {
    read_loop loops[4] = {{sum_portable, NULL, "8-byte loads"}};
    int n = 1;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2")) {
        loops[0] = (read_loop){sum_avx2_prefetch, NULL, "32-byte loads, prefetch 8 KB ahead"};
        loops[n++] = (read_loop){sum_avx2_plain, NULL, "32-byte loads"};
    }
    if (__builtin_cpu_supports("avx512f")) {
        loops[n++] = (read_loop){sum_avx512, NULL, "64-byte loads"};
        loops[n++] = (read_loop){NULL, sum_avx512_quads, "64-byte loads, four streams an array"};
    }
#endif
    read_loop best = loops[0];
    double best_time = 1e30;
    for (int trial = 0; trial < TRIALS; trial++)
        for (int i = 0; i < n; i++) {
            double t0 = seconds();
            *sink += run_loop(loops[i], j, r, n_regions, threads);
            double t = seconds() - t0;
            if (t < best_time) best_time = t, best = loops[i];
        }
    return best;
}

static read_loop chosen[MAX_THREADS + 1];

static int slot_of(int threads) {
    return threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
}

uint64_t read_regions(const read_region *r, int n, int threads) {
    static read_job j;
    j.n = 0;
    for (int k = 0; k < n; k++)
        for (size_t at = 0; at < r[k].bytes && j.n < MAX_PIECES; at += PIECE_BYTES) {
            j.data[j.n] = (const char *)r[k].data + at;
            j.bytes[j.n++] = r[k].bytes - at < PIECE_BYTES ? r[k].bytes - at : PIECE_BYTES;
        }
    int slot = slot_of(threads);
    uint64_t total = 0;
    if (!chosen[slot].name) chosen[slot] = fastest(&j, r, n, threads, &total);
    return total + run_loop(chosen[slot], &j, r, n, threads);
}

const char *read_loop_name(int threads) {
    const char *name = chosen[slot_of(threads)].name;
    return name ? name : "none chosen yet";
}
