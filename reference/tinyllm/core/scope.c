/* scope.c: where tensors live (L0.1).
 *
 * A scope is an arena. Storage and autograd nodes are carved out of big
 * malloc'd blocks (a large request gets a block of its own), and
 * tl_scope_pop frees every block at once: student code never frees a tensor.
 * Tensor headers are malloc'd one by one and linked into their scope, so
 * that tl_scope_keep can hand the very same tl_tensor to the enclosing scope.
 *
 * Popped blocks of the standard size are kept for the next scope (up to
 * SPARE_BLOCKS of them), so a decode loop that pushes and pops a scope per
 * token allocates nothing from the system after its first steps, and its
 * memory stays flat. Popped large blocks are kept too, up to BIG_SPARE_BYTES (32 MiB)
 * (the oldest go first): a prefill's layers each make the same large
 * activations, and a fresh block for each was a fresh set of pages for the
 * kernel to fault in and clear (a sixth of a 128-token prefill's time).
 *
 * Owned tensors (parameters, caches) live outside every scope. A small one is
 * one heap allocation holding storage header and data; a large one gets
 * anonymous pages of its own, which are zero and cost no resident memory
 * until written (a model built to load a checkpoint into, or to adopt one,
 * never touches them). Owned storage is reference counted, so parameters may
 * share it (tl_tensor_repoint). Scopes are per thread; the bottom scope of the
 * thread that exits is freed at exit, so leak checkers stay quiet.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "tinyllm/kernels.h"

enum { ALIGN = 64, BLOCK_SIZE = 256 << 10 };

/* Requests above this get their own block. Under AddressSanitizer every
 * request does, so an overrun is caught at the tensor that made it. */
#if defined(__SANITIZE_ADDRESS__)
enum { BIG_REQUEST = 0 };
#else
enum { BIG_REQUEST = 64 << 10 };
#endif

/* Freed bytes of large blocks after which a pop returns memory to the
 * system (malloc_trim). */
#define TRIM_BYTES ((size_t)32 << 20)

/* Standard blocks kept for reuse after a pop: 16 MiB at most. */
enum { SPARE_BLOCKS = 64 };

/* Large blocks kept for reuse after a pop, in bytes (none under
 * AddressSanitizer: a reused block would hide a use after the pop). A
 * request takes the smallest kept block that holds it, if that block is not
 * more than BIG_SPARE_SLACK times the request. */
#if defined(__SANITIZE_ADDRESS__)
#define BIG_SPARE_BYTES ((size_t)0)
#else
#define BIG_SPARE_BYTES ((size_t)32 << 20)
#endif
#define BIG_SPARE_SLACK 2
/* Blocks above this go back to the system when popped: one-off tensors (a
 * prefill's logits, [128, 49152] floats for SmolLM2) would push out the
 * layers' blocks, which every layer reuses. */
#define BIG_SPARE_BLOCK_MAX ((size_t)4 << 20)

/* Owned tensors of at least this many bytes get pages of their own (not
 * under AddressSanitizer, which guards heap allocations only). */
#if defined(__SANITIZE_ADDRESS__)
#define OWN_PAGES_BYTES SIZE_MAX
#else
#define OWN_PAGES_BYTES ((size_t)1 << 20)
#endif

typedef struct block {
    struct block *next;
    size_t size, used;             /* bytes of data after the header */
} block;

typedef struct box box;
typedef struct scope {
    block *blocks;                 /* the head block is the one being filled */
    box *tensors;                  /* headers made here, newest first */
    struct scope *parent;
    int depth;
} scope;

/* A tensor header and where it lives (home is NULL for owned tensors). The
 * tensor comes first, so a tl_tensor * is a box *. */
struct box {
    tl_tensor t;
    box *prev, *next;
    scope *home;
};

/* An arena storage and the scope whose blocks hold it. */
typedef struct {
    tl_storage s;
    scope *home;
} arena_storage;

#define HEADER(type) (((sizeof(type) + ALIGN - 1) / ALIGN) * ALIGN)

static _Thread_local scope bottom;
static _Thread_local scope *top;
static _Thread_local block *spare;      /* popped standard blocks, for reuse */
static _Thread_local int spare_count;
static _Thread_local block *big_spare;  /* popped large blocks, newest first */
static _Thread_local size_t big_spare_bytes;
static _Thread_local size_t block_bytes;   /* every block this thread holds */

