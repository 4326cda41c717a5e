/* Multi-row GEMVs (tl_gemv_multi_*, tl_gemv_t_multi_*): every output against
 * a double-precision reference, on odd sizes (every register-tile tail: M
 * not a multiple of 4 or 8, an odd row count, columns not a multiple of 8,
 * 16 or 32), strided W and X (ld above the row length, as a cache view),
 * every code path (AVX-512 where the CPU has it, AVX2, portable), one and
 * two threads; results identical for any thread count; M = 1 on a dense W
 * is the GEMV exactly; bad arguments.
 *
 * Tolerance: as tests/core/test_kernels.c, a float sum of n products in any
 * order is within n * 2^-24 * sum |terms| of the exact value (Higham 2002,
 * eq. 4.4, first order), whatever blocking the kernel uses.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinyllm/testing.h"
#include "tinyllm/bf16.h"
#include "tinyllm/kernels.h"
#include "tinyllm/pcg32.h"
#include "tinyllm/tensor.h"

/* A value no kernel writes: what is still there afterwards was not touched. */
#define UNTOUCHED 12345.0f

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    ck_assert_msg(p != NULL, "out of memory for %zu bytes", bytes);
    return p;
}

static float uniform(tl_pcg32 *rng) { return 2.0f * tl_pcg32_uniform(rng) - 1.0f; }

/* A strided problem: W [rows, cols] with row stride ldw, inputs [M, inner]
 * with row stride ldx (inner = cols for multi, rows for t_multi), Y dense
 * with a guard of UNTOUCHED after it. */
typedef struct {
    bool bf16, transposed;
    int64_t M, rows, cols, ldw, ldx, out_len;
    float *Wf;
    uint16_t *Wb;
    float *X, *Y;
} problem;

static problem make_problem(tl_pcg32 *rng, bool bf16, bool transposed, int64_t M, int64_t rows,
                            int64_t cols, int64_t pad) {
    problem p = {bf16, transposed, M, rows, cols, cols + pad, 0, 0, NULL, NULL, NULL, NULL};
    int64_t inner = transposed ? rows : cols;
    p.ldx = inner + pad;
    p.out_len = M * (transposed ? cols : rows);
    size_t nw = (size_t)(rows * p.ldw);
    if (bf16) {
        p.Wb = xmalloc(nw * sizeof *p.Wb);
        for (size_t i = 0; i < nw; i++) p.Wb[i] = tl_f32_to_bf16(uniform(rng));
    } else {
        p.Wf = xmalloc(nw * sizeof *p.Wf);
        for (size_t i = 0; i < nw; i++) p.Wf[i] = uniform(rng);
    }
    p.X = xmalloc((size_t)(M * p.ldx) * sizeof *p.X);
    for (int64_t i = 0; i < M * p.ldx; i++) p.X[i] = uniform(rng);
    p.Y = xmalloc((size_t)(p.out_len + 8) * sizeof *p.Y);
    return p;
}

static void free_problem(problem *p) {
    free(p->Wf);
    free(p->Wb);
    free(p->X);
    free(p->Y);
}

static double w_at(const problem *p, int64_t r, int64_t c) {
    return p->bf16 ? tl_bf16_to_f32(p->Wb[r * p->ldw + c]) : p->Wf[r * p->ldw + c];
}

static void run(problem *p) {
    for (int64_t i = 0; i < p->out_len + 8; i++) p->Y[i] = UNTOUCHED;
    if (p->transposed && p->bf16)
        tl_gemv_t_multi_bf16(p->Wb, p->ldw, p->X, p->ldx, p->Y, p->M, p->rows, p->cols);
    else if (p->transposed)
        tl_gemv_t_multi_f32(p->Wf, p->ldw, p->X, p->ldx, p->Y, p->M, p->rows, p->cols);
    else if (p->bf16)
        tl_gemv_multi_bf16(p->Wb, p->ldw, p->X, p->ldx, p->Y, p->M, p->rows, p->cols);
    else
        tl_gemv_multi_f32(p->Wf, p->ldw, p->X, p->ldx, p->Y, p->M, p->rows, p->cols);
}

/* Every output against its double sum; the guard after Y untouched. One
 * assertion per failure (a passing Check assertion costs a pipe write). */
