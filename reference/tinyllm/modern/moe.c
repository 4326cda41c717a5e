/* A mixture of experts and its routers (L7.8): the reference.
 *
 * The router and the weights it gives are recorded ops, so autograd reaches
 * the router and the chosen experts; the choice (top-k, groups) is not
 * differentiable and is made on plain numbers, as HF makes it under
 * torch.no_grad. Each expert runs on its own tokens only: gather, expert,
 * scale, scatter-add, in ascending expert id (MixtralExperts.forward).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tinyllm/autograd.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/moe.h"

const char *moe_module_name(moe_family family) {
    switch (family) {
    case MOE_MIXTRAL: return "block_sparse_moe";
    case MOE_QWEN2_MOE:
    case MOE_DEEPSEEK_V3: return "mlp";
    case MOE_FAMILY_COUNT: break;
    }
    return tl_fail("moe_module_name: %d is not a moe_family", (int)family);
}

/* ---- the configuration ----------------------------------------------------- */

static int bad(const char *what) {
    return tl_fail_status("moe_init: %s", what);
}

/* Every rule of moe.h's moe_init, in order; 0 when cfg is valid. */
static int check_config(const MoEConfig *c) {
    char msg[256];
    if ((unsigned)c->family >= MOE_FAMILY_COUNT) return bad("family is not a moe_family");
    bool grouped = c->family == MOE_DEEPSEEK_V3;
    int groups = c->n_group > 1 ? c->n_group : 1;
    if (c->hidden < 1 || c->n_experts < 1 || c->expert_intermediate < 1) {
        snprintf(msg, sizeof msg, "hidden %lld, n_experts %lld and expert_intermediate %lld must "
                 "all be at least 1", (long long)c->hidden, (long long)c->n_experts,
                 (long long)c->expert_intermediate);
        return bad(msg);
    }
    if (c->top_k < 1 || c->top_k > c->n_experts) {
        snprintf(msg, sizeof msg, "top_k %d is outside [1, n_experts = %lld] "
                 "(num_experts_per_tok)", c->top_k, (long long)c->n_experts);
        return bad(msg);
    }
    if ((unsigned)c->act >= TL_ACT_COUNT) return bad("act is not a tl_activation");
    if (c->family == MOE_MIXTRAL && !c->norm_topk_prob)
        return bad("norm_topk_prob is false, but Mixtral always renormalises its top-k "
                   "weights: set it true");
    if (c->shared_intermediate < 0) return bad("shared_intermediate is negative (0: none)");
    if (c->family == MOE_MIXTRAL && c->shared_intermediate > 0)
        return bad("Mixtral has no shared expert: set shared_intermediate 0");
    if (c->shared_expert_gate && (c->family != MOE_QWEN2_MOE || c->shared_intermediate == 0))
        return bad("shared_expert_gate needs a shared expert and exists only in Qwen2-MoE");
    if (!grouped && (c->n_group > 1 || c->topk_group > 1)) {
        snprintf(msg, sizeof msg, "n_group %d and topk_group %d: groups exist only in "
                 "DeepSeek-V3's routing; leave them 0", c->n_group, c->topk_group);
        return bad(msg);
    }
    if (grouped && (c->n_group < 0 || c->n_experts % groups != 0 ||
                    (groups > 1 && c->n_experts / groups < 2))) {
        snprintf(msg, sizeof msg, "n_group %d must divide n_experts %lld into groups of at "
                 "least 2 experts", c->n_group, (long long)c->n_experts);
        return bad(msg);
    }
    int kept = c->topk_group > 0 ? c->topk_group : groups;
    if (grouped && (c->topk_group < 0 || kept > groups ||
                    (groups > 1 && c->topk_group < 1))) {
        snprintf(msg, sizeof msg, "topk_group %d is outside [1, n_group = %d]", c->topk_group,
                 groups);
        return bad(msg);
    }
    if (grouped && c->top_k > kept * (c->n_experts / groups)) {
        snprintf(msg, sizeof msg, "top_k %d is more than the %lld experts of the %d kept groups",
                 c->top_k, (long long)(kept * (c->n_experts / groups)), kept);
        return bad(msg);
    }
    if (!isfinite(c->routed_scaling_factor) || !(c->routed_scaling_factor > 0)) {
        snprintf(msg, sizeof msg, "routed_scaling_factor is %g; it must be finite and > 0 (1.0, "
                 "or DeepSeek-V3's 2.5)", c->routed_scaling_factor);
        return bad(msg);
    }
    return 0;
}

