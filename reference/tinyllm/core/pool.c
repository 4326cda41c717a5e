/* pool.c: the threads the kernels share work with (kernels.h:
 * tl_parallel_chunks).
 *
 * Why not an OpenMP parallel region. A decode step calls a kernel a few
 * hundred times, each a few to a hundred microseconds long. An OpenMP region
 * splits the work statically and ends with a barrier, so every call waits for
 * every thread: on a machine where other processes hold the cores (this
 * course's shared 2-core machine runs eight builds at once), a thread that is
 * not running holds the call up for a scheduler time slice, and a 2-thread
 * decode step measured 5 to 20 times slower than a 1-thread one. Here the
 * work is cut into chunks that any thread may take: the calling thread takes
 * chunks itself and waits only for chunks another thread has started. A
 * helper that is not running when the call comes simply takes none, so a
 * call is never slower than the caller alone could do it (plus the wake-up).
 *
 * The protocol. One job at a time: the caller writes the job (function,
 * context, chunk count), then publishes it by storing a new generation in
 * `ticket` (generation in the high 32 bits, next chunk in the low 32) and in
 * `published`. Threads take chunks by compare-and-swap on `ticket`, only a
 * ticket of the generation they read the job for, so a helper that wakes late
 * neither runs a chunk of a job it has not read nor uses up one of its
 * tickets. Before writing a job the caller closes the last one's tickets
 * (the new generation, no chunk left), so a helper late for the last job,
 * whose copy may mix that job's generation with the new job's fields (its
 * chunk count: chunk 3 of a 3-chunk job was once run), finds no ticket of its
 * generation left. The caller returns when `done` counts every chunk; until
 * then the job cannot change, which is what makes the helpers' copy of it
 * safe to use. Helpers
 * spin a little between jobs (the next call comes within microseconds), then
 * sleep on a condition variable. While they spin they pull into cache the
 * memory the caller's next products will read (tl_pool_prefetch; the plan
 * is prefetch.c's). A call made from inside a chunk, from another thread
 * while a job runs, or with one thread runs on the caller alone.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernels_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

enum { MAX_HELPERS = 63, SPIN_BEFORE_SLEEP = 20000, SPIN_BEFORE_YIELD = 2000 };

/* The job on offer, each field atomic: a helper that reads it while the
 * caller writes the next one reads a mix, but finds no ticket for it (the
 * tickets were closed before the fields were written: release stores here,
 * acquire loads in the helper, so a helper that sees a new field sees the
 * closing too), so the mix is never used. */
typedef struct {
    tl_chunk_fn fn;
    void *ctx;
    int64_t chunks;
    int helpers;                   /* how many helpers may join this job */
} job;

typedef struct {
    _Atomic(tl_chunk_fn) fn;
    _Atomic(void *) ctx;
    atomic_int_least64_t chunks;
    atomic_int helpers;
} shared_job;

