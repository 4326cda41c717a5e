/* tinyllm/ops.h: the op library (L0.2). Every op returns a new tensor in the
 * current scope (or NULL with an error, see tensor.h) and, unless autograd is
 * off (autograd.h), records itself so tl_backward can differentiate it.
 *
 * Dtypes: arithmetic works in float32. F32 and BF16 inputs are accepted; BF16
 * is widened exactly and results are F32. Index inputs (embedding, gather)
 * are I32 or I64; masks are BOOL. Binary ops broadcast as NumPy does (align
 * trailing axes; size 1 stretches). An axis may be negative (from the end).
 */
#ifndef TINYLLM_OPS_H
#define TINYLLM_OPS_H

#include "tinyllm/tensor.h"

/* ---- elementwise, broadcasting -------------------------------------- */
tl_tensor *tl_add(tl_tensor *a, tl_tensor *b);
tl_tensor *tl_sub(tl_tensor *a, tl_tensor *b);
tl_tensor *tl_mul(tl_tensor *a, tl_tensor *b);
tl_tensor *tl_div(tl_tensor *a, tl_tensor *b);
tl_tensor *tl_minimum(tl_tensor *a, tl_tensor *b);  /* grad to the smaller; ties to a */
tl_tensor *tl_maximum(tl_tensor *a, tl_tensor *b);  /* grad to the larger; ties to a */
/* cond ? a : b, cond BOOL; all three broadcast. */
tl_tensor *tl_where(tl_tensor *cond, tl_tensor *a, tl_tensor *b);
/* value where mask (BOOL, broadcast to t) is true, else t. */
tl_tensor *tl_masked_fill(tl_tensor *t, tl_tensor *mask, double value);

/* ---- elementwise, unary ---------------------------------------------- */
tl_tensor *tl_neg(tl_tensor *t);
tl_tensor *tl_add_scalar(tl_tensor *t, double s);
tl_tensor *tl_mul_scalar(tl_tensor *t, double s);
tl_tensor *tl_square(tl_tensor *t);
tl_tensor *tl_pow(tl_tensor *t, double exponent);
tl_tensor *tl_sqrt(tl_tensor *t);
tl_tensor *tl_rsqrt(tl_tensor *t);
tl_tensor *tl_exp(tl_tensor *t);
tl_tensor *tl_log(tl_tensor *t);
tl_tensor *tl_tanh(tl_tensor *t);
tl_tensor *tl_erf(tl_tensor *t);
tl_tensor *tl_sigmoid(tl_tensor *t);
tl_tensor *tl_silu(tl_tensor *t);                    /* x * sigmoid(x) */
tl_tensor *tl_relu(tl_tensor *t);
tl_tensor *tl_gelu(tl_tensor *t);                    /* exact: 0.5 x (1 + erf(x / sqrt 2)) */
tl_tensor *tl_gelu_tanh(tl_tensor *t);               /* HF gelu_pytorch_tanh / gelu_new */
tl_tensor *tl_cos(tl_tensor *t);
tl_tensor *tl_sin(tl_tensor *t);
tl_tensor *tl_clamp(tl_tensor *t, double lo, double hi); /* grad 1 strictly inside */

/* ---- reductions over one axis ----------------------------------------- */
tl_tensor *tl_sum(tl_tensor *t, int axis, bool keepdim);
tl_tensor *tl_mean(tl_tensor *t, int axis, bool keepdim);
/* Max values; the gradient goes to the first maximal element. */
tl_tensor *tl_max(tl_tensor *t, int axis, bool keepdim);
tl_tensor *tl_sum_all(tl_tensor *t);                 /* rank 0 */
tl_tensor *tl_mean_all(tl_tensor *t);                /* rank 0 */

/* ---- linear algebra ---------------------------------------------------- */
/* a [..., M, K] @ b [..., K, N] -> [..., M, N]; batch axes broadcast; a rank-1
 * operand is a vector as in NumPy. A transposed view is read in place. */
tl_tensor *tl_matmul(tl_tensor *a, tl_tensor *b);
/* x [..., in] @ w[out, in]^T (+ bias [out], may be NULL) -> [..., out]. */
tl_tensor *tl_linear(tl_tensor *x, tl_tensor *w, tl_tensor *bias);

/* ---- softmax and losses ------------------------------------------------ */
/* Max-subtracted, in float32. */
tl_tensor *tl_softmax(tl_tensor *t, int axis);
tl_tensor *tl_log_softmax(tl_tensor *t, int axis);
/* Mean cross-entropy of logits [N, C] against targets [N] (I32/I64); targets
 * equal to ignore_index are skipped (PyTorch uses -100). Rank 0 result; NaN
 * when every target is ignored, as PyTorch does. */
tl_tensor *tl_cross_entropy(tl_tensor *logits, tl_tensor *targets, int64_t ignore_index);

/* ---- indexing and joining ---------------------------------------------- */
/* Rows of weight [V, D] at ids (any shape, I32/I64) -> [..ids, D]. The
 * backward scatter-adds (a repeated id collects every gradient). An id out of
 * [0, V) is an error naming the id and V. */
tl_tensor *tl_embedding(tl_tensor *weight, tl_tensor *ids);
/* out[i][j]... = t[...index...] along axis (torch.gather); index I32/I64. */
tl_tensor *tl_gather(tl_tensor *t, int axis, tl_tensor *index);
tl_tensor *tl_concat(tl_tensor *const *ts, int n, int axis);
/* Splits axis into n parts of the given sizes; writes n views into out. */
int tl_split(tl_tensor *t, int axis, const int64_t *sizes, int n, tl_tensor **out);

/* ---- selection (no gradient) ------------------------------------------- */
/* Index (I64) of the largest value along axis; ties -> the lower index. */
tl_tensor *tl_argmax(tl_tensor *t, int axis, bool keepdim);
/* The k largest along the last axis, in descending order; ties -> the lower
 * index first. values may be NULL when only indices are wanted. Returns 0/-1. */
int tl_topk(tl_tensor *t, int k, tl_tensor **values, tl_tensor **indices);

/* ---- gather and scatter-add of slices (L7.8's expert dispatch) ----------- */
/* The slices of t at the given positions along axis, in the order given
 * (torch.index_select): the result has t's shape with that axis replaced by
 * numel(index). t: F32 or BF16, any rank >= 1, any strides; index: I32 or
 * I64 of rank 1, each value in [0, t->shape[axis]), repeats allowed (also
 * empty). Returns F32, in the current scope. Backward: each slice's gradient
 * is added back at its position (a repeated position collects every one).
 * Errors (NULL, naming index_select): a NULL input; axis out of range; index
 * not rank 1 or not I32/I64; a value out of range (the message gives the
 * value, its position and t's shape). */
tl_tensor *tl_index_select(tl_tensor *t, int axis, tl_tensor *index);

/* out = t with src's slices added at the given positions along axis
 * (torch.Tensor.index_add, but returning a new tensor: t is not changed).
 * src has t's shape with that axis replaced by numel(index); a repeated
 * position receives each of its slices, in index order. t, src: F32 or BF16
 * (any strides); index as for tl_index_select. Returns F32 of t's shape, in
 * the current scope. Backward: t's gradient is the output's; src's is the
 * output's gradient read back at the positions (index_select).
 * Errors (NULL, naming index_add): those of tl_index_select, and src of
 * another shape (the message gives src's, t's and index's shapes). */
tl_tensor *tl_index_add(tl_tensor *t, int axis, tl_tensor *index, tl_tensor *src);

#endif