/* ---- the module tree ---------------------------------------------------------- */

/* The router: HF's gate, a Linear(H -> E) without bias; DeepSeek-V3 adds the
 * correction bias, a buffer that never trains. */
static int add_router(MoE *m, tl_pcg32 *rng) {
    const MoEConfig *c = &m->cfg;
    m->gate = tl_module_add(m->module, "gate", tl_linear_new(c->hidden, c->n_experts, false, rng));
    if (!m->gate) return -1;
    if (c->family == MOE_DEEPSEEK_V3) {
        m->e_score_correction_bias = tl_module_param_new(m->gate, "e_score_correction_bias",
                                                         TL_SHAPE(c->n_experts));
        if (!m->e_score_correction_bias) return -1;
        tl_requires_grad(m->e_score_correction_bias, false);
    }
    return 0;
}

static int add_experts(MoE *m, tl_pcg32 *rng) {
    const MoEConfig *c = &m->cfg;
    tl_module *list = tl_module_add(m->module, "experts", tl_module_list_new());
    m->experts = list ? calloc((size_t)c->n_experts, sizeof *m->experts) : NULL;
    if (!m->experts) return list ? bad("out of memory for the experts") : -1;
    bool mixtral = c->family == MOE_MIXTRAL;
    for (int64_t e = 0; e < c->n_experts; e++) {
        GatedMLP *x = &m->experts[e];
        int rc = mixtral ? gated_mlp_init_named(x, c->hidden, c->expert_intermediate, c->act,
                                                false, "w1", "w3", "w2", rng)
                         : gated_mlp_init(x, c->hidden, c->expert_intermediate, c->act, false, rng);
        if (rc != 0) return -1;
        if (!tl_module_list_append(list, x->module)) {
            x->module = NULL;   /* a failed append frees it */
            return -1;
        }
    }
    return 0;
}

static int add_shared(MoE *m, tl_pcg32 *rng) {
    const MoEConfig *c = &m->cfg;
    if (c->shared_intermediate == 0) return 0;
    if (gated_mlp_init(&m->shared, c->hidden, c->shared_intermediate, c->act, false, rng) != 0)
        return -1;
    const char *name = c->family == MOE_DEEPSEEK_V3 ? "shared_experts" : "shared_expert";
    if (!tl_module_add(m->module, name, m->shared.module)) {
        m->shared.module = NULL;   /* a failed add frees it */
        return -1;
    }
    if (!c->shared_expert_gate) return 0;
    m->shared_gate = tl_module_add(m->module, "shared_expert_gate",
                                   tl_linear_new(c->hidden, 1, false, rng));
    return m->shared_gate ? 0 : -1;
}

int moe_init(MoE *m, const MoEConfig *cfg, tl_pcg32 *rng) {
    if (!m || !cfg) return bad(m ? "the config is NULL" : "the MoE pointer is NULL");
    memset(m, 0, sizeof *m);
    if (check_config(cfg) != 0) return -1;
    m->cfg = *cfg;
    m->module = tl_module_new("MoE");
    /* HF's registration order: DeepSeek-V3 lists its experts before the gate. */
    bool experts_first = cfg->family == MOE_DEEPSEEK_V3;
    int rc = !m->module ? -1
             : experts_first ? (add_experts(m, rng) || add_router(m, rng) || add_shared(m, rng))
                             : (add_router(m, rng) || add_experts(m, rng) || add_shared(m, rng));
    if (rc != 0) {
        moe_free(m);
        return -1;
    }
    return 0;
}

void moe_free(MoE *m) {
    if (!m) return;
    for (int64_t e = 0; m->experts && e < m->cfg.n_experts; e++) gated_mlp_free(&m->experts[e]);
    free(m->experts);
    gated_mlp_free(&m->shared);
    tl_module_free(m->module);
    memset(m, 0, sizeof *m);
}

/* ---- routing -------------------------------------------------------------------- */

/* DeepSeek-V3's group limit: true where an expert's group is NOT among the
 * topk_group groups with the largest sum of their two best choice scores. */
