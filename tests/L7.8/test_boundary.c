/* L7.8 boundary: a configuration HF could not run is refused at init with a
 * message naming the field and its value (top_k > E, groups that do not
 * divide E, topk_group > n_group, ...), and wrong inputs fail with a message
 * that names the function and the shapes, and never crash. */
#include <check.h>
#include <math.h>
#include "moe_fixture.h"

START_TEST(test_boundary_bad_configs)
{
    MoE m;
    MoEConfig c = FX_MIXTRAL;
    c.top_k = 5;
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "top_k 5");
    ck_assert_ptr_null(m.module);
    moe_free(&m);   /* safe after a failed init */
    c.top_k = 0;
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "top_k 0");
    c = FX_DEEPSEEK;
    c.n_group = 3;   /* 16 experts do not split into 3 groups */
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "n_group 3");
    c = FX_DEEPSEEK;
    c.topk_group = 5;   /* only 4 groups */
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "topk_group 5");
    c = FX_DEEPSEEK;
    c.n_group = 16;     /* groups of one expert: no top-2 per group */
    c.topk_group = 8;
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "n_group 16");
    c = FX_DEEPSEEK;
    c.topk_group = 1;   /* 4 experts kept, top_k 5 */
    c.top_k = 5;
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "top_k 5");
    c = FX_MIXTRAL;
    c.n_group = 2;
    c.topk_group = 1;
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "n_group 2");
    c = FX_MIXTRAL;
    c.norm_topk_prob = false;
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "norm_topk_prob");
    c = FX_MIXTRAL;
    c.shared_intermediate = 8;
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "shared");
    c = FX_DEEPSEEK;
    c.shared_expert_gate = true;
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "shared_expert_gate");
    c = FX_QWEN2;
    c.routed_scaling_factor = 0.0;
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "routed_scaling_factor");
    c.routed_scaling_factor = NAN;
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "routed_scaling_factor");
    c = FX_QWEN2;
    c.hidden = 0;
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "hidden 0");
    c = FX_QWEN2;
    c.n_experts = 0;
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "n_experts 0");
    c = FX_QWEN2;
    c.expert_intermediate = -3;
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "expert_intermediate -3");
    c = FX_QWEN2;
    c.shared_intermediate = -1;
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "shared_intermediate");
    c = FX_QWEN2;
    c.shared_intermediate = 0;   /* the gate needs a shared expert */
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "shared_expert_gate");
    c = FX_DEEPSEEK;
    c.topk_group = 0;   /* 4 groups, none kept */
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "topk_group 0");
    c = FX_QWEN2;
    c.act = (tl_activation)42;
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "act");
    c = FX_QWEN2;
    c.family = (moe_family)9;
    assert_status_error(moe_init(&m, &c, NULL), "moe_init", "family");
    tl_assert_error(moe_module_name((moe_family)9), "moe_module_name");
    assert_status_error(moe_init(NULL, &FX_QWEN2, NULL), "moe_init", "NULL");
    assert_status_error(moe_init(&m, NULL, NULL), "moe_init", "NULL");
    moe_free(NULL);
}
END_TEST

START_TEST(test_boundary_bad_inputs)
{
    tl_scope_push();
    MoE m;
    ck_assert_msg(moe_init(&m, &FX_QWEN2, NULL) == 0, "moe_init: %s", tl_error());
    tl_tensor *logits = NULL;
    assert_error2(moe_forward(&m, tl_ones(TL_F32, TL_SHAPE(2, 3, 12)), &logits), "moe_forward",
                  "[2, 3, 12]");
    ck_assert_ptr_null(logits);
    assert_error2(moe_forward(&m, tl_scalar(1.0), NULL), "moe_forward", "[]");
    tl_assert_error(moe_forward(NULL, tl_ones(TL_F32, TL_SHAPE(2, FX_H)), NULL), "moe_forward");
    MoE empty = {0};
    tl_assert_error(moe_forward(&empty, tl_ones(TL_F32, TL_SHAPE(2, FX_H)), NULL), "moe_init");
    tl_assert_error(moe_forward(&m, NULL, NULL), "moe_forward");

    tl_tensor *idx = NULL, *w = NULL;
    assert_status_error(moe_route(&m, tl_ones(TL_F32, TL_SHAPE(3, 5)), &idx, &w), "moe_route",
                        "[3, 5]");
    ck_assert_msg(idx == NULL && w == NULL, "a failed moe_route leaves its outputs NULL");
    assert_status_error(moe_route(&m, tl_ones(TL_F32, TL_SHAPE(6)), &idx, &w), "moe_route", "[6]");
    assert_status_error(moe_route(&m, tl_ones(TL_F32, TL_SHAPE(3, 6)), NULL, &w), "moe_route",
                        "NULL");
    assert_status_error(moe_route(&empty, tl_ones(TL_F32, TL_SHAPE(3, 6)), &idx, &w), "moe_route",
                        "NULL");

    tl_tensor *l = tl_ones(TL_F32, TL_SHAPE(4, 6));
    assert_error2(moe_aux_loss(l, 7), "moe_aux_loss", "top_k 7");
    assert_error2(moe_aux_loss(l, 0), "moe_aux_loss", "top_k 0");
    assert_error2(moe_aux_loss(tl_ones(TL_F32, TL_SHAPE(2, 3, 6)), 2), "moe_aux_loss", "[2, 3, 6]");
    assert_error2(moe_aux_loss(tl_zeros(TL_F32, TL_SHAPE(0, 6)), 2), "moe_aux_loss", "[0, 6]");
    assert_error2(moe_aux_loss(tl_zeros(TL_F32, TL_SHAPE(4, 0)), 1), "moe_aux_loss", "[4, 0]");
    tl_assert_error(moe_aux_loss(NULL, 2), "moe_aux_loss");
    assert_status_error(moe_param_count(NULL), "moe_param_count", "NULL");
    assert_status_error(moe_param_count(&empty), "moe_param_count", "no module");

    /* A router of another config (8 experts for this layer's 6). */
    MoE other;
    MoEConfig eight = FX_QWEN2;
    eight.n_experts = 8;
    ck_assert_msg(moe_init(&other, &eight, NULL) == 0, "moe_init: %s", tl_error());
    MoE mixed = m;
    mixed.gate = other.gate;
    assert_error2(moe_forward(&mixed, tl_ones(TL_F32, TL_SHAPE(2, FX_H)), NULL), "[8, 8]",
                  "[E, H] = [6, 8]");
    moe_free(&other);

    /* A NULL input keeps the message of the call that failed first. */
    tl_clear_error();
    tl_tensor *bad = tl_reshape(l, TL_SHAPE(5, 5));
    ck_assert_ptr_nonnull(tl_error());
    char first[1024];   /* a copy: tl_error() is one buffer */
    snprintf(first, sizeof first, "%s", tl_error());
    ck_assert_ptr_null(moe_forward(&m, bad, NULL));
    ck_assert_str_eq(tl_error(), first);
    ck_assert_ptr_null(moe_aux_loss(bad, 2));
    ck_assert_str_eq(tl_error(), first);
    ck_assert_int_eq(moe_route(&m, bad, &idx, &w), -1);
    ck_assert_str_eq(tl_error(), first);
    tl_clear_error();
    moe_free(&m);
    tl_scope_pop();
}
END_TEST
