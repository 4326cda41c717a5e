/* L7.1: the residual path of y = x + sublayer(RMSNorm(x)). With a sublayer
 * that returns zero, y is x itself, bit for bit, and the gradient of sum(y)
 * with respect to x is exactly 1: the stream skips the norm. A post-norm
 * step (adding the normalised x back) fails both. */
#include <check.h>
#include "tinyllm/autograd.h"
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"

/* Zero, but still connected to the graph, like a sublayer whose output
 * weights start at zero. */
static tl_tensor *zero_sublayer(tl_tensor *h, void *ctx) {
    (void)ctx;
    return tl_mul_scalar(h, 0.0);
}

START_TEST(test_residual_is_identity_when_sublayer_is_zero)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(7105);
    RMSNorm n;
    ck_assert_msg(rmsnorm_init(&n, 8, 1e-5, false) == 0, "rmsnorm_init: %s", tl_error());
    ck_assert_int_eq(tl_copy_into(n.weight, tl_randn(&rng, TL_SHAPE(8))), 0);
    tl_tensor *x = tl_requires_grad(tl_mul_scalar(tl_randn(&rng, TL_SHAPE(2, 3, 8)), 5.0), true);

    tl_tensor *y = pre_norm_residual(x, &n, zero_sublayer, NULL);
    tl_assert_ok(y);
    tl_assert_close(y, x, 0.0, 0.0);

    ck_assert_msg(tl_backward(tl_sum_all(y)) == 0, "backward: %s", tl_error());
    ck_assert_msg(x->grad != NULL, "no gradient reached x through the residual path");
    tl_assert_close(x->grad, tl_ones_like(x), 0.0, 0.0);
    tl_zero_grad(x);
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST
