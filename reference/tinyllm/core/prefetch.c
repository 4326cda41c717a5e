/* prefetch.c: plans what the next products will read, for the threads that
 * would otherwise wait.
 *
 * A decode step runs the same products in the same order every step: each
 * weight, and attention's K and V of each layer. Between two products the
 * calling thread works alone (norms, rope, the cache's bookkeeping) while the
 * pool's helpers spin, and each step streams every weight through the
 * caches, so each layer's K and V come back from memory. Here each product
 * learns which product came next the last time, and plans the memory of the
 * next few (up to AHEAD_BYTES), which kernels.c hands to the idle helpers
 * (pool.c: tl_pool_prefetch) to pull into the caches; the products then read
 * part of it from cache (measured in course/MS-L7/README.md, section 4.5).
 * The hand-off lives in kernels.c because this file calls nothing (layer 0).
 *
 * A hint only: nothing here changes a result. A region freed or moved leaves
 * a stale entry, which at worst prefetches the wrong lines (a prefetch never
 * faults); the next step corrects it. */
#include <stdatomic.h>
#include <stdint.h>

#include "kernels_internal.h"

enum {
    SLOTS = 2048,                   /* a power of two: a large model's products, twice */
    PROBES = 16,
    MIN_BYTES = 16 * 1024,          /* a product this small is not worth a slot */
    AHEAD_BYTES = 4 << 20,          /* the L2s and a share of L3 */
};

/* A slot: a product's operand (by its first byte) -> the region read next. */
static struct {
    _Atomic uintptr_t key, base;
    atomic_size_t block_bytes;
    atomic_int_least64_t blocks, stride;
} after[SLOTS];

static _Thread_local uintptr_t previous;   /* this thread's last product */

static size_t slot_of(uintptr_t key) {
    return (size_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 53) & (SLOTS - 1);
}

/* The slot holding key, an empty one for it, or (a full run) where it hashes. */
static size_t find(uintptr_t key) {
    size_t first = slot_of(key);
    for (size_t i = 0; i < PROBES; i++) {
        size_t s = (first + i) & (SLOTS - 1);
        uintptr_t k = atomic_load_explicit(&after[s].key, memory_order_relaxed);
        if (k == key || k == 0) return s;
    }
    return first;
}

static void learn(uintptr_t key, const tl_region *next) {
    size_t s = find(key);
    atomic_store_explicit(&after[s].key, key, memory_order_relaxed);
    atomic_store_explicit(&after[s].base, (uintptr_t)next->base, memory_order_relaxed);
    atomic_store_explicit(&after[s].block_bytes, next->block_bytes, memory_order_relaxed);
    atomic_store_explicit(&after[s].blocks, next->blocks, memory_order_relaxed);
    atomic_store_explicit(&after[s].stride, next->stride, memory_order_relaxed);
}

static bool next_of(uintptr_t key, tl_region *next) {
    size_t s = find(key);
    if (atomic_load_explicit(&after[s].key, memory_order_relaxed) != key) return false;
    next->base = (const void *)atomic_load_explicit(&after[s].base, memory_order_relaxed);
    next->block_bytes = atomic_load_explicit(&after[s].block_bytes, memory_order_relaxed);
    next->blocks = atomic_load_explicit(&after[s].blocks, memory_order_relaxed);
    next->stride = atomic_load_explicit(&after[s].stride, memory_order_relaxed);
    return next->base != NULL && next->block_bytes > 0 && next->blocks > 0;
}

int tl_prefetch_plan(const tl_region *operand, tl_region *run) {
    if (operand->blocks <= 0 ||
        (double)operand->block_bytes * (double)operand->blocks < MIN_BYTES)
        return 0;
    uintptr_t key = (uintptr_t)operand->base;
    if (previous != 0 && previous != key) learn(previous, operand);
    previous = key;

    int n = 0;
    size_t total = 0;
    while (n < TL_PREFETCH_REGIONS && total < AHEAD_BYTES && next_of(key, &run[n])) {
        key = (uintptr_t)run[n].base;
        if (key == (uintptr_t)operand->base) break;   /* round the cycle: all planned */
        size_t room = AHEAD_BYTES - total;
        if (run[n].block_bytes > room) run[n].block_bytes = room;   /* the first part only */
        if (run[n].block_bytes * (size_t)run[n].blocks > room)
            run[n].blocks = (int64_t)(room / run[n].block_bytes);
        total += run[n].block_bytes * (size_t)run[n].blocks;
        n++;
    }
    return n;
}
