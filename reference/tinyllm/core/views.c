/* views.c: reshape, permute, narrow, expand and friends (L0.1).
 *
 * A view is a new header over the same storage: only shape, strides and
 * offset change, so it costs nothing and writes through it show in the
 * original. Each view records a node whose backward maps the gradient back
 * to the input's layout.
 */
#include <string.h>

#include "internal.h"

/* The gradient of a view that only regroups elements: reshape it back. */
static int reshape_backward(tl_node *node, tl_tensor *g, tl_tensor **grad_in) {
    const tl_tensor *in = node->inputs[0];
    grad_in[0] = tl_reshape(g, in->ndim, in->shape);
    return grad_in[0] ? 0 : -1;
}

/* Copies and expands pass the gradient through (the engine sums expanded
 * axes back down). */
static int identity_backward(tl_node *node, tl_tensor *g, tl_tensor **grad_in) {
    (void)node;
    grad_in[0] = g;
    return 0;
}

static void set_contiguous_strides(tl_tensor *t) {
    int64_t stride = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        t->strides[d] = stride;
        stride *= t->shape[d];
    }
}

static tl_tensor *copy_recorded(const char *op, tl_tensor *t) {
    tl_tensor *out = tl_new(t->dtype, t->ndim, t->shape);
    if (!out || tl_copy_into(out, t) != 0) return NULL;
    tl_record(out, op, identity_backward, 1, &t);
    return out;
}

tl_tensor *tl_contiguous(tl_tensor *t) {
    if (!tl_inputs_ok("contiguous", 1, t)) return NULL;
    return tl_is_contiguous(t) ? t : copy_recorded("contiguous", t);
}

tl_tensor *tl_clone(tl_tensor *t) {
    if (!tl_inputs_ok("clone", 1, t)) return NULL;
    return copy_recorded("clone", t);
}

tl_tensor *tl_reshape(tl_tensor *t, int ndim, const int64_t *shape) {
    if (!tl_inputs_ok("reshape", 1, t)) return NULL;
    char a[96], b[160];
    if (ndim < 0 || ndim > TL_MAX_DIMS || (ndim > 0 && !shape))
        return tl_fail("reshape: rank %d is invalid (0 to %d, with a shape array)", ndim,
                       TL_MAX_DIMS);
    int64_t want[TL_MAX_DIMS], known = 1;
    int infer = -1;
    for (int i = 0; i < ndim; i++) {
        want[i] = shape[i];
        if (shape[i] == -1 && infer < 0) infer = i;
        else if (shape[i] < 0)
            return tl_fail("reshape: size %lld at axis %d is invalid (one axis may be -1)",
                           (long long)shape[i], i);
        else known *= shape[i];
    }
    int64_t n = tl_numel(t);
    if (infer >= 0) want[infer] = known ? n / known : 0;
    int64_t total = known * (infer >= 0 ? want[infer] : 1);
    if (total != n || (infer >= 0 && known == 0)) {
        tl_tensor shown = { .ndim = ndim };
        memcpy(shown.shape, shape, sizeof(int64_t) * (size_t)ndim);
        return tl_fail("reshape: cannot view %s (%lld elements) as %s",
                       tl_shape_str(t, a, sizeof a), (long long)n,
                       tl_shape_str(&shown, b, sizeof b));
    }
    tl_tensor *src = tl_contiguous(t);   /* a copy only when strides forbid a view */
    tl_tensor *v = tl_view_of(src);
    if (!v) return NULL;
    v->ndim = ndim;
    memcpy(v->shape, want, sizeof(int64_t) * (size_t)ndim);
    set_contiguous_strides(v);
    tl_record(v, "reshape", reshape_backward, 1, &src);
    return v;
}

static int permute_backward(tl_node *node, tl_tensor *g, tl_tensor **grad_in) {
    int inverse[TL_MAX_DIMS];
    for (int i = 0; i < g->ndim; i++) inverse[node->i[i]] = i;
    grad_in[0] = tl_permute(g, inverse);
    return grad_in[0] ? 0 : -1;
}

static tl_tensor *permute_as(const char *op, tl_tensor *t, const int *axes) {
    bool seen[TL_MAX_DIMS] = { false };
    int norm[TL_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) {
        int a = tl_axis(axes[i], t->ndim);
        if (a < 0 || seen[a]) {
            char s[96];
            return tl_fail("%s: axis %d (position %d) is out of range or repeated for shape %s; "
                           "give each axis 0..%d once", op, axes[i], i,
                           tl_shape_str(t, s, sizeof s), t->ndim - 1);
        }
        seen[a] = true;
        norm[i] = a;
    }
    tl_tensor *v = tl_view_of(t);
    if (!v) return NULL;
    for (int i = 0; i < t->ndim; i++) {
        v->shape[i] = t->shape[norm[i]];
        v->strides[i] = t->strides[norm[i]];
    }
    tl_node *node = tl_record(v, op, permute_backward, 1, &t);
    for (int i = 0; node && i < t->ndim; i++) node->i[i] = norm[i];
    return v;
}

tl_tensor *tl_permute(tl_tensor *t, const int *axes) {
    if (!tl_inputs_ok("permute", 1, t)) return NULL;
    if (!axes && t->ndim > 0) return tl_fail("permute: axes is NULL");
    return permute_as("permute", t, axes);
}

