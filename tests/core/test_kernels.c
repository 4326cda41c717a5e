/* Kernels: the matrix-vector products against a double-precision reference,
 * exact structure checks, independence from the thread count and the code
 * path, the GEMMs (OpenBLAS on blocks our threads share), and TINYLLM_THREADS.
 *
 * Tolerance. A float sum of n products, in any order, with each product
 * exact (FMA) or rounded once, is within n * 2^-24 * sum |w_c x_c| of the
 * exact value (Higham, Accuracy and Stability, 2002, eq. 4.4, to first
 * order). The kernels' blocked order does much better in practice, but this
 * bound holds for both code paths and for OpenBLAS whatever order they use.
 * The one-hot tests need no tolerance: each output is a single product.
 */
#include <cblas.h>
#include <check.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "tinyllm/testing.h"
#include "tinyllm/bf16.h"
#include "tinyllm/kernels.h"
#include "tinyllm/pcg32.h"

/* ---- helpers ------------------------------------------------------------ */

/* Sets (value) or unsets (NULL) an environment variable for one test; the
 * matching restore puts back what was there, for runs without fork. */
typedef struct { const char *name; char *saved; } env_guard;

static env_guard env_set(const char *name, const char *value) {
    const char *old = getenv(name);
    env_guard g = {name, old ? strdup(old) : NULL};
    if (value) setenv(name, value, 1);
    else unsetenv(name);
    return g;
}

static void env_restore(env_guard g) {
    if (g.saved) setenv(g.name, g.saved, 1);
    else unsetenv(g.name);
    free(g.saved);
}

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    ck_assert_msg(p != NULL, "out of memory for %zu bytes", bytes);
    return p;
}

static float uniform(tl_pcg32 *rng) { return 2.0f * tl_pcg32_uniform(rng) - 1.0f; }

/* Random bf16 weights: the top half of a uniform float in [-1, 1). */
static uint16_t random_bf16(tl_pcg32 *rng) {
    float f = uniform(rng);
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return (uint16_t)(bits >> 16);
}

/* Compares y with sum_c W(r, c) x[c] in double, within the bound above.
 * w_at(r, c) reads the weight whatever its dtype. */
typedef double (*weight_at)(const void *W, int64_t cols, int64_t r, int64_t c);

static double f32_at(const void *W, int64_t cols, int64_t r, int64_t c) {
    return ((const float *)W)[r * cols + c];
}

static double bf16_at(const void *W, int64_t cols, int64_t r, int64_t c) {
    return tl_bf16_to_f32(((const uint16_t *)W)[r * cols + c]);
}

static void assert_matches_reference(const char *what, const void *W, weight_at at,
                                     const float *x, const float *y, int64_t rows,
                                     int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        double exact = 0.0, magnitude = 0.0;
        for (int64_t c = 0; c < cols; c++) {
            double p = at(W, cols, r, c) * (double)x[c];
            exact += p;
            magnitude += fabs(p);
        }
        double tol = (double)cols * 0x1p-24 * magnitude + DBL_MIN;
        ck_assert_msg(fabs((double)y[r] - exact) <= tol,
                      "%s [%lld x %lld]: y[%lld] = %.9g, double reference %.9g, error %.3g "
                      "> tolerance %.3g", what, (long long)rows, (long long)cols,
                      (long long)r, (double)y[r], exact, fabs((double)y[r] - exact), tol);
    }
}

/* Shapes that stress the edges: one row or column, fewer rows than threads,
 * columns not a multiple of 8, 16 or 32 (the vector tails), and products
 * large enough to be split across threads (>= 64K weights). */
static const int64_t EDGE_SHAPES[][2] = {
    {1, 1}, {1, 7}, {2, 8}, {3, 9}, {1, 31}, {5, 32}, {4, 33}, {7, 47}, {9, 64},
    {13, 100}, {1, 100003}, {3, 40001}, {257, 255}, {129, 1031}, {576, 1536}};
#define N_EDGE_SHAPES (int)(sizeof EDGE_SHAPES / sizeof EDGE_SHAPES[0])
#define N_RANDOM_SHAPES 12

/* The code paths: TINYLLM_SIMD unset (AVX-512 or AVX2, the best the CPU
 * has) with the AVX-512 rows one after another, in pairs and in four streams
 * (TINYLLM_GEMV_ROWS), "avx2" (AVX2 at most) and "0" (the portable loops). */
typedef struct { const char *simd, *rows; } code_path;
static const code_path PATHS[] = {{NULL, "1"}, {NULL, "2"}, {NULL, "4"}, {"avx2", NULL},
                                  {"0", NULL}};
#define N_PATHS (int)(sizeof PATHS / sizeof PATHS[0])

typedef struct { env_guard simd, rows; } path_guard;

static path_guard path_set(code_path p) {
    return (path_guard){env_set("TINYLLM_SIMD", p.simd), env_set("TINYLLM_GEMV_ROWS", p.rows)};
}

static void path_restore(path_guard g) {
    env_restore(g.rows);
    env_restore(g.simd);
}

/* The function's name and the code path chosen, for messages. */
static const char *simd_label(const char *fn) {
    static char label[64];
    const char *s = getenv("TINYLLM_SIMD"), *r = getenv("TINYLLM_GEMV_ROWS");
    snprintf(label, sizeof label, "%s (%s)", fn,
             s && strcmp(s, "avx2") == 0 ? "avx2"
             : s                         ? "portable"
             : r && strcmp(r, "2") == 0  ? "best, rows in pairs"
             : r && strcmp(r, "4") == 0  ? "best, rows in four streams"
                                         : "best, rows one by one");
    return label;
}

/* Runs check(rows, cols, rng) over the edge shapes and random ones, under
 * every code path and 3 threads (more than the rows of some shapes). */
static void over_shapes_and_paths(void (*check)(int64_t, int64_t, tl_pcg32 *)) {
    env_guard threads = env_set("TINYLLM_THREADS", "3");
    for (int p = 0; p < N_PATHS; p++) {
        path_guard path = path_set(PATHS[p]);
        tl_pcg32 rng;
        tl_pcg32_seed(&rng, 20240907, (uint64_t)p);
        for (int i = 0; i < N_EDGE_SHAPES; i++) check(EDGE_SHAPES[i][0], EDGE_SHAPES[i][1], &rng);
        for (int i = 0; i < N_RANDOM_SHAPES; i++) {
            int64_t rows = 1 + tl_pcg32_bounded(&rng, 300);
            int64_t cols = 1 + tl_pcg32_bounded(&rng, 700);
            check(rows, cols, &rng);
        }
        path_restore(path);
    }
    env_restore(threads);
}

