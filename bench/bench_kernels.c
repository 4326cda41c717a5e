/* bench_kernels: how fast the inference kernels run, beside what the machine
 * can do (`make bench-kernels`).
 *
 * Decode reads every weight once per token, so a matrix-vector product can go
 * no faster than memory can be read. We measure that ceiling in the same run,
 * on the same threads, with a STREAM-like read loop (a sum over a buffer), and
 * report each product in GB/s of weights read and as a fraction of it.
 *
 * Caches. A model's weights do not fit in the last-level cache, and decode
 * walks through all of them per token, so no matrix is still cached when its
 * turn comes. The bench does the same: one arena of at least 4x the LLC holds
 * back-to-back copies of the matrix, and one timed pass walks through them
 * all, as decode walks through layers. Every shape, even one that would fit
 * in cache alone, is thus read from memory. The arena is touched (page
 * faults) by the same threads before any timing.
 *
 * One arena for both dtypes: each 32-bit word is two bf16 numbers of
 * moderate size (|v| in [2^-7, 2)), and read as one f32 it is a number of that
 * size too, so the same bytes serve as f32 weights, bf16 weights and the read
 * loop's buffer, and the three are timed in turn, repetition by repetition,
 * under the same conditions.
 *
 * On a CPU with AVX512-BF16 a fourth figure is not the runtime's: a GEMV
 * whose activations are rounded to BF16 (vdpbf16ps), what a course decision
 * to round them would buy (course/MS-L7/README.md 4.14).
 *
 * A product's figure includes what each call costs beyond reading (waking
 * the threads, one barrier per matrix), since decode pays it too; the read
 * loop pays one barrier per pass.
 *
 * Each figure is the median of REPS timed passes after WARMUP passes, with the
 * slowest and fastest pass beside it. Threads: TINYLLM_THREADS (default 2 for
 * this bench); OpenBLAS is given the same count. The last lines are
 * `name: value`, one per figure, for scripts.
 */
#include <cblas.h>
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tinyllm/bf16.h"
#include "tinyllm/kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

#define WARMUP 1
#define REPS 9
#define MIN_ARENA_BYTES ((size_t)512 << 20)
#define MAX_ARENA_BYTES ((size_t)4 << 30)
#define MAX_FIGURES 32

/* ---- timing and statistics ------------------------------------------------ */

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A figure: REPS rates (GB/s or GFLOP/s), summarised by median and spread. */
typedef struct {
    double rate[REPS];
    double median, min, max;
} figure;

static void summarise(figure *f) {
    double sorted[REPS];
    memcpy(sorted, f->rate, sizeof sorted);
    qsort(sorted, REPS, sizeof *sorted, cmp_double);
    f->min = sorted[0];
    f->max = sorted[REPS - 1];
    f->median = sorted[REPS / 2];
}

/* The `name: value` lines printed at the end, in order of measurement. */
static struct { char name[64]; double value; } results[MAX_FIGURES];
static int n_results;

static void record(const char *name, double value) {
    if (n_results == MAX_FIGURES) return;
    snprintf(results[n_results].name, sizeof results[n_results].name, "%s", name);
    results[n_results++].value = value;
}

/* ---- the arena ------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A bf16 of random sign, exponent 2^-7 .. 2^0 and mantissa: never zero,
 * subnormal, infinite or NaN, whichever half of an f32 it lands in. */
static uint16_t moderate_bf16(uint64_t bits) {
    uint16_t sign = (uint16_t)(bits & 1) << 15;
    uint16_t exponent = (uint16_t)(120 + (bits >> 1) % 8) << 7;
    uint16_t mantissa = (uint16_t)((bits >> 4) & 0x7F);
    return sign | exponent | mantissa;
}

/* Touches every page before any timing, so page faults stay out of the
 * figures; in parallel on the bench's threads, as first touch places pages
 * near their thread on a machine with several memory nodes. */
static void fill_arena(uint32_t *words, size_t n, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t i = 0; i < n; i++) {
        uint64_t r = splitmix64(i);
        words[i] = (uint32_t)moderate_bf16(r >> 32) << 16 | moderate_bf16(r);
    }
}

/* 4x the last-level cache, so nothing survives a pass (within bounds). */
static size_t arena_bytes(void) {
    long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
    size_t bytes = llc > 0 ? 4 * (size_t)llc : 0;
    if (bytes < MIN_ARENA_BYTES) bytes = MIN_ARENA_BYTES;
    return bytes < MAX_ARENA_BYTES ? bytes : MAX_ARENA_BYTES;
}

