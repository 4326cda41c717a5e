/* nn_fuse.c: tl_linear_fuse, one weight for projections that read the same
 * input (q/k/v, gate/up), made after the load (nn.h).
 *
 * The fused weight holds the parts' rows back to back, and each part becomes
 * a view of its own row block of it: the parts keep their tl_tensor, names
 * and values (the state dict does not change), and the model may call one
 * tl_linear on the fused weight instead of one per part. Three cases, so that
 * there is always one copy of the weights:
 *   - the parts already lie back to back in one storage (fused before): the
 *     fused weight is one more view of it;
 *   - they lie back to back in one mapped checkpoint (HF writes gate_proj
 *     just before up_proj): the fused weight wraps that span, no copy;
 *   - otherwise their rows are copied into a new owned weight, each part is
 *     pointed at its block, and the storage it had is released (a mapped
 *     checkpoint's pages are handed back to the kernel: they stop counting
 *     as resident, though the file stays mapped).
 * Storage is reference counted, so the fused weight and the parts may be
 * freed in any order.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tinyllm/nn.h"

/* Why parts cannot be fused, into the error; true when they can. */
static bool fusable(tl_tensor *const *parts, int n) {
    if (!parts || n < 1)
        return tl_fail("tl_linear_fuse: needs n >= 1 parts (got n=%d%s)", n,
                       parts ? "" : " and no array"), false;
    char s0[96], sk[96];
    for (int k = 0; k < n; k++) {
        tl_tensor *p = parts[k];
        if (!p) return tl_propagate("tl_linear_fuse: part %d of %d is NULL", k, n), false;
        if (!p->owned)
            return tl_fail("tl_linear_fuse: part %d %s lives in a scope; fuse parameters (owned "
                           "tensors)", k, tl_shape_str(p, sk, sizeof sk)), false;
        if (!tl_dtype_is_float(p->dtype) || (p->ndim != 1 && p->ndim != 2) ||
            !tl_is_contiguous(p))
            return tl_fail("tl_linear_fuse: part %d is %s %s; parts are contiguous float weights "
                           "[out, in] or biases [out]", k, tl_dtype_name(p->dtype),
                           tl_shape_str(p, sk, sizeof sk)), false;
        tl_tensor *first = parts[0];
        if (p->dtype != first->dtype || p->ndim != first->ndim ||
            (p->ndim == 2 && p->shape[1] != first->shape[1]))
            return tl_fail("tl_linear_fuse: part %d %s %s does not match part 0 %s %s: parts "
                           "share the dtype and the input width", k, tl_dtype_name(p->dtype),
                           tl_shape_str(p, sk, sizeof sk), tl_dtype_name(first->dtype),
                           tl_shape_str(first, s0, sizeof s0)), false;
    }
    return true;
}

/* The fused shape: the parts' rows summed, their width kept. */
static int fused_shape(tl_tensor *const *parts, int n, int64_t *shape) {
    shape[0] = 0;
    for (int k = 0; k < n; k++) shape[0] += parts[k]->shape[0];
    if (parts[0]->ndim == 2) shape[1] = parts[0]->shape[1];
    return parts[0]->ndim;
}

/* Records on the fused weight's storage where it and its parts lie, so that
 * tl_linear on one part under no_grad computes them all in one product
 * (internal.h, ops_linalg.c). Biases, one part, more than
 * TL_FUSED_MAX_PARTS, or no memory for the record: nothing is recorded, and
 * the parts still work one by one. A record the storage had (an earlier
 * fuse of the same rows) is replaced. */
static void record_parts(tl_tensor *fused, tl_tensor *const *parts, int n) {
    if (fused->ndim != 2 || n < 2 || n > TL_FUSED_MAX_PARTS || fused->shape[1] < 1) return;
    static atomic_uint_least64_t last_id;
    tl_fused_rows *f = calloc(1, sizeof *f);
    if (!f) return;
    f->id = atomic_fetch_add(&last_id, 1) + 1;
    f->offset = fused->offset;
    f->rows = fused->shape[0];
    f->cols = fused->shape[1];
    f->n_parts = n;
    for (int k = 0; k < n; k++) f->part_row[k] = (parts[k]->offset - fused->offset) / f->cols;
    f->part_row[n] = f->rows;
    free(fused->storage->fused);
    fused->storage->fused = f;
}

/* True when part k + 1 starts where part k ends, in memory. */
static bool back_to_back(tl_tensor *const *parts, int n) {
    for (int k = 0; k + 1 < n; k++)
        if ((const char *)tl_data(parts[k]) + tl_numel(parts[k]) * tl_dtype_size(parts[k]->dtype)
            != (const char *)tl_data(parts[k + 1]))
            return false;
    return true;
}

tl_tensor *tl_linear_fuse(tl_tensor *const *parts, int n) {
    if (!fusable(parts, n)) return NULL;
    int64_t shape[2];
    int ndim = fused_shape(parts, n, shape);
    tl_dtype dt = parts[0]->dtype;

    bool same_storage = true, all_mapped = true;
    for (int k = 0; k < n; k++) {
        same_storage = same_storage && parts[k]->storage == parts[0]->storage;
        all_mapped = all_mapped && parts[k]->storage->file_backed;
    }
    if (back_to_back(parts, n) && (same_storage || all_mapped)) {
        tl_tensor *fused = same_storage ? tl_tensor_new_owned(dt, 0, NULL)
                                        : tl_tensor_wrap_mapped(tl_data(parts[0]), dt, ndim,
                                                                shape);
        if (!fused) return NULL;
        if (same_storage) {   /* a header over the parts' own storage */
            fused->ndim = ndim;
            memcpy(fused->shape, shape, sizeof(int64_t) * (size_t)ndim);
            tl_tensor_repoint(fused, parts[0]->storage, parts[0]->offset);
        }
        /* The parts read their rows from the fused storage from now on. */
        for (int64_t k = 0, row = 0; k < n; row += parts[k]->shape[0], k++)
            if (parts[k]->storage != fused->storage)
                tl_tensor_repoint(parts[k], fused->storage,
                                  fused->offset + row * (ndim == 2 ? shape[1] : 1));
        record_parts(fused, parts, n);
        return fused;
    }

    tl_tensor *fused = tl_tensor_new_owned(dt, ndim, shape);
    if (!fused) return NULL;
    size_t es = tl_dtype_size(dt), at = 0;
    for (int k = 0; k < n; k++) {
        size_t bytes = (size_t)tl_numel(parts[k]) * es;
        memcpy((char *)tl_data(fused) + at, tl_data(parts[k]), bytes);
        at += bytes;
    }
    for (int64_t k = 0, row = 0; k < n; row += parts[k]->shape[0], k++) {
        tl_storage *old = parts[k]->storage;
        const void *old_data = tl_data(parts[k]);
        bool mapped = old->file_backed;
        tl_tensor_repoint(parts[k], fused->storage, row * (ndim == 2 ? shape[1] : 1));
        if (mapped) tl_drop_file_pages(old_data, (size_t)tl_numel(parts[k]) * es);
    }
    record_parts(fused, parts, n);
    return fused;
}
