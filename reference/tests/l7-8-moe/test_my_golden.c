/* My golden tests: the course's fixture for the three families. */
#include <check.h>
#include <stdio.h>
#include "tinyllm/autograd.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"
#include "tinyllm/modern/moe.h"

static double tol(const char *test, const char *which) {
    char key[160];
    snprintf(key, sizeof key, "tolerances.%s.%s", test, which);
    return tl_fixture_number("L7.8/moe.json", key);
}

static void load(MoE *m, const tl_checkpoint *fx, MoEConfig c, const char *name) {
    ck_assert_msg(moe_init(m, &c, NULL) == 0, "%s", tl_error());
    tl_state_dict sd = tl_module_state_dict(m->module);
    for (int i = 0; i < sd.count; i++) {
        char key[200];
        snprintf(key, sizeof key, "%s.%s.%s", name, moe_module_name(c.family), sd.items[i].name);
        ck_assert_int_eq(tl_copy_into(sd.items[i].tensor, tl_fixture_tensor(fx, key)), 0);
    }
    tl_state_dict_free(&sd);
}

static void check(MoEConfig c, const char *name, const char *run, const char *test, bool with_aux) {
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load("L7.8/moe.safetensors");
    MoE m;
    load(&m, fx, c, name);
    char key[96];
    snprintf(key, sizeof key, "%s.x", name);
    tl_tensor *logits = NULL;
    tl_tensor *y = moe_forward(&m, tl_fixture_tensor(fx, key), &logits);
    tl_assert_ok(y);
    snprintf(key, sizeof key, "%s.y", run);
    tl_assert_close(y, tl_fixture_tensor(fx, key), tol(test, "rtol"), tol(test, "atol"));
    if (with_aux) {
        snprintf(key, sizeof key, "%s.aux", name);
        tl_tensor *a = moe_aux_loss(logits, c.top_k);
        tl_assert_ok(a);
        tl_assert_close(tl_reshape(a, TL_SHAPE(1)), tl_fixture_tensor(fx, key),
                        tol("test_golden_aux_loss", "rtol"), tol("test_golden_aux_loss", "atol"));
    }
    moe_free(&m);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}

START_TEST(my_golden_mixtral)
{
    MoEConfig c = {.family = MOE_MIXTRAL, .hidden = 8, .n_experts = 4, .expert_intermediate = 6,
                   .top_k = 2, .norm_topk_prob = true, .act = TL_ACT_SILU,
                   .routed_scaling_factor = 1.0};
    check(c, "mixtral", "mixtral", "test_golden_mixtral", true);
}
END_TEST

START_TEST(my_golden_qwen2_moe)
{
    MoEConfig c = {.family = MOE_QWEN2_MOE, .hidden = 8, .n_experts = 6, .expert_intermediate = 6,
                   .top_k = 2, .act = TL_ACT_SILU, .shared_intermediate = 10,
                   .shared_expert_gate = true, .routed_scaling_factor = 1.0};
    check(c, "qwen2_moe", "qwen2_moe", "test_golden_qwen2_moe_shared_expert_gate", true);
}
END_TEST

START_TEST(my_golden_deepseek_v3)
{
    MoEConfig c = {.family = MOE_DEEPSEEK_V3, .hidden = 8, .n_experts = 16,
                   .expert_intermediate = 6, .top_k = 3, .norm_topk_prob = true,
                   .act = TL_ACT_SILU, .shared_intermediate = 6, .n_group = 4, .topk_group = 2,
                   .routed_scaling_factor = 2.5};
    check(c, "deepseek_v3", "deepseek_v3", "test_golden_deepseek_v3_routing", false);
    c.norm_topk_prob = false;
    check(c, "deepseek_v3", "deepseek_v3_nonorm", "test_golden_deepseek_v3_routing", false);
}
END_TEST
