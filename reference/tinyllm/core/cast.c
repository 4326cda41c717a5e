/* cast.c: moving values between dtypes (L0.1).
 *
 * Every read goes through double, which holds F32, BF16 and I32 exactly (and
 * I64 up to 2^53). BF16 is widened exactly and narrowed round-to-nearest-even
 * by bf16.c, the rule PyTorch and safetensors use.
 */
#include <math.h>
#include <string.h>

#include "internal.h"
#include "tinyllm/bf16.h"

double tl_load_as_double(const void *base, tl_dtype dt, int64_t offset) {
    switch (dt) {
    case TL_F32: return ((const float *)base)[offset];
    case TL_BF16: return tl_bf16_to_f32(((const uint16_t *)base)[offset]);
    case TL_I32: return ((const int32_t *)base)[offset];
    case TL_I64: return (double)((const int64_t *)base)[offset];
    case TL_BOOL: return ((const uint8_t *)base)[offset] ? 1.0 : 0.0;
    }
    return NAN;
}

/* Integers: truncated toward zero and clamped to the type's range (NaN -> 0),
 * so no conversion is undefined behaviour. */
static int64_t to_int(double v, double lo, double hi) {
    if (isnan(v)) return 0;
    if (v <= lo) return (int64_t)lo;
    if (v >= hi) return (int64_t)hi;
    return (int64_t)v;
}

void tl_store_double(void *base, tl_dtype dt, int64_t offset, double v) {
    switch (dt) {
    case TL_F32: ((float *)base)[offset] = (float)v; break;
    case TL_BF16: ((uint16_t *)base)[offset] = tl_f32_to_bf16((float)v); break;
    case TL_I32: ((int32_t *)base)[offset] = (int32_t)to_int(v, INT32_MIN, INT32_MAX); break;
    case TL_I64:
        /* 2^63 is the first double above INT64_MAX */
        ((int64_t *)base)[offset] = v >= 0x1p63 ? INT64_MAX : to_int(v, -0x1p63, 0x1p63);
        break;
    case TL_BOOL: ((uint8_t *)base)[offset] = v != 0.0; break;
    }
}

static int cast_backward(tl_node *node, tl_tensor *g, tl_tensor **grad_in) {
    (void)node;
    grad_in[0] = g;   /* gradients stay F32 whatever the forward dtype */
    return 0;
}

tl_tensor *tl_cast(tl_tensor *t, tl_dtype dt) {
    if (!tl_inputs_ok("cast", 1, t)) return NULL;
    tl_tensor *out = tl_new(dt, t->ndim, t->shape);
    if (!out) return NULL;
    int64_t n = tl_numel(t);
    if (dt == TL_F32 && t->dtype == TL_BF16 && tl_is_contiguous(t)) {
        tl_bf16_to_f32_n(tl_data(t), out->storage->data, (size_t)n);
    } else if (dt == TL_BF16 && t->dtype == TL_F32 && tl_is_contiguous(t)) {
        tl_f32_to_bf16_n(tl_data(t), out->storage->data, (size_t)n);
    } else if (tl_copy_into(out, t) != 0) {
        return NULL;
    }
    if (tl_dtype_is_float(dt) && tl_dtype_is_float(t->dtype))
        tl_record(out, "cast", cast_backward, 1, &t);
    return out;
}