static void assert_matches_reference(const problem *p, const char *path) {
    int64_t outer = p->transposed ? p->cols : p->rows, n = p->transposed ? p->rows : p->cols;
    for (int64_t m = 0; m < p->M; m++)
        for (int64_t o = 0; o < outer; o++) {
            double exact = 0.0, magnitude = 0.0;
            for (int64_t k = 0; k < n; k++) {
                double w = p->transposed ? w_at(p, k, o) : w_at(p, o, k);
                double t = w * (double)p->X[m * p->ldx + k];
                exact += t;
                magnitude += fabs(t);
            }
            double got = p->Y[m * outer + o], tol = (double)n * 0x1p-24 * magnitude + DBL_MIN;
            if (!(fabs(got - exact) <= tol))
                ck_abort_msg("%s %s %s, M=%lld [%lld, %lld] ldw %lld ldx %lld: Y[%lld, %lld] = "
                             "%.9g, double reference %.9g, tolerance %.3g", path,
                             p->transposed ? "t_multi" : "multi", p->bf16 ? "bf16" : "f32",
                             (long long)p->M, (long long)p->rows, (long long)p->cols,
                             (long long)p->ldw, (long long)p->ldx, (long long)m, (long long)o,
                             got, exact, tol);
        }
    for (int i = 0; i < 8; i++)
        if (p->Y[p->out_len + i] != UNTOUCHED)
            ck_abort_msg("%s: wrote past the end of Y (M=%lld [%lld, %lld])", path,
                         (long long)p->M, (long long)p->rows, (long long)p->cols);
}

/* Sizes at every tile edge: M 1..17 (groups of 4 and their tails), odd and
 * even row counts, columns 1, 7, 8, 9, 15, 16, 17, 33, and one product large
 * enough (>= 64K weights times M) to be split among threads. */
static const int64_t SHAPES[][2] = {{1, 1}, {3, 7}, {2, 8}, {5, 9}, {7, 15}, {4, 16},
                                    {9, 17}, {33, 33}, {17, 100}, {129, 577}, {577, 129}};
#define N_SHAPES (int)(sizeof SHAPES / sizeof SHAPES[0])
static const int64_t MS[] = {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17};
#define N_MS (int)(sizeof MS / sizeof MS[0])

static void check_all(bool bf16, bool transposed) {
    const char *simd[] = {NULL, "avx2", "0"}, *threads[] = {"1", "2"};
    const char *names[] = {"widest SIMD", "AVX2", "portable"};
    tl_pcg32 rng = tl_test_rng(1207);
    for (int s = 0; s < 3; s++)
        for (int t = 0; t < 2; t++) {
            if (simd[s]) setenv("TINYLLM_SIMD", simd[s], 1);
            else unsetenv("TINYLLM_SIMD");
            setenv("TINYLLM_THREADS", threads[t], 1);
            char path[64];
            snprintf(path, sizeof path, "%s, %s thread(s)", names[s], threads[t]);
            for (int i = 0; i < N_SHAPES; i++)
                for (int m = 0; m < N_MS; m++) {
                    /* The two large shapes (there to be split among threads)
                     * with a few M only: the reference is slow under ASan. */
                    if (SHAPES[i][0] * SHAPES[i][1] > 10000 && MS[m] % 4 != 1) continue;
                    int64_t pad = (i + m) % 3 == 0 ? 0 : 5;   /* dense and strided */
                    problem p = make_problem(&rng, bf16, transposed, MS[m], SHAPES[i][0],
                                             SHAPES[i][1], pad);
                    run(&p);
                    assert_matches_reference(&p, path);
                    free_problem(&p);
                }
        }
    unsetenv("TINYLLM_SIMD");
    unsetenv("TINYLLM_THREADS");
}

START_TEST(multi_f32_matches_double_reference_on_tile_edges_paths_and_threads) {
    check_all(false, false);
}
END_TEST

START_TEST(multi_bf16_matches_double_reference_on_tile_edges_paths_and_threads) {
    check_all(true, false);
}
END_TEST

START_TEST(t_multi_f32_matches_double_reference_on_tile_edges_paths_and_threads) {
    check_all(false, true);
}
END_TEST

START_TEST(t_multi_bf16_matches_double_reference_on_tile_edges_paths_and_threads) {
    check_all(true, true);
}
END_TEST

/* The same bits on 1, 2 and 3 threads: each element is one thread's sum.
 * Long rows (a weight) and short ones (attention's keys and values, 64
 * columns: four rows share a sum tree, and threads cut rows in twos). */
