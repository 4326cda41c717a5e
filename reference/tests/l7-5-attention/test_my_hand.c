/* My hand examples: tiny layers whose outputs I can work out on paper. */
#include "my_attn.h"

/* One head, head_dim 2, identity q and k, values 2 x, o the identity, all
 * at position 0 (RoPE is the identity there). Token 0 sees only itself: its
 * output is v0 exactly. Token 1 has q = [0, 1] and keys [1, 0], [0, 1]:
 * scores 0 and 1/sqrt(2), so p1 = 1 / (1 + e^(-1/sqrt 2)). */
START_TEST(my_two_tokens_by_hand)
{
    tl_scope_push();
    RopeSpec r;
    ck_assert_int_eq(rope_spec_init(&r, 2, 2, 10000.0, ROPE_HALF), 0);
    GQAConfig cfg = {.hidden = 2, .n_heads = 1, .n_kv_heads = 1, .head_dim = 2};
    GQAttention a;
    ck_assert_int_eq(gqa_init(&a, &cfg, &r, NULL), 0);
    const float eye[4] = {1, 0, 0, 1}, two[4] = {2, 0, 0, 2};
    tl_module *projs[4] = {a.q_proj, a.k_proj, a.v_proj, a.o_proj};
    for (int i = 0; i < 4; i++) {
        tl_tensor *w = tl_from_f32(i == 2 ? two : eye, TL_SHAPE(2, 2));
        ck_assert_int_eq(tl_copy_into(tl_module_param(projs[i], "weight"), w), 0);
    }
    const float xs[4] = {1, 0, 0, 1};
    tl_tensor *x = tl_from_f32(xs, TL_SHAPE(1, 2, 2));
    tl_tensor *y = gqa_forward(&a, x, tl_zeros(TL_I64, TL_SHAPE(2)), NULL, NULL, 0);
    tl_assert_ok(y);
    double p1 = 1.0 / (1.0 + exp(-1.0 / sqrt(2.0)));
    const float want[4] = {2, 0, (float)(2 * (1 - p1)), (float)(2 * p1)};
    tl_assert_close(y, tl_from_f32(want, TL_SHAPE(1, 2, 2)), 1e-5, 1e-6);
    gqa_free(&a);
    tl_scope_pop();
}
END_TEST

/* The scale is head_dim^-1/2, not hidden^-1/2 and not 1/head_dim. */
START_TEST(my_scale_is_per_head)
{
    tl_scope_push();
    RopeSpec r;
    ck_assert_int_eq(rope_spec_init(&r, 16, 16, 10000.0, ROPE_HALF), 0);
    GQAConfig cfg = {.hidden = 64, .n_heads = 2, .n_kv_heads = 1, .head_dim = 16};
    GQAttention a;
    ck_assert_int_eq(gqa_init(&a, &cfg, &r, NULL), 0);
    ck_assert_msg(fabs(a.scale - 0.25) < 1e-12, "scale %g, expected 16^-1/2", a.scale);
    ck_assert_int_eq(gqa_param_count(&a), 64 * 32 + 2 * 64 * 16 + 32 * 64);
    gqa_free(&a);
    tl_scope_pop();
}
END_TEST
