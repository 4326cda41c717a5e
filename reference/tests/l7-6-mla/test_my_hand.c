/* A layer small enough to work out on paper: one head, dn 1, dr 2, dv 1, a
 * latent of width 1, no rope features in use. c = 3 x[0] - 3 x[1], so
 * RMS(c) = +1 for token 0 and -1 for token 1; k_nope = RMS(c), v = 2 RMS(c).
 * Token 1's query is q_nope = sqrt(3) ln 2: scores (1/sqrt(dn + dr)) *
 * [ln 2 * sqrt 3, -ln 2 * sqrt 3] / sqrt 3 = [ln 2, -ln 2], so softmax
 * [4/5, 1/5] and o = 2 * 4/5 - 2 * 1/5 = 6/5. Token 0 sees only itself:
 * o = 2. o_proj copies o to y[0]. */
#include "my_mla.h"

static void put(tl_module *lin, const float *w, int64_t rows, int64_t cols) {
    ck_assert_int_eq(tl_copy_into(tl_module_param(lin, "weight"),
                                  tl_from_f32(w, TL_SHAPE(rows, cols))), 0);
}

START_TEST(my_hand_one_head_one_latent)
{
    tl_scope_push();
    MLAConfig cfg = {.hidden = 2, .n_heads = 1, .kv_lora_rank = 1, .qk_nope_head_dim = 1,
                     .qk_rope_head_dim = 2, .v_head_dim = 1};
    RopeSpec r;
    ck_assert_int_eq(rope_spec_init(&r, 2, 2, 10000.0, ROPE_HALF), 0);
    MLAttention a;
    ck_assert_int_eq(mla_init(&a, &cfg, &r, NULL), 0);
    const float q[3 * 2] = {0, (float)(sqrt(3.0) * log(2.0)), 0, 0, 0, 0};
    const float kva[3 * 2] = {3, -3, 0, 0, 0, 0};
    const float kvb[2 * 1] = {1, 2};
    const float o[2 * 1] = {1, 0};
    put(a.q_proj, q, 3, 2);
    put(a.kv_a_proj_with_mqa, kva, 3, 2);
    put(a.kv_b_proj, kvb, 2, 1);
    put(a.o_proj, o, 2, 1);
    const float xs[4] = {1, 0, 0, 1}, ys[4] = {2, 0, 1.2f, 0};
    tl_tensor *x = tl_from_f32(xs, TL_SHAPE(1, 2, 2)), *want = tl_from_f32(ys, TL_SHAPE(1, 2, 2));
    double t = my_tol("test_hand_example_one_latent_two_heads", "atol");
    for (int p = 0; p < 2; p++) {
        a.path = p ? MLA_PATH_ABSORBED : MLA_PATH_NAIVE;
        tl_assert_close(mla_forward(&a, x, NULL, NULL, NULL, 0), want, t, t);
        /* Token by token through the cache: the same rows; the cache holds RMS(c). */
        KVCache c;
        ck_assert_int_eq(mla_cache_init(&c, &cfg, 1, 1, 2), 0);
        tl_no_grad_push();
        tl_tensor *y0 = mla_forward(&a, tl_narrow(x, 1, 0, 1), NULL, NULL, &c, 0);
        tl_tensor *y1 = mla_forward(&a, tl_narrow(x, 1, 1, 1), NULL, NULL, &c, 0);
        tl_no_grad_pop();
        tl_assert_ok(y0);
        tl_assert_ok(y1);
        tl_assert_close(y0, tl_narrow(want, 1, 0, 1), t, t);
        tl_assert_close(y1, tl_narrow(want, 1, 1, 1), t, t);
        tl_tensor *k, *v;
        ck_assert_int_eq(kv_cache_view(&c, 0, &k, &v), 0);
        const float lat[2] = {1, -1};
        tl_assert_close(k, tl_from_f32(lat, TL_SHAPE(1, 1, 2, 1)), t, t);
        kv_cache_free(&c);
    }
    mla_free(&a);
    tl_scope_pop();
}
END_TEST
