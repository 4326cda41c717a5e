/* tinyllm/modern/mlp.h: the gated MLP and the activations HF names (L7.2).
 *
 * Every Llama-family block ends with a gated MLP ("SwiGLU" when the
 * activation is SiLU), Hugging Face's LlamaMLP:
 *
 *     y = down_proj( act(gate_proj(x)) * up_proj(x) )
 *       = W_d (act(W_g x + b_g) (.) (W_u x + b_u)) + b_d
 *
 * with Linear weights stored [out, in] as HF stores them: gate_proj and
 * up_proj [intermediate, hidden], down_proj [hidden, intermediate]. The
 * activation is applied to the GATE only, before the elementwise product;
 * up_proj stays linear. Biases exist only when the config says so (HF's
 * mlp_bias: Llama and DeepSeek-V2 allow it; most checkpoints have none).
 *
 * The activation comes from the config's "hidden_act" (Gemma-2/3:
 * "hidden_activation") by HF's own name, as transformers 5's ACT2FN
 * (src/transformers/activations.py) computes it:
 *
 *     silu, swish          x * sigmoid(x)
 *     gelu                 0.5 x (1 + erf(x / sqrt 2))                     (exact)
 *     gelu_pytorch_tanh,   0.5 x (1 + tanh(0.7978845608028654 (x + 0.044715 x^3)))
 *     gelu_new
 *     gelu_fast            0.5 x (1 + tanh(0.7978845608 x (1 + 0.044715 x^2)))
 *     quick_gelu           x * sigmoid(1.702 x)
 *     relu                 max(x, 0)
 *     relu2                max(x, 0)^2
 *
 * The tanh forms approximate the exact gelu: they differ from it by up to
 * 4.7e-4 (at |x| = 2.7; 4.1e-4 at x = 3), thousands of times float32's
 * rounding, so a checkpoint trained with one must run with that one.
 *
 * Memory and autograd follow tensor.h, nn.h and autograd.h: parameters are
 * owned by the module tree (GatedMLP.module) and freed by gated_mlp_free;
 * forward results belong to the current scope and are built from recorded
 * ops, so gradients reach x and every weight and bias. A forward never writes
 * into a parameter, and accepts F32 or BF16 parameters and inputs (BF16 is
 * widened exactly).
 *
 * Errors: a function that fails returns NULL (or -1) with a message from
 * tl_error() that names the function and what was wrong. A NULL tensor input
 * keeps the message of the call that produced it.
 */
#ifndef TINYLLM_MODERN_MLP_H
#define TINYLLM_MODERN_MLP_H

#include <stdbool.h>
#include <stdint.h>
#include "tinyllm/nn.h"
#include "tinyllm/pcg32.h"
#include "tinyllm/tensor.h"

/* ---- activations by HF name ------------------------------------------- */

/* One value per HF name, so a config read and written back keeps its name
 * (gelu_new and gelu_pytorch_tanh compute the same function; so do silu and
 * swish). */
typedef enum {
    TL_ACT_SILU,              /* "silu" */
    TL_ACT_SWISH,             /* "swish" (the same function as silu) */
    TL_ACT_GELU,              /* "gelu": exact, with erf */
    TL_ACT_GELU_PYTORCH_TANH, /* "gelu_pytorch_tanh": the tanh approximation */
    TL_ACT_GELU_NEW,          /* "gelu_new": the same tanh approximation */
    TL_ACT_GELU_FAST,         /* "gelu_fast": the tanh approximation, factored */
    TL_ACT_QUICK_GELU,        /* "quick_gelu": x * sigmoid(1.702 x) */
    TL_ACT_RELU,              /* "relu" */
    TL_ACT_RELU2,             /* "relu2": relu squared */
    TL_ACT_COUNT              /* the number of activations, not one of them */
} tl_activation;

/* Looks up HF's name (exact, case-sensitive: "silu", "gelu_pytorch_tanh", ...)
 * and writes its value to *out. Returns 0, or -1 with an error naming
 * activation_from_name, the name given, and every known name, when hf_name
 * is NULL or not one of the names above (*out is left unchanged then). */
int activation_from_name(const char *hf_name, tl_activation *out);

/* HF's name of act ("silu", ...), a static string; NULL (with an error
 * naming activation_name) when act is not a tl_activation. */
const char *activation_name(tl_activation act);

/* y = act(x), elementwise, by the formula of the table above.
 *   x: F32 or BF16, any shape and strides; returns F32 of x's shape, in the
 *   current scope, recorded by autograd (relu's and relu2's gradient at 0 is 0).
 * Stays finite wherever its value is: sigmoid(-100) is 0, not NaN.
 * Errors (NULL, naming activation_forward): x NULL (its message kept); act
 * not a tl_activation. */
tl_tensor *activation_forward(tl_activation act, tl_tensor *x);

/* ---- the gated MLP -------------------------------------------------------- */

