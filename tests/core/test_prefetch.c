/* Reading ahead (prefetch.c, pool.c): a product learns which products came
 * after it and plans their memory, in order, up to 4 MiB; small products are
 * not learned; a changed order is relearned; a batched matmul is one region
 * of evenly spaced blocks (attention's K per kv head in a cache); helpers
 * take the whole run while idle, unmapped regions included, and no
 * result changes. The plan never reads the memory it names, so most cases
 * use made-up addresses. */
#include <check.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../reference/tinyllm/core/kernels_internal.h"
#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"
#include "tinyllm/tensor.h"
#include "tinyllm/testing.h"

#define MIB ((size_t)1 << 20)
#define AHEAD (4 * MIB)

static tl_region one_block(uintptr_t at, size_t bytes) {
    return (tl_region){(const void *)at, bytes, 1, 0};
}

static int plan(tl_region r, tl_region *run) { return tl_prefetch_plan(&r, run); }

static size_t run_bytes(const tl_region *run, int n) {
    size_t total = 0;
    for (int i = 0; i < n; i++) total += run[i].block_bytes * (size_t)run[i].blocks;
    return total;
}

START_TEST(a_plan_follows_the_order_the_products_ran_in_up_to_4_mib) {
    tl_region a = one_block(0x10000000, MIB), b = one_block(0x20000000, MIB / 2),
              c = one_block(0x30000000, 2 * MIB), run[TL_PREFETCH_REGIONS];
    ck_assert_int_eq(plan(a, run), 0);   /* nothing learned after a yet */
    plan(b, run);
    plan(c, run);
    int n = plan(a, run);   /* a again: b, c, a, then b cut at 4 MiB */
    ck_assert_int_eq(n, 4);
    ck_assert_ptr_eq(run[0].base, b.base);
    ck_assert_uint_eq(run[0].block_bytes, MIB / 2);
    ck_assert_ptr_eq(run[1].base, c.base);
    ck_assert_ptr_eq(run[2].base, a.base);
    ck_assert_ptr_eq(run[3].base, b.base);
    ck_assert_uint_eq(run[3].block_bytes, AHEAD - MIB / 2 - 2 * MIB - MIB);
    ck_assert_uint_eq(run_bytes(run, n), AHEAD);
}
END_TEST

START_TEST(a_small_product_is_not_learned_and_a_changed_order_is_relearned) {
    tl_region a = one_block(0x40000000, MIB), b = one_block(0x50000000, MIB),
              c = one_block(0x60000000, MIB), small = one_block(0x70000000, 8192),
              run[TL_PREFETCH_REGIONS];
    plan(a, run);
    ck_assert_int_eq(plan(small, run), 0);
    plan(b, run);
    int n = plan(a, run);   /* b came after a: the small one is skipped */
    ck_assert_int_ge(n, 1);
    ck_assert_ptr_eq(run[0].base, b.base);
    plan(c, run);           /* now c follows a */
    n = plan(a, run);
    ck_assert_int_ge(n, 1);
    ck_assert_ptr_eq(run[0].base, c.base);
}
END_TEST

/* A weight's GEMV, then q @ K^T over a cache's first 160 positions of 3 kv
 * heads, then the weight again: the weight's plan starts with K's 3 blocks. */
START_TEST(a_batched_matmul_is_one_region_of_evenly_spaced_blocks) {
    setenv("TINYLLM_THREADS", "2", 1);
    tl_scope_push();
    tl_no_grad_push();
    int64_t rows = 256, cols = 256, capacity = 192, used = 160, d = 64;
    float *w = calloc((size_t)(rows * cols), sizeof *w), *x = calloc((size_t)cols, sizeof *x);
    float *y = calloc((size_t)rows, sizeof *y);
    ck_assert_ptr_nonnull(w);
    tl_tensor *cache = tl_zeros(TL_F32, 4, (int64_t[]){1, 3, capacity, d});
    tl_tensor *keys = tl_narrow(cache, 2, 0, used);
    tl_tensor *q = tl_zeros(TL_F32, 4, (int64_t[]){1, 3, 3, d});
    tl_gemv_f32(w, x, y, rows, cols);
    ck_assert_ptr_nonnull(tl_matmul(q, tl_transpose(keys, 2, 3)));
    tl_gemv_f32(w, x, y, rows, cols);
    tl_region run[TL_PREFETCH_REGIONS];
    int n = tl_prefetch_plan(&(tl_region){w, (size_t)(rows * cols) * sizeof *w, 1, 0}, run);
    ck_assert_int_ge(n, 1);
    ck_assert_ptr_eq(run[0].base, tl_data(cache));
    ck_assert_int_eq(run[0].blocks, 3);
    ck_assert_int_eq(run[0].stride, capacity * d * (int64_t)sizeof(float));
    ck_assert_uint_eq(run[0].block_bytes, (size_t)(used * d) * sizeof(float));
    free(w);
    free(x);
    free(y);
    tl_no_grad_pop();
    tl_scope_pop();
    unsetenv("TINYLLM_THREADS");
}
END_TEST

static void nothing(void *ctx, int64_t chunk) {
    (void)ctx;
    (void)chunk;
}

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A run naming unmapped memory is taken whole by an idle helper
 * (a prefetch never faults), and GEMVs give the same bits as on one thread. */
START_TEST(idle_helpers_take_the_whole_run_and_results_do_not_change) {
    tl_region bogus[3] = {one_block(0xdead0000, MIB), one_block(4096, 64 * 1024),
                          {(const void *)(uintptr_t)0x7000, 8192, 4, 1 << 20}};
    bool taken = false;
    for (int attempt = 0; attempt < 20 && !taken; attempt++) {
        tl_parallel_chunks(2, 4, nothing, NULL);   /* wakes the helper: it spins a while */
        tl_pool_prefetch(bogus, 3);
        for (double t0 = seconds(); seconds() - t0 < 0.05;) {
            if (tl_pool_prefetch_left() == 0) {
                taken = true;
                break;
            }
            sched_yield();
        }
    }
    ck_assert_msg(taken, "the helper never took the run: %zu bytes left",
                  tl_pool_prefetch_left());

    int64_t rows = 999, cols = 577;
    tl_pcg32 rng = tl_test_rng(77);
    float *w = malloc((size_t)(rows * cols) * sizeof *w), *x = malloc((size_t)cols * sizeof *x);
    float *y1 = malloc((size_t)rows * sizeof *y1), *y2 = malloc((size_t)rows * sizeof *y2);
    ck_assert_ptr_nonnull(y2);
    for (int64_t i = 0; i < rows * cols; i++) w[i] = 2.0f * tl_pcg32_uniform(&rng) - 1.0f;
    for (int64_t i = 0; i < cols; i++) x[i] = 2.0f * tl_pcg32_uniform(&rng) - 1.0f;
    setenv("TINYLLM_THREADS", "1", 1);
    tl_gemv_f32(w, x, y1, rows, cols);
    setenv("TINYLLM_THREADS", "2", 1);
    for (int round = 0; round < 3; round++) {   /* learned, then planned and prefetched */
        tl_gemv_f32(w, x, y2, rows, cols);
        tl_gemv_f32(w + cols, x, y2, rows - 1, cols);
        tl_gemv_f32(w, x, y2, rows, cols);
        ck_assert_msg(memcmp(y1, y2, (size_t)rows * sizeof *y1) == 0, "round %d differs", round);
    }
    unsetenv("TINYLLM_THREADS");
    free(w);
    free(x);
    free(y1);
    free(y2);
}
END_TEST