START_TEST(multi_results_do_not_depend_on_the_thread_count) {
    tl_pcg32 rng = tl_test_rng(1208);
    for (int k = 0; k < 8; k++) {
        problem p = make_problem(&rng, k & 1, k & 2, k & 4 ? 3 : 6, 1031, k & 4 ? 64 : 577, 3);
        float *first = xmalloc((size_t)p.out_len * sizeof *first);
        const char *threads[] = {"1", "2", "3"};
        for (int t = 0; t < 3; t++) {
            setenv("TINYLLM_THREADS", threads[t], 1);
            run(&p);
            if (t == 0) memcpy(first, p.Y, (size_t)p.out_len * sizeof *first);
            else if (memcmp(first, p.Y, (size_t)p.out_len * sizeof *first) != 0)
                ck_abort_msg("%s %s: %s threads differ from 1", k & 2 ? "t_multi" : "multi",
                             k & 1 ? "bf16" : "f32", threads[t]);
        }
        unsetenv("TINYLLM_THREADS");
        free(first);
        free_problem(&p);
    }
}
END_TEST

/* M = 1 on a dense W is the GEMV itself: decode's results are unchanged. */
START_TEST(one_input_on_a_dense_matrix_is_the_gemv_bit_for_bit) {
    tl_pcg32 rng = tl_test_rng(1209);
    for (int k = 0; k < 4; k++) {
        problem p = make_problem(&rng, k & 1, k & 2, 1, 257, 191, 0);
        run(&p);
        int64_t n = p.out_len;
        float *y = xmalloc((size_t)n * sizeof *y);
        if (k == 0) tl_gemv_f32(p.Wf, p.X, y, p.rows, p.cols);
        if (k == 1) tl_gemv_bf16(p.Wb, p.X, y, p.rows, p.cols);
        if (k == 2) tl_gemv_t_f32(p.Wf, p.X, y, p.rows, p.cols);
        if (k == 3) tl_gemv_t_bf16(p.Wb, p.X, y, p.rows, p.cols);
        ck_assert_msg(memcmp(y, p.Y, (size_t)n * sizeof *y) == 0, "case %d differs", k);
        free(y);
        free_problem(&p);
    }
}
END_TEST

START_TEST(multi_bad_arguments_set_an_error_and_write_nothing) {
    float W[20] = {0}, X[20] = {0}, Y[8];
    for (int i = 0; i < 8; i++) Y[i] = UNTOUCHED;
    tl_clear_error();
    tl_gemv_multi_f32(NULL, 5, X, 5, Y, 2, 4, 5);
    ck_assert_str_eq(tl_error(), "tl_gemv_multi_f32: NULL W for 2 inputs against a [4, 5] "
                                 "matrix; pass the weight, input and output arrays");
    tl_gemv_t_multi_bf16((const uint16_t *)W, 5, NULL, 4, Y, 2, 4, 5);
    ck_assert_str_eq(tl_error(), "tl_gemv_t_multi_bf16: NULL X for 2 inputs against a [4, 5] "
                                 "matrix; pass the weight, input and output arrays");
    tl_gemv_multi_bf16((const uint16_t *)W, 4, X, 5, Y, 2, 4, 5);
    ck_assert_ptr_nonnull(strstr(tl_error(), "tl_gemv_multi_bf16: leading dimensions ldw=4, "
                                             "ldx=5 are below the row lengths 5 and 5"));
    tl_gemv_t_multi_f32(W, 5, X, 3, Y, 2, 4, 5);
    ck_assert_ptr_nonnull(strstr(tl_error(), "tl_gemv_t_multi_f32: leading dimensions ldw=5, "
                                             "ldx=3 are below the row lengths 5 and 4"));
    for (int i = 0; i < 8; i++) ck_assert_float_eq(Y[i], UNTOUCHED);
    /* No work is no error; an empty inner size writes zeros. */
    tl_clear_error();
    tl_gemv_multi_f32(NULL, 0, NULL, 0, NULL, 0, 4, 5);
    tl_gemv_t_multi_f32(NULL, 0, NULL, 0, NULL, 3, 4, 0);
    ck_assert_ptr_null(tl_error());
    tl_gemv_multi_f32(NULL, 0, NULL, 0, Y, 2, 3, 0);
    tl_gemv_t_multi_bf16(NULL, 2, NULL, 0, Y + 6, 1, 0, 2);
    ck_assert_ptr_null(tl_error());
    for (int i = 0; i < 8; i++) ck_assert_float_eq(Y[i], 0.0f);
}
END_TEST
