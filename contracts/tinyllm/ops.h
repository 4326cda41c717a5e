/* tinyllm/ops.h: the op library (L0.2).
 *
 * Results. Every op returns a new tensor in the current scope (tensor.h:
 * freed by the tl_scope_pop that closes it; never tl_tensor_free it), except
 * the views of tensor.h and tl_split, which share their input's storage.
 * Unless autograd is off (autograd.h: tl_no_grad_push) and whenever an input
 * requires a gradient, an op records itself so tl_backward differentiates it;
 * "no gradient" below marks the ops that never record.
 *
 * Dtypes. Arithmetic works in float32: F32 and BF16 inputs are accepted (BF16
 * widened exactly), results are F32. Index inputs (embedding, gather) are I32
 * or I64; masks are BOOL. Inputs may be any view (strided, transposed,
 * narrowed, expanded); an op never writes into its inputs.
 *
 * Broadcasting. Binary ops broadcast as NumPy does: shapes are aligned on
 * their trailing axes, and an axis of size 1 (or a missing one) stretches to
 * the other's size. An axis argument may be negative (counted from the end).
 *
 * Errors. A failing op returns NULL (tl_split and tl_topk: -1) with a message
 * naming the op (tensor.h's rules). Every op below fails, with the message
 * quoted, when:
 *   - an input is NULL: the message of the call that made the NULL is kept,
 *     else "<op>: input k is NULL";
 *   - an arithmetic input is I32, I64 or BOOL: "<op>: tensor [3] is I64;
 *     arithmetic needs F32 or BF16 (convert with tl_cast)";
 *   - memory runs out: "out of memory: cannot allocate N bytes for a tensor".
 * Each function's own "Errors:" adds the rest.
 */
#ifndef TINYLLM_OPS_H
#define TINYLLM_OPS_H

#include "tinyllm/tensor.h"

/* ---- elementwise, broadcasting -------------------------------------- */
/* out = a op b elementwise.
 *   a, b: F32 or BF16, any shapes that broadcast.
 *   returns: F32, the broadcast shape.
 * Errors: shapes that do not broadcast ("add: shapes [2, 3] and [4, 3] do not
 * broadcast at axis 0 (2 vs 4); sizes must match or be 1"). */
tl_tensor *tl_add(tl_tensor *a, tl_tensor *b);
tl_tensor *tl_sub(tl_tensor *a, tl_tensor *b);
tl_tensor *tl_mul(tl_tensor *a, tl_tensor *b);
tl_tensor *tl_div(tl_tensor *a, tl_tensor *b);      /* IEEE: x / 0 is +-inf or NaN */
tl_tensor *tl_minimum(tl_tensor *a, tl_tensor *b);  /* grad to the smaller; ties to a */
tl_tensor *tl_maximum(tl_tensor *a, tl_tensor *b);  /* grad to the larger; ties to a */

/* out = cond ? a : b, elementwise; the gradient flows to a where cond holds,
 * to b elsewhere, and never to cond.
 *   cond: BOOL; a, b: F32 or BF16; all three broadcast together.
 *   returns: F32, the broadcast shape of the three.
 * Errors: cond not BOOL ("where: mask [1] is F32; it must be BOOL"); shapes
 * that do not broadcast (as tl_add, naming "where"). */
tl_tensor *tl_where(tl_tensor *cond, tl_tensor *a, tl_tensor *b);

/* out = mask ? value : t, elementwise (an attention mask: value -1e9, say).
 *   t: F32 or BF16 [...]; mask: BOOL, broadcasting to t's shape.
 *   returns: F32, t's shape.
 * Errors: mask not BOOL ("masked_fill: mask [...] is F32; it must be BOOL");
 * a mask that does not broadcast to t ("masked_fill: shapes ... do not
 * broadcast") or that would enlarge it ("masked_fill: mask [2, 3] is larger
 * than the tensor [3]; it must broadcast to the tensor's shape"). */
tl_tensor *tl_masked_fill(tl_tensor *t, tl_tensor *mask, double value);

/* ---- elementwise, unary ---------------------------------------------- */
/* out = f(t) elementwise; the scalar arguments are rounded to float32.
 *   t: F32 or BF16, any shape.
 *   returns: F32, t's shape.
 * Errors: only the common ones above. Values outside a function's domain
 * give IEEE results, as PyTorch does (sqrt(-1) = NaN, log(0) = -inf). */
tl_tensor *tl_neg(tl_tensor *t);
tl_tensor *tl_add_scalar(tl_tensor *t, double s);
tl_tensor *tl_mul_scalar(tl_tensor *t, double s);
tl_tensor *tl_square(tl_tensor *t);
tl_tensor *tl_pow(tl_tensor *t, double exponent);
tl_tensor *tl_sqrt(tl_tensor *t);
tl_tensor *tl_rsqrt(tl_tensor *t);                   /* 1 / sqrt(t) */
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
/* min(max(t, lo), hi); the gradient is 1 strictly inside (lo, hi), else 0.
 * Errors: empty bounds, lo > hi or a NaN bound ("clamp: the bounds 1..0 are
 * empty (lo must be <= hi)"). */