static void check_f32(int64_t rows, int64_t cols, tl_pcg32 *rng) {
    float *W = xmalloc((size_t)(rows * cols) * sizeof *W);
    float *x = xmalloc((size_t)cols * sizeof *x), *y = xmalloc((size_t)rows * sizeof *y);
    for (int64_t i = 0; i < rows * cols; i++) W[i] = uniform(rng);
    for (int64_t c = 0; c < cols; c++) x[c] = uniform(rng);
    tl_gemv_f32(W, x, y, rows, cols);
    assert_matches_reference(simd_label("tl_gemv_f32"), W, f32_at, x, y, rows, cols);
    free(W);
    free(x);
    free(y);
}

static void check_bf16(int64_t rows, int64_t cols, tl_pcg32 *rng) {
    uint16_t *W = xmalloc((size_t)(rows * cols) * sizeof *W);
    float *x = xmalloc((size_t)cols * sizeof *x), *y = xmalloc((size_t)rows * sizeof *y);
    for (int64_t i = 0; i < rows * cols; i++) W[i] = random_bf16(rng);
    for (int64_t c = 0; c < cols; c++) x[c] = uniform(rng);
    tl_gemv_bf16(W, x, y, rows, cols);
    assert_matches_reference(simd_label("tl_gemv_bf16"), W, bf16_at, x, y, rows, cols);
    free(W);
    free(x);
    free(y);
}

/* ---- matrix-vector products ---------------------------------------------- */

START_TEST(gemv_f32_matches_double_reference_on_edge_and_random_shapes) {
    over_shapes_and_paths(check_f32);
}
END_TEST

START_TEST(gemv_bf16_matches_double_reference_on_edge_and_random_shapes) {
    over_shapes_and_paths(check_bf16);
}
END_TEST

/* Row r has a single 1 at column r mod cols and x[c] = c + 1, so y[r] must
 * be exactly (r mod cols) + 1: a skipped tail, a wrong row stride or a row
 * written by two threads shows up as a wrong integer. */
static void check_one_hot(int64_t rows, int64_t cols) {
    float *W = xmalloc((size_t)(rows * cols) * sizeof *W);
    uint16_t *Wb = xmalloc((size_t)(rows * cols) * sizeof *Wb);
    float *x = xmalloc((size_t)cols * sizeof *x), *y = xmalloc((size_t)rows * sizeof *y);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            W[r * cols + c] = c == r % cols ? 1.0f : 0.0f;
            Wb[r * cols + c] = c == r % cols ? 0x3F80 : 0x0000;   /* bf16 1.0, 0.0 */
        }
    for (int64_t c = 0; c < cols; c++) x[c] = (float)(c + 1);
    for (int dtype = 0; dtype < 2; dtype++) {
        if (dtype == 0) tl_gemv_f32(W, x, y, rows, cols);
        else tl_gemv_bf16(Wb, x, y, rows, cols);
        for (int64_t r = 0; r < rows; r++)
            ck_assert_msg(y[r] == (float)(r % cols + 1),
                          "%s [%lld x %lld]: y[%lld] = %g, expected %g (the weight at "
                          "column %lld)", dtype ? "tl_gemv_bf16" : "tl_gemv_f32",
                          (long long)rows, (long long)cols, (long long)r, (double)y[r],
                          (double)(r % cols + 1), (long long)(r % cols));
    }
    free(W);
    free(Wb);
    free(x);
    free(y);
}

START_TEST(gemv_one_hot_rows_pick_exactly_their_column) {
    env_guard threads = env_set("TINYLLM_THREADS", "2");
    for (int p = 0; p < N_PATHS; p++) {
        path_guard path = path_set(PATHS[p]);
        for (int64_t cols = 1; cols <= 70; cols++) check_one_hot(75, cols);
        check_one_hot(1000, 577);   /* split across threads */
        path_restore(path);
    }
    env_restore(threads);
}
END_TEST

/* The SIMD loops may take rows two at a time, each summed as a row alone is
 * (a product of one row), and the AVX-512 loops take them in pairs, one after
 * another or in four streams a quarter of the rows apart (TINYLLM_GEMV_ROWS):
 * every row of a product must equal, bit for bit, that row multiplied alone,
 * in each order, at lengths around the loops' 64-, 32-, 16- and 8-wide steps,
 * with rows that are not a multiple of four (13: quarters of 3, one left). */
enum { ORDER_ROWS = 13, N_ORDERS = 3 };

static void product_and_rows_alone(const float *W, const uint16_t *Wb, const float *x,
                                   int64_t rows, int64_t cols, const char *order, float *y,
                                   float *yb, float *one, float *oneb) {
    env_guard g = env_set("TINYLLM_GEMV_ROWS", order);
    tl_gemv_f32(W, x, y, rows, cols);
    tl_gemv_bf16(Wb, x, yb, rows, cols);
    for (int64_t r = 0; r < rows; r++) {
        tl_gemv_f32(W + r * cols, x, &one[r], 1, cols);
        tl_gemv_bf16(Wb + r * cols, x, &oneb[r], 1, cols);
    }
    env_restore(g);
}

START_TEST(gemv_rows_in_pairs_equal_each_row_alone_bit_for_bit) {
    const int64_t rows = ORDER_ROWS, lengths[] = {1, 7, 8, 9, 31, 32, 33, 40, 63, 64, 65, 96, 97,
                                                  127, 128, 129, 577, 1031};
    const int n_lengths = (int)(sizeof lengths / sizeof lengths[0]);
    const char *orders[N_ORDERS] = {"2", "1", "4"};
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 11, 3);
    for (int i = 0; i < n_lengths; i++) {
        int64_t cols = lengths[i];
        float *W = xmalloc((size_t)(rows * cols) * sizeof *W), *x = xmalloc((size_t)cols * 4);
        uint16_t *Wb = xmalloc((size_t)(rows * cols) * sizeof *Wb);
        float y[N_ORDERS][ORDER_ROWS], yb[N_ORDERS][ORDER_ROWS], one[N_ORDERS][ORDER_ROWS],
            oneb[N_ORDERS][ORDER_ROWS];
        for (int64_t k = 0; k < rows * cols; k++) {
            W[k] = uniform(&rng);
            Wb[k] = random_bf16(&rng);
        }
        for (int64_t c = 0; c < cols; c++) x[c] = uniform(&rng);
        for (int o = 0; o < N_ORDERS; o++)
            product_and_rows_alone(W, Wb, x, rows, cols, orders[o], y[o], yb[o], one[o], oneb[o]);
        for (int o = 0; o < N_ORDERS; o++)
            for (int64_t r = 0; r < rows; r++)
                ck_assert_msg(memcmp(&one[o][r], &y[0][r], sizeof(float)) == 0 &&
                                  memcmp(&oneb[o][r], &yb[0][r], sizeof(float)) == 0 &&
                                  memcmp(&y[o][r], &y[0][r], sizeof(float)) == 0 &&
                                  memcmp(&yb[o][r], &yb[0][r], sizeof(float)) == 0,
                              "row %lld of a [%d, %lld] product, TINYLLM_GEMV_ROWS=%s: f32 %.9g "
                              "alone, %.9g in the product, %.9g in pairs; bf16 %.9g, %.9g, %.9g",
                              (long long)r, ORDER_ROWS, (long long)cols, orders[o],
                              (double)one[o][r], (double)y[o][r], (double)y[0][r],
                              (double)oneb[o][r], (double)yb[o][r], (double)yb[0][r]);
        free(W);
        free(Wb);
        free(x);
    }
}
END_TEST