static void register_exit_hook(void) { atexit(tl_shutdown); }

static scope *current(void) {
    if (!top) {
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        pthread_once(&once, register_exit_hook);
        top = &bottom;
    }
    return top;
}

/* ---- the arena --------------------------------------------------------- */

/* The smallest kept large block that holds n bytes without wasting more
 * than BIG_SPARE_SLACK times n, taken off the list; NULL when none does. */
static block *take_big_spare(size_t n) {
    block **best = NULL;
    for (block **at = &big_spare; *at; at = &(*at)->next)
        if ((*at)->size >= n && (*at)->size / BIG_SPARE_SLACK <= n &&
            (!best || (*at)->size < (*best)->size))
            best = at;
    if (!best) return NULL;
    block *b = *best;
    *best = b->next;
    big_spare_bytes -= b->size;
    return b;
}

static void *arena_alloc(scope *s, size_t bytes) {
    size_t n = ((bytes ? bytes : 1) + ALIGN - 1) / ALIGN * ALIGN;
    block *b = s->blocks;
    if (!b || b->size - b->used < n) {
        bool own = n > (size_t)BIG_REQUEST;
        block *fresh = NULL;
        if (own && n >= bytes) {
            fresh = take_big_spare(n);
        } else if (!own && spare) {
            fresh = spare;
            spare = spare->next;
            spare_count--;
        }
        if (!fresh) {
            size_t size = own ? n : BLOCK_SIZE;
            void *mem = NULL;
            if (n < bytes || posix_memalign(&mem, ALIGN, HEADER(block) + size) != 0)
                return tl_fail("out of memory: cannot allocate %zu bytes for a tensor", bytes);
            fresh = mem;
            fresh->size = size;
            block_bytes += size;
        }
        fresh->used = 0;
        if (own && b) {            /* keep filling the current block */
            fresh->next = b->next;
            b->next = fresh;
        } else {
            fresh->next = b;
            s->blocks = fresh;
        }
        b = fresh;
    }
    void *p = (char *)b + HEADER(block) + b->used;
    b->used += n;
    return p;
}

void *tl_scope_alloc(size_t bytes) { return arena_alloc(current(), bytes); }

/* Bytes of own blocks freed since the allocator was last asked to give
 * memory back (see tl_scope_pop). */
static _Thread_local size_t freed_since_trim;

static void free_block(block *b) {
    block_bytes -= b->size;
    freed_since_trim += b->size;
    free(b);
}

/* Keeps a popped large block for reuse; the oldest kept go beyond the cap. */
static void keep_big_block(block *b) {
    if (b->size > BIG_SPARE_BYTES || b->size > BIG_SPARE_BLOCK_MAX) {
        free_block(b);
        return;
    }
    b->next = big_spare;
    big_spare = b;
    big_spare_bytes += b->size;
    while (big_spare_bytes > BIG_SPARE_BYTES) {
        block **oldest = &big_spare;
        while ((*oldest)->next) oldest = &(*oldest)->next;
        big_spare_bytes -= (*oldest)->size;
        free_block(*oldest);
        *oldest = NULL;
    }
}

