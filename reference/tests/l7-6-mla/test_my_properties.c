/* My property and unit tests: the scale, HF's names, positions, both paths. */
#include "my_mla.h"

static double scale_for(MLAConfig cfg) {
    RopeSpec r;
    ck_assert_int_eq(rope_spec_init(&r, cfg.qk_rope_head_dim, cfg.qk_rope_head_dim, 1e4,
                                    ROPE_HALF), 0);
    MLAttention a;
    ck_assert_int_eq(mla_init(&a, &cfg, &r, NULL), 0);
    double s = a.scale;
    mla_free(&a);
    return s;
}

START_TEST(my_scale_is_qk_width_and_mscale_squared)
{
    MLAConfig cfg = {.hidden = 8, .n_heads = 1, .kv_lora_rank = 4, .qk_nope_head_dim = 128,
                     .qk_rope_head_dim = 64, .v_head_dim = 128, .rope_interleave = true};
    ck_assert(fabs(scale_for(cfg) - 1 / sqrt(192.0)) < 1e-12);
    cfg.rope_factor = 40;                 /* DeepSeek-V3: yarn, mscale_all_dim 1 */
    ck_assert(fabs(scale_for(cfg) - 1 / sqrt(192.0)) < 1e-12);      /* no mscale_all_dim */
    cfg.mscale_all_dim = 1;
    double m = 0.1 * log(40.0) + 1;
    ck_assert(fabs(scale_for(cfg) - m * m / sqrt(192.0)) < 1e-12);
    ck_assert(fabs(scale_for(cfg) - 0.1352338) < 1e-6);
}
END_TEST

START_TEST(my_names_and_count_with_q_lora_and_bias)
{
    tl_scope_push();
    MLAConfig cfg = my_config(&MY_CASES[4]);
    RopeSpec r = my_rope(&MY_CASES[4]);
    MLAttention a;
    ck_assert_int_eq(mla_init(&a, &cfg, &r, NULL), 0);
    const char *names[10] = {"q_a_proj.weight", "q_a_proj.bias", "q_a_layernorm.weight",
                             "q_b_proj.weight", "kv_a_proj_with_mqa.weight",
                             "kv_a_proj_with_mqa.bias", "kv_a_layernorm.weight",
                             "kv_b_proj.weight", "o_proj.weight", "o_proj.bias"};
    const int64_t rows[10] = {10, 10, 10, 42, 20, 20, 12, 33, 16, 16};
    tl_state_dict sd = tl_module_state_dict(a.module);
    ck_assert_int_eq(sd.count, 10);
    for (int i = 0; i < 10; i++) {
        ck_assert_str_eq(sd.items[i].name, names[i]);
        ck_assert_int_eq(sd.items[i].tensor->shape[0], rows[i]);
    }
    tl_state_dict_free(&sd);
    /* 160 + 10 + 10 + 420 + 320 + 20 + 12 + 396 + 240 + 16 */
    ck_assert_int_eq(mla_param_count(&cfg), 1604);
    ck_assert_int_eq(tl_module_param_count(a.module), 1604);
    mla_free(&a);
    /* DeepSeek-V3's layer, by hand. */
    MLAConfig v3 = {.hidden = 7168, .n_heads = 128, .q_lora_rank = 1536, .kv_lora_rank = 512,
                    .qk_nope_head_dim = 128, .qk_rope_head_dim = 64, .v_head_dim = 128};
    ck_assert_int_eq(mla_param_count(&v3), 187107328);
    tl_scope_pop();
}
END_TEST

/* With the queries' rope rows zeroed, positions cannot matter. */
START_TEST(my_nope_features_carry_no_position)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    MLAttention a;
    my_layer(&a, fx, &MY_CASES[0]);
    tl_tensor *w = tl_module_param(a.q_b_proj, "weight");
    for (int h = 0; h < 3; h++) {
        tl_tensor *rope_rows = tl_narrow(w, 0, h * 14 + 6, 8);
        ck_assert_int_eq(tl_copy_into(rope_rows, tl_zeros_like(rope_rows)), 0);
    }
    const int64_t p1[6] = {0, 1, 2, 3, 4, 5}, p2[6] = {7, 300, 2, 55, 9, 1};
    tl_tensor *x = tl_fixture_tensor(fx, "x");
    tl_tensor *y1 = mla_forward(&a, x, tl_from_i64(p1, TL_SHAPE(6)), NULL, NULL, 0);
    tl_tensor *y2 = mla_forward(&a, x, tl_from_i64(p2, TL_SHAPE(6)), NULL, NULL, 0);
    tl_assert_ok(y1);
    tl_assert_close(y2, y1, 0.0, my_tol("test_nope_part_ignores_positions", "atol"));
    mla_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* The absorbed path is the naive one reordered: equal on a random layer. */
START_TEST(my_absorbed_equals_naive_random_layer)
{
    tl_scope_push();
    MLAConfig cfg = {.hidden = 10, .n_heads = 2, .q_lora_rank = 4, .kv_lora_rank = 3,
                     .qk_nope_head_dim = 5, .qk_rope_head_dim = 4, .v_head_dim = 6,
                     .attention_bias = true, .rope_interleave = true};
    RopeSpec r;
    ck_assert_int_eq(rope_spec_init(&r, 4, 4, 100.0, ROPE_HALF), 0);
    tl_pcg32 rng = tl_test_rng(11);
    MLAttention a;
    ck_assert_int_eq(mla_init(&a, &cfg, &r, &rng), 0);
    tl_tensor *x = tl_mul_scalar(tl_randn(&rng, TL_SHAPE(2, 5, 10)), 2.0);
    a.path = MLA_PATH_NAIVE;
    tl_tensor *naive = mla_forward(&a, x, NULL, NULL, NULL, 0);
    a.path = MLA_PATH_ABSORBED;
    tl_tensor *absorbed = mla_forward(&a, x, NULL, NULL, NULL, 0);
    tl_assert_ok(naive);
    tl_assert_close(absorbed, naive, my_tol("test_absorbed_equals_naive", "rtol"),
                    my_tol("test_absorbed_equals_naive", "atol"));
    mla_free(&a);
    tl_scope_pop();
}
END_TEST

/* AUTO: naive without a cache or into an empty one; absorbed for a decode step. */
START_TEST(my_auto_path_absorbs_only_decode)
{
    tl_scope_push();
    MLAConfig cfg = {.hidden = 8, .n_heads = 4, .kv_lora_rank = 64, .qk_nope_head_dim = 16,
                     .qk_rope_head_dim = 8, .v_head_dim = 16};
    RopeSpec r;
    ck_assert_int_eq(rope_spec_init(&r, 8, 8, 1e4, ROPE_HALF), 0);
    MLAttention a;
    ck_assert_int_eq(mla_init(&a, &cfg, &r, NULL), 0);
    ck_assert_int_eq(mla_choose_path(&a, 32, 32, false), MLA_PATH_NAIVE);
    ck_assert_int_eq(mla_choose_path(&a, 32, 32, true), MLA_PATH_NAIVE);    /* prefill */
    ck_assert_int_eq(mla_choose_path(&a, 1, 33, true), MLA_PATH_ABSORBED);  /* decode */
    mla_free(&a);
    tl_scope_pop();
}
END_TEST