/* A checkpoint's tensors sit wherever its header ends, rarely on a 64-byte
 * line: the same weight at every offset from a line must give the same bits
 * (no loop may peel a head to reach an aligned address). */
START_TEST(gemv_bits_do_not_depend_on_where_the_weight_sits) {
    const int64_t rows = 5, cols = 611;
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 5, 8);
    size_t n = (size_t)(rows * cols);
    /* aligned_alloc wants a multiple of the alignment (ASan checks it) */
    size_t bytes = ((n + 32) * sizeof(float) + 63) / 64 * 64;
    float *line = aligned_alloc(64, bytes), *x = xmalloc(cols * 4);
    uint16_t *line_b = aligned_alloc(64, bytes);
    float *W = xmalloc(n * sizeof *W), want[5], wantb[5], got[5], gotb[5];
    uint16_t *Wb = xmalloc(n * sizeof *Wb);
    ck_assert(line && line_b);
    for (size_t k = 0; k < n; k++) {
        W[k] = uniform(&rng);
        Wb[k] = random_bf16(&rng);
    }
    for (int64_t c = 0; c < cols; c++) x[c] = uniform(&rng);
    for (int p = 0; p < N_PATHS; p++) {
        path_guard path = path_set(PATHS[p]);
        for (int off = 0; off < 32; off++) {
            memcpy(line + off % 16, W, n * sizeof *W);
            memcpy(line_b + off, Wb, n * sizeof *Wb);
            tl_gemv_f32(line + off % 16, x, got, rows, cols);
            tl_gemv_bf16(line_b + off, x, gotb, rows, cols);
            if (off == 0) {
                memcpy(want, got, sizeof want);
                memcpy(wantb, gotb, sizeof wantb);
            }
            ck_assert_msg(memcmp(got, want, sizeof got) == 0 &&
                              memcmp(gotb, wantb, sizeof gotb) == 0,
                          "%s: the weight %d elements past a 64-byte line gives other bits "
                          "than on the line (f32 row 0: %.9g vs %.9g; bf16 %.9g vs %.9g)",
                          simd_label("tl_gemv"), off, (double)got[0], (double)want[0],
                          (double)gotb[0], (double)wantb[0]);
        }
        path_restore(path);
    }
    free(line);
    free(line_b);
    free(W);
    free(Wb);
    free(x);
}
END_TEST

/* One thread computes a whole row, so the bits must not depend on how many
 * threads share the rows. */
START_TEST(gemv_result_is_identical_for_any_thread_count) {
    const int64_t rows = 301, cols = 1031;
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 7, 1);
    float *W = xmalloc((size_t)(rows * cols) * sizeof *W);
    uint16_t *Wb = xmalloc((size_t)(rows * cols) * sizeof *Wb);
    float *x = xmalloc((size_t)cols * sizeof *x);
    float *y1 = xmalloc((size_t)rows * sizeof *y1), *yn = xmalloc((size_t)rows * sizeof *yn);
    float *b1 = xmalloc((size_t)rows * sizeof *b1), *bn = xmalloc((size_t)rows * sizeof *bn);
    for (int64_t i = 0; i < rows * cols; i++) {
        W[i] = uniform(&rng);
        Wb[i] = random_bf16(&rng);
    }
    for (int64_t c = 0; c < cols; c++) x[c] = uniform(&rng);

    env_guard g = env_set("TINYLLM_THREADS", "1");
    tl_gemv_f32(W, x, y1, rows, cols);
    tl_gemv_bf16(Wb, x, b1, rows, cols);
    env_restore(g);
    const char *counts[] = {"2", "3", "5", "16"};
    for (int i = 0; i < 4; i++) {
        g = env_set("TINYLLM_THREADS", counts[i]);
        tl_gemv_f32(W, x, yn, rows, cols);
        tl_gemv_bf16(Wb, x, bn, rows, cols);
        env_restore(g);
        ck_assert_msg(memcmp(y1, yn, (size_t)rows * sizeof *y1) == 0,
                      "tl_gemv_f32 with %s threads differs from 1 thread", counts[i]);
        ck_assert_msg(memcmp(b1, bn, (size_t)rows * sizeof *b1) == 0,
                      "tl_gemv_bf16 with %s threads differs from 1 thread", counts[i]);
    }
    free(W);
    free(Wb);
    free(x);
    free(y1);
    free(yn);
    free(b1);
    free(bn);
}
END_TEST

START_TEST(gemv_with_no_columns_writes_zeros_and_with_no_rows_writes_nothing) {
    float y[3] = {5.0f, 5.0f, 5.0f};
    tl_gemv_f32(NULL, NULL, y, 3, 0);
    for (int r = 0; r < 3; r++)
        ck_assert_msg(y[r] == 0.0f, "f32: y[%d] = %g, expected 0", r, y[r]);
    y[0] = y[1] = y[2] = 5.0f;
    tl_gemv_bf16(NULL, NULL, y, 3, 0);
    for (int r = 0; r < 3; r++)
        ck_assert_msg(y[r] == 0.0f, "bf16: y[%d] = %g, expected 0", r, y[r]);
    y[0] = 5.0f;
    tl_gemv_f32(NULL, NULL, y, 0, 4);
    tl_gemv_bf16(NULL, NULL, y, 0, 4);
    ck_assert_msg(y[0] == 5.0f, "a product with no rows wrote y[0] = %g", y[0]);
}
END_TEST

