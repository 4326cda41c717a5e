/* ops_unary.c: elementwise functions of one tensor (L0.2).
 *
 * Each op is one line in two tables: its value (forward) and its derivative
 * (backward, given the input x and the output y). The backward of every op
 * is the same: grad_in = grad_out * f'(x).
 */
#include <math.h>
#include <stdbool.h>

#include "internal.h"
#include "tinyllm/kernels.h"

typedef enum {
    NEG, ADD_SCALAR, MUL_SCALAR, SQUARE, POW, SQRT, RSQRT, EXP, LOG, TANH, ERF,
    SIGMOID, SILU, RELU, GELU, GELU_TANH, COS, SIN, CLAMP
} unop;

static const float SQRT_2_OVER_PI = 0.7978845608028654f;   /* gelu_tanh's constant */
static const float GELU_CUBIC = 0.044715f;
static const float INV_SQRT_2PI = 0.3989422804014327f;     /* the normal density at 0 */
static const float TWO_OVER_SQRT_PI = 1.1283791670955126f;

static inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* The loop sits inside each case so it stays a plain, vectorisable loop. */
#define MAP_NOBREAK(expr)                                   \
    _Pragma("omp simd")                                     \
    for (int64_t i = 0; i < n; i++) {                       \
        float x = in[i];                                    \
        out[i] = (expr);                                    \
    }
#define MAP(expr) MAP_NOBREAK(expr) break

/* sigmoid(x), or x * sigmoid(x) for silu, over n <= LOGISTIC_BLOCK values
 * (out, not in, holds e^-x between the passes): the three passes (negate,
 * exp, divide) run over a block that stays in L1, so memory is read and
 * written once. */
enum { LOGISTIC_BLOCK = 1024 };

ELEMENTWISE_CLONES static void logistic_block(bool times_x, const float *in, float *out,
                                              int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) out[i] = -in[i];
    tl_exp_f32_n(out, out, n);
    if (times_x) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) out[i] = in[i] * (1.0f / (1.0f + out[i]));
    } else {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) out[i] = 1.0f / (1.0f + out[i]);
    }
}

ELEMENTWISE_CLONES static void forward(unop op, const float *in, float *out, int64_t n, float p,
                                       float q) {
    switch (op) {
    case NEG: MAP(-x);
    case ADD_SCALAR: MAP(x + p);
    case MUL_SCALAR: MAP(x * p);
    case SQUARE: MAP(x * x);
    case POW: MAP(powf(x, p));
    case SQRT: MAP(sqrtf(x));
    case RSQRT: MAP(1.0f / sqrtf(x));
    case EXP: tl_exp_f32_n(in, out, n); break;
    case LOG: MAP(logf(x));
    case TANH: MAP(tanhf(x));
    case ERF: MAP(erff(x));
    case SIGMOID:   /* 1 / (1 + e^-x), the exps eight at a time */
    case SILU:      /* x / (1 + e^-x) */
        for (int64_t b = 0; b < n; b += LOGISTIC_BLOCK) {
            int64_t len = n - b < LOGISTIC_BLOCK ? n - b : LOGISTIC_BLOCK;
            logistic_block(op == SILU, in + b, out + b, len);
        }
        break;
    case RELU: MAP(x > 0.0f ? x : 0.0f);
    case GELU: MAP(0.5f * x * (1.0f + erff(x * (float)M_SQRT1_2)));
    case GELU_TANH:
        MAP(0.5f * x * (1.0f + tanhf(SQRT_2_OVER_PI * (x + GELU_CUBIC * x * x * x))));
    case COS: MAP(cosf(x));
    case SIN: MAP(sinf(x));
    case CLAMP: MAP(x < p ? p : x > q ? q : x);   /* NaN passes through */
    }
}

/* f'(x), given x and y = f(x). */
static float derivative(unop op, float x, float y, float p, float q) {
    switch (op) {
    case NEG: return -1.0f;
    case ADD_SCALAR: return 1.0f;
    case MUL_SCALAR: return p;
    case SQUARE: return 2.0f * x;
    case POW: return p == 0.0f ? 0.0f : p * powf(x, p - 1.0f);
    case SQRT: return 0.5f / y;
    case RSQRT: return -0.5f * y * y * y;
    case EXP: return y;
    case LOG: return 1.0f / x;
    case TANH: return 1.0f - y * y;
    case ERF: return TWO_OVER_SQRT_PI * expf(-x * x);
    case SIGMOID: return y * (1.0f - y);
    case SILU: {
        float s = sigmoid(x);
        return s * (1.0f + x * (1.0f - s));
    }
    case RELU: return x > 0.0f ? 1.0f : 0.0f;
    case GELU:   /* Phi(x) + x phi(x) */
        return 0.5f * (1.0f + erff(x * (float)M_SQRT1_2)) + x * INV_SQRT_2PI * expf(-0.5f * x * x);
    case GELU_TANH: {
        float t = tanhf(SQRT_2_OVER_PI * (x + GELU_CUBIC * x * x * x));
        float du = SQRT_2_OVER_PI * (1.0f + 3.0f * GELU_CUBIC * x * x);
        return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
    }
    case COS: return -sinf(x);
    case SIN: return cosf(x);
    case CLAMP: return x > p && x < q ? 1.0f : 0.0f;
    }
    return NAN;
}

