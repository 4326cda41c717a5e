/* The gated MLP and HF's activations (L7.2): the reference.
 *
 * Composed from recorded ops (ops.h) and nn.h's Linear, so autograd gives the
 * gradient of x and of every weight and bias with no backward of our own.
 * Each activation is transformers 5's (activations.py); the ones HF writes
 * as a chain of tensor ops (gelu_fast, quick_gelu, relu2) apply the same
 * ops in the same order.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/mlp.h"

static const char *const ACT_NAMES[TL_ACT_COUNT] = {
    [TL_ACT_SILU] = "silu",
    [TL_ACT_SWISH] = "swish",
    [TL_ACT_GELU] = "gelu",
    [TL_ACT_GELU_PYTORCH_TANH] = "gelu_pytorch_tanh",
    [TL_ACT_GELU_NEW] = "gelu_new",
    [TL_ACT_GELU_FAST] = "gelu_fast",
    [TL_ACT_QUICK_GELU] = "quick_gelu",
    [TL_ACT_RELU] = "relu",
    [TL_ACT_RELU2] = "relu2",
};

static bool act_ok(tl_activation act) { return (unsigned)act < TL_ACT_COUNT; }

int activation_from_name(const char *hf_name, tl_activation *out) {
    if (!out) return tl_fail_status("activation_from_name: the output pointer is NULL");
    for (int a = 0; hf_name && a < TL_ACT_COUNT; a++) {
        if (strcmp(hf_name, ACT_NAMES[a]) == 0) {
            *out = (tl_activation)a;
            return 0;
        }
    }
    char known[256] = "";
    for (int a = 0; a < TL_ACT_COUNT; a++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", a ? ", " : "",
                 ACT_NAMES[a]);
    return tl_fail_status("activation_from_name: unknown activation \"%s\" (the config's "
                          "hidden_act); the known names are %s", hf_name ? hf_name : "(NULL)",
                          known);
}

const char *activation_name(tl_activation act) {
    if (!act_ok(act))
        return tl_fail("activation_name: %d is not a tl_activation (0 to %d)", (int)act,
                       TL_ACT_COUNT - 1);
    return ACT_NAMES[act];
}

/* HF's FastGELUActivation: 0.5 x (1 + tanh(x * 0.7978845608 * (1 + 0.044715 x x))). */
static tl_tensor *gelu_fast(tl_tensor *x) {
    tl_tensor *quadratic = tl_add_scalar(tl_mul(tl_mul_scalar(x, 0.044715), x), 1.0);
    tl_tensor *inner = tl_mul(tl_mul_scalar(x, 0.7978845608), quadratic);
    return tl_mul(tl_mul_scalar(x, 0.5), tl_add_scalar(tl_tanh(inner), 1.0));
}

tl_tensor *activation_forward(tl_activation act, tl_tensor *x) {
    if (!x) return tl_propagate("activation_forward: x is NULL");
    switch (act) {
    case TL_ACT_SILU:
    case TL_ACT_SWISH: return tl_silu(x);
    case TL_ACT_GELU: return tl_gelu(x);
    case TL_ACT_GELU_PYTORCH_TANH:
    case TL_ACT_GELU_NEW: return tl_gelu_tanh(x);
    case TL_ACT_GELU_FAST: return gelu_fast(x);
    case TL_ACT_QUICK_GELU: return tl_mul(x, tl_sigmoid(tl_mul_scalar(x, 1.702)));
    case TL_ACT_RELU: return tl_relu(x);
    case TL_ACT_RELU2: return tl_square(tl_relu(x));
    case TL_ACT_COUNT: break;
    }
    return tl_fail("activation_forward: %d is not a tl_activation (0 to %d)", (int)act,
                   TL_ACT_COUNT - 1);
}

/* ---- the gated MLP -------------------------------------------------------- */

