/* internal.h: what the runtime's own files share. Not a contract: students
 * never include it. An op follows one pattern:
 *
 *   tl_tensor *tl_mul(tl_tensor *a, tl_tensor *b) {
 *       if (!tl_inputs_ok("mul", 2, a, b)) return NULL;     // NULL in, NULL out
 *       tl_tensor *af = tl_float_input("mul", a), ...;       // F32 view or copy
 *       ... compute out (tl_new_f32) ...
 *       tl_record(out, "mul", mul_backward, 2, (tl_tensor *[]){a, b});
 *       return out;
 *   }
 *
 * Files call downward only (tests/core/layers.sh checks it): error, bf16 <
 * shape, elements < scope < tensor < inputs, broadcast < the ops and autograd
 * (which call each other) < nn, safetensors < nn_layers, nn_load, checkpoint.
 *
 * A backward receives the output's gradient and writes one gradient per input
 * (NULL where the input needs none). It runs with recording off and may use
 * any op. A gradient may have the broadcast shape; the engine sums it down to
 * the input's shape (tl_sum_to_shape) before accumulating.
 */
#ifndef TINYLLM_CORE_INTERNAL_H
#define TINYLLM_CORE_INTERNAL_H

#include <stdarg.h>
#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"
#include "tinyllm/tensor.h"

/* Memory-bound work (element-wise ops, softmax, sums over the last axis,
 * concats, strided copies) is shared among threads from SHARE_MIN_ELEMENTS
 * elements of output, in blocks of about SHARE_BLOCK_ELEMENTS: below, waking
 * a thread on another core (1-1.5 us) costs more than it saves. One pair, so
 * one tuning moves every op alike. */
enum { SHARE_MIN_ELEMENTS = 1 << 16, SHARE_BLOCK_ELEMENTS = 1 << 12 };

/* The element-wise loops (ops_unary.c, ops_binary.c, softmax's and the last
 * axis sums' rows) are compiled for AVX-512 and AVX2 besides the baseline
 * (SSE2), and the loader picks one by the CPU (gcc's target_clones): the
 * same results bit for bit, since -std=c11 contracts nothing into FMA and
 * sums go through tl_sum_f32_fixed, at 16 or 8 lanes instead of 4 (a
 * prefill's silu, whose division ran 4 lanes at a time, and the others). */
#if defined(__x86_64__) && defined(__linux__)
#define ELEMENTWISE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ELEMENTWISE_CLONES
#endif

/* sum(x[0..n)) in double, in an order that does not depend on the vector
 * width a clone is compiled for: SUM_LANES partial sums (lane k takes x[k],
 * x[k + SUM_LANES], ...), then added in a fixed tree. A reduction the
 * compiler vectorises (omp simd) sums in the width's order instead, and on
 * values that cancel two CPUs' results then differ by far more than a bit. */
enum { SUM_LANES = 16 };

static inline double tl_sum_f32_fixed(const float *x, int64_t n) {
    double lane[SUM_LANES] = {0};
    int64_t j = 0;
    for (; j + SUM_LANES <= n; j += SUM_LANES)
        for (int k = 0; k < SUM_LANES; k++) lane[k] += x[j + k];
    for (int k = 0; j + k < n; k++) lane[k] += x[j + k];
    for (int width = SUM_LANES / 2; width > 0; width /= 2)
        for (int k = 0; k < width; k++) lane[k] += lane[k + width];
    return lane[0];
}

/* ARENA: carved from a scope's block, freed by the scope. The others belong
 * to owned tensors and are counted (refs): several owned tensors may share one
 * (a fused weight and its parts; a parameter adopting a checkpoint's tensor),
 * and the last tl_tensor_free frees it. HEAP: header and data in one
 * allocation. PAGES: data in anonymous pages of their own (large owned
 * tensors: zero and not resident until written). EXTERNAL: data that someone
 * else keeps alive; file_backed when it maps a file read-only, so that pages
 * no longer needed may be dropped (tl_drop_file_pages). */
enum tl_storage_kind { TL_STORAGE_ARENA, TL_STORAGE_HEAP, TL_STORAGE_PAGES, TL_STORAGE_EXTERNAL };

/* A weight tl_linear_fuse made (nn.h) holds its parts' rows back to back in
 * one storage; the storage keeps where they are, so that under no_grad
 * tl_linear on one part computes every part at once (one pass over the
 * fused rows: one thread-pool job instead of one per part) and hands each
 * sibling its columns when it asks with the same input (ops_linalg.c). */
enum { TL_FUSED_MAX_PARTS = 8 };
typedef struct {
    uint64_t id;                               /* unique in the process, never reused */
    int64_t offset, rows, cols;                /* the fused [rows, cols] */
    int n_parts;
    int64_t part_row[TL_FUSED_MAX_PARTS + 1];  /* part k: rows [part_row[k], part_row[k+1]) */
} tl_fused_rows;

struct tl_storage {
    void *data;
    size_t nbytes;
    enum tl_storage_kind kind;
    bool readonly;                 /* external memory (an mmap): writes refused */
    bool file_backed;              /* external memory mapping a file */
    int refs;                      /* owned tensors using it (not ARENA) */
    tl_fused_rows *fused;          /* set by tl_linear_fuse; freed with the storage */
    tl_storage *base;              /* data lies inside base's, held by a reference */
};

#define TL_NODE_MAX_INPUTS 4

typedef int (*tl_backward_fn)(tl_node *node, tl_tensor *grad_out, tl_tensor **grad_in);

struct tl_node {
    const char *op;
    tl_backward_fn backward;
    int n_inputs;
    tl_tensor *inputs[TL_NODE_MAX_INPUTS];
    tl_tensor *out;                /* the tensor this node made */
    tl_tensor *saved[4];           /* whatever the backward needs */
    double f[4];
    int64_t i[TL_MAX_DIMS + 2];
};