static int unary_backward(tl_node *node, tl_tensor *g, tl_tensor **grad_in) {
    tl_tensor *x = tl_float_input(node->op, node->inputs[0]);
    tl_tensor *gc = tl_float_input(node->op, g);
    tl_tensor *gin = x && gc ? tl_new_f32(x->ndim, x->shape) : NULL;
    if (!gin) return -1;
    const float *px = tl_data(x), *py = tl_data(node->out), *pg = tl_data(gc);
    float *o = gin->storage->data;
    unop op = (unop)node->i[0];
    float p = (float)node->f[0], q = (float)node->f[1];
    for (int64_t i = 0, n = tl_numel(x); i < n; i++)
        o[i] = pg[i] * derivative(op, px[i], py[i], p, q);
    grad_in[0] = gin;
    return 0;
}

/* Large outputs are shared among threads, one part each (internal.h:
 * SHARE_MIN_ELEMENTS); each element is computed alike on any thread. An op
 * that calls libm per element costs tens of times a pass over memory, so it
 * is shared from LIBM_PARALLEL_MIN elements: rope's cos and sin tables at
 * prefill (8K each per layer) were work one thread did alone on a
 * two-thread prefill. */
enum { LIBM_PARALLEL_MIN = 1 << 12, LIBM_BLOCK = 1 << 9 };

static bool calls_libm(unop op) {
    switch (op) {
    case POW: case LOG: case TANH: case ERF: case GELU: case GELU_TANH: case COS: case SIN:
        return true;
    default:
        return false;
    }
}

typedef struct {
    unop op;
    const float *in;
    float *out;
    float p, q;
} unary_job;

static void unary_block(void *ctx, int64_t begin, int64_t end) {
    const unary_job *j = ctx;
    forward(j->op, j->in + begin, j->out + begin, end - begin, j->p, j->q);
}

static tl_tensor *unary(const char *name, unop op, tl_tensor *t, double p, double q) {
    tl_tensor *x = tl_float_input(name, t);
    tl_tensor *out = x ? tl_new_f32(x->ndim, x->shape) : NULL;
    if (!out) return NULL;
    bool slow = calls_libm(op);
    unary_job j = {op, tl_data(x), out->storage->data, (float)p, (float)q};
    int64_t n = tl_numel(x);
    if (n >= (slow ? LIBM_PARALLEL_MIN : SHARE_MIN_ELEMENTS) && tl_num_threads() > 1)
        tl_parallel_range(tl_num_threads(), n, slow ? LIBM_BLOCK : SHARE_BLOCK_ELEMENTS,
                          unary_block, &j);
    else
        forward(op, j.in, j.out, n, j.p, j.q);
    tl_node *node = tl_record(out, name, unary_backward, 1, &t);
    if (node) {
        node->i[0] = op;
        node->f[0] = p;
        node->f[1] = q;
    }
    return out;
}

tl_tensor *tl_neg(tl_tensor *t) { return unary("neg", NEG, t, 0, 0); }
tl_tensor *tl_add_scalar(tl_tensor *t, double s) {
    return unary("add_scalar", ADD_SCALAR, t, s, 0);
}
tl_tensor *tl_mul_scalar(tl_tensor *t, double s) {
    return unary("mul_scalar", MUL_SCALAR, t, s, 0);
}
tl_tensor *tl_square(tl_tensor *t) { return unary("square", SQUARE, t, 0, 0); }
tl_tensor *tl_pow(tl_tensor *t, double exponent) { return unary("pow", POW, t, exponent, 0); }
tl_tensor *tl_sqrt(tl_tensor *t) { return unary("sqrt", SQRT, t, 0, 0); }
tl_tensor *tl_rsqrt(tl_tensor *t) { return unary("rsqrt", RSQRT, t, 0, 0); }
tl_tensor *tl_exp(tl_tensor *t) { return unary("exp", EXP, t, 0, 0); }
tl_tensor *tl_log(tl_tensor *t) { return unary("log", LOG, t, 0, 0); }
tl_tensor *tl_tanh(tl_tensor *t) { return unary("tanh", TANH, t, 0, 0); }
tl_tensor *tl_erf(tl_tensor *t) { return unary("erf", ERF, t, 0, 0); }
tl_tensor *tl_sigmoid(tl_tensor *t) { return unary("sigmoid", SIGMOID, t, 0, 0); }
tl_tensor *tl_silu(tl_tensor *t) { return unary("silu", SILU, t, 0, 0); }
tl_tensor *tl_relu(tl_tensor *t) { return unary("relu", RELU, t, 0, 0); }
tl_tensor *tl_gelu(tl_tensor *t) { return unary("gelu", GELU, t, 0, 0); }
tl_tensor *tl_gelu_tanh(tl_tensor *t) { return unary("gelu_tanh", GELU_TANH, t, 0, 0); }
tl_tensor *tl_cos(tl_tensor *t) { return unary("cos", COS, t, 0, 0); }
tl_tensor *tl_sin(tl_tensor *t) { return unary("sin", SIN, t, 0, 0); }

tl_tensor *tl_clamp(tl_tensor *t, double lo, double hi) {
    if (!tl_inputs_ok("clamp", 1, t)) return NULL;
    if (!(lo <= hi))
        return tl_fail("clamp: the bounds %g..%g are empty (lo must be <= hi)", lo, hi);
    return unary("clamp", CLAMP, t, lo, hi);
}