static tl_tensor *outside_kept_groups(const MoE *m, tl_tensor *choice) {
    const MoEConfig *c = &m->cfg;
    int64_t n = choice->shape[0], e_all = c->n_experts, groups = c->n_group, per = e_all / groups;
    tl_tensor *best2 = NULL, *best2_at = NULL, *kept = NULL;
    tl_topk(tl_reshape(choice, TL_SHAPE(n, groups, per)), 2, &best2, &best2_at);
    tl_tensor *group_scores = tl_sum(best2, -1, false);                  /* [N, groups] */
    if (!group_scores || tl_topk(group_scores, c->topk_group, NULL, &kept) != 0) return NULL;
    tl_tensor *outside = tl_ones(TL_BOOL, TL_SHAPE(n, e_all));
    if (!outside) return NULL;
    bool *out = tl_data(outside);
    const int64_t *g = tl_data(kept);
    for (int64_t t = 0; t < n; t++)
        for (int j = 0; j < c->topk_group; j++) {
            bool *group = out + t * e_all + g[t * c->topk_group + j] * per;
            for (int64_t e = 0; e < per; e++) group[e] = false;
        }
    return outside;
}

int moe_route(const MoE *m, tl_tensor *router_logits, tl_tensor **indices, tl_tensor **weights) {
    if (indices) *indices = NULL;
    if (weights) *weights = NULL;
    if (!m || !m->module || !indices || !weights)
        return tl_fail_status("moe_route: %s is NULL", !m || !m->module
                              ? "the MoE (or its module)" : "an output pointer");
    if (!router_logits) return tl_propagate_status("moe_route: router_logits is NULL");
    const MoEConfig *c = &m->cfg;
    if (router_logits->ndim != 2 || router_logits->shape[1] != c->n_experts) {
        char ls[64];
        return tl_fail_status("moe_route: router_logits has shape %s; expected [N, E] with "
                              "E = %lld experts", tl_shape_str(router_logits, ls, sizeof ls),
                              (long long)c->n_experts);
    }
    tl_tensor *scores, *choice;     /* what the weights come from, and what chooses */
    if (c->family == MOE_DEEPSEEK_V3) {
        scores = tl_sigmoid(router_logits);
        choice = tl_detach(tl_add(scores, m->e_score_correction_bias));   /* choice only */
        if (choice && c->n_group > 1)
            choice = tl_masked_fill(choice, outside_kept_groups(m, choice), 0.0);   /* HF's fill */
    } else {
        scores = tl_softmax(router_logits, -1);                             /* float32 */
        choice = tl_detach(scores);
    }
    tl_tensor *idx = NULL;
    if (!choice || tl_topk(choice, c->top_k, NULL, &idx) != 0) return -1;
    tl_tensor *w = tl_gather(scores, 1, idx);                               /* [N, top_k] */
    if (c->norm_topk_prob) {
        tl_tensor *total = tl_sum(w, -1, true);
        if (c->family == MOE_DEEPSEEK_V3) total = tl_add_scalar(total, 1e-20);
        w = tl_div(w, total);
    }
    if (c->routed_scaling_factor != 1.0) w = tl_mul_scalar(w, c->routed_scaling_factor);
    if (!w) return -1;
    *indices = idx;
    *weights = w;
    return 0;
}

/* ---- the layer ------------------------------------------------------------------ */

