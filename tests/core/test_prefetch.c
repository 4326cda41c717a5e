/* Reading ahead (prefetch.c, pool.c): a product learns which products came
 * after it and plans their memory in order, up to 4 MiB, a short cycle once
 * round; small products are not learned; a changed order is relearned; a
 * batched matmul is one region of evenly spaced blocks (attention's K per kv
 * head in a cache), a shared operand one block; pieces cover each block
 * exactly once; a product's plan reaches the helpers, who take a whole run
 * while idle, unmapped regions included; no result changes. The plan never
 * reads the memory it names, so most cases use made-up addresses. */
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
              c = one_block(0x30000000, 2 * MIB), d = one_block(0x38000000, 2 * MIB),
              run[TL_PREFETCH_REGIONS];
    ck_assert_int_eq(plan(a, run), 0);   /* nothing learned after a yet */
    plan(b, run);
    plan(c, run);
    plan(d, run);
    int n = plan(a, run);   /* a again: b, c, then d cut at 4 MiB */
    ck_assert_int_eq(n, 3);
    ck_assert_ptr_eq(run[0].base, b.base);
    ck_assert_uint_eq(run[0].block_bytes, MIB / 2);
    ck_assert_ptr_eq(run[1].base, c.base);
    ck_assert_ptr_eq(run[2].base, d.base);
    ck_assert_uint_eq(run[2].block_bytes, AHEAD - MIB / 2 - 2 * MIB);
    ck_assert_uint_eq(run_bytes(run, n), AHEAD);
}
END_TEST

