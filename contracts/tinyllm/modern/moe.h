/* tinyllm/modern/moe.h: a mixture of experts and its routers (L7.8).
 *
 * A sparse MoE layer replaces one gated MLP (L7.2) by E of them, the
 * experts, and a router that sends each token to top_k of them:
 *
 *     logits = W_r x                                     W_r [E, H], no bias
 *     (idx, w) = route(logits)                           top_k experts and weights
 *     y = sum over j < top_k, in ascending expert id, of w_j * Expert_{idx_j}(x)
 *         (+ the shared expert(s), below)
 *
 * Each expert runs only on the tokens routed to it: gather its rows
 * (tl_index_select), run the expert, scale by the weights, add the rows back
 * (tl_index_add), experts in ascending id, as transformers 5's experts loop
 * does (models/mixtral/modeling_mixtral.py, MixtralExperts.forward).
 *
 * The routings of the three families (hf-numerics.md section 8):
 *   Mixtral, Qwen2-MoE (softmax-top-k):
 *     p = softmax_fp32(logits); idx = top_k of p; w = p[idx];
 *     if norm_topk_prob: w /= sum(w)      (Mixtral always; Qwen2-MoE's default: no)
 *   DeepSeek-V3 (sigmoid, grouped, biased choice):
 *     s = sigmoid(logits); c = s + e_score_correction_bias        (for the CHOICE only)
 *     group score = sum of the 2 largest c in each of n_group groups of E / n_group;
 *     keep the topk_group best groups and set the other experts' c to 0.0 (HF's fill,
 *     also vLLM's; DeepSeek's own code uses -inf: they differ only when a kept c < 0);
 *     idx = top_k of that c;
 *     w = s[idx] (without the bias); if norm_topk_prob: w /= (sum(w) + 1e-20);
 *     w *= routed_scaling_factor
 * Shared experts run on every token and are added after the routed ones:
 *   Qwen2-MoE: + sigmoid(shared_expert_gate(x)) * shared_expert(x)
 *   DeepSeek-V3: + shared_experts(x)   (size moe_intermediate_size * n_shared_experts)
 *
 * Key names are the checkpoint files' (every transformers version writes and
 * reads per-expert keys; transformers 5 fuses the experts into 3-D
 * parameters in memory at load time, which the course does not):
 *   Mixtral (attached as "block_sparse_moe"): gate.weight [E, H],
 *       experts.{e}.w1.weight (gate) [I, H], experts.{e}.w3.weight (up) [I, H],
 *       experts.{e}.w2.weight (down) [H, I]
 *   Qwen2-MoE (attached as "mlp"): gate.weight, experts.{e}.gate_proj|up_proj|down_proj.weight,
 *       shared_expert.gate_proj|up_proj|down_proj.weight, shared_expert_gate.weight [1, H]
 *   DeepSeek-V3 (attached as "mlp"): experts.{e}.gate_proj|up_proj|down_proj.weight,
 *       gate.weight, gate.e_score_correction_bias [E], shared_experts.*.weight
 * registered in HF's order (Mixtral: gate, experts; Qwen2-MoE: gate, experts,
 * shared_expert, shared_expert_gate; DeepSeek-V3: experts, gate, shared_experts).
 *
 * Memory and autograd follow tensor.h, nn.h and autograd.h: the module tree
 * (MoE.module) owns every parameter; results belong to the current scope and
 * are recorded, so gradients reach x, the router (through the weights w) and
 * the experts a token was routed to; an expert no token chose gets none. The
 * selection itself (top-k, groups) has no gradient, as in HF. Forwards accept
 * F32 or BF16 parameters and inputs and never write into a parameter.
 *
 * Errors: a function that fails returns NULL (or -1) with a message from
 * tl_error() that names the function and what was wrong. A NULL tensor input
 * keeps the message of the call that produced it.
 */
#ifndef TINYLLM_MODERN_MOE_H
#define TINYLLM_MODERN_MOE_H