typedef struct {
    tl_module *module;        /* owned: the "GatedMLP" node; children gate_proj, up_proj,
                               * down_proj (or the names given), each a Linear */
    tl_module *gate_proj;     /* borrowed from module: Linear(hidden -> intermediate) */
    tl_module *up_proj;       /* borrowed: Linear(hidden -> intermediate) */
    tl_module *down_proj;     /* borrowed: Linear(intermediate -> hidden) */
    tl_activation act;        /* applied to gate_proj's output */
    int64_t hidden;           /* H: hidden_size, the width of x and y */
    int64_t intermediate;     /* I: intermediate_size (an expert's moe_intermediate_size) */
    bool bias;                /* HF's mlp_bias: every projection has a bias */
} GatedMLP;

/* Fills *m with a new module tree whose children are registered in HF's order
 * gate_proj, up_proj, down_proj, so that a parent attaching m->module as
 * "mlp" has HF's state_dict keys in HF's order:
 *     gate_proj.weight [I, H], (gate_proj.bias [I],) up_proj.weight [I, H],
 *     (up_proj.bias [I],) down_proj.weight [H, I] (, down_proj.bias [H]).
 * Parameters are F32 and require a gradient. With rng, each Linear draws its
 * weight and then its bias from U(-1/sqrt(in), 1/sqrt(in)) (PyTorch's default,
 * nn.h), in that order; with rng NULL (init=false) every parameter is zero and
 * no number is drawn.
 * Returns 0, or -1 with an error naming gated_mlp_init when m is NULL,
 * hidden < 1 or intermediate < 1, act is not a tl_activation, or memory runs
 * out; on error *m holds no module (gated_mlp_free is still safe). */
int gated_mlp_init(GatedMLP *m, int64_t hidden, int64_t intermediate, tl_activation act,
                   bool bias, tl_pcg32 *rng);

/* As gated_mlp_init, with the three children named as a checkpoint names
 * them: Mixtral's experts are gate = "w1", up = "w3", down = "w2". The
 * children are registered in the order gate, up, down whatever their names
 * (a checkpoint stores its keys sorted by name and loads by name, so only a
 * listing of the state dict shows the order). Errors as gated_mlp_init, and
 * (naming gated_mlp_init_named) a name that is NULL, empty, contains '.', or
 * repeats another. */
int gated_mlp_init_named(GatedMLP *m, int64_t hidden, int64_t intermediate, tl_activation act,
                         bool bias, const char *gate_name, const char *up_name,
                         const char *down_name, tl_pcg32 *rng);

/* Frees the module tree (detaching it from a parent first, nn.h) and clears
 * *m. NULL, a cleared struct and one whose init failed are no-ops. Free a
 * GatedMLP before the module it is attached to (the parts before the whole). */
void gated_mlp_free(GatedMLP *m);

/* y = down_proj(act(gate_proj(x)) * up_proj(x)).
 *   x: F32 or BF16 [..., hidden], rank >= 1, any strides.
 *   returns: F32 [..., hidden], in the current scope.
 * Errors (NULL, naming gated_mlp_forward): m NULL or without a module (init
 * never ran or failed); x NULL (its message kept); x's last axis != hidden
 * (the message gives x's shape, e.g. "[2, 5, 12]", and hidden); a projection
 * whose weight is not [out, in] (the message names it and both shapes, e.g.
 * "gate_proj's weight has shape [16, 8]; expected [12, 8]": a checkpoint of
 * another config); act not a tl_activation. */
tl_tensor *gated_mlp_forward(const GatedMLP *m, tl_tensor *x);

/* The number of parameters: 3 * hidden * intermediate, plus 2 * intermediate
 * + hidden with biases (SmolLM2-135M's MLP: 3 * 576 * 1536 = 2,654,208).
 * Computed from m's fields; equals tl_module_param_count(m->module).
 * Returns -1 (with an error naming gated_mlp_param_count) when m is NULL or
 * hidden or intermediate < 1. */
int64_t gated_mlp_param_count(const GatedMLP *m);

/* ---- gpt-oss's clamped SwiGLU (GptOssExperts._apply_gate) ----------------- */

/* gpt-oss fuses gate and up into one projection whose output INTERLEAVES
 * them: gate = gate_up[..., 0::2] (even columns), up = gate_up[..., 1::2]
 * (odd columns). Then, with alpha = 1.702 and limit = swiglu_limit = 7.0:
 *
 *     g = min(gate, limit)                  (clamped from above only)
 *     u = clamp(up, -limit, limit)
 *     h = (u + 1) * g * sigmoid(alpha * g)
 *
 *   gate_up: F32 or BF16 [..., 2 I], rank >= 1; returns F32 [..., I], in the
 *   current scope, recorded by autograd (no gradient where a clamp is active).
 * Errors (NULL, naming gpt_oss_swiglu): gate_up NULL (its message kept); its
 * last axis odd or 0 (the message gives the shape); alpha or limit NaN or
 * infinite, or limit < 0. */
tl_tensor *gpt_oss_swiglu(tl_tensor *gate_up, double alpha, double limit);

#endif
