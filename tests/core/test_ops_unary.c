/* Unary elementwise ops (ops.h): values against <math.h> in double, the
 * edge cases that matter downstream, and a gradcheck for each. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"

typedef struct {
    const char *name;
    tl_tensor *(*op)(tl_tensor *);
    double (*ref)(double);
    double lo, hi;   /* a domain where the function is smooth */
} unary_case;

static double ref_neg(double x) { return -x; }
static double ref_square(double x) { return x * x; }
static double ref_rsqrt(double x) { return 1 / sqrt(x); }
static double ref_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double ref_silu(double x) { return x / (1 + exp(-x)); }
static double ref_relu(double x) { return x > 0 ? x : 0; }
static double ref_gelu(double x) { return 0.5 * x * (1 + erf(x / sqrt(2))); }
static double ref_gelu_tanh(double x) {
    return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

static const unary_case CASES[] = {
    { "neg", tl_neg, ref_neg, -3, 3 },
    { "square", tl_square, ref_square, -3, 3 },
    { "sqrt", tl_sqrt, sqrt, 0.5, 4 },
    { "rsqrt", tl_rsqrt, ref_rsqrt, 0.5, 4 },
    { "exp", tl_exp, exp, -3, 3 },
    { "log", tl_log, log, 0.5, 4 },
    { "tanh", tl_tanh, tanh, -3, 3 },
    { "erf", tl_erf, erf, -2, 2 },
    { "sigmoid", tl_sigmoid, ref_sigmoid, -4, 4 },
    { "silu", tl_silu, ref_silu, -4, 4 },
    { "relu", tl_relu, ref_relu, -3, 3 },
    { "gelu", tl_gelu, ref_gelu, -4, 4 },
    { "gelu_tanh", tl_gelu_tanh, ref_gelu_tanh, -4, 4 },
    { "cos", tl_cos, cos, -3, 3 },
    { "sin", tl_sin, sin, -3, 3 },
};
enum { N_CASES = sizeof CASES / sizeof CASES[0] };

START_TEST(values_match_math_h)
{
    tl_pcg32 rng = tl_test_rng(11);
    for (int k = 0; k < N_CASES; k++) {
        tl_tensor *x = tl_rand_uniform(&rng, CASES[k].lo, CASES[k].hi, TL_SHAPE(4, 8));
        tl_tensor *y = CASES[k].op(x);
        tl_assert_ok(y);
        ck_assert(tl_same_shape(x, y));
        for (int64_t i = 0; i < 32; i++) {
            double want = CASES[k].ref(tl_item_at(x, i));
            ck_assert_msg(fabs(tl_item_at(y, i) - want) <= 1e-6 * fmax(1, fabs(want)),
                          "%s(%g) = %.9g, expected %.9g", CASES[k].name, tl_item_at(x, i),
                          tl_item_at(y, i), want);
        }
    }
}
END_TEST

/* Outputs of 2^16 elements and more are cut into pieces the threads share:
 * silu and mul_scalar of 100,003 elements (a ragged last piece) on 3 threads
 * equal the one-thread values bit for bit, and silu is within 1e-6 relative
 * of x / (1 + e^-x) in double. */
START_TEST(large_outputs_are_shared_among_threads)
{
    enum { N = 100003 };
    tl_tensor *x = tl_empty(TL_F32, TL_SHAPE(N));
    tl_assert_ok(x);
    for (int i = 0; i < N; i++) tl_f32(x)[i] = -12.0f + 24.0f * (float)i / (float)N;
    setenv("TINYLLM_THREADS", "1", 1);
    tl_tensor *silu1 = tl_silu(x), *half1 = tl_mul_scalar(x, 0.5);
    setenv("TINYLLM_THREADS", "3", 1);
    tl_tensor *silu3 = tl_silu(x), *half3 = tl_mul_scalar(x, 0.5);
    unsetenv("TINYLLM_THREADS");
    tl_assert_ok(silu1);
    tl_assert_ok(silu3);
    tl_assert_ok(half1);
    tl_assert_ok(half3);
    for (int i = 0; i < N; i++) {
        double v = tl_f32(x)[i], want = v / (1.0 + exp(-v));
        ck_assert_msg(tl_f32(silu3)[i] == tl_f32(silu1)[i] && tl_f32(half3)[i] == 0.5f * (float)v,
                      "element %d differs across thread counts", i);
        ck_assert_msg(fabs(tl_f32(silu3)[i] - want) <= 1e-6 * fabs(want) + 1e-30,
                      "silu(%g) = %.9g, expected %.9g", v, tl_f32(silu3)[i], want);
    }
}
END_TEST

/* An op that calls libm per element (cos, sin, ...) is shared from 4,096
 * elements: rope's tables at prefill. cos and sin of 5,003 angles (a ragged
 * last block) on 1 and 3 threads are each element's cosf and sinf, bit for
 * bit. */
START_TEST(libm_ops_are_shared_from_4096_elements_exactly)
{
    enum { N = 5003 };
    tl_tensor *x = tl_empty(TL_F32, TL_SHAPE(N));
    tl_assert_ok(x);
    for (int i = 0; i < N; i++) tl_f32(x)[i] = (float)i * 0.37f - 900.0f;
    const char *counts[] = {"1", "3"};
    for (int c = 0; c < 2; c++) {
        setenv("TINYLLM_THREADS", counts[c], 1);
        tl_tensor *co = tl_cos(x), *si = tl_sin(x);
        tl_assert_ok(co);
        tl_assert_ok(si);
        for (int i = 0; i < N; i++) {
            float v = tl_f32(x)[i];
            ck_assert_msg(tl_f32(co)[i] == cosf(v) && tl_f32(si)[i] == sinf(v),
                          "%s threads, element %d: cos %.9g sin %.9g, expected %.9g %.9g",
                          counts[c], i, tl_f32(co)[i], tl_f32(si)[i], cosf(v), sinf(v));
        }
    }
    unsetenv("TINYLLM_THREADS");
}
END_TEST

START_TEST(scalar_ops_pow_and_clamp_by_hand)
{
    tl_tensor *x = tl_from_f32((float[]){ -2, 0.5f, 3 }, TL_SHAPE(3));
    ck_assert(tl_item_at(tl_add_scalar(x, 1.5), 0) == -0.5);
    ck_assert(tl_item_at(tl_mul_scalar(x, -2), 2) == -6);
    ck_assert(tl_item_at(tl_pow(x, 2), 0) == 4);
    ck_assert(tl_item_at(tl_pow(x, 3), 0) == -8);
    ck_assert(tl_item_at(tl_pow(x, -1), 1) == 2);
    tl_tensor *c = tl_clamp(x, -1, 1);
    ck_assert(tl_item_at(c, 0) == -1 && tl_item_at(c, 1) == 0.5 && tl_item_at(c, 2) == 1);
    tl_assert_error(tl_clamp(x, 2, 1), "clamp: the bounds 2..1 are empty");
}
END_TEST

START_TEST(gelu_exact_and_tanh_differ_slightly)
{
    tl_tensor *x = tl_from_f32((float[]){ 1.0f }, TL_SHAPE(1));
    double exact = tl_item(tl_gelu(x)), approx = tl_item(tl_gelu_tanh(x));
    ck_assert_double_eq_tol(exact, 0.8413447460685429, 1e-6);
    ck_assert_double_eq_tol(approx, 0.8411919906082768, 1e-6);
}
END_TEST

START_TEST(saturating_functions_stay_finite)
{
    tl_tensor *x = tl_from_f32((float[]){ -100, 100 }, TL_SHAPE(2));
    ck_assert(tl_item_at(tl_sigmoid(x), 0) == 0 && tl_item_at(tl_sigmoid(x), 1) == 1);
    ck_assert(tl_item_at(tl_silu(x), 0) == 0 && tl_item_at(tl_silu(x), 1) == 100);
    ck_assert(tl_item_at(tl_tanh(x), 0) == -1);
    ck_assert(tl_item_at(tl_gelu(x), 0) == 0);
    ck_assert(isinf(tl_item_at(tl_log(tl_zeros(TL_F32, TL_SHAPE(1))), 0)));
}
END_TEST

START_TEST(clamp_and_relu_pass_nan_through)
{
    tl_tensor *x = tl_from_f32((float[]){ NAN }, TL_SHAPE(1));
    ck_assert(isnan(tl_item(tl_clamp(x, -1, 1))));
}
END_TEST

START_TEST(strided_and_bf16_inputs)
{
    tl_tensor *m = tl_from_f32((float[]){ 1, 2, 3, 4 }, TL_SHAPE(2, 2));
    tl_tensor *s = tl_square(tl_transpose(m, 0, 1));
    ck_assert(tl_item_at(s, 1) == 9 && tl_item_at(s, 2) == 4);
    tl_tensor *h = tl_neg(tl_cast(m, TL_BF16));
    ck_assert(h->dtype == TL_F32 && tl_item_at(h, 3) == -4);
}
END_TEST

/* ---- gradchecks ------------------------------------------------------------ */

static tl_tensor *apply_case(tl_tensor *const *in, void *ctx) {
    return ((const unary_case *)ctx)->op(in[0]);
}

START_TEST(gradcheck_every_unary_op)
{
    tl_pcg32 rng = tl_test_rng(12);
    for (int k = 0; k < N_CASES; k++) {
        tl_tensor *x = tl_rand_uniform(&rng, CASES[k].lo, CASES[k].hi, TL_SHAPE(3, 4));
        if (CASES[k].op == tl_relu)   /* keep away from the kink at 0 */
            x = tl_add(x, tl_mul_scalar(tl_sigmoid(tl_mul_scalar(x, 1e4)), 0.1));
        x = tl_requires_grad(tl_clone(x), true);
        double worst = tl_gradcheck(apply_case, (void *)&CASES[k], &x, 1, 1e-3);
        ck_assert_msg(worst >= 0 && worst <= 2e-3, "gradcheck of %s: worst relative error %.3g",
                      CASES[k].name, worst);
    }
}
END_TEST

typedef struct { int which; double a, b; } scalar_ctx;

static tl_tensor *apply_scalar_op(tl_tensor *const *in, void *ctx) {
    const scalar_ctx *c = ctx;
    switch (c->which) {
    case 0: return tl_add_scalar(in[0], c->a);
    case 1: return tl_mul_scalar(in[0], c->a);
    case 2: return tl_pow(in[0], c->a);
    default: return tl_clamp(in[0], c->a, c->b);
    }
}

START_TEST(gradcheck_scalar_ops_pow_and_clamp)
{
    const scalar_ctx cases[] = { { 0, 2.5, 0 }, { 1, -1.5, 0 }, { 2, 3, 0 }, { 2, -0.5, 0 },
                                 { 2, 1.7, 0 }, { 3, 0.9, 1.6 } };
    tl_pcg32 rng = tl_test_rng(13);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        /* values in [0.5, 2) avoid pow's pole; the clamp bounds fall between them */
        float v[6] = { 0.6f, 0.8f, 1.0f, 1.3f, 1.8f, 1.95f };
        tl_tensor *x = tl_requires_grad(tl_from_f32(v, TL_SHAPE(2, 3)), true);
        (void)rng;
        tl_assert_gradcheck(apply_scalar_op, (void *)&cases[k], &x, 1, 2e-3);
    }
}
END_TEST

START_TEST(clamp_gradient_is_zero_outside_the_bounds)
{
    tl_tensor *x = tl_requires_grad(tl_from_f32((float[]){ -2, 0, 2 }, TL_SHAPE(3)), true);
    tl_backward(tl_sum_all(tl_clamp(x, -1, 1)));
    ck_assert(tl_item_at(x->grad, 0) == 0 && tl_item_at(x->grad, 1) == 1 &&
              tl_item_at(x->grad, 2) == 0);
}
END_TEST