static bool child_name_ok(const char *fn, const char *role, const char *name) {
    if (name && *name && !strchr(name, '.')) return true;
    tl_fail("%s: the %s projection's name is %s%s%s; give it the checkpoint's name (e.g. "
            "\"%s_proj\", or Mixtral's w1/w3/w2) with no '.'", fn, role, name ? "\"" : "",
            name ? name : "NULL", name ? "\"" : "", role);
    return false;
}

static int init_mlp(const char *fn, GatedMLP *m, int64_t hidden, int64_t intermediate,
                    tl_activation act, bool bias, const char *const names[3], tl_pcg32 *rng) {
    if (!m) return tl_fail_status("%s: the GatedMLP pointer is NULL", fn);
    memset(m, 0, sizeof *m);
    if (hidden < 1 || intermediate < 1)
        return tl_fail_status("%s: hidden is %lld and intermediate is %lld; both must be at "
                              "least 1", fn, (long long)hidden, (long long)intermediate);
    if (!act_ok(act))
        return tl_fail_status("%s: %d is not a tl_activation; use activation_from_name", fn,
                              (int)act);
    static const char *const roles[3] = {"gate", "up", "down"};
    for (int i = 0; i < 3; i++) {
        if (!child_name_ok(fn, roles[i], names[i])) return -1;
        for (int j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                return tl_fail_status("%s: the %s and %s projections are both named \"%s\"; "
                                      "names must differ", fn, roles[j], roles[i], names[i]);
    }
    /* HF's order: gate, up, down; each Linear draws its weight, then its bias. */
    tl_module *root = tl_module_new("GatedMLP");
    tl_module *gate = tl_module_add(root, names[0], tl_linear_new(hidden, intermediate, bias, rng));
    tl_module *up = gate ? tl_module_add(root, names[1],
                                         tl_linear_new(hidden, intermediate, bias, rng)) : NULL;
    tl_module *down = up ? tl_module_add(root, names[2],
                                         tl_linear_new(intermediate, hidden, bias, rng)) : NULL;
    if (!down) {
        tl_module_free(root);
        return -1;
    }
    *m = (GatedMLP){.module = root, .gate_proj = gate, .up_proj = up, .down_proj = down,
                    .act = act, .hidden = hidden, .intermediate = intermediate, .bias = bias};
    return 0;
}

int gated_mlp_init(GatedMLP *m, int64_t hidden, int64_t intermediate, tl_activation act,
                   bool bias, tl_pcg32 *rng) {
    const char *const names[3] = {"gate_proj", "up_proj", "down_proj"};
    return init_mlp("gated_mlp_init", m, hidden, intermediate, act, bias, names, rng);
}

int gated_mlp_init_named(GatedMLP *m, int64_t hidden, int64_t intermediate, tl_activation act,
                         bool bias, const char *gate_name, const char *up_name,
                         const char *down_name, tl_pcg32 *rng) {
    const char *const names[3] = {gate_name, up_name, down_name};
    return init_mlp("gated_mlp_init_named", m, hidden, intermediate, act, bias, names, rng);
}

void gated_mlp_free(GatedMLP *m) {
    if (!m) return;
    tl_module_free(m->module);
    memset(m, 0, sizeof *m);
}

/* A projection's weight must be [out, in]: a checkpoint of another config
 * would otherwise fail deep inside a matmul, or not at all when I == H. */
static bool projection_ok(const tl_module *linear, const char *role, int64_t out, int64_t in) {
    tl_tensor *w = linear ? tl_module_param(linear, "weight") : NULL;
    if (w && w->ndim == 2 && w->shape[0] == out && w->shape[1] == in) return true;
    char ws[64] = "(none)";
    if (w) tl_shape_str(w, ws, sizeof ws);
    tl_fail("gated_mlp_forward: %s_proj's weight has shape %s; expected [%lld, %lld] = %s",
            role, ws, (long long)out, (long long)in,
            role[0] == 'd' ? "[hidden, intermediate]" : "[intermediate, hidden]");
    return false;
}

tl_tensor *gated_mlp_forward(const GatedMLP *m, tl_tensor *x) {
    if (!m || !m->module)
        return tl_fail("gated_mlp_forward: the MLP is NULL or has no module (call "
                       "gated_mlp_init first)");
    if (!x) return tl_propagate("gated_mlp_forward: x is NULL");
    if (x->ndim < 1 || x->shape[x->ndim - 1] != m->hidden) {
        char xs[64];
        return tl_fail("gated_mlp_forward: x has shape %s but the MLP's hidden size is %lld; "
                       "the last axis of x must be hidden", tl_shape_str(x, xs, sizeof xs),
                       (long long)m->hidden);
    }
    if (!projection_ok(m->gate_proj, "gate", m->intermediate, m->hidden) ||
        !projection_ok(m->up_proj, "up", m->intermediate, m->hidden) ||
        !projection_ok(m->down_proj, "down", m->hidden, m->intermediate))
        return NULL;
    if (!act_ok(m->act))
        return tl_fail("gated_mlp_forward: %d is not a tl_activation", (int)m->act);

    tl_tensor *gate = tl_linear_forward(m->gate_proj, x);      /* [..., I] */
    tl_tensor *up = tl_linear_forward(m->up_proj, x);          /* [..., I] */
    tl_tensor *hidden = tl_mul(activation_forward(m->act, gate), up);
    return tl_linear_forward(m->down_proj, hidden);            /* [..., H] */
}

int64_t gated_mlp_param_count(const GatedMLP *m) {
    if (!m || m->hidden < 1 || m->intermediate < 1)
        return tl_fail_status("gated_mlp_param_count: the MLP is NULL or not initialised");
    int64_t h = m->hidden, i = m->intermediate;
    return 3 * h * i + (m->bias ? 2 * i + h : 0);
}

/* ---- gpt-oss's clamped SwiGLU ------------------------------------------------ */

tl_tensor *gpt_oss_swiglu(tl_tensor *gate_up, double alpha, double limit) {
    if (!gate_up) return tl_propagate("gpt_oss_swiglu: gate_up is NULL");
    char gs[64];
    int nd = gate_up->ndim;
    if (nd < 1 || nd >= TL_MAX_DIMS || gate_up->shape[nd - 1] < 2 ||
        gate_up->shape[nd - 1] % 2 != 0)
        return tl_fail("gpt_oss_swiglu: gate_up has shape %s; its last axis must be 2 * "
                       "intermediate (gate and up interleaved), and its rank 1 to %d",
                       tl_shape_str(gate_up, gs, sizeof gs), TL_MAX_DIMS - 1);
    if (!isfinite(alpha) || !isfinite(limit) || limit < 0)
        return tl_fail("gpt_oss_swiglu: alpha %g and limit %g must be finite, limit >= 0 "
                       "(gpt-oss: 1.702 and swiglu_limit 7.0)", alpha, limit);

    /* [..., 2I] as [..., I, 2]: column 2i is gate i, column 2i + 1 is up i. */
    int64_t shape[TL_MAX_DIMS];
    memcpy(shape, gate_up->shape, sizeof(int64_t) * (size_t)nd);
    shape[nd - 1] /= 2;
    shape[nd] = 2;
    tl_tensor *pairs = tl_reshape(gate_up, nd + 1, shape);
    tl_tensor *gate = tl_squeeze(tl_narrow(pairs, -1, 0, 1), -1);
    tl_tensor *up = tl_squeeze(tl_narrow(pairs, -1, 1, 1), -1);

    tl_tensor *g = tl_clamp(gate, -INFINITY, limit);           /* from above only */
    tl_tensor *u = tl_clamp(up, -limit, limit);
    tl_tensor *glu = tl_mul(g, tl_sigmoid(tl_mul_scalar(g, alpha)));
    return tl_mul(tl_add_scalar(u, 1.0), glu);
}