/* ---- scope.c: storage and headers ------------------------------------- */

/* Allocation in the current scope (arena). Never fails silently: NULL + error. */
void *tl_scope_alloc(size_t bytes);
/* A new contiguous tensor in the current scope; data uninitialised. */
tl_tensor *tl_new(tl_dtype dt, int ndim, const int64_t *shape);
tl_tensor *tl_new_f32(int ndim, const int64_t *shape);
/* A view struct sharing t's storage (in the current scope), shape/strides to fill. */
tl_tensor *tl_view_of(const tl_tensor *t);
/* Points the owned tensor t at storage s from element offset on (contiguous
 * strides for t's shape and dtype), taking a reference to s and releasing
 * t's old storage. For adopting and fusing parameters in place. */
void tl_tensor_repoint(tl_tensor *t, tl_storage *s, int64_t offset);
/* An owned read-only tensor over a read-only file mapping (safetensors). */
tl_tensor *tl_tensor_wrap_mapped(const void *data, tl_dtype dt, int ndim, const int64_t *shape);
/* Tells the kernel that the pages wholly inside [data, data + nbytes) of a
 * read-only file mapping are no longer needed, so they stop counting as
 * resident; reading them again faults them back in from the file. */
void tl_drop_file_pages(const void *data, size_t nbytes);
/* Owned storage of nbytes (> 0) in anonymous pages of its own, aligned to 2 MiB
 * and marked for transparent huge pages (a hint: 4 KiB pages where the kernel
 * has none); zero, one reference. For weights packed after a load. */
tl_storage *tl_storage_new_huge(size_t nbytes);
/* Storage over [data, data + nbytes), which lies inside base's data: holds a
 * reference to base until it is released itself; no reference of its own yet
 * (refs 0: each tensor pointed at it takes one). */
tl_storage *tl_storage_new_within(tl_storage *base, void *data, size_t nbytes, bool readonly);
/* Drops one reference to st (NULL: nothing); the last frees it. */
void tl_storage_release(tl_storage *st);

/* ---- error.c --------------------------------------------------------- */

/* NULL inputs (tensor.h, rule 2): keeps the message of the call that made the
 * NULL, or sets "<op>: input k is NULL" when none is set. */
bool tl_inputs_ok(const char *op, int n, ...);
/* ---- inputs.c --------------------------------------------------------- */

/* t as contiguous F32 (t itself when it already is); error unless float. */
tl_tensor *tl_float_input(const char *op, tl_tensor *t);
/* t as contiguous I64 (for ids); error unless I32 or I64. */
tl_tensor *tl_index_input(const char *op, tl_tensor *t);

/* ---- broadcast.c ------------------------------------------------------ */

/* The broadcast shape of a and b, or -1 with "<op>: shapes [..] and [..] do
 * not broadcast at axis k". */
int tl_broadcast_shape(const char *op, const tl_tensor *a, const tl_tensor *b,
                       int *ndim, int64_t *shape);
/* Strides that read t as if it had the broadcast shape (0 on stretched axes). */
void tl_broadcast_strides(const tl_tensor *t, int ndim, const int64_t *shape, int64_t *strides);
/* Sums g down to shape (undoing broadcasting). */
tl_tensor *tl_sum_to_shape(tl_tensor *g, int ndim, const int64_t *shape);

/* ---- autograd.c ------------------------------------------------------- */

/* Records a node when recording is on and some input requires a gradient;
 * marks out as requiring one. Returns the node (to fill saved/f/i) or NULL
 * when nothing was recorded. */
tl_node *tl_record(tl_tensor *out, const char *op, tl_backward_fn backward, int n,
                   tl_tensor *const *inputs);

/* ---- elements.c ------------------------------------------------------- */

/* Walks every element offset of a strided shape in C order. */
typedef struct {
    int ndim;
    int64_t shape[TL_MAX_DIMS];
    int64_t index[TL_MAX_DIMS];
    int64_t offset;
    const int64_t *strides;
} tl_iter;
void tl_iter_init(tl_iter *it, int ndim, const int64_t *shape, const int64_t *strides,
                  int64_t offset);
void tl_iter_next(tl_iter *it);   /* advance offset to the next element */

/* Copies each row (the last axis, of `row` elements, dense in both) of a
 * strided array into another of the same shape, one call of copy per row
 * (memmove when copy is NULL; else a conversion between dtypes): the walk
 * tl_copy_into and tl_scope_keep share. Offsets and strides in elements. A
 * large copy shares its rows among up to `threads` threads (the caller's
 * tl_num_threads(): this layer cannot ask), each row copied alike. */
typedef void tl_row_copy(const void *from, void *to, size_t n);
void tl_copy_row_by_row(int ndim, const int64_t *shape, const char *src, size_t src_elem,
                        const int64_t *src_strides, int64_t src_offset, char *dst,
                        size_t dst_elem, const int64_t *dst_strides, int64_t dst_offset,
                        tl_row_copy *copy, int threads);

/* Reading any dtype as double, writing F32. */
double tl_load_as_double(const void *base, tl_dtype dt, int64_t offset);
/* Writing a double into any dtype (BF16 rounded to nearest even, BOOL as
 * value != 0, integers truncated toward zero). */
void tl_store_double(void *base, tl_dtype dt, int64_t offset, double value);

/* ---- scope.c ---------------------------------------------------------- */

/* A new zero-filled contiguous tensor that lives as long as home: owned when
 * home is owned, else in home's scope (a leaf's gradient lives beside it). */
tl_tensor *tl_new_beside(const tl_tensor *home, tl_dtype dt, int ndim, const int64_t *shape);

#endif