/* ---- the read loop (STREAM-like, read only) -------------------------------- */

static float sum_portable(const float *p, size_t n) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (size_t i = 0; i < n; i++) s += p[i];
    return s;
}

#ifdef HAVE_X86
/* Eight independent adds in flight, so the loop is limited by loads alone,
 * and the software prefetch the kernels use (kernels.c, PREFETCH_BYTES):
 * without it this loop reads about 20% slower here, which would flatter
 * the kernels' ratios. */
#define PREFETCH_BYTES 8192

__attribute__((target("avx2"))) static float sum_avx2(const float *p, size_t n) {
    __m256 a[8];
    for (int k = 0; k < 8; k++) a[k] = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        for (int line = 0; line < 4; line++)
            _mm_prefetch((const char *)((uintptr_t)(p + i + 16 * line) + PREFETCH_BYTES),
                         _MM_HINT_T0);
        for (int k = 0; k < 8; k++) a[k] = _mm256_add_ps(a[k], _mm256_loadu_ps(p + i + 8 * k));
    }
    for (int k = 1; k < 8; k++) a[0] = _mm256_add_ps(a[0], a[k]);
    float lanes[8], s = 0.0f;
    _mm256_storeu_ps(lanes, a[0]);
    for (int k = 0; k < 8; k++) s += lanes[k];
    return s + sum_portable(p + i, n - i);
}
#endif

/* Each thread sums its own contiguous block, as in a product's row split. */
static float read_all(const float *p, size_t n, int threads) {
    float (*sum)(const float *, size_t) = sum_portable;
#ifdef HAVE_X86
    if (__builtin_cpu_supports("avx2")) sum = sum_avx2;
#endif
    float total = 0.0f;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
        size_t t = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
        size_t begin = n * t / nt, end = n * (t + 1) / nt;
        total += sum(p + begin, end - begin);
    }
    return total;
}

/* ---- the products ------------------------------------------------------------ */

/* Walks every back-to-back copy of a rows x cols matrix in the arena. */
static void gemv_walk_f32(const float *arena, size_t arena_floats, const float *x, float *y,
                          int64_t rows, int64_t cols) {
    size_t per = (size_t)(rows * cols), copies = arena_floats / per;
    for (size_t i = 0; i < copies; i++) tl_gemv_f32(arena + i * per, x, y, rows, cols);
}

static void gemv_walk_bf16(const uint16_t *arena, size_t arena_halves, const float *x,
                           float *y, int64_t rows, int64_t cols) {
    size_t per = (size_t)(rows * cols), copies = arena_halves / per;
    for (size_t i = 0; i < copies; i++) tl_gemv_bf16(arena + i * per, x, y, rows, cols);
}

#ifdef HAVE_X86
/* Not the runtime's: a GEMV with the activations rounded to BF16, reading
 * pairs with AVX512-BF16's vdpbf16ps, as llama.cpp's BF16 path does. It shows
 * what a course decision to round activations would buy (README 4.14): one
 * load and one instruction per 32 weights, against the runtime's widening
 * and two FMAs. cols must be a multiple of 32 (the bench's shapes are). */
__attribute__((target("avx512f,avx512bf16"))) static void gemv_bf16_rounded_x(
    const uint16_t *W, const uint16_t *xb, float *y, int64_t rows, int64_t cols,
    int threads) {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t r = 0; r < rows; r++) {
        const uint16_t *w = W + r * cols;
        __m512 a0 = _mm512_setzero_ps(), a1 = a0;
        int64_t c = 0;
        for (; c + 64 <= cols; c += 64) {
            a0 = _mm512_dpbf16_ps(a0, (__m512bh)_mm512_loadu_si512(w + c),
                                  (__m512bh)_mm512_loadu_si512(xb + c));
            a1 = _mm512_dpbf16_ps(a1, (__m512bh)_mm512_loadu_si512(w + c + 32),
                                  (__m512bh)_mm512_loadu_si512(xb + c + 32));
        }
        if (c < cols)
            a0 = _mm512_dpbf16_ps(a0, (__m512bh)_mm512_loadu_si512(w + c),
                                  (__m512bh)_mm512_loadu_si512(xb + c));
        y[r] = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    }
}

