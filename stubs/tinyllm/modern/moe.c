/* A mixture of experts and its routers (L7.8): your implementation.
 *
 * The contract is contracts/tinyllm/modern/moe.h; the math is section 2 of
 * the chapter (course/L7.8/README.md). The experts are L7.2's GatedMLP; the
 * rest is ops from tinyllm/ops.h (tl_softmax, tl_sigmoid, tl_topk, tl_gather,
 * tl_index_select, tl_index_add) and nn.h's modules. Never write to a
 * parameter's data. Replace each tl_fail below, then run `ol tests L7.8`.
 */
#include "tinyllm/autograd.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/moe.h"

const char *moe_module_name(moe_family family) {
    /* "block_sparse_moe" for Mixtral, "mlp" for the others (section 2.6). */
    (void)family;
    return tl_fail("not implemented: moe_module_name (L7.8)");
}

int moe_init(MoE *m, const MoEConfig *cfg, tl_pcg32 *rng) {
    /* Check every rule of the contract first (section 2.6 lists them), then
     * build the tree in HF's order: a Linear router "gate" (DeepSeek-V3 adds
     * e_score_correction_bias with tl_module_param_new, then
     * tl_requires_grad(..., false)), a ModuleList "experts" of GatedMLPs
     * (Mixtral's named w1, w3, w2), and the shared expert(s). */
    (void)m; (void)cfg; (void)rng;
    return tl_fail_status("not implemented: moe_init (L7.8)");
}

void moe_free(MoE *m) {
    /* gated_mlp_free each expert and the shared expert, free the array,
     * then tl_module_free the tree and clear the struct. NULL is a no-op. */
    (void)m;
    tl_fail("not implemented: moe_free (L7.8)");
}

int moe_route(const MoE *m, tl_tensor *router_logits, tl_tensor **indices, tl_tensor **weights) {
    /* Softmax families: tl_softmax, tl_topk for the indices, tl_gather for the
     * weights, renormalise when asked. DeepSeek-V3: tl_sigmoid, add the bias
     * for the choice only (tl_detach), mask the groups not kept, top-k, gather
     * the UNbiased scores, renormalise (+ 1e-20), scale. Section 2.2 and 2.3. */
    (void)m; (void)router_logits; (void)indices; (void)weights;
    return tl_fail_status("not implemented: moe_route (L7.8)");
}

tl_tensor *moe_forward(const MoE *m, tl_tensor *x, tl_tensor **router_logits) {
    /* Flatten x to [N, H], logits = tl_linear(x, W_r, NULL), moe_route, then
     * for each expert in ascending id with at least one token: its rows
     * (tl_index_select), gated_mlp_forward, times its weights, tl_index_add
     * into a zero [N, H]. Add the shared expert(s). Section 2.4. */
    (void)m; (void)x; (void)router_logits;
    return tl_fail("not implemented: moe_forward (L7.8)");
}

tl_tensor *moe_aux_loss(tl_tensor *router_logits, int top_k) {
    /* E * sum_e f_e P_e: f from the top-k choices of softmax(logits) (plain
     * counts, no gradient), P the mean probability over the rows. Section 2.5. */
    (void)router_logits; (void)top_k;
    return tl_fail("not implemented: moe_aux_loss (L7.8)");
}

int64_t moe_param_count(const MoE *m) {
    /* From the config: router, experts, shared expert, shared gate; not the
     * correction bias (a buffer in HF). Section 3. */
    (void)m;
    return tl_fail_status("not implemented: moe_param_count (L7.8)");
}