tl_tensor *moe_forward(const MoE *m, tl_tensor *x, tl_tensor **router_logits) {
    if (router_logits) *router_logits = NULL;
    if (!m || !m->module)
        return tl_fail("moe_forward: the MoE is NULL or has no module (call moe_init first)");
    if (!x) return tl_propagate("moe_forward: x is NULL");
    const MoEConfig *c = &m->cfg;
    int64_t h = c->hidden, k = c->top_k;
    if (x->ndim < 1 || x->shape[x->ndim - 1] != h) {
        char xs[64];
        return tl_fail("moe_forward: x has shape %s but the layer's hidden size is %lld; the "
                       "last axis of x must be hidden", tl_shape_str(x, xs, sizeof xs),
                       (long long)h);
    }
    tl_tensor *w_router = tl_module_param(m->gate, "weight");
    char ws[64] = "(none)";
    if (!w_router || w_router->ndim != 2 || w_router->shape[0] != c->n_experts ||
        w_router->shape[1] != h)
        return tl_fail("moe_forward: the router's weight (gate.weight) has shape %s; expected "
                       "[E, H] = [%lld, %lld]", w_router ? tl_shape_str(w_router, ws, sizeof ws)
                       : ws, (long long)c->n_experts, (long long)h);

    int64_t n = tl_numel(x) / h;
    tl_tensor *flat = tl_reshape(x, TL_SHAPE(n, h));
    tl_tensor *logits = tl_linear(flat, w_router, NULL);                    /* [N, E] */
    tl_tensor *idx, *w;
    if (moe_route(m, logits, &idx, &w) != 0) return NULL;
    tl_tensor *w_flat = tl_reshape(w, TL_SHAPE(n * k));
    const int64_t *chosen = tl_data(idx);

    tl_tensor *out = tl_zeros(TL_F32, TL_SHAPE(n, h));
    for (int64_t e = 0; e < c->n_experts; e++) {
        /* The tokens that chose e, and where each choice sits in w. */
        int64_t count = 0;
        for (int64_t i = 0; i < n * k; i++) count += chosen[i] == e;
        if (count == 0) continue;
        tl_tensor *rows = tl_empty(TL_I64, TL_SHAPE(count));
        tl_tensor *slots = tl_empty(TL_I64, TL_SHAPE(count));
        if (!rows || !slots) return NULL;
        int64_t *r = tl_data(rows), *s = tl_data(slots), j = 0;
        for (int64_t i = 0; i < n * k; i++)
            if (chosen[i] == e) {
                r[j] = i / k;
                s[j++] = i;
            }
        tl_tensor *y = gated_mlp_forward(&m->experts[e], tl_index_select(flat, 0, rows));
        tl_tensor *scale = tl_reshape(tl_gather(w_flat, 0, slots), TL_SHAPE(count, 1));
        out = tl_index_add(out, 0, rows, tl_mul(y, scale));
    }
    if (m->shared.module) {
        tl_tensor *shared = gated_mlp_forward(&m->shared, flat);
        if (m->shared_gate)
            shared = tl_mul(tl_sigmoid(tl_linear_forward(m->shared_gate, flat)), shared);
        out = tl_add(out, shared);
    }
    if (!out) return NULL;
    if (router_logits) *router_logits = logits;
    return tl_reshape(out, x->ndim, x->shape);
}

/* ---- the load-balancing loss ------------------------------------------------------ */

tl_tensor *moe_aux_loss(tl_tensor *router_logits, int top_k) {
    if (!router_logits) return tl_propagate("moe_aux_loss: router_logits is NULL");
    char ls[64];
    if (router_logits->ndim != 2 || router_logits->shape[0] < 1 || router_logits->shape[1] < 1)
        return tl_fail("moe_aux_loss: router_logits has shape %s; expected [N, E] with N, E >= 1",
                       tl_shape_str(router_logits, ls, sizeof ls));
    int64_t n = router_logits->shape[0], e_all = router_logits->shape[1];
    if (top_k < 1 || top_k > e_all)
        return tl_fail("moe_aux_loss: top_k %d is outside [1, E = %lld]", top_k, (long long)e_all);
    tl_tensor *p = tl_softmax(router_logits, -1);                          /* [N, E] */
    tl_tensor *idx = NULL;
    if (!p || tl_topk(p, top_k, NULL, &idx) != 0) return NULL;
    /* f_e: how often e was chosen (any of the top_k choices), per token. */
    tl_tensor *counts = tl_zeros(TL_F32, TL_SHAPE(e_all));
    if (!counts) return NULL;
    float *cd = tl_data(counts);
    const int64_t *chosen = tl_data(idx);
    for (int64_t i = 0; i < n * top_k; i++) cd[chosen[i]] += 1.0f;
    tl_tensor *f = tl_mul_scalar(counts, 1.0 / (double)n);
    tl_tensor *prob = tl_mean(p, 0, false);                                /* P_e, [E] */
    return tl_mul_scalar(tl_sum_all(tl_mul(f, prob)), (double)e_all);
}

int64_t moe_param_count(const MoE *m) {
    if (!m || !m->module)
        return tl_fail_status("moe_param_count: the MoE is NULL or has no module");
    const MoEConfig *c = &m->cfg;
    int64_t h = c->hidden, per_expert = 3 * h * c->expert_intermediate;
    int64_t count = c->n_experts * h + c->n_experts * per_expert;
    if (c->shared_intermediate > 0) count += 3 * h * c->shared_intermediate;
    if (c->shared_expert_gate) count += h;
    return count;
}