static void free_contents(scope *s) {
    for (box *b = s->tensors, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    for (block *b = s->blocks, *next; b; b = next) {
        next = b->next;
        if (b->size == BLOCK_SIZE && spare_count < SPARE_BLOCKS) {
            b->next = spare;
            spare = b;
            spare_count++;
        } else if (b->size != BLOCK_SIZE) {
            keep_big_block(b);
        } else {
            free_block(b);
        }
    }
    s->tensors = NULL;
    s->blocks = NULL;
}

/* Frees a list of kept blocks and empties it. */
static void free_block_list(block **list) {
    for (block *b = *list, *next; b; b = next) {
        next = b->next;
        block_bytes -= b->size;
        free(b);
    }
    *list = NULL;
}

static void free_spare_blocks(void) {
    free_block_list(&spare);
    spare_count = 0;
    free_block_list(&big_spare);
    big_spare_bytes = 0;
}

size_t tl_scope_bytes(void) { return block_bytes; }

/* ---- headers and storage ----------------------------------------------- */

static void link_box(box *b, scope *s) {
    b->home = s;
    b->prev = NULL;
    b->next = s->tensors;
    if (s->tensors) s->tensors->prev = b;
    s->tensors = b;
}

static void unlink_box(box *b) {
    scope *s = b->home;
    if (b->prev) b->prev->next = b->next;
    else s->tensors = b->next;
    if (b->next) b->next->prev = b->prev;
}

/* A zeroed header in scope s (or owned when s is NULL). */
static tl_tensor *new_header(scope *s) {
    box *b = calloc(1, sizeof *b);
    if (!b) return tl_fail("out of memory: cannot allocate a tensor header");
    if (s) link_box(b, s);
    else b->t.owned = true;
    return &b->t;
}

static scope *home_of(const tl_tensor *t) { return ((const box *)t)->home; }

static tl_storage *arena_storage_new(scope *s, size_t nbytes) {
    arena_storage *st = arena_alloc(s, HEADER(arena_storage) + nbytes);
    if (!st) return NULL;
    st->s = (tl_storage){ (char *)st + HEADER(arena_storage), nbytes, TL_STORAGE_ARENA, false,
                          false, 0, NULL, NULL };
    st->home = s;
    return &st->s;
}

/* Bytes of owned storage alive in the process (heap and pages; not external
 * memory). */
static atomic_size_t owned_bytes;

size_t tl_owned_bytes(void) { return atomic_load(&owned_bytes); }

static size_t page_round(size_t n) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (n + page - 1) / page * page;
}

/* Zero-filled owned storage with one reference: header and data in one heap
 * allocation, or (large) anonymous pages that stay unbacked until written. */
