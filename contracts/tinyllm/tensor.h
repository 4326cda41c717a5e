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
 * and freed with tl_tensor_free(); a view of one must not outlive it.
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

/* Opens a scope; returns its depth (1 for the first push). */
int tl_scope_push(void);
/* Frees every tensor made in the innermost scope. Popping the bottom scope is
 * an error (returns -1). */
int tl_scope_pop(void);
/* Moves t (and its storage) out of the current scope into the enclosing one,
 * so a function can open a scope for its temporaries and return its result.
 * The autograd history t needs moves with it, so gradients still flow through
 * a kept tensor. Storage is copied (dense), so views of t left behind stop
 * sharing it. Returns t, or NULL when t is NULL or there is no enclosing scope. */
tl_tensor *tl_scope_keep(tl_tensor *t);
/* Frees the bottom scope and every thread-local buffer: for leak checkers. */
void tl_shutdown(void);

/* ---- dtypes and shapes ----------------------------------------------- */

size_t tl_dtype_size(tl_dtype dt);          /* bytes per element */
const char *tl_dtype_name(tl_dtype dt);     /* "F32", "BF16", "I32", "I64", "BOOL" */
bool tl_dtype_is_float(tl_dtype dt);

int64_t tl_numel(const tl_tensor *t);
/* The size of axis `axis`; a negative axis counts from the end. -1 (and an
 * error) when the axis is out of range. */
int64_t tl_dim(const tl_tensor *t, int axis);
bool tl_is_contiguous(const tl_tensor *t);
bool tl_same_shape(const tl_tensor *a, const tl_tensor *b);
/* Writes "[2, 5, 16]" into buf (always NUL-terminated); returns buf. */
char *tl_shape_str(const tl_tensor *t, char *buf, size_t size);
/* Normalises a possibly negative axis for rank ndim; -1 if out of range. */
int tl_axis(int axis, int ndim);

/* ---- creation (in the current scope) --------------------------------- */

tl_tensor *tl_empty(tl_dtype dt, int ndim, const int64_t *shape);
tl_tensor *tl_zeros(tl_dtype dt, int ndim, const int64_t *shape);
tl_tensor *tl_ones(tl_dtype dt, int ndim, const int64_t *shape);
tl_tensor *tl_full(tl_dtype dt, int ndim, const int64_t *shape, double value);
tl_tensor *tl_scalar(double value);                 /* F32, rank 0 */
/* Copies n values from data; n must equal the product of shape. */
tl_tensor *tl_from_f32(const float *data, int ndim, const int64_t *shape);
tl_tensor *tl_from_i64(const int64_t *data, int ndim, const int64_t *shape);
tl_tensor *tl_arange(int64_t start, int64_t stop);  /* I64 [stop - start] */
tl_tensor *tl_zeros_like(const tl_tensor *t);
tl_tensor *tl_ones_like(const tl_tensor *t);
/* A new contiguous copy with the same values (recorded by autograd). */
tl_tensor *tl_clone(tl_tensor *t);

/* Long-lived tensors: heap storage, zero-filled, never freed by a scope. */
tl_tensor *tl_tensor_new_owned(tl_dtype dt, int ndim, const int64_t *shape);
/* Frees an owned tensor, its storage and its .grad; NULL is a no-op. */
void tl_tensor_free(tl_tensor *t);
/* An owned copy of t's values (contiguous, no autograd history). */
tl_tensor *tl_tensor_copy_owned(const tl_tensor *t);

/* A read-only tensor over memory someone else keeps alive (an mmap). The
 * tensor itself is owned (free it with tl_tensor_free); the memory is not. */
tl_tensor *tl_tensor_wrap_external(const void *data, tl_dtype dt, int ndim,
                                   const int64_t *shape);

/* ---- element access -------------------------------------------------- */

/* Pointer to the first element (honours offset; use strides to walk). */
void *tl_data(const tl_tensor *t);
/* Contiguous F32 data or NULL (with an error) when t is not F32 contiguous. */
float *tl_f32(const tl_tensor *t);
/* Reads one element as a double; idx has t->ndim entries. */
double tl_get(const tl_tensor *t, const int64_t *idx);
/* Reads element i of the tensor in C order (any strides, any dtype). */
double tl_item_at(const tl_tensor *t, int64_t i);
/* The value of a one-element tensor. */
double tl_item(const tl_tensor *t);
/* Writes one element. Fails on a read-only (mmap) tensor. */
int tl_set(tl_tensor *t, const int64_t *idx, double value);
/* Copies src's values into dst (same shape; casts dtype). In place: not
 * recorded by autograd. Returns 0 or -1. */
int tl_copy_into(tl_tensor *dst, const tl_tensor *src);
/* Copies every element of t, in C order, into out as float (n = numel). */
int tl_to_f32_buffer(const tl_tensor *t, float *out, int64_t n);

/* ---- views (no copy; recorded by autograd) ---------------------------- */

/* One dim may be -1 (inferred). Views when the strides allow it, else a copy. */
tl_tensor *tl_reshape(tl_tensor *t, int ndim, const int64_t *shape);
tl_tensor *tl_permute(tl_tensor *t, const int *axes);
tl_tensor *tl_transpose(tl_tensor *t, int axis0, int axis1);
/* Elements start .. start+length-1 of axis. */
tl_tensor *tl_narrow(tl_tensor *t, int axis, int64_t start, int64_t length);
/* Broadcast size-1 axes (stride 0) to shape; may prepend axes. */
tl_tensor *tl_expand(tl_tensor *t, int ndim, const int64_t *shape);
tl_tensor *tl_unsqueeze(tl_tensor *t, int axis);
tl_tensor *tl_squeeze(tl_tensor *t, int axis);
/* t itself when contiguous, else a contiguous copy. */
tl_tensor *tl_contiguous(tl_tensor *t);
/* A contiguous copy in dtype dt (BF16 written round-to-nearest-even). Float
 * to float casts are recorded by autograd. */
tl_tensor *tl_cast(tl_tensor *t, tl_dtype dt);

/* Convenience for literals: TL_SHAPE(2, 3) expands to "2, (int64_t[]){2, 3}". */
#define TL_NARGS_(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define TL_SHAPE(...) TL_NARGS_(__VA_ARGS__), (const int64_t[]){__VA_ARGS__}

#endif