START_TEST(gemv_null_arrays_set_an_error_and_write_nothing) {
    float W[6] = {0}, x[3] = {0}, y[2] = {7.0f, 7.0f};
    uint16_t Wb[6] = {0};
    tl_clear_error();
    tl_gemv_f32(NULL, x, y, 2, 3);
    ck_assert_msg(tl_error() && strstr(tl_error(), "tl_gemv_f32: NULL W"),
                  "expected an error naming W, got '%s'", tl_error() ? tl_error() : "(none)");
    tl_clear_error();
    tl_gemv_bf16(Wb, NULL, y, 2, 3);
    ck_assert_msg(tl_error() && strstr(tl_error(), "tl_gemv_bf16: NULL x"),
                  "expected an error naming x, got '%s'", tl_error() ? tl_error() : "(none)");
    tl_clear_error();
    tl_gemv_f32(W, x, NULL, 2, 3);
    ck_assert_msg(tl_error() && strstr(tl_error(), "NULL y"),
                  "expected an error naming y, got '%s'", tl_error() ? tl_error() : "(none)");
    tl_clear_error();
    ck_assert_msg(y[0] == 7.0f && y[1] == 7.0f, "y was written on an error: %g %g", y[0], y[1]);
}
END_TEST

/* ---- GEMM ------------------------------------------------------------------ */

START_TEST(gemm_nt_matches_double_reference) {
    static const int64_t shapes[][3] = {
        {1, 1, 1}, {1, 7, 3}, {3, 1, 5}, {5, 9, 1}, {17, 33, 65}, {128, 96, 576}, {31, 257, 17}};
    env_guard threads = env_set("TINYLLM_THREADS", "2");
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 99, 3);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        float *A = xmalloc((size_t)(M * K) * sizeof *A), *B = xmalloc((size_t)(N * K) * sizeof *B);
        float *C = xmalloc((size_t)(M * N) * sizeof *C);
        for (int64_t i = 0; i < M * K; i++) A[i] = uniform(&rng);
        for (int64_t i = 0; i < N * K; i++) B[i] = uniform(&rng);
        for (int64_t i = 0; i < M * N; i++) C[i] = NAN;   /* C is output only */
        tl_gemm_f32_nt(A, B, C, M, N, K);
        /* Row m of C is the product of B (as [N, K] weights) with row m of A. */
        for (int64_t m = 0; m < M; m++) {
            char what[96];
            snprintf(what, sizeof what, "tl_gemm_f32_nt (M=%lld), row %lld of C, as B @ A[m]",
                     (long long)M, (long long)m);
            assert_matches_reference(what, B, f32_at, A + m * K, C + m * N, N, K);
        }
        free(A);
        free(B);
        free(C);
    }
    env_restore(threads);
}
END_TEST

START_TEST(gemm_with_no_inner_dimension_writes_zeros) {
    float C[6] = {1, 2, 3, 4, 5, 6};
    tl_gemm_f32_nt(NULL, NULL, C, 2, 3, 0);
    for (int i = 0; i < 6; i++) ck_assert_msg(C[i] == 0.0f, "C[%d] = %g, expected 0", i, C[i]);
}
END_TEST

START_TEST(gemm_sizes_beyond_openblas_int_fail_with_an_error) {
    float A[1] = {1}, B[1] = {1}, C[1] = {42.0f};
    tl_clear_error();
    tl_gemm_f32_nt(A, B, C, 1, 1, (int64_t)INT_MAX + 1);
    ck_assert_msg(tl_error() && strstr(tl_error(), "tl_gemm_f32_nt") &&
                      strstr(tl_error(), "OpenBLAS"),
                  "expected an error about OpenBLAS's size limit, got '%s'",
                  tl_error() ? tl_error() : "(none)");
    tl_clear_error();
    ck_assert_msg(C[0] == 42.0f, "C was written on an error: %g", C[0]);
}
END_TEST

/* ---- TINYLLM_THREADS --------------------------------------------------------- */

START_TEST(num_threads_honours_a_valid_TINYLLM_THREADS) {
    const char *values[] = {"1", "2", "3", "64"};
    const int expected[] = {1, 2, 3, 64};
    for (int i = 0; i < 4; i++) {
        env_guard g = env_set("TINYLLM_THREADS", values[i]);
        int n = tl_num_threads();
        env_restore(g);
        ck_assert_msg(n == expected[i], "TINYLLM_THREADS=%s gave %d threads", values[i], n);
    }
    env_guard g = env_set("TINYLLM_THREADS", NULL);
    int n = tl_num_threads();
    env_restore(g);
    ck_assert_msg(n == omp_get_num_procs(), "unset TINYLLM_THREADS gave %d threads, not the "
                  "%d cores", n, omp_get_num_procs());
}
END_TEST

/* Bad values fall back to every core and say so on stderr, once per process
 * (this is the only test that sets a bad value). */
START_TEST(num_threads_rejects_a_bad_TINYLLM_THREADS_with_one_message) {
    char path[] = "/tmp/tinyllm-test-stderr-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_msg(fd >= 0, "cannot create a temporary file to capture stderr");
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);

    const char *bad[] = {"two", "0", "-1", "2x", "1.5", "99999999999999999999", "100000"};
    int got[7];
    for (int i = 0; i < 7; i++) {
        env_guard g = env_set("TINYLLM_THREADS", bad[i]);
        got[i] = tl_num_threads();
        env_restore(g);
    }
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);

    char text[4096] = "";
    ssize_t len = pread(fd, text, sizeof text - 1, 0);
    close(fd);
    unlink(path);
    text[len > 0 ? len : 0] = '\0';

    for (int i = 0; i < 7; i++)
        ck_assert_msg(got[i] == omp_get_num_procs(), "TINYLLM_THREADS=%s gave %d threads, "
                      "expected the fallback to all %d cores", bad[i], got[i], omp_get_num_procs());
    int messages = 0;
    for (const char *p = text; (p = strstr(p, "TINYLLM_THREADS=")) != NULL; p++) messages++;
    ck_assert_msg(messages == 1, "expected one message on stderr, got %d: '%s'", messages, text);
    ck_assert_msg(strstr(text, "'two'") && strstr(text, "using all"),
                  "the message should quote the value and say what is used instead: '%s'", text);
}
END_TEST

/* ---- the transposed products (p @ W: attention's weights times V) -------- */