static struct {
    pthread_mutex_t lock;          /* the sleepers' lock, and helper creation */
    pthread_cond_t wake;
    pthread_mutex_t busy;          /* one caller at a time */
    int started;                   /* helper threads created */
    atomic_uint published;         /* the generation of the job on offer */
    atomic_uint_least64_t ticket;  /* generation << 32 | next chunk */
    atomic_int_least64_t done;     /* chunks finished of the current job */
    atomic_int sleepers;
    shared_job current;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
          .busy = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local bool inside_chunk;   /* a kernel called from a chunk runs inline */

/* The run idle helpers pull into cache (tl_pool_prefetch): up to
 * TL_PREFETCH_REGIONS regions in order, each block cut into pieces of at most
 * TL_PREFETCH_PIECE bytes; helpers take pieces by number from `taken`, checking
 * for a job between pieces. A helper may read the fields mid-update: a mix
 * prefetches wrong lines, which is harmless (a prefetch never faults). */
static struct {
    struct {
        _Atomic uintptr_t base;
        atomic_size_t block_bytes;
        atomic_int_least64_t blocks, stride;
    } region[TL_PREFETCH_REGIONS];
    atomic_int n;
    atomic_int_least64_t pieces, taken;
} ahead;

static atomic_uint_least64_t pieces_done;

bool tl_pool_inside_chunk(void) { return inside_chunk; }

static int64_t pieces_of(const tl_region *r) {
    return r->blocks * (int64_t)((r->block_bytes + TL_PREFETCH_PIECE - 1) / TL_PREFETCH_PIECE);
}

int64_t tl_pool_run_pieces(const tl_region *regions, int n) {
    int64_t pieces = 0;
    for (int i = 0; i < n; i++) pieces += pieces_of(&regions[i]);
    return pieces;
}

bool tl_pool_piece_span(const tl_region *regions, int n, int64_t piece, uintptr_t *start,
                        size_t *bytes) {
    for (int i = 0; i < n; i++) {
        int64_t here = pieces_of(&regions[i]);
        if (piece >= here) {
            piece -= here;
            continue;
        }
        int64_t per_block = here / regions[i].blocks;
        size_t off = (size_t)(piece % per_block) * TL_PREFETCH_PIECE;
        *start = (uintptr_t)regions[i].base +
                 (uintptr_t)(piece / per_block * regions[i].stride) + off;
        size_t left = regions[i].block_bytes - off;
        *bytes = left < TL_PREFETCH_PIECE ? left : TL_PREFETCH_PIECE;
        return true;
    }
    return false;
}

void tl_pool_prefetch(const tl_region *regions, int n) {
    atomic_store_explicit(&ahead.pieces, 0, memory_order_relaxed);   /* stop the old run first */
    if (n > TL_PREFETCH_REGIONS) n = TL_PREFETCH_REGIONS;
    for (int i = 0; i < n; i++) {
        atomic_store_explicit(&ahead.region[i].base, (uintptr_t)regions[i].base,
                              memory_order_relaxed);
        atomic_store_explicit(&ahead.region[i].block_bytes, regions[i].block_bytes,
                              memory_order_relaxed);
        atomic_store_explicit(&ahead.region[i].blocks, regions[i].blocks, memory_order_relaxed);
        atomic_store_explicit(&ahead.region[i].stride, regions[i].stride, memory_order_relaxed);
    }
    atomic_store_explicit(&ahead.n, n, memory_order_relaxed);
    atomic_store_explicit(&ahead.taken, 0, memory_order_relaxed);
    atomic_store_explicit(&ahead.pieces, tl_pool_run_pieces(regions, n), memory_order_release);
}

int64_t tl_pool_prefetch_left(void) {
    int64_t pieces = atomic_load_explicit(&ahead.pieces, memory_order_acquire);
    int64_t taken = atomic_load_explicit(&ahead.taken, memory_order_relaxed);
    return taken >= pieces ? 0 : pieces - taken;
}

uint64_t tl_pool_prefetched_pieces(void) { return atomic_load(&pieces_done); }

/* One piece of the run on offer into this core's L2; false when none is left. */
static bool prefetch_piece(void) {
    int64_t pieces = atomic_load_explicit(&ahead.pieces, memory_order_acquire);
    if (atomic_load_explicit(&ahead.taken, memory_order_relaxed) >= pieces) return false;
    int64_t piece = atomic_fetch_add_explicit(&ahead.taken, 1, memory_order_relaxed);
    if (piece >= pieces) return false;
    tl_region run[TL_PREFETCH_REGIONS];
    int n = atomic_load_explicit(&ahead.n, memory_order_relaxed);
    if (n < 0 || n > TL_PREFETCH_REGIONS) return true;   /* torn: skip the piece */
    for (int i = 0; i < n; i++) {
        run[i].base = (const void *)atomic_load_explicit(&ahead.region[i].base,
                                                         memory_order_relaxed);
        run[i].block_bytes = atomic_load_explicit(&ahead.region[i].block_bytes,
                                                  memory_order_relaxed);
        run[i].blocks = atomic_load_explicit(&ahead.region[i].blocks, memory_order_relaxed);
        run[i].stride = atomic_load_explicit(&ahead.region[i].stride, memory_order_relaxed);
        if (run[i].blocks <= 0 || run[i].block_bytes == 0) return true;   /* torn */
    }
    uintptr_t start;
    size_t bytes;
    if (!tl_pool_piece_span(run, n, piece, &start, &bytes)) return true;
#if defined(__x86_64__) || defined(__i386__)
    for (size_t line = 0; line < bytes; line += 64)
        _mm_prefetch((const char *)(start + line), _MM_HINT_T1);
#endif
    atomic_fetch_add_explicit(&pieces_done, 1, memory_order_relaxed);
    return true;
}

/* Takes and runs chunks of generation gen while there are any. A ticket is
 * taken by compare-and-swap, only while it still belongs to gen: a helper
 * that is late (its job finished, the next one published) must not use up a
 * ticket of the next job, whose chunk would then never run. */
static void work(uint32_t gen, const job *j) {
    uint64_t t = atomic_load(&pool.ticket);
    for (;;) {
        if ((uint32_t)(t >> 32) != gen || (int64_t)(uint32_t)t >= j->chunks) return;
        if (!atomic_compare_exchange_weak(&pool.ticket, &t, t + 1)) continue;   /* t reloaded */
        j->fn(j->ctx, (int64_t)(uint32_t)t);
        atomic_fetch_add(&pool.done, 1);
        t = atomic_load(&pool.ticket);
    }
}

static void *helper_main(void *arg) {
    int id = (int)(intptr_t)arg;
    inside_chunk = true;
    uint32_t seen = atomic_load(&pool.published);
    for (;;) {
        uint32_t gen;
        int spins = 0;
        while ((gen = atomic_load_explicit(&pool.published, memory_order_acquire)) == seen) {
            if (++spins < SPIN_BEFORE_SLEEP) {
                if (!prefetch_piece()) cpu_relax();
                continue;
            }
            pthread_mutex_lock(&pool.lock);
            atomic_fetch_add(&pool.sleepers, 1);
            while (atomic_load(&pool.published) == seen) pthread_cond_wait(&pool.wake, &pool.lock);
            atomic_fetch_sub(&pool.sleepers, 1);
            pthread_mutex_unlock(&pool.lock);
            spins = 0;
        }
        seen = gen;
        job j = {atomic_load_explicit(&pool.current.fn, memory_order_acquire),
                 atomic_load_explicit(&pool.current.ctx, memory_order_acquire),
                 atomic_load_explicit(&pool.current.chunks, memory_order_acquire),
                 atomic_load_explicit(&pool.current.helpers, memory_order_acquire)};
        if (id < j.helpers) work(gen, &j);   /* the caller waits for the chunks we take */
    }
    return NULL;
}

/* Starts helpers up to n (never stopped: they sleep when idle). */
static int ensure_helpers(int n) {
    if (n > MAX_HELPERS) n = MAX_HELPERS;
    pthread_mutex_lock(&pool.lock);
    while (pool.started < n) {
        pthread_t th;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&th, &attr, helper_main, (void *)(intptr_t)pool.started);
        pthread_attr_destroy(&attr);
        if (rc != 0) break;   /* fewer helpers: the work still gets done */
        pool.started++;
    }
    int have = pool.started;
    pthread_mutex_unlock(&pool.lock);
    return have < n ? have : n;
}

