/* cast.c: tl_cast, the op that moves values between dtypes (L0.1).
 *
 * Reading and writing one element in any dtype is elements.c's; BF16 is
 * widened exactly and narrowed round-to-nearest-even by bf16.c, the rule
 * PyTorch and safetensors use. Float to float casts are recorded by
 * autograd (the gradient passes through in F32).
 */
#include "internal.h"
#include "tinyllm/bf16.h"

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
