/* inputs.c: what an op does with its inputs' dtypes and layouts (L0.2):
 * arithmetic reads contiguous F32 (BF16 widened exactly), indexing reads
 * contiguous I64. An input already in that form is used as it is; any other
 * is copied once, unrecorded (the op records its own input).
 */
#include "internal.h"

/* A contiguous copy in dtype dt, not recorded: the op records its own input. */
static tl_tensor *dense_copy(tl_tensor *t, tl_dtype dt) {
    tl_tensor *c = tl_new(dt, t->ndim, t->shape);
    return c && tl_copy_into(c, t) == 0 ? c : NULL;
}

tl_tensor *tl_float_input(const char *op, tl_tensor *t) {
    if (!tl_inputs_ok(op, 1, t)) return NULL;
    if (!tl_dtype_is_float(t->dtype)) {
        char s[96];
        return tl_fail("%s: tensor %s is %s; arithmetic needs F32 or BF16 (convert with tl_cast)",
                       op, tl_shape_str(t, s, sizeof s), tl_dtype_name(t->dtype));
    }
    return t->dtype == TL_F32 && tl_is_contiguous(t) ? t : dense_copy(t, TL_F32);
}

tl_tensor *tl_index_input(const char *op, tl_tensor *t) {
    if (!tl_inputs_ok(op, 1, t)) return NULL;
    if (t->dtype != TL_I32 && t->dtype != TL_I64) {
        char s[96];
        return tl_fail("%s: indices %s are %s; they must be I32 or I64", op,
                       tl_shape_str(t, s, sizeof s), tl_dtype_name(t->dtype));
    }
    return t->dtype == TL_I64 && tl_is_contiguous(t) ? t : dense_copy(t, TL_I64);
}