#include <stdbool.h>
#include <stdint.h>
#include "tinyllm/nn.h"
#include "tinyllm/pcg32.h"
#include "tinyllm/tensor.h"
#include "tinyllm/modern/mlp.h"

/* Which checkpoint layout and which routing. */
typedef enum {
    MOE_MIXTRAL,       /* softmax-top-k, always renormalised; experts w1/w3/w2; no shared */
    MOE_QWEN2_MOE,     /* softmax-top-k, norm_topk_prob; shared_expert + shared_expert_gate */
    MOE_DEEPSEEK_V3,   /* sigmoid + correction bias, groups, scaling; shared_experts */
    MOE_FAMILY_COUNT   /* the number of families, not one of them */
} moe_family;

/* The configuration, in HF's terms (config.json keys in brackets). */
typedef struct {
    moe_family family;
    int64_t hidden;               /* H [hidden_size] */
    int64_t n_experts;            /* E [num_local_experts | num_experts | n_routed_experts] */
    int64_t expert_intermediate;  /* each expert's I [intermediate_size (Mixtral) |
                                   *  moe_intermediate_size] */
    int top_k;                    /* [num_experts_per_tok], 1 <= top_k <= E */
    bool norm_topk_prob;          /* renormalise the top-k weights [norm_topk_prob]; Mixtral
                                   * has no key and always does: must be true for MOE_MIXTRAL */
    tl_activation act;            /* every expert's activation [hidden_act] */
    int64_t shared_intermediate;  /* 0: no shared expert; else its I [Qwen2-MoE:
                                   * shared_expert_intermediate_size; DeepSeek-V3:
                                   * moe_intermediate_size * n_shared_experts] */
    bool shared_expert_gate;      /* Qwen2-MoE: scale the shared expert by sigmoid(W_sg x) */
    int n_group;                  /* DeepSeek-V3 [n_group]: E / n_group experts per group;
                                   * 0 or 1 means no groups (the only choice elsewhere) */
    int topk_group;               /* DeepSeek-V3 [topk_group]: groups kept, 1..n_group
                                   * (0 with n_group 0 or 1) */
    double routed_scaling_factor; /* [routed_scaling_factor]: DeepSeek-V3 2.5; 1.0 elsewhere */
} MoEConfig;

typedef struct {
    tl_module *module;            /* owned: the "MoE" node, children as the family names them */
    tl_module *gate;              /* borrowed: the router, a Linear(H -> E) without bias */
    tl_tensor *e_score_correction_bias; /* DeepSeek-V3: [E] in gate (HF's buffer: it never
                                   * requires a gradient and moe_param_count skips it); else NULL */
    GatedMLP *experts;            /* owned array of n_experts, attached as experts.0 ... */
    GatedMLP shared;              /* the shared expert(s); shared.module NULL when none */
    tl_module *shared_gate;       /* borrowed: Qwen2-MoE's Linear(H -> 1) without bias, or NULL */
    MoEConfig cfg;                /* a copy of the configuration */
} MoE;

/* Where the parent attaches m->module: "block_sparse_moe" (Mixtral) or "mlp";
 * NULL (with an error naming moe_module_name) for an unknown family. */
const char *moe_module_name(moe_family family);

/* Fills *m with a new module tree for cfg, in HF's names and order (above).
 * Parameters are F32; all but the correction bias require a gradient. With
 * rng, the router, each expert (as gated_mlp_init draws) and the shared
 * parts draw in registration order, and the correction bias stays 0; with rng
 * NULL (init=false) everything is zero and no number is drawn.
 * Returns 0, or -1 with an error naming moe_init, the field and its value,
 * when m or cfg is NULL, or cfg is invalid: family unknown; hidden,
 * n_experts or expert_intermediate < 1; top_k outside [1, n_experts]; act not
 * a tl_activation; norm_topk_prob false for Mixtral; shared_intermediate < 0;
 * a shared expert for Mixtral; shared_expert_gate without a shared expert or
 * outside Qwen2-MoE; groups outside DeepSeek-V3; n_group that does not divide
 * n_experts, or groups of fewer than 2 experts; topk_group outside
 * [1, n_group]; top_k larger than the experts of the kept groups
 * (topk_group * E / n_group); routed_scaling_factor not finite and > 0.
 * On error *m holds no module (moe_free is still safe). */
