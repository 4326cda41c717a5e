/* L7.2 boundary: wrong inputs fail with a message that names the function
 * and what was wrong, and never crash. An unknown activation lists every
 * known name, so a config with a typo says what to write instead. */
#include <check.h>
#include <math.h>
#include "mlp_fixture.h"
#include "tinyllm/ops.h"

START_TEST(test_boundary_unknown_activation_lists_known_names)
{
    tl_scope_push();
    tl_activation a = TL_ACT_RELU;
    assert_status_error(activation_from_name("mish", &a), "activation_from_name", "\"mish\"");
    ck_assert_msg(a == TL_ACT_RELU, "a failed lookup must leave *out unchanged");
    tl_clear_error();
    ck_assert_int_eq(activation_from_name("SiLU", &a), -1);   /* names are case-sensitive */
    const char *e = tl_error();
    for (int k = 0; k < FX_N_ACTS; k++)
        ck_assert_msg(e && strstr(e, FX_ACTS[k].name), "the error '%s' must list the known "
                      "name '%s'", e ? e : "(none)", FX_ACTS[k].name);
    tl_clear_error();
    assert_status_error(activation_from_name(NULL, &a), "activation_from_name", "silu");
    assert_status_error(activation_from_name("silu", NULL), "activation_from_name", "NULL");
    tl_assert_error(activation_name((tl_activation)TL_ACT_COUNT), "activation_name");
    tl_assert_error(activation_name((tl_activation)-1), "activation_name");
    tl_tensor *x = tl_ones(TL_F32, TL_SHAPE(2, 3));
    tl_assert_error(activation_forward((tl_activation)42, x), "activation_forward");
    GatedMLP m;
    assert_status_error(gated_mlp_init(&m, 8, 12, (tl_activation)42, false, NULL),
                        "gated_mlp_init", "activation");
    ck_assert_ptr_null(m.module);
    tl_scope_pop();
}
END_TEST

START_TEST(test_boundary_mismatched_widths)
{
    tl_scope_push();
    GatedMLP m, wide;
    ck_assert_msg(gated_mlp_init(&m, 8, 12, TL_ACT_SILU, false, NULL) == 0,
                  "gated_mlp_init: %s", tl_error());
    ck_assert_msg(gated_mlp_init(&wide, 8, 16, TL_ACT_SILU, false, NULL) == 0,
                  "gated_mlp_init: %s", tl_error());
    /* x of another width, and a scalar. */
    assert_error3(gated_mlp_forward(&m, tl_ones(TL_F32, TL_SHAPE(2, 3, 12))), "gated_mlp_forward",
                  "[2, 3, 12]", "8");
    assert_error3(gated_mlp_forward(&m, tl_scalar(1.0)), "gated_mlp_forward", "[]", "8");
    /* A projection from a checkpoint of another config (intermediate 16). */
    GatedMLP mixed = m;
    mixed.gate_proj = wide.gate_proj;
    assert_error3(gated_mlp_forward(&mixed, tl_ones(TL_F32, TL_SHAPE(2, 8))), "gate_proj",
                  "[16, 8]", "[12, 8]");
    mixed = m;
    mixed.up_proj = wide.up_proj;
    assert_error3(gated_mlp_forward(&mixed, tl_ones(TL_F32, TL_SHAPE(2, 8))), "up_proj",
                  "[16, 8]", "[12, 8]");
    mixed = m;
    mixed.down_proj = wide.down_proj;
    assert_error3(gated_mlp_forward(&mixed, tl_ones(TL_F32, TL_SHAPE(2, 8))), "down_proj",
                  "[8, 16]", "[8, 12]");
    /* gpt-oss's gate_up must hold gate/up pairs. */
    assert_error3(gpt_oss_swiglu(tl_ones(TL_F32, TL_SHAPE(2, 7)), 1.702, 7.0), "gpt_oss_swiglu",
                  "[2, 7]", "interleaved");
    gated_mlp_free(&wide);
    gated_mlp_free(&m);
    tl_scope_pop();
}
END_TEST