/* A cycle shorter than 4 MiB is planned once round, not twice. */
START_TEST(a_short_cycle_is_planned_once) {
    tl_region a = one_block(0x11000000, MIB / 4), b = one_block(0x12000000, MIB / 4),
              run[TL_PREFETCH_REGIONS];
    plan(a, run);
    plan(b, run);
    int n = plan(a, run);
    ck_assert_int_eq(n, 1);
    ck_assert_ptr_eq(run[0].base, b.base);
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

static bool prefetch_switched_off(void) {
    const char *s = getenv("TINYLLM_PREFETCH");
    return s && strcmp(s, "0") == 0;
}

/* A weight's GEMV, then a @ b, then the weight's GEMV again, on 2 threads:
 * the weight's plan, which starts with what a @ b read. */
static int plan_around(tl_tensor *a, tl_tensor *b, tl_region *run) {
    int64_t rows = 256, cols = 256;
    float *w = calloc((size_t)(rows * cols), sizeof *w), *x = calloc((size_t)cols, sizeof *x);
    float *y = calloc((size_t)rows, sizeof *y);
    ck_assert(w && x && y);
    setenv("TINYLLM_THREADS", "2", 1);
    tl_gemv_f32(w, x, y, rows, cols);
    ck_assert_ptr_nonnull(tl_matmul(a, b));
    tl_gemv_f32(w, x, y, rows, cols);
    int n = tl_prefetch_plan(&(tl_region){w, (size_t)(rows * cols) * sizeof *w, 1, 0}, run);
    unsetenv("TINYLLM_THREADS");
    free(w);
    free(x);
    free(y);
    return n;
}

/* q @ K^T over a cache's first 160 positions of 3 kv heads: K's 3 blocks. */
START_TEST(a_batched_matmul_is_one_region_of_evenly_spaced_blocks) {
    if (prefetch_switched_off()) return;   /* TINYLLM_PREFETCH=0: nothing is learned */
    tl_scope_push();
    tl_no_grad_push();
    int64_t capacity = 192, used = 160, d = 64;
    tl_tensor *cache = tl_zeros(TL_F32, 4, (int64_t[]){1, 3, capacity, d});
    tl_tensor *keys = tl_narrow(cache, 2, 0, used);
    tl_tensor *q = tl_zeros(TL_F32, 4, (int64_t[]){1, 3, 3, d});
    tl_region run[TL_PREFETCH_REGIONS];
    ck_assert_int_ge(plan_around(q, tl_transpose(keys, 2, 3), run), 1);
    ck_assert_ptr_eq(run[0].base, tl_data(cache));
    ck_assert_int_eq(run[0].blocks, 3);
    ck_assert_int_eq(run[0].stride, capacity * d * (int64_t)sizeof(float));
    ck_assert_uint_eq(run[0].block_bytes, (size_t)(used * d) * sizeof(float));
    tl_no_grad_pop();
    tl_scope_pop();
}
END_TEST

/* One b for every batch of a (a's batches not foldable into one product):
 * the plan names b once, not once per batch. */
START_TEST(a_shared_operand_is_one_block) {
    if (prefetch_switched_off()) return;
    tl_scope_push();
    tl_no_grad_push();
    int64_t k = 256, n = 512;
    tl_tensor *a = tl_transpose(tl_zeros(TL_F32, 4, (int64_t[]){3, 2, 1, k}), 0, 1);
    tl_tensor *b = tl_zeros(TL_F32, 2, (int64_t[]){k, n});
    tl_region run[TL_PREFETCH_REGIONS];
    ck_assert_int_ge(plan_around(a, b, run), 1);
    ck_assert_ptr_eq(run[0].base, tl_data(b));
    ck_assert_int_eq(run[0].blocks, 1);
    ck_assert_uint_eq(run[0].block_bytes, (size_t)(k * n) * sizeof(float));
    tl_no_grad_pop();
    tl_scope_pop();
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
    ck_assert_msg(taken, "the helper never took the run: %lld pieces left",
                  (long long)tl_pool_prefetch_left());

    int64_t rows = 999, cols = 577;
    tl_pcg32 rng = tl_test_rng(77);
    float *w = malloc((size_t)(rows * cols) * sizeof *w), *x = malloc((size_t)cols * sizeof *x);
    float *y1 = malloc((size_t)rows * sizeof *y1), *y2 = malloc((size_t)rows * sizeof *y2);
    ck_assert(w && x && y1 && y2);
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

/* Every byte of every block is in exactly one piece, and no piece leaves its
 * block: blocks under a piece, not a multiple of one, strided, several regions. */
START_TEST(pieces_cover_each_block_exactly_once) {
    enum { SPACE = 1 << 20 };
    tl_region run[4] = {{(const void *)(uintptr_t)0x1000, 2560, 7, 3000},
                        {(const void *)(uintptr_t)0x9000, 10000, 3, 12288},
                        {(const void *)(uintptr_t)0x20000, 4096, 2, 4096},
                        {(const void *)(uintptr_t)0x30000, 70000, 1, 0}};
    unsigned char *count = calloc(SPACE, 1);
    ck_assert_ptr_nonnull(count);
    int64_t pieces = tl_pool_run_pieces(run, 4);
    ck_assert_int_eq(pieces, 7 * 1 + 3 * 3 + 2 * 1 + 18);
    for (int64_t p = 0; p < pieces; p++) {
        uintptr_t start;
        size_t bytes;
        ck_assert(tl_pool_piece_span(run, 4, p, &start, &bytes));
        ck_assert(bytes > 0 && bytes <= TL_PREFETCH_PIECE && start + bytes <= SPACE);
        for (size_t i = 0; i < bytes; i++) count[start + i]++;
    }
    uintptr_t start;
    size_t bytes;
    ck_assert(!tl_pool_piece_span(run, 4, pieces, &start, &bytes));
    size_t inside = 0;
    for (int r = 0; r < 4; r++)
        for (int64_t b = 0; b < run[r].blocks; b++)
            for (size_t i = 0; i < run[r].block_bytes; i++) {
                uintptr_t at = (uintptr_t)run[r].base + (uintptr_t)(b * run[r].stride) + i;
                if (count[at] != 1)   /* not ck_assert per byte: each passing one is a write */
                    ck_abort_msg("region %d block %lld byte %zu: %d pieces", r, (long long)b,
                                 i, count[at]);
                count[at] = 0;
                inside++;
            }
    for (size_t at = 0; at < SPACE; at++)
        if (count[at] != 0) ck_abort_msg("byte %zu is outside every block", at);
    ck_assert_uint_eq(inside, 7 * 2560 + 3 * 10000 + 2 * 4096 + 70000);
    free(count);
}
END_TEST

/* A learned sequence of one-row products on 2 threads hands its plan to the
 * helpers, who prefetch pieces of it. */
START_TEST(a_products_plan_reaches_the_helpers) {
    if (prefetch_switched_off()) return;
    setenv("TINYLLM_THREADS", "2", 1);
    int64_t rows = 512, cols = 256;
    float *w[3], *x = calloc((size_t)cols, sizeof *x), *y = calloc((size_t)rows, sizeof *y);
    for (int i = 0; i < 3; i++) w[i] = calloc((size_t)(rows * cols), sizeof *w[i]);
    ck_assert(x && y && w[0] && w[1] && w[2]);
    bool prefetched = false;
    for (int attempt = 0; attempt < 20 && !prefetched; attempt++) {
        uint64_t before = tl_pool_prefetched_pieces();
        for (int i = 0; i < 4; i++) tl_gemv_f32(w[i % 3], x, y, rows, cols);
        for (double t0 = seconds(); seconds() - t0 < 0.05;) {
            if (tl_pool_prefetched_pieces() > before) {
                prefetched = true;
                break;
            }
            sched_yield();
        }
    }
    ck_assert_msg(prefetched, "no piece was prefetched after 20 learned sequences");
    for (int i = 0; i < 3; i++) free(w[i]);
    free(x);
    free(y);
    unsetenv("TINYLLM_THREADS");
}
END_TEST
