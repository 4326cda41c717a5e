/* RMSNorm and the pre-norm residual step (L7.1): the reference.
 *
 * Everything is composed from recorded ops (ops.h), so autograd gives the
 * gradient with respect to x and to the weight with no backward of our own.
 * The order is Hugging Face's: normalise in float32 first, weight last.
 */
#include <math.h>
#include <string.h>
#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"

static bool eps_ok(double eps) { return eps >= 0 && isfinite(eps); }  /* false for NaN */

int rmsnorm_init(RMSNorm *n, int64_t dim, double eps, bool unit_offset) {
    if (!n) {
        return tl_fail_status("rmsnorm_init: the RMSNorm pointer is NULL");
    }
    memset(n, 0, sizeof *n);
    if (dim < 1) {
        return tl_fail_status("rmsnorm_init: dim is %lld; the normalised axis needs at least 1 "
                              "feature", (long long)dim);
    }
    if (!eps_ok(eps)) {
        return tl_fail_status("rmsnorm_init: eps is %g; it must be a finite number >= 0 (HF's "
                              "rms_norm_eps, e.g. 1e-5)", eps);
    }
    tl_tensor *w = tl_tensor_new_owned(TL_F32, 1, &dim);
    if (!w) return -1;
    /* A fresh norm multiplies by exactly 1 either way: w = 1, or 1 + w with w = 0. */
    float *wd = tl_f32(w);
    for (int64_t i = 0; i < dim; i++) wd[i] = unit_offset ? 0.0f : 1.0f;
    n->weight = tl_requires_grad(w, true);
    n->eps = eps;
    n->unit_offset = unit_offset;
    n->dim = dim;
    return 0;
}

void rmsnorm_free(RMSNorm *n) {
    if (!n) return;
    tl_tensor_free(n->weight);
    memset(n, 0, sizeof *n);
}

tl_tensor *rmsnorm_forward(const RMSNorm *n, tl_tensor *x) {
    if (!n || !n->weight) return tl_fail("rmsnorm_forward: the norm is NULL or has no weight "
                                         "(call rmsnorm_init first)");
    if (!x) return tl_propagate("rmsnorm_forward: x is NULL");
    char xs[64], ws[64];
    int64_t d = x->ndim >= 1 ? x->shape[x->ndim - 1] : 0;
    if (n->weight->ndim != 1 || n->weight->shape[0] != n->dim)   /* say, from another checkpoint */
        return tl_fail("rmsnorm_forward: the weight has shape %s, not [%lld]: a norm of width %lld "
                       "needs a weight of that width", tl_shape_str(n->weight, ws, sizeof ws),
                       (long long)n->dim, (long long)n->dim);
    if (d != n->dim)
        return tl_fail("rmsnorm_forward: x has shape %s but the norm's width (dim) is %lld; the "
                       "last axis of x must equal it",
                       tl_shape_str(x, xs, sizeof xs), (long long)n->dim);
    if (!eps_ok(n->eps))
        return tl_fail("rmsnorm_forward: eps is %g; it must be a finite number >= 0", n->eps);

    tl_tensor *ms = tl_mean(tl_square(x), -1, true);         /* [..., 1] mean of squares */
    tl_tensor *r = tl_rsqrt(tl_add_scalar(ms, n->eps));      /* eps inside the root */
    tl_tensor *normed = tl_mul(x, r);
    tl_tensor *scale = n->unit_offset ? tl_add_scalar(n->weight, 1.0) : n->weight;
    return tl_mul(normed, scale);
}

tl_tensor *pre_norm_residual(tl_tensor *x, const RMSNorm *norm, tl_sublayer_fn sublayer,
                             void *ctx) {
    if (!sublayer) return tl_fail("pre_norm_residual: the sublayer function is NULL");
    tl_tensor *h = rmsnorm_forward(norm, x);
    if (!h) return NULL;
    tl_tensor *out = sublayer(h, ctx);
    if (!out)
        return tl_propagate("pre_norm_residual: the sublayer returned NULL without an error");
    if (!tl_same_shape(out, x)) {
        char xs[64], os[64];
        return tl_fail("pre_norm_residual: the sublayer returned shape %s for an input of shape "
                       "%s; it must keep the shape", tl_shape_str(out, os, sizeof os),
                       tl_shape_str(x, xs, sizeof xs));
    }
    return tl_add(x, out);   /* the raw x: the residual stream skips the norm */
}