void tl_parallel_chunks(int threads, int64_t chunks, tl_chunk_fn fn, void *ctx) {
    if (chunks <= 0) return;
    if (threads <= 1 || chunks == 1 || inside_chunk || pthread_mutex_trylock(&pool.busy) != 0) {
        for (int64_t c = 0; c < chunks; c++) fn(ctx, c);
        return;
    }
    int helpers = ensure_helpers(threads - 1);
    uint32_t gen = atomic_load(&pool.published) + 1;
    job j = {fn, ctx, chunks, helpers};
    atomic_store(&pool.ticket, (uint64_t)gen << 32 | UINT32_MAX);   /* close the last job's */
    atomic_store_explicit(&pool.current.fn, fn, memory_order_release);
    atomic_store_explicit(&pool.current.ctx, ctx, memory_order_release);
    atomic_store_explicit(&pool.current.chunks, chunks, memory_order_release);
    atomic_store_explicit(&pool.current.helpers, helpers, memory_order_release);
    atomic_store(&pool.done, 0);
    atomic_store_explicit(&pool.ticket, (uint64_t)gen << 32, memory_order_release);
    atomic_store(&pool.published, gen);   /* seq_cst: ordered before the sleepers check */
    if (atomic_load(&pool.sleepers) > 0) {
        pthread_mutex_lock(&pool.lock);
        pthread_cond_broadcast(&pool.wake);
        pthread_mutex_unlock(&pool.lock);
    }
    inside_chunk = true;
    work(gen, &j);
    inside_chunk = false;
    /* Wait only for chunks a helper has started; yield the core now and then
     * so that a helper sharing it can finish. */
    for (int spins = 0; atomic_load_explicit(&pool.done, memory_order_acquire) < chunks;) {
        if (++spins % SPIN_BEFORE_YIELD == 0) sched_yield();
        else cpu_relax();
    }
    pthread_mutex_unlock(&pool.busy);
}

