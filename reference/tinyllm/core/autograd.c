/* autograd.c: reverse-mode differentiation (L0.2).
 *
 * Ops record a node per result (tl_record). tl_backward orders the nodes
 * reachable from the loss so each runs after every node that consumes its
 * result, then walks them once: each backward turns its output's gradient
 * into its inputs' gradients, which are summed per tensor. Intermediate
 * gradients are temporaries of the current scope; a leaf's gradient is kept
 * in .grad beside the leaf (owned for owned leaves) and accumulates across
 * calls until tl_zero_grad.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static _Thread_local int no_grad_depth;

void tl_no_grad_push(void) { no_grad_depth++; }

void tl_no_grad_pop(void) {
    if (no_grad_depth == 0) tl_fail("tl_no_grad_pop: no tl_no_grad_push is open");
    else no_grad_depth--;
}

bool tl_grad_enabled(void) { return no_grad_depth == 0; }

tl_tensor *tl_requires_grad(tl_tensor *t, bool on) {
    if (!tl_inputs_ok("tl_requires_grad", 1, t)) return NULL;
    char s[96];
    if (!tl_dtype_is_float(t->dtype))
        return tl_fail("tl_requires_grad: tensor %s is %s; only F32 and BF16 tensors have "
                       "gradients", tl_shape_str(t, s, sizeof s), tl_dtype_name(t->dtype));
    if (!on && t->grad_fn)
        return tl_fail("tl_requires_grad: tensor %s was made by %s, so it needs a gradient for "
                       "its inputs; use tl_detach for a copy without history",
                       tl_shape_str(t, s, sizeof s), t->grad_fn->op);
    t->requires_grad = on;
    return t;
}

void tl_zero_grad(tl_tensor *t) {
    if (!t || !t->grad) return;
    if (t->grad->owned) tl_tensor_free(t->grad);
    t->grad = NULL;
}

tl_tensor *tl_detach(tl_tensor *t) {
    if (!tl_inputs_ok("detach", 1, t)) return NULL;
    return tl_view_of(t);   /* a fresh header: no grad_fn, no requires_grad */
}

tl_node *tl_record(tl_tensor *out, const char *op, tl_backward_fn backward, int n,
                   tl_tensor *const *inputs) {
    if (!out || !tl_grad_enabled()) return NULL;
    bool needed = false;
    for (int i = 0; i < n; i++) needed |= inputs[i] && inputs[i]->requires_grad;
    if (!needed) return NULL;
    if (n > TL_NODE_MAX_INPUTS) {
        tl_fail("%s: records %d inputs, more than TL_NODE_MAX_INPUTS (%d)", op, n,
                TL_NODE_MAX_INPUTS);
        return NULL;
    }
    tl_node *node = tl_scope_alloc(sizeof *node);
    if (!node) return NULL;
    memset(node, 0, sizeof *node);
    node->op = op;
    node->backward = backward;
    node->n_inputs = n;
    for (int i = 0; i < n; i++) node->inputs[i] = inputs[i];
    node->out = out;
    out->grad_fn = node;
    out->requires_grad = true;
    return node;
}

/* ---- the graph walk ------------------------------------------------------ */

/* Node -> slot in the walk, an open-addressing table sized to a power of two. */
typedef struct {
    tl_node **keys;
    int *slots;
    size_t cap, count;
} node_map;

static size_t hash_ptr(const void *p) {
    return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull);
}

static int *map_find(const node_map *m, const tl_node *key) {
    for (size_t i = hash_ptr(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key) return &m->slots[i];
        if (!m->keys[i]) return NULL;
    }
}

static bool map_put(node_map *m, tl_node *key, int slot) {
    if (2 * (m->count + 1) > m->cap) {
        node_map bigger = { calloc(2 * m->cap, sizeof(tl_node *)), calloc(2 * m->cap, sizeof(int)),
                            2 * m->cap, 0 };
        if (!bigger.keys || !bigger.slots) {
            free(bigger.keys);
            free(bigger.slots);
            return false;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i]) map_put(&bigger, m->keys[i], m->slots[i]);
        free(m->keys);
        free(m->slots);
        *m = bigger;
    }
    size_t i = hash_ptr(key) & (m->cap - 1);
    while (m->keys[i]) i = (i + 1) & (m->cap - 1);
    m->keys[i] = key;
    m->slots[i] = slot;
    m->count++;
    return true;
}

typedef struct {
    tl_node *node;
    tl_tensor *grad;    /* the sum of the gradients reaching node->out */
} step;

typedef struct {
    node_map map;
    step *steps;        /* post-order: inputs before the nodes that use them */
    int count;
} graph;

static void graph_free(graph *g) {
    free(g->map.keys);
    free(g->map.slots);
    free(g->steps);
}