/* y[c] against sum_r p[r] W(r, c) in double: column c of W is row c of W^T. */
static void assert_t_matches_reference(const char *what, const void *W, weight_at at,
                                       const float *p, const float *y, int64_t rows,
                                       int64_t cols) {
    for (int64_t c = 0; c < cols; c++) {
        double exact = 0.0, magnitude = 0.0;
        for (int64_t r = 0; r < rows; r++) {
            double v = at(W, cols, r, c) * (double)p[r];
            exact += v;
            magnitude += fabs(v);
        }
        double tol = (double)rows * 0x1p-24 * magnitude + DBL_MIN;
        if (fabs((double)y[c] - exact) <= tol) continue;   /* one assertion per failure:
                                                            * each passing one costs a write
                                                            * to Check's pipe */
        ck_abort_msg("%s [%lld x %lld]: y[%lld] = %.9g, double reference %.9g, error %.3g "
                     "> tolerance %.3g", what, (long long)rows, (long long)cols, (long long)c,
                     (double)y[c], exact, fabs((double)y[c] - exact), tol);
    }
}

static void check_t_f32(int64_t rows, int64_t cols, tl_pcg32 *rng) {
    float *W = xmalloc((size_t)(rows * cols) * sizeof *W);
    float *p = xmalloc((size_t)rows * sizeof *p), *y = xmalloc((size_t)cols * sizeof *y);
    for (int64_t i = 0; i < rows * cols; i++) W[i] = uniform(rng);
    for (int64_t r = 0; r < rows; r++) p[r] = uniform(rng);
    for (int64_t c = 0; c < cols; c++) y[c] = NAN;   /* y is output only */
    tl_gemv_t_f32(W, p, y, rows, cols);
    assert_t_matches_reference(getenv("TINYLLM_SIMD") ? "tl_gemv_t_f32 (portable)"
                                                      : "tl_gemv_t_f32",
                               W, f32_at, p, y, rows, cols);
    free(W);
    free(p);
    free(y);
}

static void check_t_bf16(int64_t rows, int64_t cols, tl_pcg32 *rng) {
    uint16_t *W = xmalloc((size_t)(rows * cols) * sizeof *W);
    float *p = xmalloc((size_t)rows * sizeof *p), *y = xmalloc((size_t)cols * sizeof *y);
    for (int64_t i = 0; i < rows * cols; i++) W[i] = random_bf16(rng);
    for (int64_t r = 0; r < rows; r++) p[r] = uniform(rng);
    for (int64_t c = 0; c < cols; c++) y[c] = NAN;
    tl_gemv_t_bf16(W, p, y, rows, cols);
    assert_t_matches_reference(getenv("TINYLLM_SIMD") ? "tl_gemv_t_bf16 (portable)"
                                                      : "tl_gemv_t_bf16",
                               W, bf16_at, p, y, rows, cols);
    free(W);
    free(p);
    free(y);
}

START_TEST(gemv_t_f32_matches_double_reference_on_edge_and_random_shapes) {
    over_shapes_and_paths(check_t_f32);
}
END_TEST

START_TEST(gemv_t_bf16_matches_double_reference_on_edge_and_random_shapes) {
    over_shapes_and_paths(check_t_bf16);
}
END_TEST

START_TEST(gemv_t_result_is_identical_for_any_thread_count) {
    int64_t rows = 300, cols = 1000;   /* 300K weights: split across threads */
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 5, 5);
    float *W = xmalloc((size_t)(rows * cols) * sizeof *W), *p = xmalloc((size_t)rows * 4);
    float *y1 = xmalloc((size_t)cols * 4), *y3 = xmalloc((size_t)cols * 4);
    for (int64_t i = 0; i < rows * cols; i++) W[i] = uniform(&rng);
    for (int64_t r = 0; r < rows; r++) p[r] = uniform(&rng);
    env_guard one = env_set("TINYLLM_THREADS", "1");
    tl_gemv_t_f32(W, p, y1, rows, cols);
    env_restore(one);
    env_guard three = env_set("TINYLLM_THREADS", "3");
    tl_gemv_t_f32(W, p, y3, rows, cols);
    env_restore(three);
    ck_assert_msg(memcmp(y1, y3, (size_t)cols * 4) == 0, "1 and 3 threads differ");
    free(W);
    free(p);
    free(y1);
    free(y3);
}
END_TEST

START_TEST(gemv_t_edges_and_null_arrays) {
    float y[3] = {1, 2, 3}, W[3] = {1, 1, 1}, p[1] = {1};
    tl_gemv_t_f32(NULL, NULL, y, 0, 3);   /* no rows: zeros */
    ck_assert(y[0] == 0 && y[1] == 0 && y[2] == 0);
    y[0] = 7;
    tl_gemv_t_f32(W, p, y, 1, 0);   /* no columns: nothing written */
    ck_assert(y[0] == 7);
    tl_clear_error();
    tl_gemv_t_bf16(NULL, p, y, 1, 3);
    ck_assert_msg(tl_error() && strstr(tl_error(), "tl_gemv_t_bf16: NULL W for a [1, 3] "
                                                   "product"),
                  "got '%s'", tl_error() ? tl_error() : "(none)");
    ck_assert(y[0] == 7);
    tl_gemv_t_f32(W, NULL, y, 1, 3);
    ck_assert(strstr(tl_error(), "tl_gemv_t_f32: NULL p"));
    tl_clear_error();
}
END_TEST

START_TEST(gemm_bf16_nt_matches_double_reference_and_reports_failure) {
    /* N above one block (at most 512 rows) so the weight is widened in
     * parts, one per block: 2100 rows are 4 blocks of 432 and one of 372. */
    static const int64_t shapes[][3] = {{1, 5, 3}, {7, 33, 65}, {3, 2100, 576}, {17, 1, 1}};
    env_guard threads = env_set("TINYLLM_THREADS", "2");
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 11, 2);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        float *A = xmalloc((size_t)(M * K) * 4), *C = xmalloc((size_t)(M * N) * 4);
        uint16_t *B = xmalloc((size_t)(N * K) * 2);
        for (int64_t i = 0; i < M * K; i++) A[i] = uniform(&rng);
        for (int64_t i = 0; i < N * K; i++) B[i] = random_bf16(&rng);
        ck_assert_int_eq(tl_gemm_bf16_nt(A, B, C, M, N, K), 0);
        for (int64_t m = 0; m < M; m++)
            assert_matches_reference("tl_gemm_bf16_nt", B, bf16_at, A + m * K, C + m * N, N, K);
        free(A);
        free(B);
        free(C);
    }
    env_restore(threads);
    float C[2] = {5, 5}, A[2] = {1, 1};
    tl_clear_error();
    ck_assert_int_eq(tl_gemm_bf16_nt(A, NULL, C, 1, 2, 1), -1);
    ck_assert(tl_error() && strstr(tl_error(), "tl_gemm_bf16_nt: NULL B"));
    ck_assert(C[0] == 5);
    ck_assert_int_eq(tl_gemm_bf16_nt(NULL, NULL, C, 0, 2, 1), 0);   /* nothing to do */
    tl_clear_error();
}
END_TEST