static bool has_bf16_dot(void) { return __builtin_cpu_supports("avx512bf16"); }
#else
static void gemv_bf16_rounded_x(const uint16_t *W, const uint16_t *xb, float *y,
                                int64_t rows, int64_t cols, int threads) {
    (void)W, (void)xb, (void)y, (void)rows, (void)cols, (void)threads;
}

static bool has_bf16_dot(void) { return false; }
#endif

static void gemv_walk_rounded_x(const uint16_t *arena, size_t arena_halves, const uint16_t *xb,
                                float *y, int64_t rows, int64_t cols, int threads) {
    size_t per = (size_t)(rows * cols), copies = arena_halves / per;
    for (size_t i = 0; i < copies; i++)
        gemv_bf16_rounded_x(arena + i * per, xb, y, rows, cols, threads);
}

typedef struct {
    int64_t rows, cols;
    const char *role;
} gemv_shape;

/* SmolLM2-135M's decode shapes, as [out, in] weights. */
static const gemv_shape GEMV_SHAPES[] = {
    {576, 1536, "down_proj"},
    {1536, 576, "gate/up_proj"},
    {49152, 576, "lm_head"},
};
#define N_GEMV_SHAPES (int)(sizeof GEMV_SHAPES / sizeof GEMV_SHAPES[0])

static volatile float sink;   /* keeps the read loop's sum alive */

/* One shape: read loop, f32 walk, bf16 walk and (rounded, when the CPU has
 * BF16 dot products) the rounded-activation walk, in turn, REPS times.
 * Returns the read figure and writes the products' figures. */
static figure bench_gemv_shape(const gemv_shape *s, float *arena, size_t arena_size,
                               int threads, figure *f32, figure *bf16, figure *rounded) {
    size_t floats = arena_size / sizeof(float), halves = arena_size / sizeof(uint16_t);
    size_t per = (size_t)(s->rows * s->cols);
    double read_bytes = (double)floats * sizeof(float);
    double f32_bytes = (double)(floats / per * per) * sizeof(float);
    double bf16_bytes = (double)(halves / per * per) * sizeof(uint16_t);

    float *x = malloc((size_t)s->cols * sizeof *x), *y = malloc((size_t)s->rows * sizeof *y);
    if (!x || !y) {
        fprintf(stderr, "bench_kernels: out of memory for a %lld x %lld product\n",
                (long long)s->rows, (long long)s->cols);
        exit(1);
    }
    for (int64_t c = 0; c < s->cols; c++) x[c] = (float)(c % 7) * 0.25f - 0.75f;
    uint16_t xb[2048];   /* x rounded to BF16: exact, these values have few bits */
    bool round_x = rounded && s->cols <= 2048 && s->cols % 32 == 0;
    if (round_x) tl_f32_to_bf16_n(x, xb, (size_t)s->cols);

    figure rd;
    for (int rep = -WARMUP; rep < REPS; rep++) {
        double t0 = now_seconds();
        sink = read_all(arena, floats, threads);
        double t1 = now_seconds();
        gemv_walk_f32(arena, floats, x, y, s->rows, s->cols);
        double t2 = now_seconds();
        gemv_walk_bf16((const uint16_t *)arena, halves, x, y, s->rows, s->cols);
        double t3 = now_seconds();
        if (round_x)
            gemv_walk_rounded_x((const uint16_t *)arena, halves, xb, y, s->rows, s->cols,
                                threads);
        double t4 = now_seconds();
        if (rep < 0) continue;
        rd.rate[rep] = read_bytes / (t1 - t0) * 1e-9;
        f32->rate[rep] = f32_bytes / (t2 - t1) * 1e-9;
        bf16->rate[rep] = bf16_bytes / (t3 - t2) * 1e-9;
        if (round_x) rounded->rate[rep] = bf16_bytes / (t4 - t3) * 1e-9;
    }
    summarise(&rd);
    summarise(f32);
    summarise(bf16);
    if (round_x) summarise(rounded);
    free(x);
    free(y);
    return rd;
}