tl_tensor *tl_transpose(tl_tensor *t, int axis0, int axis1) {
    if (!tl_inputs_ok("transpose", 1, t)) return NULL;
    int a0 = tl_axis(axis0, t->ndim), a1 = tl_axis(axis1, t->ndim);
    if (a0 < 0 || a1 < 0) {
        char s[96];
        return tl_fail("transpose: axes %d and %d: %d is out of range for shape %s", axis0,
                       axis1, a0 < 0 ? axis0 : axis1, tl_shape_str(t, s, sizeof s));
    }
    int axes[TL_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) axes[i] = i;
    axes[a0] = a1;
    axes[a1] = a0;
    return permute_as("transpose", t, axes);
}

static int narrow_backward(tl_node *node, tl_tensor *g, tl_tensor **grad_in) {
    const tl_tensor *in = node->inputs[0];
    tl_tensor *full = tl_zeros(TL_F32, in->ndim, in->shape);
    tl_tensor *slot = tl_narrow(full, (int)node->i[0], node->i[1], g->shape[node->i[0]]);
    if (!slot || tl_copy_into(slot, g) != 0) return -1;
    grad_in[0] = full;
    return 0;
}

tl_tensor *tl_narrow(tl_tensor *t, int axis, int64_t start, int64_t length) {
    if (!tl_inputs_ok("narrow", 1, t)) return NULL;
    char s[96];
    int a = tl_axis(axis, t->ndim);
    if (a < 0)
        return tl_fail("narrow: axis %d is out of range for shape %s", axis,
                       tl_shape_str(t, s, sizeof s));
    if (start < 0 || length < 0 || start > t->shape[a] - length)
        return tl_fail("narrow: elements %lld..%lld of axis %d are out of range for shape %s",
                       (long long)start, (long long)(start + length - 1), a,
                       tl_shape_str(t, s, sizeof s));
    tl_tensor *v = tl_view_of(t);
    if (!v) return NULL;
    v->shape[a] = length;
    v->offset += start * t->strides[a];
    tl_node *node = tl_record(v, "narrow", narrow_backward, 1, &t);
    if (node) {
        node->i[0] = a;
        node->i[1] = start;
    }
    return v;
}

tl_tensor *tl_expand(tl_tensor *t, int ndim, const int64_t *shape) {
    if (!tl_inputs_ok("expand", 1, t)) return NULL;
    char a[96], b[160];
    tl_tensor shown = { .ndim = ndim };
    if (ndim < t->ndim || ndim > TL_MAX_DIMS || (ndim > 0 && !shape))
        return tl_fail("expand: cannot expand %s to rank %d (the rank may only grow, up to %d)",
                       tl_shape_str(t, a, sizeof a), ndim, TL_MAX_DIMS);
    memcpy(shown.shape, shape, sizeof(int64_t) * (size_t)ndim);
    tl_tensor *v = tl_view_of(t);
    if (!v) return NULL;
    v->ndim = ndim;
    for (int i = ndim - 1, j = t->ndim - 1; i >= 0; i--, j--) {
        int64_t have = j >= 0 ? t->shape[j] : 1;
        int64_t want = shape[i] == -1 && j >= 0 ? have : shape[i];
        if (want < 0 || (have != want && have != 1))
            return tl_fail("expand: cannot expand %s to %s: axis %d has size %lld, and only "
                           "size-1 axes stretch", tl_shape_str(t, a, sizeof a),
                           tl_shape_str(&shown, b, sizeof b), i, (long long)have);
        v->shape[i] = want;
        v->strides[i] = j >= 0 && have == want ? t->strides[j] : 0;
    }
    tl_record(v, "expand", identity_backward, 1, &t);
    return v;
}

tl_tensor *tl_unsqueeze(tl_tensor *t, int axis) {
    if (!tl_inputs_ok("unsqueeze", 1, t)) return NULL;
    int a = tl_axis(axis, t->ndim + 1);
    if (a < 0 || t->ndim == TL_MAX_DIMS) {
        char s[96];
        return tl_fail("unsqueeze: cannot insert axis %d into shape %s", axis,
                       tl_shape_str(t, s, sizeof s));
    }
    tl_tensor *v = tl_view_of(t);
    if (!v) return NULL;
    v->ndim = t->ndim + 1;
    for (int i = t->ndim; i > a; i--) {
        v->shape[i] = t->shape[i - 1];
        v->strides[i] = t->strides[i - 1];
    }
    v->shape[a] = 1;
    v->strides[a] = a < t->ndim ? t->shape[a] * t->strides[a] : 1;
    tl_record(v, "unsqueeze", reshape_backward, 1, &t);
    return v;
}

tl_tensor *tl_squeeze(tl_tensor *t, int axis) {
    if (!tl_inputs_ok("squeeze", 1, t)) return NULL;
    char s[96];
    int a = tl_axis(axis, t->ndim);
    if (a < 0)
        return tl_fail("squeeze: axis %d is out of range for shape %s", axis,
                       tl_shape_str(t, s, sizeof s));
    if (t->shape[a] != 1)
        return tl_fail("squeeze: axis %d of shape %s has size %lld, not 1", a,
                       tl_shape_str(t, s, sizeof s), (long long)t->shape[a]);
    tl_tensor *v = tl_view_of(t);
    if (!v) return NULL;
    v->ndim = t->ndim - 1;
    for (int i = a; i < v->ndim; i++) {
        v->shape[i] = t->shape[i + 1];
        v->strides[i] = t->strides[i + 1];
    }
    tl_record(v, "squeeze", reshape_backward, 1, &t);
    return v;
}
