/* shape.c: dtypes and shapes (L0.1): sizes, names, element counts, axes,
 * contiguity and the "[2, 5, 16]" form every message uses. Pure queries of
 * a tensor's header: nothing here allocates or reads an element.
 */
#include <stdio.h>

#include "internal.h"

size_t tl_dtype_size(tl_dtype dt) {
    switch (dt) {
    case TL_F32: return 4;
    case TL_BF16: return 2;
    case TL_I32: return 4;
    case TL_I64: return 8;
    case TL_BOOL: return 1;
    }
    return 0;
}

const char *tl_dtype_name(tl_dtype dt) {
    switch (dt) {
    case TL_F32: return "F32";
    case TL_BF16: return "BF16";
    case TL_I32: return "I32";
    case TL_I64: return "I64";
    case TL_BOOL: return "BOOL";
    }
    return "unknown dtype";
}

bool tl_dtype_is_float(tl_dtype dt) { return dt == TL_F32 || dt == TL_BF16; }

int64_t tl_numel(const tl_tensor *t) {
    if (!t) return 0;
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

int tl_axis(int axis, int ndim) {
    if (axis < 0) axis += ndim;
    return axis >= 0 && axis < ndim ? axis : -1;
}

int64_t tl_dim(const tl_tensor *t, int axis) {
    if (!t) return tl_propagate_status("tl_dim: tensor is NULL");
    int a = tl_axis(axis, t->ndim);
    if (a < 0) {
        char s[96];
        return tl_fail_status("tl_dim: axis %d is out of range for shape %s (rank %d)", axis,
                              tl_shape_str(t, s, sizeof s), t->ndim);
    }
    return t->shape[a];
}

/* Size-1 axes may have any stride; an empty tensor is contiguous. */
bool tl_is_contiguous(const tl_tensor *t) {
    if (!t) return false;
    int64_t expect = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] == 0) return true;
        if (t->shape[i] != 1 && t->strides[i] != expect) return false;
        expect *= t->shape[i];
    }
    return true;
}

bool tl_same_shape(const tl_tensor *a, const tl_tensor *b) {
    if (!a || !b || a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

char *tl_shape_str(const tl_tensor *t, char *buf, size_t size) {
    if (!buf || size == 0) return buf;
    if (!t) {
        snprintf(buf, size, "(null)");
        return buf;
    }
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < t->ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "",
                                 (long long)t->shape[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}