static tl_storage *heap_storage_new(size_t nbytes) {
    if (nbytes >= OWN_PAGES_BYTES) {
        tl_storage *st = malloc(sizeof *st);
        void *pages = st ? mmap(NULL, page_round(nbytes), PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
        if (pages == MAP_FAILED) {
            free(st);
            return tl_fail("out of memory: cannot allocate %zu bytes for an owned tensor",
                           nbytes);
        }
        *st = (tl_storage){ pages, nbytes, TL_STORAGE_PAGES, false, false, 1, NULL, NULL };
        atomic_fetch_add(&owned_bytes, nbytes);
        return st;
    }
    void *mem = NULL;
    if (posix_memalign(&mem, ALIGN, HEADER(tl_storage) + nbytes) != 0)
        return tl_fail("out of memory: cannot allocate %zu bytes for an owned tensor", nbytes);
    tl_storage *st = mem;
    *st = (tl_storage){ (char *)mem + HEADER(tl_storage), nbytes, TL_STORAGE_HEAP, false, false,
                        1, NULL, NULL };
    memset(st->data, 0, nbytes);
    atomic_fetch_add(&owned_bytes, nbytes);
    return st;
}

static void storage_release(tl_storage *st) {
    if (!st || --st->refs > 0) return;
    free(st->fused);
    if (st->kind == TL_STORAGE_HEAP || st->kind == TL_STORAGE_PAGES)
        atomic_fetch_sub(&owned_bytes, st->nbytes);
    if (st->kind == TL_STORAGE_PAGES) munmap(st->data, page_round(st->nbytes));
    tl_storage *base = st->base;
    free(st);   /* heap: header and data; pages and external: the header only */
    storage_release(base);
}

void tl_storage_release(tl_storage *st) { storage_release(st); }

enum { HUGE_PAGE = 2 << 20 };

tl_storage *tl_storage_new_huge(size_t nbytes) {
    size_t len = page_round(nbytes);
    if (nbytes == 0 || len < nbytes || len > SIZE_MAX - HUGE_PAGE)
        return tl_fail("tl_storage_new_huge: cannot allocate %zu bytes", nbytes);
    tl_storage *st = malloc(sizeof *st);
    char *raw = st ? mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
    if (raw == MAP_FAILED) {
        free(st);
        return tl_fail("out of memory: cannot allocate %zu bytes for packed weights", nbytes);
    }
    /* Keep the 2 MiB-aligned part of the mapping (release unmaps len bytes). */
    char *at = (char *)(((uintptr_t)raw + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE);
    if (at > raw) munmap(raw, (size_t)(at - raw));
    if (raw + len + HUGE_PAGE > at + len) munmap(at + len, (size_t)(raw + HUGE_PAGE - at));
#ifdef MADV_HUGEPAGE
    madvise(at, len, MADV_HUGEPAGE);
#endif
    *st = (tl_storage){ at, nbytes, TL_STORAGE_PAGES, false, false, 1, NULL, NULL };
    atomic_fetch_add(&owned_bytes, nbytes);
    return st;
}

tl_storage *tl_storage_new_within(tl_storage *base, void *data, size_t nbytes, bool readonly) {
    tl_storage *st = malloc(sizeof *st);
    if (!st) return tl_fail("out of memory: cannot make a storage header");
    *st = (tl_storage){ data, nbytes, TL_STORAGE_EXTERNAL, readonly, false, 0, NULL, base };
    base->refs++;
    return st;
}

static scope *storage_home(const tl_storage *st) {
    return st->kind == TL_STORAGE_ARENA ? ((const arena_storage *)st)->home : NULL;
}

/* Checks a shape and sets t's shape and C-order strides; bytes gets the
 * storage size. */
static bool set_shape(tl_tensor *t, tl_dtype dt, int ndim, const int64_t *shape, size_t *bytes) {
    if (tl_dtype_size(dt) == 0) return tl_fail("tensor: unknown dtype %d", (int)dt), false;
    if (ndim < 0 || ndim > TL_MAX_DIMS)
        return tl_fail("tensor: rank %d is out of range (0 to TL_MAX_DIMS = %d)", ndim,
                       TL_MAX_DIMS), false;
    if (ndim > 0 && !shape) return tl_fail("tensor: rank %d but the shape is NULL", ndim), false;
    int64_t n = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        if (shape[i] < 0)
            return tl_fail("tensor: size %lld at axis %d is negative", (long long)shape[i], i),
                   false;
        t->shape[i] = shape[i];
        t->strides[i] = n;
        if (shape[i] > 0 && n > INT64_MAX / 8 / shape[i])
            return tl_fail("tensor: shape at axis %d makes the tensor too large", i), false;
        n *= shape[i];
    }
    t->dtype = dt;
    t->ndim = ndim;
    t->offset = 0;
    *bytes = (size_t)n * tl_dtype_size(dt);
    return true;
}

static tl_tensor *new_in(scope *s, tl_dtype dt, int ndim, const int64_t *shape) {
    tl_tensor probe = { 0 };
    size_t bytes;
    if (!set_shape(&probe, dt, ndim, shape, &bytes)) return NULL;
    tl_storage *st = s ? arena_storage_new(s, bytes) : heap_storage_new(bytes);
    if (!st) return NULL;
    tl_tensor *t = new_header(s);
    if (!t) {
        if (!s) storage_release(st);
        return NULL;
    }
    bool owned = t->owned;
    *t = probe;
    t->owned = owned;
    t->storage = st;
    return t;
}

tl_tensor *tl_new(tl_dtype dt, int ndim, const int64_t *shape) {
    return new_in(current(), dt, ndim, shape);
}

tl_tensor *tl_new_f32(int ndim, const int64_t *shape) { return tl_new(TL_F32, ndim, shape); }

tl_tensor *tl_new_beside(const tl_tensor *home, tl_dtype dt, int ndim, const int64_t *shape) {
    scope *s = home_of(home);
    tl_tensor *t = new_in(s, dt, ndim, shape);
    if (t && s) memset(t->storage->data, 0, t->storage->nbytes);
    return t;
}

tl_tensor *tl_view_of(const tl_tensor *t) {
    if (!t) return tl_propagate("view: input is NULL");
    tl_tensor *v = new_header(current());
    if (!v) return NULL;
    v->dtype = t->dtype;
    v->ndim = t->ndim;
    memcpy(v->shape, t->shape, sizeof v->shape);
    memcpy(v->strides, t->strides, sizeof v->strides);
    v->offset = t->offset;
    v->storage = t->storage;
    return v;
}

/* ---- owned tensors ------------------------------------------------------ */

tl_tensor *tl_tensor_new_owned(tl_dtype dt, int ndim, const int64_t *shape) {
    return new_in(NULL, dt, ndim, shape);
}

static tl_tensor *wrap(const char *fn, const void *data, tl_dtype dt, int ndim,
                       const int64_t *shape, bool file_backed) {
    tl_tensor probe = { 0 };
    size_t bytes;
    if (!set_shape(&probe, dt, ndim, shape, &bytes)) return NULL;
    if (!data && bytes > 0) return tl_fail("%s: data is NULL", fn);
    tl_storage *st = malloc(sizeof *st);
    tl_tensor *t = st ? new_header(NULL) : NULL;
    if (!t) {
        free(st);
        return tl_fail("out of memory: cannot wrap external data");
    }
    *st = (tl_storage){ (void *)data, bytes, TL_STORAGE_EXTERNAL, true, file_backed, 1, NULL,
                        NULL };
    *t = probe;
    t->owned = true;
    t->storage = st;
    return t;
}

tl_tensor *tl_tensor_wrap_external(const void *data, tl_dtype dt, int ndim, const int64_t *shape) {
    return wrap("tl_tensor_wrap_external", data, dt, ndim, shape, false);
}

tl_tensor *tl_tensor_wrap_mapped(const void *data, tl_dtype dt, int ndim, const int64_t *shape) {
    return wrap("tl_tensor_wrap_mapped", data, dt, ndim, shape, true);
}

void tl_tensor_free(tl_tensor *t) {
    if (!t) return;
    if (!t->owned) {
        tl_fail("tl_tensor_free: the tensor belongs to a scope (tl_scope_pop frees it); "
                "only tensors from tl_tensor_new_owned are freed by hand");
        return;
    }
    if (t->grad && t->grad->owned) tl_tensor_free(t->grad);
    storage_release(t->storage);
    free(t);
}

void tl_tensor_repoint(tl_tensor *t, tl_storage *s, int64_t offset) {
    s->refs++;
    storage_release(t->storage);
    t->storage = s;
    t->offset = offset;
    int64_t stride = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        t->strides[d] = stride;
        stride *= t->shape[d];
    }
}