/* tl_sgemm in all four layouts, at leading dimensions wider than the rows,
 * against a double reference; sizes span several column blocks (4 of 80
 * and 4 of 64 columns, the last one short), and products under the
 * threading threshold. */
static double sgemm_exact(bool ta, bool tb, const float *A, int64_t lda, const float *B,
                          int64_t ldb, int64_t m, int64_t n, int64_t K, double *magnitude) {
    double sum = 0.0;
    *magnitude = 0.0;
    for (int64_t k = 0; k < K; k++) {
        double a = ta ? A[k * lda + m] : A[m * lda + k], b = tb ? B[n * ldb + k] : B[k * ldb + n];
        sum += a * b;
        *magnitude += fabs(a * b);
    }
    return sum;
}

START_TEST(sgemm_matches_double_reference_in_every_layout) {
    static const int64_t shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {33, 300, 576}, {9, 250, 1536}};
    env_guard threads = env_set("TINYLLM_THREADS", "2");
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 5, 8);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int layout = 0; layout < 4; layout++) {
            bool ta = layout & 1, tb = layout & 2;
            int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
            float *A = xmalloc((size_t)((ta ? K : M) * lda) * 4);
            float *B = xmalloc((size_t)((tb ? N : K) * ldb) * 4);
            float *C = xmalloc((size_t)(M * ldc) * 4);
            for (int64_t i = 0; i < (ta ? K : M) * lda; i++) A[i] = uniform(&rng);
            for (int64_t i = 0; i < (tb ? N : K) * ldb; i++) B[i] = uniform(&rng);
            for (int64_t i = 0; i < M * ldc; i++) C[i] = 42.0f;
            tl_sgemm(ta, tb, M, N, K, A, lda, B, ldb, C, ldc);
            for (int64_t m = 0; m < M; m++) {
                for (int64_t n = 0; n < N; n++) {
                    double mag, want = sgemm_exact(ta, tb, A, lda, B, ldb, m, n, K, &mag);
                    double tol = (double)K * 0x1p-24 * mag + 1e-30;
                    if (fabs(C[m * ldc + n] - want) > tol)
                        ck_abort_msg("tl_sgemm ta=%d tb=%d [%lld, %lld, %lld]: C[%lld, %lld] = "
                                     "%.9g, exact %.9g (tolerance %.3g)", ta, tb, (long long)M,
                                     (long long)N, (long long)K, (long long)m, (long long)n,
                                     C[m * ldc + n], want, tol);
                }
                for (int64_t n = N; n < ldc; n++)   /* past each row: untouched */
                    ck_assert_msg(C[m * ldc + n] == 42.0f, "C[%lld, %lld] was written",
                                  (long long)m, (long long)n);
            }
            free(A);
            free(B);
            free(C);
        }
    env_restore(threads);
    float C[4] = {1, 2, 3, 4};
    tl_sgemm(false, true, 2, 1, 0, NULL, 1, NULL, 1, C, 2);   /* K = 0: zeros, row stride kept */
    ck_assert(C[0] == 0 && C[1] == 2 && C[2] == 0 && C[3] == 4);
    tl_clear_error();
    tl_sgemm(false, true, 1, 1, 1, C, (int64_t)INT_MAX + 1, C, 1, C, 1);
    ck_assert_msg(tl_error() && strstr(tl_error(), "tl_sgemm: leading dimensions"),
                  "got '%s'", tl_error() ? tl_error() : "(none)");
    tl_clear_error();
}
END_TEST

/* The GEMMs cut C's columns into blocks fixed by N and K, so 1, 2 and 3
 * threads give the same bits (OpenBLAS's own sums depend on how a product
 * is cut, so this holds only because the cut does not move). Shapes: a
 * prefill's q and down projections at 128 rows, and ragged ones. */
START_TEST(gemm_results_do_not_depend_on_the_thread_count) {
    static const int64_t shapes[][3] = {{128, 576, 576}, {128, 576, 1536}, {40, 1000, 130},
                                        {17, 33, 65}};
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 21, 4);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        float *A = xmalloc((size_t)(M * K) * 4), *B = xmalloc((size_t)(N * K) * 4);
        uint16_t *B16 = xmalloc((size_t)(N * K) * 2);
        float *C[3][2];
        for (int64_t i = 0; i < M * K; i++) A[i] = uniform(&rng);
        for (int64_t i = 0; i < N * K; i++) B[i] = uniform(&rng), B16[i] = random_bf16(&rng);
        for (int t = 0; t < 3; t++) {
            char count[12];
            snprintf(count, sizeof count, "%d", t + 1);
            env_guard threads = env_set("TINYLLM_THREADS", count);
            C[t][0] = xmalloc((size_t)(M * N) * 4);
            C[t][1] = xmalloc((size_t)(M * N) * 4);
            tl_gemm_f32_nt(A, B, C[t][0], M, N, K);
            ck_assert_int_eq(tl_gemm_bf16_nt(A, B16, C[t][1], M, N, K), 0);
            env_restore(threads);
        }
        for (int t = 1; t < 3; t++)
            for (int d = 0; d < 2; d++)
                ck_assert_msg(memcmp(C[0][d], C[t][d], (size_t)(M * N) * 4) == 0,
                              "%s [%lld, %lld, %lld]: %d threads differ from 1",
                              d ? "tl_gemm_bf16_nt" : "tl_gemm_f32_nt", (long long)M,
                              (long long)N, (long long)K, t + 1);
        for (int t = 0; t < 3; t++) free(C[t][0]), free(C[t][1]);
        free(A);
        free(B);
        free(B16);
    }
}
END_TEST

/* A CPU that OpenBLAS fell back on (simulated: forced to Prescott through the
 * interface OpenBLAS offers for it) gets kernels chosen by its instruction
 * sets at the first BLAS call; a user's OPENBLAS_CORETYPE is kept. The
 * choice is made once per process, so this needs a process of its own
 * (CK_FORK); without fork it only checks that a name is returned. */
extern void gotoblas_dynamic_init(void) __attribute__((weak));
extern void gotoblas_dynamic_quit(void) __attribute__((weak));