/* Depth-first from root without recursion (graphs can be thousands deep). */
static bool graph_build(graph *g, tl_node *root) {
    size_t cap = 64;
    g->map = (node_map){ calloc(cap, sizeof(tl_node *)), calloc(cap, sizeof(int)), cap, 0 };
    g->steps = malloc(cap * sizeof *g->steps);
    g->count = 0;
    struct frame { tl_node *node; int next_input; } *stack = malloc(cap * sizeof *stack);
    size_t depth = 0, stack_cap = cap, steps_cap = cap;
    bool ok = g->map.keys && g->map.slots && g->steps && stack && map_put(&g->map, root, -1);
    if (ok) stack[depth++] = (struct frame){ root, 0 };
    while (ok && depth > 0) {
        struct frame *f = &stack[depth - 1];
        if (f->next_input < f->node->n_inputs) {
            tl_tensor *in = f->node->inputs[f->next_input++];
            tl_node *child = in ? in->grad_fn : NULL;
            if (!child || map_find(&g->map, child)) continue;
            if (depth == stack_cap) {
                void *grown = realloc(stack, (stack_cap *= 2) * sizeof *stack);
                if (!grown) { ok = false; break; }
                stack = grown;
            }
            ok = map_put(&g->map, child, -1);
            stack[depth++] = (struct frame){ child, 0 };
        } else {
            if ((size_t)g->count == steps_cap) {
                void *grown = realloc(g->steps, (steps_cap *= 2) * sizeof *g->steps);
                if (!grown) { ok = false; break; }
                g->steps = grown;
            }
            *map_find(&g->map, f->node) = g->count;
            g->steps[g->count++] = (step){ f->node, NULL };
            depth--;
        }
    }
    free(stack);
    if (!ok) tl_fail("tl_backward: out of memory walking the graph");
    return ok;
}

/* ---- accumulation -------------------------------------------------------- */

/* leaf->grad += g; the first gradient creates .grad beside the leaf. */
static int accumulate_leaf(tl_tensor *leaf, tl_tensor *g) {
    if (!leaf->grad) {
        leaf->grad = tl_new_beside(leaf, TL_F32, leaf->ndim, leaf->shape);
        if (!leaf->grad) return -1;
    }
    float *dst = leaf->grad->storage->data;
    tl_iter it;
    tl_iter_init(&it, g->ndim, g->shape, g->strides, g->offset);
    for (int64_t i = 0, n = tl_numel(g); i < n; i++, tl_iter_next(&it))
        dst[i] += (float)tl_load_as_double(g->storage->data, g->dtype, it.offset);
    return 0;
}

/* Hands grad_in[i] to input i: summed down to its shape, then added to the
 * input's running total (a tensor used twice gets both gradients). */
static int deliver(graph *gr, tl_node *node, int i, tl_tensor *gi) {
    tl_tensor *x = node->inputs[i];
    if (!x || !x->requires_grad || !gi) return 0;
    if (!tl_same_shape(gi, x)) {
        gi = tl_sum_to_shape(gi, x->ndim, x->shape);
        if (!gi) {
            char a[96], cause[512];
            snprintf(cause, sizeof cause, "%s", tl_error() ? tl_error() : "");
            return tl_fail_status("tl_backward: %s produced a gradient of the wrong shape for "
                                  "input %d %s: %s", node->op, i + 1, tl_shape_str(x, a, sizeof a),
                                  cause);
        }
    }
    if (!x->grad_fn) return accumulate_leaf(x, gi);
    step *s = &gr->steps[*map_find(&gr->map, x->grad_fn)];
    s->grad = s->grad ? tl_add(s->grad, gi) : gi;
    return s->grad ? 0 : -1;
}

static int run_backward(tl_tensor *out, tl_tensor *grad_out) {
    if (!out->grad_fn) return accumulate_leaf(out, grad_out);
    graph gr;
    if (!graph_build(&gr, out->grad_fn)) {
        graph_free(&gr);
        return -1;
    }
    gr.steps[gr.count - 1].grad = grad_out;   /* the root finishes the post-order */
    int rc = 0;
    for (int k = gr.count - 1; k >= 0 && rc == 0; k--) {
        step *s = &gr.steps[k];
        if (!s->grad) continue;
        tl_tensor *grad_in[TL_NODE_MAX_INPUTS] = { NULL };
        if (s->node->backward(s->node, s->grad, grad_in) != 0) {
            tl_fail("tl_backward: the backward of %s failed: %s", s->node->op,
                    tl_error() ? tl_error() : "it set no message");
            rc = -1;
        }
        for (int i = 0; rc == 0 && i < s->node->n_inputs; i++)
            rc = deliver(&gr, s->node, i, grad_in[i]);
    }
    graph_free(&gr);
    return rc;
}

int tl_backward_with(tl_tensor *out, tl_tensor *grad_out) {
    if (!tl_inputs_ok("tl_backward", 2, out, grad_out)) return -1;
    char a[96], b[96];
    if (!out->requires_grad) {
        return tl_fail_status("tl_backward: tensor %s does not depend on any tensor that requires "
                              "a gradient (mark the inputs with tl_requires_grad, outside "
                              "tl_no_grad_push)", tl_shape_str(out, a, sizeof a));
    }
    if (!tl_same_shape(out, grad_out)) {
        return tl_fail_status("tl_backward: the upstream gradient %s does not match the output %s",
                              tl_shape_str(grad_out, b, sizeof b), tl_shape_str(out, a, sizeof a));
    }
    tl_no_grad_push();
    tl_tensor *g = tl_float_input("tl_backward", grad_out);
    int rc = g ? run_backward(out, g) : -1;
    tl_no_grad_pop();
    return rc;
}

int tl_backward(tl_tensor *loss) {
    if (!tl_inputs_ok("tl_backward", 1, loss)) return -1;
    if (tl_numel(loss) != 1) {
        char s[96];
        return tl_fail_status("tl_backward: the loss %s has %lld elements; it needs exactly one "
                              "(reduce it with tl_sum_all or tl_mean_all, or use tl_backward_with)",
                              tl_shape_str(loss, s, sizeof s), (long long)tl_numel(loss));
    }
    return tl_backward_with(loss, tl_ones(TL_F32, loss->ndim, loss->shape));
}