void tl_drop_file_pages(const void *data, size_t nbytes) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t begin = ((uintptr_t)data + page - 1) / page * page;
    uintptr_t end = ((uintptr_t)data + nbytes) / page * page;
    if (end > begin) madvise((void *)begin, end - begin, MADV_DONTNEED);
}

/* ---- scopes ------------------------------------------------------------ */

int tl_scope_push(void) {
    scope *parent = current();
    scope *s = calloc(1, sizeof *s);
    if (!s) {
        return tl_fail_status("out of memory: cannot open a scope");
    }
    s->parent = parent;
    s->depth = parent->depth + 1;
    top = s;
    return s->depth;
}

int tl_scope_pop(void) {
    scope *s = current();
    if (!s->parent) {
        return tl_fail_status("tl_scope_pop: no scope is open (each tl_scope_pop needs a "
                              "tl_scope_push)");
    }
    free_contents(s);
    top = s->parent;
    free(s);
    /* After a large scope (a prefill's activations), hand the freed memory
     * back to the system: glibc keeps freed heap memory for reuse, and raises
     * its mmap threshold after each large free, so the resident size would
     * otherwise stay at the largest scope's peak for good. */
    if (freed_since_trim >= TRIM_BYTES) {
        malloc_trim(0);
        freed_since_trim = 0;
    }
    return 0;
}

void tl_shutdown(void) {
    while (current()->parent) tl_scope_pop();
    free_contents(&bottom);
    free_spare_blocks();
    top = NULL;
}

/* Copies t's elements into fresh contiguous storage in scope s: one memcpy
 * for a contiguous t (a layer's kept output: element by element, keeping a
 * prefill's [128, 576] hidden state took 0.45 ms), else row by row when the
 * last axis is dense, else element by element. */
static bool move_storage(tl_tensor *t, scope *s) {
    size_t es = tl_dtype_size(t->dtype);
    int64_t n = tl_numel(t);
    tl_storage *st = arena_storage_new(s, (size_t)n * es);
    if (!st) return false;
    const char *src = t->storage->data;
    char *dst = st->data;
    int64_t dense[TL_MAX_DIMS], stride = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        dense[d] = stride;
        stride *= t->shape[d];
    }
    if (n > 0 && tl_is_contiguous(t)) {
        memcpy(dst, src + (size_t)t->offset * es, (size_t)n * es);
    } else if (n > 0 && t->ndim > 0 && t->strides[t->ndim - 1] == 1) {
        tl_copy_row_by_row(t->ndim, t->shape, src, es, t->strides, t->offset, dst, es, dense, 0,
                           NULL, tl_num_threads());
    } else {
        tl_iter it;
        tl_iter_init(&it, t->ndim, t->shape, t->strides, t->offset);
        for (int64_t i = 0; i < n; i++, tl_iter_next(&it))
            memcpy(dst + (size_t)i * es, src + (size_t)it.offset * es, es);
    }
    for (int d = 0; d < t->ndim; d++) t->strides[d] = dense[d];
    t->offset = 0;
    t->storage = st;
    return true;
}