START_TEST(blas_prepare_replaces_a_fallback_core_on_an_avx2_cpu) {
    const char *fork_mode = getenv("CK_FORK");
    if ((fork_mode && strcmp(fork_mode, "no") == 0) || !gotoblas_dynamic_init) {
        ck_assert_ptr_nonnull(tl_blas_prepare());
        return;
    }
    setenv("OPENBLAS_CORETYPE", "Prescott", 1);
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init();
    unsetenv("OPENBLAS_CORETYPE");
    ck_assert_str_eq(openblas_get_corename(), "Prescott");
    const char *core = tl_blas_prepare();
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        ck_assert_msg(strcmp(core, "Prescott") != 0, "still on Prescott kernels");
    float A[4] = {1, 2, 3, 4}, B[4] = {1, 0, 0, 1}, C[4];
    tl_gemm_f32_nt(A, B, C, 2, 2, 2);   /* the new kernels compute */
    ck_assert(C[0] == 1 && C[1] == 2 && C[2] == 3 && C[3] == 4);
}
END_TEST

START_TEST(blas_prepare_keeps_the_users_openblas_coretype) {
    const char *fork_mode = getenv("CK_FORK");
    if ((fork_mode && strcmp(fork_mode, "no") == 0) || !gotoblas_dynamic_init) return;
    setenv("OPENBLAS_CORETYPE", "Prescott", 1);
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init();
    ck_assert_str_eq(tl_blas_prepare(), "Prescott");
    unsetenv("OPENBLAS_CORETYPE");
}
END_TEST

/* ---- exp ---------------------------------------------------------------------- */

/* Within 2 ulp of exp in double over the whole finite range, on every code
 * path, for every length (the vector tails); the documented edges exact. */
START_TEST(exp_f32_is_within_2_ulp_and_handles_the_edges) {
    enum { N = 200003 };
    float *x = xmalloc(N * sizeof *x), *y = xmalloc(N * sizeof *y);
    for (int i = 0; i < N; i++) x[i] = -87.3f + 176.0f * (float)i / (float)(N - 1);
    x[N - 1] = 88.72f;
    const char *paths[] = {NULL, "avx2", "0"};
    const char *names[] = {"the best the CPU has", "AVX2", "portable"};
    for (int p = 0; p < 3; p++) {
        env_guard simd = env_set("TINYLLM_SIMD", paths[p]);
        for (int n = 0; n <= 17; n++) {   /* short lengths: the tail path */
            tl_exp_f32_n(x + 1000, y, n);
            for (int i = 0; i < n; i++)
                if (fabs(y[i] - exp((double)x[1000 + i])) > 2.5e-7 * exp(x[1000 + i]))
                    ck_abort_msg("length %d, element %d", n, i);
        }
        tl_exp_f32_n(x, y, N);
        double worst = 0;
        for (int i = 0; i < N; i++) {
            double want = exp((double)x[i]), ulp = ldexp(1.0, ilogb(want) - 23);
            double err = fabs(y[i] - want) / ulp;
            if (err > worst) worst = err;
        }
        ck_assert_msg(worst <= 2.0, "%s: worst error %.2f ulp", names[p], worst);
        float edge[] = {89.0f, -87.5f, -1e9f, NAN, INFINITY, -INFINITY, 0.0f};
        float out[7];
        tl_exp_f32_n(edge, out, 7);
        ck_assert(isinf(out[0]) && out[0] > 0);
        ck_assert(out[1] == 0.0f && out[2] == 0.0f && out[5] == 0.0f);
        ck_assert(isnan(out[3]));
        ck_assert(isinf(out[4]));
        ck_assert(out[6] == 1.0f);
        float same[3] = {0.0f, 1.0f, -1.0f};   /* in place */
        tl_exp_f32_n(same, same, 3);
        ck_assert(same[0] == 1.0f && fabsf(same[1] - 2.7182817f) < 1e-6f);
        env_restore(simd);
    }
    free(x);
    free(y);
}
END_TEST

/* The AVX-512 and AVX2 exps are one computation at two widths: the same bits
 * for every element and every tail length, edges included. */
START_TEST(exp_f32_avx512_and_avx2_give_the_same_bits) {
    enum { N = 100019 };
    float *x = xmalloc(N * sizeof *x), *wide = xmalloc(N * sizeof *wide);
    float *narrow = xmalloc(N * sizeof *narrow);
    for (int i = 0; i < N; i++) x[i] = -100.0f + 200.0f * (float)i / (float)(N - 1);
    const float edge[] = {89.0f, 88.72f, -87.5f, -1e9f, NAN, INFINITY, -INFINITY, 0.0f, -0.0f};
    memcpy(x, edge, sizeof edge);
    for (int n = 1; n <= 41; n++) {   /* lengths 1 to 40, then all of x */
        int len = n <= 40 ? n : N;
        env_guard simd = env_set("TINYLLM_SIMD", NULL);
        tl_exp_f32_n(x, wide, len);
        env_restore(simd);
        simd = env_set("TINYLLM_SIMD", "avx2");
        tl_exp_f32_n(x, narrow, len);
        env_restore(simd);
        ck_assert_msg(memcmp(wide, narrow, (size_t)len * sizeof *wide) == 0,
                      "length %d: the exps of the two paths differ", len);
    }
    free(x);
    free(wide);
    free(narrow);
}
END_TEST

/* ---- the work-sharing pool ------------------------------------------------------ */

typedef struct {
    int counts[1000];
    int nested_total;
} chunk_record;

static void count_chunk(void *ctx, int64_t c) {
    chunk_record *r = ctx;
    __atomic_fetch_add(&r->counts[c], 1, __ATOMIC_RELAXED);
}

static void nested_chunk(void *ctx, int64_t c) {
    chunk_record *r = ctx;
    chunk_record inner = {{0}, 0};
    tl_parallel_chunks(4, 10, count_chunk, &inner);   /* runs inline, on this thread */
    int sum = 0;
    for (int i = 0; i < 10; i++) sum += inner.counts[i];
    __atomic_fetch_add(&r->nested_total, sum, __ATOMIC_RELAXED);
    __atomic_fetch_add(&r->counts[c], 1, __ATOMIC_RELAXED);
}

START_TEST(parallel_chunks_runs_every_chunk_once) {
    static chunk_record r;
    const int threads[] = {1, 2, 3, 8};
    for (int t = 0; t < 4; t++)
        for (int rep = 0; rep < 50; rep++) {   /* back-to-back jobs: late helpers */
            memset(&r, 0, sizeof r);
            int64_t n = 1 + (rep * 37) % 1000;
            tl_parallel_chunks(threads[t], n, count_chunk, &r);
            for (int64_t c = 0; c < 1000; c++)
                if (r.counts[c] != (c < n))
                    ck_abort_msg("%d threads, %lld chunks: chunk %lld ran %d times", threads[t],
                                 (long long)n, (long long)c, r.counts[c]);
        }
    tl_parallel_chunks(2, 0, count_chunk, &r);   /* nothing to do */
    memset(&r, 0, sizeof r);
    tl_parallel_chunks(3, 20, nested_chunk, &r);
    ck_assert_int_eq(r.nested_total, 200);
    for (int c = 0; c < 20; c++) ck_assert_int_eq(r.counts[c], 1);
}
END_TEST