int moe_init(MoE *m, const MoEConfig *cfg, tl_pcg32 *rng);

/* Frees the experts, the shared expert and the module tree (the parts before
 * the whole; the tree is detached from a parent first, nn.h) and clears *m.
 * NULL, a cleared struct and one whose init failed are no-ops. */
void moe_free(MoE *m);

/* The routing of m's family over router logits.
 *   router_logits: F32 or BF16 [N, E] (W_r x for N tokens).
 *   *indices: I64 [N, top_k], each row's experts, in descending order of the
 *     choice score (p for softmax-top-k, c = s + bias for DeepSeek-V3; ties
 *     go to the lower id); no gradient.
 *   *weights: F32 [N, top_k], the matching combine weights (renormalised and
 *     scaled as the family says), recorded: their gradient reaches the logits.
 * Both in the current scope. Returns 0, or -1 with an error naming moe_route
 * (and *indices, *weights set to NULL) when m has no module, an output pointer
 * is NULL, or router_logits is NULL (its message kept) or not [N, E] (the
 * message gives its shape and E). */
int moe_route(const MoE *m, tl_tensor *router_logits, tl_tensor **indices, tl_tensor **weights);

/* y = the MoE layer of x (above).
 *   x: F32 or BF16 [..., H], rank >= 1; returns F32 of x's shape, in the
 *   current scope.
 *   router_logits: may be NULL; otherwise receives the raw router logits
 *   F32 [N, E] (N = numel(x) / H), recorded, for moe_aux_loss (HF's
 *   output_router_logits).
 * Errors (NULL, naming moe_forward): m NULL or without a module; x NULL (its
 * message kept); x's last axis != H (the message gives x's shape and H); the
 * router's weight not [E, H]; errors of the experts (gated_mlp_forward). */
tl_tensor *moe_forward(const MoE *m, tl_tensor *x, tl_tensor **router_logits);

/* The Switch Transformer load-balancing loss, as HF's load_balancing_loss_func
 * (models/mixtral/modeling_mixtral.py) computes it without an attention mask:
 *   p_n = softmax(router_logits_n)   (over E, in float32)
 *   f_e = (1/N) * sum_n sum_{j < top_k} [top-k of p_n, choice j, is e]
 *   P_e = (1/N) * sum_n p_{n,e}
 *   aux = E * sum_e f_e * P_e
 * A perfectly balanced router gives aux = top_k (so does any router whose P
 * is uniform); all tokens on the same top_k experts give up to E. The
 * gradient flows through P only (the counts f are constants).
 *   router_logits: F32 or BF16 [N, E] (several layers' logits concatenated
 *   along axis 0, as HF concatenates them); returns F32 rank 0, in the
 *   current scope. Loss = cross-entropy + router_aux_loss_coef * aux
 *   (Mixtral's coefficient 0.001).
 * Errors (NULL, naming moe_aux_loss): router_logits NULL (its message kept),
 * not rank 2, or with N or E < 1; top_k outside [1, E]. */
tl_tensor *moe_aux_loss(tl_tensor *router_logits, int top_k);

/* The number of parameters, as HF's num_parameters counts them: the router
 * E H, the experts E (3 H I), the shared expert 3 H I_s, and the shared
 * expert gate H; the correction bias (a buffer) is not counted, so this is
 * tl_module_param_count(m->module) - E for DeepSeek-V3 and equal to it
 * otherwise. Returns -1 (with an error naming moe_param_count) when m is NULL
 * or has no module. */
int64_t moe_param_count(const MoE *m);

#endif