tl_tensor *tl_clamp(tl_tensor *t, double lo, double hi);

/* ---- reductions over one axis ----------------------------------------- */
/* The sum, mean or maximum along axis (summed in double, stored as F32).
 *   t: F32 or BF16 [..., n, ...] (n on axis).
 *   returns: F32, t's shape without axis (keepdim: with axis of size 1).
 * Errors: axis out of range ("sum: axis 3 is out of range for shape
 * [5, 2, 3]"). */
tl_tensor *tl_sum(tl_tensor *t, int axis, bool keepdim);
tl_tensor *tl_mean(tl_tensor *t, int axis, bool keepdim);   /* an empty axis gives NaN */
/* As tl_sum; the gradient goes to the first maximal element. Errors also:
 * an empty axis ("max: axis 0 of shape [0, 3] is empty; a maximum needs one
 * element"). */
tl_tensor *tl_max(tl_tensor *t, int axis, bool keepdim);
/* Over every element: returns F32 rank 0. Errors: only the common ones. */
tl_tensor *tl_sum_all(tl_tensor *t);
tl_tensor *tl_mean_all(tl_tensor *t);

/* ---- linear algebra ---------------------------------------------------- */
/* a [..., M, K] @ b [..., K, N] -> [..., M, N]. The batch axes (all but the
 * last two) broadcast as NumPy's; a rank-1 a is a row [1, K] and a rank-1 b a
 * column [K, 1], the added axis removed from the result.
 *   a, b: F32 or BF16, rank >= 1, any strides.
 *   returns: F32 [broadcast batch..., M, N].
 * Speed: a matrix stored with unit stride along one of its last two axes (a
 * contiguous, transposed, narrowed or expanded view: a KV cache read as K^T)
 * is read in place, batch by batch, never copied; up to 8 rows against an
 * F32 matrix, 32 against BF16 (decode; a GQA group's query rows over their
 * key head) go to the multi-row GEMVs of kernels.h, the matrix read once for
 * all rows at its row stride, the batches spread over the threads; more rows
 * go to GEMM (OpenBLAS; a BF16 operand is widened a block at a time). Any
 * other layout is copied to F32 once.
 * Errors: a rank-0 operand ("matmul: operands need at least one axis; got a
 * [] and b [3]"); K differing ("matmul: a [2, 3] has K=3 on its last axis but
 * b [4, 2] has K=4 on its second-to-last axis"); batch axes that do not
 * broadcast ("matmul: batch axes of a [2, 1, 3] and b [3, 3, 1] do not
 * broadcast: batch axis 0 has sizes 2 and 3"); a size or stride beyond BLAS's
 * int range ("matmul: a dimension or stride exceeds BLAS's int range"). */
tl_tensor *tl_matmul(tl_tensor *a, tl_tensor *b);

/* y = x @ w^T (+ bias): HF's nn.Linear, with the weight as HF stores it.
 *   x: F32 or BF16 [..., in]; w: F32 or BF16 [out, in]; bias: [out] or NULL.
 *   returns: F32 [..., out].
 * Speed: the weight is read in place, never converted whole: one row (decode:
 * x [1, 1, in]) goes to tl_gemv_f32 or tl_gemv_bf16; up to 8 rows (F32
 * weight) or 32 (BF16: a short prompt, a chat turn) to tl_gemv_multi_*, one
 * pass over the weight for all rows; more (prefill) to one GEMM (a BF16
 * weight widened a block of rows at a time). A weight that is a transposed
 * view is read as it lies.
 * Errors: a weight that is not a float matrix ("linear: the weight must be a
 * float matrix [out, in]; got I64 [3]"); x not ending in `in` ("linear: input
 * [2, 5] must end with in=4 features to match the weight [3, 4] [out, in]");
 * a bias that is not [out] ("linear: bias [2] must be [out] = [3] for the
 * weight [3, 4]"). */
tl_tensor *tl_linear(tl_tensor *x, tl_tensor *w, tl_tensor *bias);

/* ---- softmax and losses ------------------------------------------------ */
/* exp(t - max) / sum(exp(t - max)) along axis, in float32 with the sum in
 * double; log_softmax is (t - max) - log(sum(...)). A row holding a NaN, or
 * only -inf, gives NaN, as PyTorch does (mask with a large finite negative).
 *   t: F32 or BF16, rank >= 1.   returns: F32, t's shape.
 * Errors: axis out of range ("softmax: axis 2 is out of range for a tensor
 * [2, 3] of rank 2"). */
tl_tensor *tl_softmax(tl_tensor *t, int axis);
tl_tensor *tl_log_softmax(tl_tensor *t, int axis);
/* Mean cross-entropy of logits against class targets; rows whose target is
 * ignore_index are skipped (PyTorch's default is -100). NaN when every target
 * is ignored, as PyTorch gives.
 *   logits: F32 or BF16 [N, C]; targets: I32 or I64 [N].
 *   returns: F32 rank 0; the gradient reaches logits only.
 * Errors: shapes other than [N, C] and [N] ("cross_entropy: logits must be
 * [N, C] and targets [N]; got logits [2, 3, 4] and targets [2]"); targets not
 * an index dtype ("cross_entropy: indices [2] are F32; they must be I32 or
 * I64"); a target outside [0, C) that is not ignore_index ("cross_entropy:
 * target 7 at row 1 is out of range [0, C=3)"). */