/* When t is the whole of an arena storage that has a block of its own (a
 * request above BIG_REQUEST: a prefill layer's [128, 576] output) and no
 * tensor left in `from` views it, that block moves from `from` to `to`
 * whole: the same as a copy to every observer, without the copy or fresh
 * pages for it (keeping 30 such outputs was a sixth of a 2-thread prefill's
 * calling thread, most of it faulting in the copies' pages). */
static bool adopt_own_block(tl_tensor *t, scope *from, scope *to) {
    tl_storage *st = t->storage;
    size_t bytes = (size_t)tl_numel(t) * tl_dtype_size(t->dtype);
    if (t->offset != 0 || bytes != st->nbytes || bytes <= (size_t)BIG_REQUEST ||
        !tl_is_contiguous(t))
        return false;
    for (const box *b = from->tensors; b; b = b->next)   /* t is already out of the list */
        if (b->t.storage == st) return false;
    char *start = (char *)st;   /* the arena_storage, at the start of its block's data */
    size_t used = (HEADER(arena_storage) + st->nbytes + ALIGN - 1) / ALIGN * ALIGN;
    for (block **at = &from->blocks; *at; at = &(*at)->next) {
        block *b = *at;
        if ((char *)b + HEADER(block) != start) continue;
        if (b->used != used) return false;   /* the block holds other tensors too */
        *at = b->next;
        if (to->blocks) {           /* behind the block `to` is filling */
            b->next = to->blocks->next;
            to->blocks->next = b;
        } else {
            b->next = NULL;
            to->blocks = b;
        }
        ((arena_storage *)start)->home = to;
        return true;
    }
    return false;
}

/* Moves t, and everything its autograd history needs that lives in `from`
 * (tensors, their storage, the nodes), into `to`. Storage is copied (or its
 * own block moved), so a kept tensor shares no memory that `from` frees. */
static bool move_graph(tl_tensor *t, scope *from, scope *to) {
    size_t cap = 64, n = 0;
    tl_tensor **stack = malloc(cap * sizeof *stack);
    if (!stack) return tl_fail("out of memory: tl_scope_keep"), false;
    stack[n++] = t;
    bool ok = true;
    while (ok && n > 0) {
        tl_tensor *x = stack[--n];
        if (!x || x->owned || home_of(x) != from) continue;
        unlink_box((box *)x);
        link_box((box *)x, to);
        if (storage_home(x->storage) == from && !adopt_own_block(x, from, to) &&
            !move_storage(x, to))
            ok = false;
        tl_node *node = x->grad_fn;
        tl_tensor *next[2 + 2 * TL_NODE_MAX_INPUTS];
        int k = 0;
        next[k++] = x->grad;
        if (ok && node) {
            tl_node *copy = arena_alloc(to, sizeof *copy);
            if (!copy) { ok = false; break; }
            *copy = *node;
            x->grad_fn = copy;
            for (int i = 0; i < node->n_inputs; i++) next[k++] = node->inputs[i];
            for (int i = 0; i < 4; i++) next[k++] = node->saved[i];
        }
        if (n + (size_t)k > cap) {
            tl_tensor **grown = realloc(stack, (cap = 2 * cap + (size_t)k) * sizeof *stack);
            if (!grown) { ok = false; tl_fail("out of memory: tl_scope_keep"); break; }
            stack = grown;
        }
        for (int i = 0; i < k; i++)
            if (next[i]) stack[n++] = next[i];
    }
    free(stack);
    return ok;
}

tl_tensor *tl_scope_keep(tl_tensor *t) {
    if (!t) return tl_propagate("tl_scope_keep: tensor is NULL");
    scope *s = current();
    if (!s->parent)
        return tl_fail("tl_scope_keep: no enclosing scope to keep the tensor in "
                       "(call it after tl_scope_push, before the matching tl_scope_pop)");
    if (t->owned || home_of(t) != s) return t;   /* it already outlives this scope */
    return move_graph(t, s, s->parent) ? t : NULL;
}
