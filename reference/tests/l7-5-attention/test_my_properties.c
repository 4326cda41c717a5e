/* My property tests: causality, grouping, parameter names. */
#include "my_attn.h"

START_TEST(my_future_tokens_do_not_leak)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    GQAttention a;
    my_layer(&a, fx, "mha", 2, 2, false, false);
    tl_tensor *x = tl_fixture_tensor(fx, "x");
    tl_pcg32 rng = tl_test_rng(11);
    tl_tensor *parts[2] = {tl_narrow(x, 1, 0, 2), tl_randn(&rng, TL_SHAPE(2, 4, 16))};
    tl_tensor *y = gqa_forward(&a, x, NULL, NULL, NULL, 0);
    tl_tensor *y2 = gqa_forward(&a, tl_concat(parts, 2, 1), NULL, NULL, NULL, 0);
    tl_assert_close(tl_narrow(y2, 1, 0, 2), tl_narrow(y, 1, 0, 2), 0.0, 1e-6);
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* 4 query heads, 2 kv heads, o the identity: kv head 1 serves heads 2 and 3. */
START_TEST(my_kv_head_serves_its_group)
{
    tl_scope_push();
    RopeSpec r;
    ck_assert_int_eq(rope_spec_init(&r, 4, 4, 10000.0, ROPE_HALF), 0);
    GQAConfig cfg = {.hidden = 16, .n_heads = 4, .n_kv_heads = 2, .head_dim = 4};
    tl_pcg32 rng = tl_test_rng(12);
    GQAttention a;
    ck_assert_int_eq(gqa_init(&a, &cfg, &r, &rng), 0);
    tl_tensor *ow = tl_module_param(a.o_proj, "weight");
    for (int64_t i = 0; i < 16; i++)
        for (int64_t j = 0; j < 16; j++) tl_set(ow, (int64_t[]){i, j}, i == j ? 1.0 : 0.0);
    tl_tensor *x = tl_randn(&rng, TL_SHAPE(1, 3, 16));
    tl_tensor *y = tl_clone(gqa_forward(&a, x, NULL, NULL, NULL, 0));
    tl_tensor *vw = tl_module_param(a.v_proj, "weight");
    for (int64_t i = 4; i < 8; i++)
        for (int64_t j = 0; j < 16; j++) tl_set(vw, (int64_t[]){i, j}, 0.0);
    tl_tensor *y0 = gqa_forward(&a, x, NULL, NULL, NULL, 0);
    tl_assert_close(tl_narrow(y0, 2, 0, 8), tl_narrow(y, 2, 0, 8), 0.0, 1e-6);
    tl_assert_close(tl_narrow(y0, 2, 8, 8), tl_zeros(TL_F32, TL_SHAPE(1, 3, 8)), 0.0, 1e-6);
    gqa_free(&a);
    tl_scope_pop();
}
END_TEST

START_TEST(my_bias_keys_follow_hf)
{
    tl_scope_push();
    RopeSpec r;
    ck_assert_int_eq(rope_spec_init(&r, 8, 8, 10000.0, ROPE_HALF), 0);
    GQAConfig cfg = {.hidden = 16, .n_heads = 4, .n_kv_heads = 2, .head_dim = 8,
                     .qkv_bias = true, .o_bias = true};
    GQAttention a;
    ck_assert_int_eq(gqa_init(&a, &cfg, &r, NULL), 0);
    ck_assert_ptr_nonnull(tl_module_param(a.q_proj, "bias"));
    ck_assert_ptr_nonnull(tl_module_param(a.o_proj, "bias"));
    /* 16*32 + 2*16*16 + 32*16 weights, 32 + 16 + 16 + 16 biases */
    ck_assert_int_eq(gqa_param_count(&a), 1536 + 80);
    ck_assert_int_eq(tl_module_param_count(a.module), 1536 + 80);
    gqa_free(&a);
    tl_scope_pop();
}
END_TEST
