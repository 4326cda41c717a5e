/* testing.c: comparisons, gradient checks and random data (testing.h). */
#include <check.h>
#include <math.h>
#include <stdio.h>

#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"

/* ---- comparisons ------------------------------------------------------- */

static void index_str(const tl_tensor *t, int64_t i, char *buf, size_t size) {
    int64_t idx[TL_MAX_DIMS];
    for (int d = t->ndim - 1; d >= 0; d--) {
        idx[d] = t->shape[d] ? i % t->shape[d] : 0;
        i = t->shape[d] ? i / t->shape[d] : 0;
    }
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < t->ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", d ? ", " : "",
                                 (long long)idx[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

bool tl_close_report(const tl_tensor *actual, const tl_tensor *expected, double rtol,
                     double atol, char *msg, size_t msg_size) {
    char a[96], e[96];
    if (msg && msg_size) msg[0] = '\0';
    if (!actual || !expected) {
        if (msg) snprintf(msg, msg_size, "%s is NULL (%s)", actual ? "expected" : "actual",
                          tl_error() ? tl_error() : "no error message");
        return false;
    }
    if (!tl_same_shape(actual, expected)) {
        if (msg) snprintf(msg, msg_size, "shapes differ: actual %s, expected %s",
                          tl_shape_str(actual, a, sizeof a), tl_shape_str(expected, e, sizeof e));
        return false;
    }
    /* worst = the element furthest past its tolerance (a lone NaN is infinitely far) */
    int64_t n = tl_numel(actual), bad = 0, worst = -1;
    double worst_excess = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double x = tl_item_at(actual, i), y = tl_item_at(expected, i);
        if ((isnan(x) && isnan(y)) || x == y) continue;
        double excess = isnan(x) || isnan(y) ? INFINITY : fabs(x - y) - (atol + rtol * fabs(y));
        if (excess <= 0) continue;
        bad++;
        if (excess > worst_excess) {
            worst_excess = excess;
            worst = i;
        }
    }
    if (bad == 0) return true;
    if (msg) {
        double x = tl_item_at(actual, worst), y = tl_item_at(expected, worst);
        index_str(actual, worst, a, sizeof a);
        snprintf(msg, msg_size,
                 "%lld of %lld elements differ; worst at %s: actual %.9g, expected %.9g, "
                 "abs err %.3g, rel err %.3g (rtol %.3g, atol %.3g)",
                 (long long)bad, (long long)n, a, x, y, fabs(x - y),
                 y != 0 ? fabs(x - y) / fabs(y) : INFINITY, rtol, atol);
    }
    return false;
}

/* ---- random data ------------------------------------------------------- */

/* Every test stream uses one fixed PCG sequence; the seed picks the start. */
enum { TEST_STREAM = 0x7e57 };

tl_pcg32 tl_test_rng(uint64_t seed) {
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, seed, TEST_STREAM);
    return rng;
}

tl_tensor *tl_randn(tl_pcg32 *rng, int ndim, const int64_t *shape) {
    tl_tensor *t = tl_empty(TL_F32, ndim, shape);
    float *p = t ? tl_f32(t) : NULL;
    for (int64_t i = 0; p && i < tl_numel(t); i++) p[i] = (float)tl_pcg32_normal(rng);
    return t;
}

tl_tensor *tl_rand_uniform(tl_pcg32 *rng, double lo, double hi, int ndim, const int64_t *shape) {
    tl_tensor *t = tl_empty(TL_F32, ndim, shape);
    float *p = t ? tl_f32(t) : NULL;
    for (int64_t i = 0; p && i < tl_numel(t); i++)
        p[i] = (float)(lo + (hi - lo) * tl_pcg32_uniform(rng));
    return t;
}

/* ---- gradcheck --------------------------------------------------------- */

static int set_flat(tl_tensor *t, int64_t i, double v) {
    int64_t idx[TL_MAX_DIMS];
    for (int d = t->ndim - 1; d >= 0; d--) {
        idx[d] = i % t->shape[d];
        i /= t->shape[d];
    }
    return tl_set(t, idx, v);
}

/* sum(f(inputs) * R) in double, in a scope of its own. */
static bool weighted_loss(tl_grad_fn f, void *ctx, tl_tensor *const *inputs,
                          const tl_tensor *r, double *loss) {
    tl_scope_push();
    tl_tensor *out = f(inputs, ctx);
    bool ok = out && tl_same_shape(out, r);
    *loss = 0.0;
    for (int64_t i = 0; ok && i < tl_numel(out); i++)
        *loss += tl_item_at(out, i) * tl_item_at(r, i);
    tl_scope_pop();
    return ok;
}

static double check_inputs(tl_grad_fn f, void *ctx, tl_tensor *const *inputs, int n, double eps,
                           const tl_tensor *r) {
    double worst = 0.0;
    for (int k = 0; k < n; k++) {
        tl_tensor *x = inputs[k];
        if (!x || !x->requires_grad) continue;
        for (int64_t i = 0; i < tl_numel(x); i++) {
            double orig = tl_item_at(x, i), lp, lm;
            set_flat(x, i, orig + eps);
            double xp = tl_item_at(x, i);   /* the step the dtype really took */
            bool ok = weighted_loss(f, ctx, inputs, r, &lp);
            set_flat(x, i, orig - eps);
            double xm = tl_item_at(x, i);
            ok = ok && weighted_loss(f, ctx, inputs, r, &lm);
            set_flat(x, i, orig);
            if (!ok) return -1;
            double numeric = (lp - lm) / (xp - xm);
            double analytic = x->grad ? tl_item_at(x->grad, i) : 0.0;
            double err = fabs(analytic - numeric) /
                         fmax(1.0, fmax(fabs(analytic), fabs(numeric)));
            if (isnan(err)) return INFINITY;
            if (err > worst) worst = err;
        }
    }
    return worst;
}

double tl_gradcheck(tl_grad_fn f, void *ctx, tl_tensor *const *inputs, int n, double eps) {
    for (int k = 0; k < n; k++) {
        if (!inputs[k]) return tl_propagate_status("gradcheck: input %d is NULL", k + 1);
        if (inputs[k]->requires_grad && inputs[k]->grad_fn)
            return tl_fail_status("gradcheck: input %d is the result of an op, not a leaf "
                                  "(make it with tl_requires_grad on a fresh tensor)", k + 1);
        tl_zero_grad(inputs[k]);
    }
    tl_scope_push();
    tl_tensor *out = f(inputs, ctx);
    tl_pcg32 rng = tl_test_rng(20240601);
    tl_tensor *r = out ? tl_randn(&rng, out->ndim, out->shape) : NULL;
    tl_tensor *loss = tl_sum_all(tl_mul(out, r));
    double worst = -1;
    if (loss && tl_backward(loss) == 0) {
        tl_no_grad_push();
        worst = check_inputs(f, ctx, inputs, n, eps, r);
        tl_no_grad_pop();
    }
    tl_scope_pop();
    return worst;
}