/* tl_parallel_range: [0, n) is cut into one part per thread, each part's
 * span of what is left in one word (lo << 32 | hi), so taking from either end
 * is one compare-and-swap. A thread runs its own part front to back in
 * blocks of `least`, one stream through memory, then takes the back half of
 * what is left of the fullest other part, until nothing is left: threads
 * finish within a block of each other, and a thread that never comes has its
 * part taken by the others. Two threads claiming from the two ends of one
 * shared span did as well at the end, but every block the back thread took
 * started a new stream: BF16 decode on 2 threads 0.71 of the read bound
 * against 0.77 (README 4.13). */
typedef struct {
    _Alignas(64) atomic_uint_least64_t span;   /* lo << 32 | hi */
} range_part;

typedef struct {
    tl_range_fn fn;
    void *ctx;
    int64_t least;
    int parts;
    range_part part[MAX_HELPERS + 1];
} range_job;

static bool take_front(range_part *p, int64_t least, int64_t *begin, int64_t *end) {
    uint64_t v = atomic_load_explicit(&p->span, memory_order_relaxed);
    for (;;) {
        int64_t lo = (int64_t)(v >> 32), hi = (int64_t)(uint32_t)v;
        if (lo >= hi) return false;
        int64_t take = hi - lo < least ? hi - lo : least;
        uint64_t next = (uint64_t)(lo + take) << 32 | (uint64_t)hi;
        if (atomic_compare_exchange_weak_explicit(&p->span, &v, next, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *begin = lo;
            *end = lo + take;
            return true;
        }
    }
}

/* The back half of what is left of p, in multiples of least (all of a last
 * piece shorter than that). */
static bool take_back_half(range_part *p, int64_t least, int64_t *begin, int64_t *end) {
    uint64_t v = atomic_load_explicit(&p->span, memory_order_relaxed);
    for (;;) {
        int64_t lo = (int64_t)(v >> 32), hi = (int64_t)(uint32_t)v, left = hi - lo;
        if (left <= 0) return false;
        int64_t take = left / 2 / least * least;
        if (take < least) take = least < left ? least : left;
        uint64_t next = (uint64_t)lo << 32 | (uint64_t)(hi - take);
        if (atomic_compare_exchange_weak_explicit(&p->span, &v, next, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *begin = hi - take;
            *end = hi;
            return true;
        }
    }
}

static int64_t left_in(range_part *p) {
    uint64_t v = atomic_load_explicit(&p->span, memory_order_relaxed);
    return (int64_t)(uint32_t)v - (int64_t)(v >> 32);
}

static void range_part_run(void *ctx, int64_t own) {
    range_job *r = ctx;
    int64_t begin, end;
    while (take_front(&r->part[own], r->least, &begin, &end)) r->fn(r->ctx, begin, end);
    for (;;) {
        int fullest = -1;
        int64_t most = 0;
        for (int i = 0; i < r->parts; i++) {
            int64_t left = left_in(&r->part[i]);
            if (left > most) most = left, fullest = i;
        }
        if (fullest < 0) return;
        if (take_back_half(&r->part[fullest], r->least, &begin, &end)) r->fn(r->ctx, begin, end);
    }
}

void tl_parallel_range(int threads, int64_t n, int64_t least, tl_range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (least < 1) least = 1;
    if (threads <= 1 || n <= least || n > (int64_t)UINT32_MAX || inside_chunk) {
        fn(ctx, 0, n);
        return;
    }
    if (threads > MAX_HELPERS + 1) threads = MAX_HELPERS + 1;
    range_job r = {.fn = fn, .ctx = ctx, .least = least, .parts = threads};
    for (int i = 0; i < threads; i++) {   /* parts start on multiples of least */
        int64_t lo = n * i / threads / least * least;
        int64_t hi = i == threads - 1 ? n : n * (i + 1) / threads / least * least;
        atomic_init(&r.part[i].span, (uint64_t)lo << 32 | (uint64_t)hi);
    }
    tl_parallel_chunks(threads, threads, range_part_run, &r);
}
