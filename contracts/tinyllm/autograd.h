/* tinyllm/autograd.h: reverse-mode differentiation over recorded ops (L0.2).
 *
 * A tensor with requires_grad set is a leaf that collects a gradient. Every op
 * whose inputs need a gradient records a node; tl_backward walks the nodes in
 * reverse and adds each input's gradient into .grad. A tensor used twice
 * receives the sum of both gradients. Leaf gradients are owned (they outlive
 * scopes) and accumulate across calls until tl_zero_grad.
 */
#ifndef TINYLLM_AUTOGRAD_H
#define TINYLLM_AUTOGRAD_H

#include "tinyllm/tensor.h"

/* Marks a float tensor as a leaf that needs a gradient. Returns t. */
tl_tensor *tl_requires_grad(tl_tensor *t, bool on);
/* Gradient of a rank-0 (or one-element) tensor with respect to every leaf
 * reached. Returns 0 or -1 with an error. */
int tl_backward(tl_tensor *loss);
/* As tl_backward with an explicit upstream gradient of out's shape. */
int tl_backward_with(tl_tensor *out, tl_tensor *grad_out);
/* Frees t->grad (owned leaves) or forgets it (scoped tensors). */
void tl_zero_grad(tl_tensor *t);

/* While at least one no_grad is open, ops record nothing (inference). */
void tl_no_grad_push(void);
void tl_no_grad_pop(void);
bool tl_grad_enabled(void);

/* A copy of t's view that shares storage but has no history. */
tl_tensor *tl_detach(tl_tensor *t);

#endif
