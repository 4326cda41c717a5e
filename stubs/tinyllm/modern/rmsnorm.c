/* RMSNorm and the pre-norm residual step (L7.1): your implementation.
 *
 * The contract is contracts/tinyllm/modern/rmsnorm.h; the math is section 2
 * of the chapter (course/L7.1/README.md). Build the forward from the ops in
 * tinyllm/ops.h (tl_square, tl_mean, tl_add_scalar, tl_rsqrt, tl_mul, tl_add)
 * and autograd differentiates it for you: never write to a tensor's data in
 * the forward. Replace each tl_fail below, then run `ol tests L7.1`.
 */
#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"

int rmsnorm_init(RMSNorm *n, int64_t dim, double eps, bool unit_offset) {
    /* Check n, dim and eps first. Then: an owned F32 [dim] weight
     * (tl_tensor_new_owned), ones for Llama, zeros for Gemma (unit_offset),
     * marked with tl_requires_grad. */
    (void)n; (void)dim; (void)eps; (void)unit_offset;
    return tl_fail_status("not implemented: rmsnorm_init (L7.1)");
}

void rmsnorm_free(RMSNorm *n) {
    /* tl_tensor_free the weight, then clear the struct. NULL is a no-op. */
    (void)n;
    tl_fail("not implemented: rmsnorm_free (L7.1)");
}

tl_tensor *rmsnorm_forward(const RMSNorm *n, tl_tensor *x) {
    /* Validate (the last axis of x against the weight's width, eps), then
     * mean of squares over the LAST axis with keepdim, eps inside the
     * root, normalise, and multiply by the weight (or 1 + weight) last. */
    (void)n; (void)x;
    return tl_fail("not implemented: rmsnorm_forward (L7.1)");
}

tl_tensor *pre_norm_residual(tl_tensor *x, const RMSNorm *norm, tl_sublayer_fn sublayer,
                             void *ctx) {
    /* x + sublayer(RMSNorm(x)): add back the raw x, not the normalised one. */
    (void)x; (void)norm; (void)sublayer; (void)ctx;
    return tl_fail("not implemented: pre_norm_residual (L7.1)");
}