/* C[M, N] = A[M, K] @ B[N, K]^T, in GFLOP/s (2MNK flops per product). */
static figure bench_gemm(int64_t M, int64_t N, int64_t K, const float *B) {
    float *A = malloc((size_t)(M * K) * sizeof *A), *C = malloc((size_t)(M * N) * sizeof *C);
    if (!A || !C) {
        fprintf(stderr, "bench_kernels: out of memory for a %lld x %lld x %lld GEMM\n",
                (long long)M, (long long)K, (long long)N);
        exit(1);
    }
    for (int64_t i = 0; i < M * K; i++) A[i] = (float)(i % 13) * 0.125f - 0.75f;
    figure f;
    for (int rep = -WARMUP; rep < REPS; rep++) {
        double t0 = now_seconds();
        tl_gemm_f32_nt(A, B, C, M, N, K);
        double t1 = now_seconds();
        if (rep >= 0) f.rate[rep] = 2.0 * (double)M * (double)N * (double)K / (t1 - t0) * 1e-9;
    }
    summarise(&f);
    free(A);
    free(C);
    return f;
}

/* ---- main ------------------------------------------------------------------ */

static void print_figure(const char *what, const char *unit, const figure *f) {
    printf("  %-34s %8.2f %-7s (min %.2f, max %.2f)\n", what, f->median, unit, f->min, f->max);
}

/* "model name" from /proc/cpuinfo, or "unknown CPU". */
static void cpu_model(char *out, size_t size) {
    snprintf(out, size, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            snprintf(out, size, "%s", colon + 2);
            out[strcspn(out, "\n")] = '\0';
            break;
        }
    }
    fclose(f);
}

static bool simd_kernels(void) {
#ifdef HAVE_X86
    const char *off = getenv("TINYLLM_SIMD");
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           !(off && strcmp(off, "0") == 0);
#else
    return false;
#endif
}

/* OpenBLAS picks its kernels by CPU model at load time; a model newer than
 * the library falls back to a pre-AVX core, several times slower. */