START_TEST(test_boundary_null_and_bad_arguments)
{
    tl_scope_push();
    GatedMLP m;
    assert_status_error(gated_mlp_init(NULL, 8, 12, TL_ACT_SILU, false, NULL), "gated_mlp_init",
                        "NULL");
    assert_status_error(gated_mlp_init(&m, 0, 12, TL_ACT_SILU, false, NULL), "gated_mlp_init",
                        "hidden");
    ck_assert_ptr_null(m.module);
    gated_mlp_free(&m);   /* safe after a failed init */
    assert_status_error(gated_mlp_init(&m, 8, -1, TL_ACT_SILU, false, NULL), "gated_mlp_init",
                        "intermediate");
    assert_status_error(gated_mlp_init_named(&m, 8, 12, TL_ACT_SILU, false, "w1", NULL, "w2",
                                             NULL), "gated_mlp_init_named", "up");
    assert_status_error(gated_mlp_init_named(&m, 8, 12, TL_ACT_SILU, false, "w1", "", "w2",
                                             NULL), "gated_mlp_init_named", "up");
    assert_status_error(gated_mlp_init_named(&m, 8, 12, TL_ACT_SILU, false, "a.b", "w3", "w2",
                                             NULL), "gated_mlp_init_named", "'.'");
    assert_status_error(gated_mlp_init_named(&m, 8, 12, TL_ACT_SILU, false, "w1", "w1", "w2",
                                             NULL), "gated_mlp_init_named", "\"w1\"");
    ck_assert_ptr_null(m.module);
    gated_mlp_free(NULL);
    assert_status_error(gated_mlp_param_count(NULL), "gated_mlp_param_count", "NULL");
    GatedMLP cleared = {0};
    assert_status_error(gated_mlp_param_count(&cleared), "gated_mlp_param_count", "initialised");

    ck_assert_msg(gated_mlp_init(&m, 4, 6, TL_ACT_SILU, true, NULL) == 0,
                  "gated_mlp_init: %s", tl_error());
    tl_tensor *x = tl_ones(TL_F32, TL_SHAPE(3, 4));
    tl_assert_error(gated_mlp_forward(NULL, x), "gated_mlp_forward");
    GatedMLP empty = {0};
    tl_assert_error(gated_mlp_forward(&empty, x), "gated_mlp_init");
    tl_assert_error(gated_mlp_forward(&m, NULL), "gated_mlp_forward");
    GatedMLP bad_act = m;
    bad_act.act = (tl_activation)42;
    tl_assert_error(gated_mlp_forward(&bad_act, x), "gated_mlp_forward");
    /* A NULL input keeps the message of the call that failed first. */
    tl_clear_error();
    tl_tensor *bad = tl_reshape(x, TL_SHAPE(5, 5));
    ck_assert_ptr_null(bad);
    ck_assert_ptr_nonnull(tl_error());
    char first[1024];   /* a copy: tl_error() is one buffer */
    snprintf(first, sizeof first, "%s", tl_error());
    ck_assert_ptr_null(gated_mlp_forward(&m, bad));
    ck_assert_str_eq(tl_error(), first);
    ck_assert_ptr_null(activation_forward(TL_ACT_GELU, bad));
    ck_assert_str_eq(tl_error(), first);
    ck_assert_ptr_null(gpt_oss_swiglu(bad, 1.702, 7.0));
    ck_assert_str_eq(tl_error(), first);
    tl_clear_error();

    tl_tensor *gu = tl_ones(TL_F32, TL_SHAPE(2, 4));
    tl_assert_error(gpt_oss_swiglu(gu, NAN, 7.0), "gpt_oss_swiglu");
    tl_assert_error(gpt_oss_swiglu(gu, 1.702, -1.0), "gpt_oss_swiglu");
    tl_assert_error(gpt_oss_swiglu(gu, 1.702, INFINITY), "gpt_oss_swiglu");
    /* no pairs to split: an empty or odd last axis, a scalar, a rank too high to add an axis */
    tl_assert_error(gpt_oss_swiglu(tl_zeros(TL_F32, TL_SHAPE(2, 0)), 1.702, 7.0), "[2, 0]");
    tl_assert_error(gpt_oss_swiglu(tl_ones(TL_F32, TL_SHAPE(2, 3)), 1.702, 7.0), "[2, 3]");
    tl_assert_error(gpt_oss_swiglu(tl_scalar(1.0), 1.702, 7.0), "gpt_oss_swiglu");
    tl_assert_error(gpt_oss_swiglu(tl_ones(TL_F32, TL_SHAPE(1, 1, 1, 1, 1, 2)), 1.702, 7.0),
                    "rank 1 to 5");
    tl_assert_ok(gpt_oss_swiglu(gu, 1.702, 7.0));
    gated_mlp_free(&m);
    tl_scope_pop();
}
END_TEST
