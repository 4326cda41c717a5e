/* L7.8: a fresh MoE has the checkpoint files' keys, in HF's order, for each
 * family, so L7.9 attaches it (as block_sparse_moe or mlp) and loads a
 * checkpoint by name. Parameters are owned F32 leaves that require a
 * gradient, except DeepSeek-V3's correction bias, HF's buffer; with rng NULL
 * all are zero, with rng the weights are drawn and the bias stays 0. */
#include <check.h>
#include "moe_fixture.h"

static void check_keys(const MoE *m, const char *const *want, int n) {
    tl_state_dict sd = tl_module_state_dict(m->module);
    ck_assert_msg(sd.count == n, "%s: the state dict has %d entries, expected %d",
                  moe_module_name(m->cfg.family), sd.count, n);
    for (int i = 0; i < n; i++)
        ck_assert_msg(strcmp(sd.items[i].name, want[i]) == 0, "%s: entry %d is '%s', expected '%s' "
                      "(the checkpoint's names, HF's order)", moe_module_name(m->cfg.family), i,
                      sd.items[i].name, want[i]);
    tl_state_dict_free(&sd);
}

START_TEST(test_init_hf_keys_per_family)
{
    tl_scope_push();
    MoE m;
    MoEConfig mix = FX_MIXTRAL;
    mix.n_experts = 2;
    ck_assert_msg(moe_init(&m, &mix, NULL) == 0, "moe_init: %s", tl_error());
    ck_assert_str_eq(moe_module_name(MOE_MIXTRAL), "block_sparse_moe");
    const char *mixtral[7] = {"gate.weight", "experts.0.w1.weight", "experts.0.w3.weight",
                              "experts.0.w2.weight", "experts.1.w1.weight",
                              "experts.1.w3.weight", "experts.1.w2.weight"};
    check_keys(&m, mixtral, 7);
    ck_assert_ptr_eq(m.gate, tl_module_child(m.module, "gate"));
    ck_assert_ptr_eq(m.experts[1].module, tl_module_child(m.module, "experts.1"));
    ck_assert_ptr_eq(m.experts[1].gate_proj, tl_module_child(m.module, "experts.1.w1"));
    tl_tensor *router = tl_module_param(m.module, "gate.weight");
    ck_assert_msg(router->ndim == 2 && router->shape[0] == 2 && router->shape[1] == FX_H &&
                  router->requires_grad && router->owned, "gate.weight must be an owned [E, H] "
                  "leaf that requires a gradient");
    ck_assert_ptr_null(m.e_score_correction_bias);
    ck_assert_ptr_null(m.shared.module);
    moe_free(&m);
    ck_assert_msg(m.module == NULL && m.experts == NULL, "moe_free must clear the struct");
    moe_free(&m);   /* twice is safe */

    MoEConfig qwen = FX_QWEN2;
    qwen.n_experts = 2;
    ck_assert_msg(moe_init(&m, &qwen, NULL) == 0, "moe_init: %s", tl_error());
    ck_assert_str_eq(moe_module_name(MOE_QWEN2_MOE), "mlp");
    const char *qwen2[11] = {"gate.weight", "experts.0.gate_proj.weight",
                             "experts.0.up_proj.weight", "experts.0.down_proj.weight",
                             "experts.1.gate_proj.weight", "experts.1.up_proj.weight",
                             "experts.1.down_proj.weight", "shared_expert.gate_proj.weight",
                             "shared_expert.up_proj.weight", "shared_expert.down_proj.weight",
                             "shared_expert_gate.weight"};
    check_keys(&m, qwen2, 11);
    tl_tensor *sg = tl_module_param(m.module, "shared_expert_gate.weight");
    ck_assert_msg(sg->shape[0] == 1 && sg->shape[1] == FX_H, "shared_expert_gate.weight is [1, H]");
    ck_assert_int_eq(tl_module_param(m.module, "shared_expert.up_proj.weight")->shape[0], 10);
    moe_free(&m);

    MoEConfig ds = FX_DEEPSEEK;
    ds.n_experts = 4;
    ds.n_group = 2;
    ds.topk_group = 1;
    ds.top_k = 2;
    tl_pcg32 rng = tl_test_rng(7802);
    ck_assert_msg(moe_init(&m, &ds, &rng) == 0, "moe_init: %s", tl_error());
    const char *deepseek[17] = {
        "experts.0.gate_proj.weight", "experts.0.up_proj.weight", "experts.0.down_proj.weight",
        "experts.1.gate_proj.weight", "experts.1.up_proj.weight", "experts.1.down_proj.weight",
        "experts.2.gate_proj.weight", "experts.2.up_proj.weight", "experts.2.down_proj.weight",
        "experts.3.gate_proj.weight", "experts.3.up_proj.weight", "experts.3.down_proj.weight",
        "gate.weight", "gate.e_score_correction_bias", "shared_experts.gate_proj.weight",
        "shared_experts.up_proj.weight", "shared_experts.down_proj.weight"};
    check_keys(&m, deepseek, 17);
    tl_tensor *bias = tl_module_param(m.module, "gate.e_score_correction_bias");
    ck_assert_ptr_eq(bias, m.e_score_correction_bias);
    ck_assert_msg(bias->ndim == 1 && bias->shape[0] == 4 && !bias->requires_grad,
                  "the correction bias is [E] and never requires a gradient (a buffer in HF)");
    for (int e = 0; e < 4; e++) ck_assert(tl_item_at(bias, e) == 0.0);
    ck_assert_msg(tl_item_at(tl_module_param(m.module, "gate.weight"), 0) != 0.0,
                  "with rng, the router's weight is drawn");
    moe_free(&m);
    tl_scope_pop();
}
END_TEST

/* E H + E 3 H I (+ 3 H I_s + H), as HF's num_parameters: no buffer. */
START_TEST(test_param_count_per_family)
{
    MoE m;
    const MoEConfig *cfgs[3] = {&FX_MIXTRAL, &FX_QWEN2, &FX_DEEPSEEK};
    const int64_t want[3] = {4 * 8 + 4 * 3 * 8 * 6,
                             6 * 8 + 6 * 3 * 8 * 6 + 3 * 8 * 10 + 8,
                             16 * 8 + 16 * 3 * 8 * 6 + 3 * 8 * 6};
    for (int c = 0; c < 3; c++) {
        ck_assert_msg(moe_init(&m, cfgs[c], NULL) == 0, "moe_init: %s", tl_error());
        ck_assert_int_eq(moe_param_count(&m), want[c]);
        int64_t buffer = cfgs[c]->family == MOE_DEEPSEEK_V3 ? cfgs[c]->n_experts : 0;
        ck_assert_int_eq(tl_module_param_count(m.module), want[c] + buffer);
        /* The same formula at full size, from the config alone (nothing allocated):
         * a Mixtral-8x7B layer and a DeepSeek-V3 MoE layer. */
        MoE big = m;
        big.cfg = (MoEConfig){.family = MOE_MIXTRAL, .hidden = 4096, .n_experts = 8,
                              .expert_intermediate = 14336, .top_k = 2};
        if (c == 0) ck_assert_int_eq(moe_param_count(&big), 1409318912LL);
        big.cfg = (MoEConfig){.family = MOE_DEEPSEEK_V3, .hidden = 7168, .n_experts = 256,
                              .expert_intermediate = 2048, .top_k = 8, .shared_intermediate = 2048};
        if (c == 2) ck_assert_int_eq(moe_param_count(&big), 11320164352LL);
        moe_free(&m);
    }
}
END_TEST