static void warn_if_blas_core_is_old(void) {
#ifdef HAVE_X86
    static const char *const OLD[] = {"Prescott", "Core2", "Penryn", "Dunnington",
                                      "Nehalem", "Atom", "Katmai", "Banias"};
    const char *core = openblas_get_corename();
    for (size_t i = 0; i < sizeof OLD / sizeof OLD[0]; i++)
        if (core && strcmp(core, OLD[i]) == 0 && __builtin_cpu_supports("avx2"))
            printf("  note: OpenBLAS did not recognise this CPU and runs its %s (SSE3)\n"
                   "  kernels, although the CPU has AVX2%s; OPENBLAS_CORETYPE=%s\n"
                   "  in the environment selects faster ones; the figures are the default's.\n",
                   core, __builtin_cpu_supports("avx512f") ? " and AVX-512" : "",
                   __builtin_cpu_supports("avx512f") ? "Cooperlake" : "Haswell");
#endif
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(void) {
    setenv("TINYLLM_THREADS", "2", 0);   /* the goal is stated for 2 threads */
    int threads = tl_num_threads();
    size_t size = arena_bytes();
    long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    char model[256];
    cpu_model(model, sizeof model);

    printf("bench_kernels: %s, %d cores\n", model, omp_get_num_procs());
    printf("%d threads (TINYLLM_THREADS), %s kernels\n", threads,
           simd_kernels() ? "AVX2+FMA" : "portable");
    printf("arena: %zu MiB (last-level cache %ld MiB); each pass walks copies of the\n"
           "matrix filling it, so weights come from memory as in decode.\n"
           "figures: median of %d passes after %d warm-up (min, max of the passes)\n\n",
           size >> 20, llc > 0 ? llc >> 20 : -1L, REPS, WARMUP);

    float *arena = aligned_alloc(64, size);
    if (!arena) {
        fprintf(stderr, "bench_kernels: cannot allocate the %zu MiB arena; free memory and "
                        "retry\n", size >> 20);
        return 1;
    }
    fill_arena((uint32_t *)arena, size / sizeof(uint32_t), threads);

    printf("decode: matrix-vector products, GB/s of weights read\n");
    double wall0 = now_seconds(), cpu0 = cpu_seconds();
    figure rd[N_GEMV_SHAPES], f32[N_GEMV_SHAPES], bf16[N_GEMV_SHAPES], rounded[N_GEMV_SHAPES];
    bool bf16_dot = has_bf16_dot();
    double pool[N_GEMV_SHAPES * REPS];   /* every read pass, for one bandwidth figure */
    for (int i = 0; i < N_GEMV_SHAPES; i++) {
        const gemv_shape *s = &GEMV_SHAPES[i];
        rd[i] = bench_gemv_shape(s, arena, size, threads, &f32[i], &bf16[i],
                                 bf16_dot ? &rounded[i] : NULL);
        memcpy(pool + i * REPS, rd[i].rate, sizeof rd[i].rate);

        char what[96], name[64];
        printf(" %lld x %lld (%s): %.1f MB as f32, %.1f MB as bf16\n", (long long)s->rows,
               (long long)s->cols, s->role, (double)(s->rows * s->cols) * 4e-6,
               (double)(s->rows * s->cols) * 2e-6);
        print_figure("read loop (same passes)", "GB/s", &rd[i]);
        snprintf(what, sizeof what, "gemv f32   (%.2f of read)", f32[i].median / rd[i].median);
        print_figure(what, "GB/s", &f32[i]);
        snprintf(what, sizeof what, "gemv bf16  (%.2f of read)", bf16[i].median / rd[i].median);
        print_figure(what, "GB/s", &bf16[i]);
        if (bf16_dot) {
            snprintf(what, sizeof what, "bf16, x rounded (%.2f of read)",
                     rounded[i].median / rd[i].median);
            print_figure(what, "GB/s", &rounded[i]);
        }
        snprintf(name, sizeof name, "gemv_f32_%lldx%lld_gbs", (long long)s->rows,
                 (long long)s->cols);
        record(name, f32[i].median);
        snprintf(name, sizeof name, "gemv_bf16_%lldx%lld_gbs", (long long)s->rows,
                 (long long)s->cols);
        record(name, bf16[i].median);
    }
    /* Other processes on our cores make each product's closing barrier wait
     * for a thread that is not running; the CPU time our threads got shows
     * it (spinning at a barrier counts as running, so this is an upper bound). */
    double share = (cpu_seconds() - cpu0) / ((now_seconds() - wall0) * threads);
    printf(" the bench's threads were on a core %.0f%% of the time%s\n", 100.0 * share,
           share < 0.9 ? ": other processes took the\n rest, so these figures are low; "
                         "measure on a quiet machine" : "");
    qsort(pool, N_GEMV_SHAPES * REPS, sizeof *pool, cmp_double);
    double read_median = pool[N_GEMV_SHAPES * REPS / 2];

    printf("\nprefill: GEMM C[M,N] = A[M,K] @ B[N,K]^T on %s\n",
           tl_gemm_kernels());   /* the kernels the runtime's GEMMs run on */
    warn_if_blas_core_is_old();
    static const int64_t GEMM_SHAPES[][3] = {{128, 1536, 576}, {128, 49152, 576}};
    for (int i = 0; i < 2; i++) {
        int64_t M = GEMM_SHAPES[i][0], N = GEMM_SHAPES[i][1], K = GEMM_SHAPES[i][2];
        figure g = bench_gemm(M, N, K, arena);   /* B: the arena's first N*K floats */
        char what[96], name[64];
        snprintf(what, sizeof what, "%lld x %lld by %lld x %lld", (long long)M, (long long)K,
                 (long long)K, (long long)N);
        print_figure(what, "GFLOP/s", &g);
        snprintf(name, sizeof name, "gemm_f32_%lldx%lldx%lld_gflops", (long long)M,
                 (long long)K, (long long)N);
        record(name, g.median);
    }
    printf("  (OpenBLAS threads: %d)\n", openblas_get_num_threads());
    free(arena);

    /* The headline: the largest shape, product over read loop in the same passes. */
    int last = N_GEMV_SHAPES - 1;
    printf("\nratios below: the %lld x %lld shape (%s, the largest), gemv GB/s over the read\n"
           "loop's GB/s in the same passes; goal >= 0.85 on 2 threads.\n\n",
           (long long)GEMV_SHAPES[last].rows, (long long)GEMV_SHAPES[last].cols,
           GEMV_SHAPES[last].role);
    printf("threads: %d\n", threads);
    printf("read_bandwidth_gbs: %.2f\n", read_median);
    for (int i = 0; i < n_results; i++) printf("%s: %.2f\n", results[i].name, results[i].value);
    printf("gemv_f32_vs_read_bandwidth: %.3f\n", f32[last].median / rd[last].median);
    printf("gemv_bf16_vs_read_bandwidth: %.3f\n", bf16[last].median / rd[last].median);
    if (bf16_dot)   /* not the runtime's: what rounding activations to BF16 would buy */
        printf("gemv_bf16_rounded_x_vs_read_bandwidth: %.3f\n",
               rounded[last].median / rd[last].median);
    return 0;
}
