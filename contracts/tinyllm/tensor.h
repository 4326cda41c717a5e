/* tinyllm/tensor.h: the tensor, its memory, and the error model (L0.1).
 *
 * A tensor is a typed, strided view of a storage. Views (reshape, transpose,
 * narrow, expand) share the storage of the tensor they come from.
 *
 * Memory. Every tensor an op returns belongs to the current scope. Scopes nest:
 * tl_scope_push() opens one, tl_scope_pop() frees every tensor created since
 * the matching push. Student code therefore never frees a tensor. A bottom
 * scope always exists and lives until the process exits (or tl_shutdown()).
 * Long-lived tensors (parameters, caches) are made with tl_tensor_new_owned()
 * and freed with tl_tensor_free(); a view of one must not outlive it. Owned
 * tensors may share one storage (nn.h: a fused weight and its parts, a
 * parameter and the checkpoint tensor it adopted): the storage is counted
 * and goes with the last owned tensor that uses it.
 *
 * Errors. A call that fails returns NULL (an int function -1, a double one
 * NaN) and sets a thread-local message, readable with tl_error(). Two rules
 * decide which message tl_error() holds after a failure:
 *   1. A call whose own inputs are valid and that fails sets its own message,
 *      replacing any earlier one. So tl_error() after a failure describes
 *      that failure, even when an earlier failure was handled and never
 *      cleared.
 *   2. A call given a NULL input (a tensor, module, checkpoint: what an
 *      earlier call returns) keeps the message already set, because that
 *      NULL is the result of the call that failed, whose message is the
 *      cause. When no message is set it sets one naming the argument
 *      ("mul: input 2 is NULL").
 * So a chain of ops can be checked once, at the end: the message names the
 * op that failed first. Shape errors name the op, the shapes and the axis.
 * A successful call leaves the message alone: read tl_error() only after a
 * call has failed, as errno.
 */
#ifndef TINYLLM_TENSOR_H
#define TINYLLM_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TL_MAX_DIMS 6

typedef enum { TL_F32, TL_BF16, TL_I32, TL_I64, TL_BOOL } tl_dtype;

typedef struct tl_storage tl_storage;
typedef struct tl_node tl_node;

/* Fields are read-only for callers: change a tensor only through the API. */
typedef struct tl_tensor {
    tl_dtype dtype;
    int ndim;                      /* 0 (a scalar) to TL_MAX_DIMS */
    int64_t shape[TL_MAX_DIMS];
    int64_t strides[TL_MAX_DIMS];  /* in elements, not bytes */
    int64_t offset;                /* in elements from the start of storage */
    tl_storage *storage;
    bool requires_grad;            /* a leaf that collects .grad, or a result of one */
    struct tl_tensor *grad;        /* the accumulated gradient after tl_backward */
    tl_node *grad_fn;              /* the op that made it, when recorded */
    bool owned;                    /* made by tl_tensor_new_owned: freed by tl_tensor_free */
} tl_tensor;

/* ---- errors ---------------------------------------------------------- */

/* The message of the last failure on this thread (rules above), or NULL when
 * none happened since tl_clear_error(). Valid until the next failure. */
const char *tl_error(void);
/* Forgets the message. Not needed between failures (rule 1); a caller that
 * recovers from one may clear it so that a NULL it later passes by mistake
 * (not made by a failing call) gets a message of its own (rule 2). */
void tl_clear_error(void);

/* The one idiom per return type, for a failure of the call itself (rule 1):
 *     return tl_fail("rmsnorm_forward: x has shape %s but ...", ...);   NULL
 *     return tl_fail_status("rmsnorm_init: dim is %lld; ...", dim);     -1
 * Both set the message (printf-style, at most 1023 bytes, cut beyond), always,
 * replacing an earlier one. An argument may be tl_error() itself, to add
 * context to a lower failure: tl_fail("load: copying %s: %s", name, tl_error()). */
void *tl_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int tl_fail_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* For a NULL input (rule 2): keep the message already set, else set this one.
 *     if (!x) return tl_propagate("rmsnorm_forward: x is NULL");          NULL
 *     if (!m) return tl_propagate_status("tl_module_load: module is NULL"); -1 */