tl_tensor *tl_cross_entropy(tl_tensor *logits, tl_tensor *targets, int64_t ignore_index);

/* ---- indexing and joining ---------------------------------------------- */
/* Rows of a table: out[..., :] = weight[ids[...], :]. The backward
 * scatter-adds (a repeated id collects every gradient). A BF16 table is read
 * in place, one row at a time.
 *   weight: F32 or BF16 [V, D]; ids: I32 or I64, any shape (rank < 6).
 *   returns: F32 [ids..., D].
 * Errors: a weight that is not a float matrix ("embedding: the weight must be
 * a float table [V, D]; got ..."); ids of an index dtype they are not
 * ("embedding: indices [2] are F32; they must be I32 or I64"); ids of rank 6
 * ("embedding: ids [...] have rank 6; the result would exceed 6 axes"); an id
 * outside [0, V) ("embedding: id 9 at position [1] of ids [2] is out of range
 * [0, V=4) for the table [4, 3]"). */
tl_tensor *tl_embedding(tl_tensor *weight, tl_tensor *ids);
/* torch.gather: out[i][j][k] = t[i][index[i][j][k]][k] for axis 1, and so on.
 *   t: F32 or BF16; index: I32 or I64 of t's rank, no larger than t on every
 *   axis but `axis`.   returns: F32, index's shape; the gradient reaches t.
 * Errors: axis out of range ("gather: axis 2 is out of range for t [2, 3] of
 * rank 2"); index of another rank ("gather: index [2] must have the rank of
 * t [2, 3] (2)"); index larger off the axis ("gather: index [3, 1] is larger
 * than t [2, 3] on axis 0 (3 > 2)"); an index value outside the axis
 * ("gather: index value 5 at position [0, 0] is out of range [0, 3) for axis
 * 1 of t [2, 3]"); index not I32/I64 ("gather: indices ... must be I32 or
 * I64"). */
tl_tensor *tl_gather(tl_tensor *t, int axis, tl_tensor *index);
/* Joins n tensors along axis; their other axes must agree.
 *   ts: n >= 1 tensors of one dtype (or a mix of F32 and BF16, joined as F32).
 *   returns: a new contiguous tensor of that dtype; recorded for floats.
 * Errors: no tensors ("concat: needs at least one tensor (got 0)"); a NULL
 * entry (its cause kept, else "concat: tensor 1 of 2 is NULL"); axis out of
 * range for tensor 0 ("concat: axis 2 is out of range for tensor 0 [2, 3] of
 * rank 2"); shapes that differ off the axis ("concat: tensor 1 [2, 4, 1] does
 * not fit tensor 0 [2, 3, 1]: shapes may differ only on the concat axis 2");
 * index or mask dtypes mixed with others ("concat: cannot mix index or mask
 * dtypes with others"). */
tl_tensor *tl_concat(tl_tensor *const *ts, int n, int axis);
/* Cuts axis into n consecutive parts of the given sizes, written to out[0..n)
 * as views of t (no copy; each recorded as a narrow). Returns 0, or -1 with
 * every out[k] set to NULL.
 * Errors: n < 1, sizes or out NULL ("split: needs n >= 1 sizes and an output
 * array (got n=0)"); axis out of range ("split: axis 2 is out of range for
 * [4, 6] of rank 2"); a negative size ("split: size 1 is negative (-2)");
 * sizes not adding up to the axis ("split: the 2 sizes add up to 5 but axis 1
 * of [4, 6] has 6"). */
int tl_split(tl_tensor *t, int axis, const int64_t *sizes, int n, tl_tensor **out);

/* ---- selection (no gradient) ------------------------------------------- */
/* Index of the largest value along axis. PyTorch's order: NaN above every
 * number, ties to the lower index; so greedy decoding picks PyTorch's token.
 *   t: F32 or BF16.   returns: I64, t's shape without axis (keepdim: size 1).
 * Errors: axis out of range ("argmax: axis 1 is out of range for [3] of rank
 * 1"); an empty axis ("argmax: axis 0 of [0] is empty; there is no largest
 * element"). */
tl_tensor *tl_argmax(tl_tensor *t, int axis, bool keepdim);
/* The k largest along the last axis, in descending order (the order of
 * tl_argmax: NaN first, ties to the lower index first).
 *   t: F32 or BF16 [..., n].
 *   *indices: I64 [..., k]; *values (when values is not NULL): F32 [..., k].
 * Returns 0, or -1 with *values and *indices set to NULL.
 * Errors: indices NULL ("topk: indices must not be NULL (values may be)"); a
 * scalar ("topk: needs at least one axis; got a scalar"); k outside [1, n]
 * ("topk: k=4 is out of range [1, 3] for the last axis of [2, 3]"). */
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