/* tl_parallel_range: every item in exactly one block; every block starts on
 * a multiple of `least` or ends a multiple of `least` before n (a part's
 * front, or the back of what was left of one); all blocks but one are
 * multiples of `least` long. */
typedef struct {
    int counts[5000];
    int64_t n, least;
    int misplaced, short_blocks, blocks;
    char first_bad[96];
} range_record;

static void count_range(void *ctx, int64_t begin, int64_t end) {
    range_record *r = ctx;
    for (int64_t i = begin; i < end; i++) __atomic_fetch_add(&r->counts[i], 1, __ATOMIC_RELAXED);
    bool placed = begin % r->least == 0 || (r->n - end) % r->least == 0;
    if ((end - begin) % r->least != 0) __atomic_fetch_add(&r->short_blocks, 1, __ATOMIC_RELAXED);
    if ((!placed || end <= begin) && __atomic_fetch_add(&r->misplaced, 1, __ATOMIC_RELAXED) == 0)
        snprintf(r->first_bad, sizeof r->first_bad, "[%lld, %lld)", (long long)begin,
                 (long long)end);
    __atomic_fetch_add(&r->blocks, 1, __ATOMIC_RELAXED);
}

static void nested_range(void *ctx, int64_t c) {
    range_record *r = ctx;
    tl_parallel_range(2, r->n, r->least, count_range, r);   /* inside a chunk: one block */
    (void)c;
}

START_TEST(parallel_range_covers_every_item_once) {
    static range_record r;
    const int threads[] = {1, 2, 3, 8};
    for (int t = 0; t < 4; t++)
        for (int rep = 0; rep < 60; rep++) {   /* back-to-back jobs: late helpers */
            memset(&r, 0, sizeof r);
            r.n = 1 + (rep * 677) % 5000;
            r.least = 1 + rep % 7;
            tl_parallel_range(threads[t], r.n, r.least, count_range, &r);
            for (int64_t i = 0; i < 5000; i++)
                if (r.counts[i] != (i < r.n))
                    ck_abort_msg("%d threads, n %lld, least %lld: item %lld ran %d times",
                                 threads[t], (long long)r.n, (long long)r.least, (long long)i,
                                 r.counts[i]);
            if (r.misplaced || r.short_blocks > 1)
                ck_abort_msg("%d threads, n %lld, least %lld: block %s misplaced, %d blocks "
                             "not a multiple of least", threads[t], (long long)r.n,
                             (long long)r.least, r.first_bad, r.short_blocks);
        }
    memset(&r, 0, sizeof r);
    r.n = 100, r.least = 1;
    tl_parallel_range(1, r.n, 1, count_range, &r);
    ck_assert_int_eq(r.blocks, 1);   /* one thread: one call over everything */
    tl_parallel_range(2, 0, 4, count_range, &r);   /* nothing to do */
    tl_parallel_range(2, -3, 4, count_range, &r);
    ck_assert_int_eq(r.blocks, 1);
    memset(&r, 0, sizeof r);
    r.n = 300, r.least = 8;
    tl_parallel_chunks(2, 2, nested_range, &r);   /* inside a chunk: one block each */
    ck_assert_int_eq(r.blocks, 2);
    for (int64_t i = 0; i < 300; i++) ck_assert_int_eq(r.counts[i], 2);
}
END_TEST

/* A thread done with its part takes from the back of a slower one: blocks
 * of the first half (one thread's part) take a millisecond each, the second
 * half none, so the second half's thread ends up running some of the first.
 * When the helper never got a core, the caller ran everything: nothing to
 * check then. */
typedef struct {
    pthread_t caller;
    int by_caller[40];
} steal_record;

static void slow_first_half(void *ctx, int64_t begin, int64_t end) {
    steal_record *r = ctx;
    if (begin < 20) nanosleep(&(struct timespec){0, 1000000}, NULL);
    int on_caller = pthread_equal(pthread_self(), r->caller) != 0;
    for (int64_t i = begin; i < end; i++) r->by_caller[i] = on_caller;
}

START_TEST(parallel_range_takes_from_a_slower_part) {
    steal_record r = {.caller = pthread_self()};
    tl_parallel_range(2, 40, 2, slow_first_half, &r);
    int first = 0, second = 0;
    for (int i = 0; i < 20; i++) first += r.by_caller[i];
    for (int i = 20; i < 40; i++) second += r.by_caller[i];
    if (first + second == 40) return;   /* the helper never ran */
    ck_assert_msg(first > 0 && first < 20,
                  "the slow half ran on %s: no thread took from it", first ? "the caller alone"
                                                                             : "the helper alone");
}
END_TEST

static void *call_from_another_thread(void *arg) {
    chunk_record *r = arg;
    for (int rep = 0; rep < 200; rep++) tl_parallel_chunks(2, 100, count_chunk, r);
    return NULL;
}

START_TEST(parallel_chunks_from_two_threads_at_once) {
    static chunk_record a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, call_from_another_thread, &a), 0);
    call_from_another_thread(&b);
    pthread_join(th, NULL);
    for (int c = 0; c < 100; c++) {
        ck_assert_int_eq(a.counts[c], 200);
        ck_assert_int_eq(b.counts[c], 200);
    }
}
END_TEST

/* Many tiny jobs back to back, so that a helper finishing its last chunk
 * sometimes looks for another just as the next job is published: it must not
 * take a ticket of a job it has not read (a chunk that then never runs hangs
 * the caller, as bench_decode once did after hours). A stress test: the
 * window is narrow, and this passed against the flawed pool too. */
START_TEST(parallel_chunks_survives_back_to_back_tiny_jobs) {
    static chunk_record r;
    for (int rep = 0; rep < 20000; rep++) {
        int64_t n = 2 + rep % 3;
        for (int64_t c = 0; c < n; c++) r.counts[c] = 0;
        tl_parallel_chunks(2, n, count_chunk, &r);
        for (int64_t c = 0; c < n; c++)
            if (r.counts[c] != 1) ck_abort_msg("job %d: chunk %lld ran %d times", rep,
                                               (long long)c, r.counts[c]);
    }
}
END_TEST