void *tl_propagate(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int tl_propagate_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The same as tl_fail without a result (sets the message); kept so that code
 * written before tl_fail_status builds. New code uses the idioms above. */
void tl_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- scopes ---------------------------------------------------------- */

/* Opens a scope: every tensor made until the matching tl_scope_pop lives in
 * it. Returns its depth (1 for the first push), or -1 when memory runs out
 * ("out of memory: cannot open a scope"). */
int tl_scope_push(void);
/* Frees every tensor (header, storage, autograd node) made in the innermost
 * scope; pointers to them become invalid. Returns 0, or -1 when only the
 * bottom scope is open ("tl_scope_pop: no scope is open (each tl_scope_pop
 * needs a tl_scope_push)"). */
int tl_scope_pop(void);
/* Moves t (and its storage) out of the current scope into the enclosing one,
 * so a function can open a scope for its temporaries and return its result.
 * The autograd history t needs moves with it, so gradients still flow through
 * a kept tensor. Storage is copied (dense), so views of t left behind stop
 * sharing it; a large storage that t covers whole and no view left behind
 * shares moves instead, block and all, with no copy. An owned tensor, or one
 * already in an outer scope, is returned as it is. Returns t, or NULL: t NULL
 * (its cause kept, else "tl_scope_keep: tensor is NULL"); no enclosing scope
 * ("tl_scope_keep: no enclosing scope to keep the tensor in"); memory ("out of
 * memory: tl_scope_keep"). */
tl_tensor *tl_scope_keep(tl_tensor *t);
/* Frees the bottom scope and every thread-local buffer: for leak checkers. */
void tl_shutdown(void);
/* Bytes of arena this thread holds: its scopes' blocks, and the popped ones
 * kept for reuse (at most 16 MiB). Flat over a decode loop that pushes and
 * pops a scope per token. Never fails. */
size_t tl_scope_bytes(void);
/* Bytes of owned tensor storage alive in the process (tl_tensor_new_owned and
 * the copies the runtime makes; not memory merely wrapped, such as a mapped
 * checkpoint). Counted as allocated: a large zero tensor never written is
 * not resident yet. Never fails. */
size_t tl_owned_bytes(void);

/* ---- dtypes and shapes (queries; none allocates) ---------------------- */

size_t tl_dtype_size(tl_dtype dt);          /* bytes per element; 0 for no dtype */
const char *tl_dtype_name(tl_dtype dt);     /* "F32", "BF16", "I32", "I64", "BOOL" */
bool tl_dtype_is_float(tl_dtype dt);        /* F32 or BF16 */

int64_t tl_numel(const tl_tensor *t);       /* product of the shape; 0 for NULL */
/* The size of axis `axis`; a negative axis counts from the end. Returns -1
 * when t is NULL (its cause kept, else "tl_dim: tensor is NULL") or the axis
 * is out of range ("tl_dim: axis 2 is out of range for shape [2, 3] (rank
 * 2)"). */
int64_t tl_dim(const tl_tensor *t, int axis);
/* True when the elements lie in C order without gaps (the stride of a size-1
 * axis is ignored; an empty tensor is contiguous); false for NULL. */
bool tl_is_contiguous(const tl_tensor *t);
bool tl_same_shape(const tl_tensor *a, const tl_tensor *b);   /* false if either is NULL */
/* Writes "[2, 5, 16]" ("[]" for a scalar, "(null)" for NULL) into buf, cut to
 * size and always NUL-terminated; returns buf. */
char *tl_shape_str(const tl_tensor *t, char *buf, size_t size);
/* Normalises a possibly negative axis for rank ndim: 0..ndim-1, or -1 when
 * out of range (no error is set: the caller names its own op). */
int tl_axis(int axis, int ndim);

/* ---- creation (in the current scope) --------------------------------- */
/* A new contiguous tensor of dtype dt and the given shape (ndim 0..6, shape
 * may be NULL for ndim 0), in the current scope. tl_empty leaves the values
 * undefined; tl_full stores value (rounded to dt: BF16 nearest-even, BOOL
 * value != 0, integers truncated toward zero and clamped to the range).
 * Errors (NULL, "tensor: ..."): an unknown dtype ("tensor: unknown dtype
 * 9"); ndim outside 0..6 ("tensor: rank 7 is out of range (0 to TL_MAX_DIMS =
 * 6)"); shape NULL for ndim > 0 ("tensor: rank 2 but the shape is NULL"); a
 * negative size ("tensor: size -1 at axis 0 is negative"); more bytes than
 * fit ("tensor: shape at axis 0 makes the tensor too large"); memory ("out of
 * memory: cannot allocate N bytes for a tensor"). */
tl_tensor *tl_empty(tl_dtype dt, int ndim, const int64_t *shape);
tl_tensor *tl_zeros(tl_dtype dt, int ndim, const int64_t *shape);
tl_tensor *tl_ones(tl_dtype dt, int ndim, const int64_t *shape);
tl_tensor *tl_full(tl_dtype dt, int ndim, const int64_t *shape, double value);
tl_tensor *tl_scalar(double value);                 /* F32, rank 0 */
/* Copies the product-of-shape values from data (F32, or I64). Errors: those
 * of creation, and data NULL for a non-empty shape ("tl_from_f32: data is
 * NULL", "tl_from_i64: ..."). */
tl_tensor *tl_from_f32(const float *data, int ndim, const int64_t *shape);
tl_tensor *tl_from_i64(const int64_t *data, int ndim, const int64_t *shape);
/* I64 [stop - start]: start, start + 1, ..., stop - 1. Errors: stop below
 * start ("tl_arange: stop 1 is below start 3"). */
tl_tensor *tl_arange(int64_t start, int64_t stop);
/* Zeros or ones of t's dtype and shape. Errors: t NULL (its cause kept, else
 * "tl_zeros_like: input 1 is NULL"); those of creation. */
tl_tensor *tl_zeros_like(const tl_tensor *t);
tl_tensor *tl_ones_like(const tl_tensor *t);
/* A new contiguous copy of t (same dtype), recorded by autograd. Errors: t
 * NULL (its cause kept, else "clone: input 1 is NULL"); memory. */
tl_tensor *tl_clone(tl_tensor *t);

/* ---- owned tensors (outside every scope) ------------------------------ */
/* A long-lived zero-filled tensor (a parameter, a KV cache): heap storage
 * that no scope frees; the caller owns it and frees it with tl_tensor_free.
 * Errors: those of creation ("out of memory: cannot allocate N bytes for an
 * owned tensor"). */
tl_tensor *tl_tensor_new_owned(tl_dtype dt, int ndim, const int64_t *shape);
/* Frees an owned tensor, its storage and its .grad; NULL is a no-op. A
 * tensor of a scope is left alone, with an error ("tl_tensor_free: the tensor
 * belongs to a scope (tl_scope_pop frees it); only tensors from
 * tl_tensor_new_owned are freed by hand"). */
void tl_tensor_free(tl_tensor *t);
/* An owned contiguous copy of t's values (same dtype, no autograd history).
 * Errors: t NULL (its cause kept, else "tl_tensor_copy_owned: input 1 is
 * NULL"); memory. */
tl_tensor *tl_tensor_copy_owned(const tl_tensor *t);
/* A read-only tensor over memory someone else keeps alive (an mmap): the
 * tensor is owned (tl_tensor_free frees the header, never the memory), and
 * the memory must outlive it. Writes through it fail (tl_set, tl_copy_into).
 * Errors: those of creation; data NULL for a non-empty shape
 * ("tl_tensor_wrap_external: data is NULL"). */
tl_tensor *tl_tensor_wrap_external(const void *data, tl_dtype dt, int ndim,
                                   const int64_t *shape);

/* ---- element access -------------------------------------------------- */

/* Pointer to element [0, ..., 0] (honours the offset; walk with strides).
 * NULL when t is NULL (its cause kept, else "tl_data: tensor is NULL"). */
void *tl_data(const tl_tensor *t);
/* t's data as float *, when t is F32 and contiguous. NULL: t NULL (cause
 * kept, else "tl_f32: tensor is NULL"); another dtype ("tl_f32: tensor [3] is
 * I64, not F32 (convert it with tl_cast(t, TL_F32))"); a strided view
 * ("tl_f32: tensor [3, 2] is a strided view (make it dense with
 * tl_contiguous)"). */
float *tl_f32(const tl_tensor *t);
/* Element idx (t->ndim indices) as a double. NaN: t NULL (cause kept, else
 * "tl_get: tensor is NULL"); idx NULL for rank > 0 ("tl_get: index array is
 * NULL"); an index out of range ("tl_get: index 3 is out of range at axis 0
 * of shape [3]"). */
double tl_get(const tl_tensor *t, const int64_t *idx);
/* Element i in C order (any strides, any dtype) as a double. NaN: t NULL
 * (cause kept, else "tl_item_at: tensor is NULL"); i outside [0, numel)
 * ("tl_item_at: element 6 is out of range for shape [2, 3] (6 elements)"). */
double tl_item_at(const tl_tensor *t, int64_t i);
/* The value of a one-element tensor. NaN: t NULL (cause kept, else "tl_item:
 * tensor is NULL"); another count ("tl_item: tensor [2, 3] has 6 elements,
 * not one (use tl_item_at or tl_get)"). */
double tl_item(const tl_tensor *t);
/* Writes element idx (rounded to t's dtype as tl_full does). Returns 0, or
 * -1: the errors of tl_get (named "tl_set"); a read-only tensor ("tl_set:
 * tensor is read-only (it maps a file); copy it first with tl_clone or
 * tl_tensor_copy_owned"). Not recorded by autograd. */
int tl_set(tl_tensor *t, const int64_t *idx, double value);
/* Copies src's values into dst, element by element in C order, casting to
 * dst's dtype (overlapping storage is safe only when identical). In place:
 * not recorded by autograd. Returns 0, or -1: either NULL (cause kept, else
 * "tl_copy_into: input 1 is NULL"); shapes that differ ("tl_copy_into:
 * destination [2, 3] and source [3, 2] differ in shape"); dst read-only
 * ("tl_copy_into: tensor is read-only ..."). */
int tl_copy_into(tl_tensor *dst, const tl_tensor *src);
/* Copies every element of t, in C order, into out as float (n = numel).
 * Returns 0, or -1: t NULL (cause kept, else "tl_to_f32_buffer: tensor is
 * NULL"); out NULL ("tl_to_f32_buffer: output buffer is NULL"); n other than
 * numel ("tl_to_f32_buffer: buffer holds 5 floats but tensor [2, 3] has 6
 * elements"). */
int tl_to_f32_buffer(const tl_tensor *t, float *out, int64_t n);

/* ---- views (no copy; recorded by autograd) ---------------------------- */
/* Each returns a new header in the current scope over t's storage (writes
 * through one show in the other; it must not outlive t), except where a copy
 * is said. Every one fails on a NULL t (its cause kept, else "<op>: input 1
 * is NULL", op being reshape, permute, ...). */

/* t with another shape of the same element count; one size may be -1
 * (inferred). A view when t is contiguous, else a contiguous copy.
 * Errors: ndim outside 0..6 or shape NULL ("reshape: rank 7 is invalid (0 to
 * 6, with a shape array)"); a size below -1, or a second -1 ("reshape: size
 * -2 at axis 0 is invalid (one axis may be -1)"); another count ("reshape:
 * cannot view [5, 2, 3] (30 elements) as [7, -1]"). */
tl_tensor *tl_reshape(tl_tensor *t, int ndim, const int64_t *shape);
/* Axis i of the result is axis axes[i] of t (t->ndim entries, each axis
 * once). Errors: axes NULL ("permute: axes is NULL"); an axis out of range or
 * repeated ("permute: axis 1 (position 1) is out of range or repeated for
 * shape [2, 3]; give each axis 0..1 once"). */
tl_tensor *tl_permute(tl_tensor *t, const int *axes);
/* Swaps two axes. Errors: an axis out of range ("transpose: axes 0 and 2: 2
 * is out of range for shape [2, 3]"). */
tl_tensor *tl_transpose(tl_tensor *t, int axis0, int axis1);
/* Elements start .. start+length-1 of axis (length may be 0). Errors: axis
 * out of range ("narrow: axis 2 is out of range for shape [2, 3]"); a range
 * outside the axis ("narrow: elements 1..5 of axis 0 are out of range for
 * shape [2, 3]"). */
tl_tensor *tl_narrow(tl_tensor *t, int axis, int64_t start, int64_t length);
/* Stretches size-1 axes to shape (stride 0: no memory), prepending axes as
 * needed; -1 keeps an existing size. Errors: a smaller rank, or above 6
 * ("expand: cannot expand [2, 3] to rank 1 (the rank may only grow, up to
 * 6)"); an axis of size other than 1 asked to change ("expand: cannot expand
 * [2, 3] to [2, 4]: axis 1 has size 3, and only size-1 axes stretch"). */
tl_tensor *tl_expand(tl_tensor *t, int ndim, const int64_t *shape);
/* Inserts an axis of size 1 before position axis (-1: at the end). Errors:
 * axis outside -ndim-1..ndim, or rank 6 already ("unsqueeze: cannot insert
 * axis 3 into shape [2]"). */
tl_tensor *tl_unsqueeze(tl_tensor *t, int axis);
/* Removes axis, which must have size 1. Errors: out of range ("squeeze: axis
 * 2 is out of range for shape [2, 1]"); a size other than 1 ("squeeze: axis 0
 * of shape [2, 1] has size 2, not 1"). */
tl_tensor *tl_squeeze(tl_tensor *t, int axis);
/* t itself when contiguous, else a contiguous copy (recorded). Errors: only
 * a NULL t, and memory. */
tl_tensor *tl_contiguous(tl_tensor *t);
/* A contiguous copy in dtype dt, values converted as tl_full stores them
 * (BF16 round-to-nearest-even). Float-to-float casts are recorded (the
 * gradient passes through as F32). Errors: a NULL t ("cast: input 1 is
 * NULL"); an unknown dt ("tensor: unknown dtype 9"); memory. */
tl_tensor *tl_cast(tl_tensor *t, tl_dtype dt);

/* Convenience for literals: TL_SHAPE(2, 3) expands to "2, (int64_t[]){2, 3}". */
#define TL_NARGS_(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define TL_SHAPE(...) TL_NARGS_(__VA_ARGS__), (const int64_t[]){__VA_ARGS__}

#endif
