/* tinyllm/autograd.h: reverse-mode differentiation over recorded ops (L0.2).
 *
 * A tensor with requires_grad set is a leaf that collects a gradient. Every op
 * whose inputs need a gradient records a node; tl_backward walks the nodes in
 * reverse and adds each input's gradient into .grad. A tensor used twice
 * receives the sum of both gradients. Leaf gradients are F32 tensors of the
 * leaf's shape that live beside the leaf (owned for owned leaves, in the
 * leaf's scope otherwise) and accumulate across calls until tl_zero_grad.
 * Errors follow tensor.h (a NULL input keeps its cause).
 */
#ifndef TINYLLM_AUTOGRAD_H
#define TINYLLM_AUTOGRAD_H

#include "tinyllm/tensor.h"

/* Marks (on) or unmarks a float tensor as a leaf that needs a gradient.
 * Returns t. Errors (NULL): t NULL ("tl_requires_grad: input 1 is NULL"); an
 * integer or BOOL tensor ("tl_requires_grad: tensor [3] is I64; only F32 and
 * BF16 tensors have gradients"); unmarking a tensor made by an op
 * ("tl_requires_grad: tensor [2] was made by add, so it needs a gradient for
 * its inputs; use tl_detach for a copy without history"). */
tl_tensor *tl_requires_grad(tl_tensor *t, bool on);
/* Gradient of a one-element tensor (the loss) with respect to every leaf it
 * depends on, added into each leaf's .grad. Intermediate gradients are
 * temporaries of the current scope. Runs with recording off. Returns 0 or -1.
 * Errors: loss NULL ("tl_backward: input 1 is NULL"); more than one element
 * ("tl_backward: the loss [2, 3] has 6 elements; it needs exactly one (reduce
 * it with tl_sum_all or tl_mean_all, or use tl_backward_with)"); a loss that
 * depends on no leaf ("tl_backward: tensor [] does not depend on any tensor
 * that requires a gradient"); a backward that fails ("tl_backward: the
 * backward of matmul failed: <its message>"). */
int tl_backward(tl_tensor *loss);
/* As tl_backward from any output, with grad_out (F32 or BF16, out's shape)
 * as d(something)/d(out). Errors: either NULL ("tl_backward: input 2 is
 * NULL"); out depending on no leaf (as above); grad_out of another shape
 * ("tl_backward: the upstream gradient [3] does not match the output [2]"). */
int tl_backward_with(tl_tensor *out, tl_tensor *grad_out);
/* Frees t->grad (an owned leaf's) or forgets it (a scoped one's); NULL and a
 * tensor without a gradient are no-ops. */
void tl_zero_grad(tl_tensor *t);

/* While at least one no_grad is open (per thread), ops record nothing: the
 * inference mode (no node, no history kept alive). Pushes nest; a pop without
 * a push changes nothing and sets an error ("tl_no_grad_pop: no
 * tl_no_grad_push is open"). */
void tl_no_grad_push(void);
void tl_no_grad_pop(void);
bool tl_grad_enabled(void);    /* true when no no_grad is open */

/* A new header over t's storage with t's shape, without history and not
 * requiring a gradient (a view: it must not outlive t). Errors: t NULL
 * ("detach: input 1 is NULL"). */
tl_tensor *tl_detach(tl_tensor *t);

#endif
