/* L7.6 unit: the chapter's worked example (section 3), by hand.
 *
 * One layer with H = 4, n = 2 heads, dn = 1, dr = 2, dv = 1, a latent of
 * r_kv = 1, q_proj (no q_lora), and a RopeSpec whose one frequency is pi/2
 * (position p turns the pair by p quarter turns). Tokens x0 = e0, x1 = e1 at
 * positions 0 and 1:
 *   c = 2 x[0] - 2 x[1]        -> RMS(c) = +1, -1      (the norm removes the 2)
 *   k_rope = [x[0] + x[1], 0]  -> after RoPE [1, 0], [0, 1]   (shared by both heads)
 *   kv_b_proj: per head k_nope = RMS(c), v = 4 RMS(c)
 *   head 0: q_nope = alpha x[1], no q_rope;  head 1: no q_nope, q_rope = [beta x[1], 0]
 *   alpha = sqrt(3) ln(3) / 2, beta = sqrt(3) ln(3): with the scale 1/sqrt(dn + dr) =
 *   1/sqrt(3) token 1's scores differ by ln 3 in each head, so its weights are
 *   [3/4, 1/4] (head 0) and [1/4, 3/4] (head 1); o = [2, -2]; token 0 sees only
 *   itself: o = [4, 4]. o_proj gives y = [o0 + o1, o0 - o1, 0, 0]:
 *       y0 = [8, 0, 0, 0],   y1 = [0, 4, 0, 0]
 * Both paths give these rows, as a full forward and as two cached steps; the
 * cache then holds RMS(c) = [1, -1] and the rotated k_rope: 1 + 2 floats per
 * token. */
#include "mla_fixture.h"

#define HAND_TOL "test_hand_example_one_latent_two_heads"

static void set_param(tl_module *lin, const char *name, const float *values, int64_t rows,
                      int64_t cols) {
    tl_tensor *w = tl_module_param(lin, name);
    ck_assert_msg(w != NULL, "no parameter %s: %s", name, tl_error());
    tl_tensor *src = cols > 0 ? tl_from_f32(values, TL_SHAPE(rows, cols))
                              : tl_from_f32(values, TL_SHAPE(rows));
    ck_assert_msg(tl_copy_into(w, src) == 0, "%s: %s", name, tl_error());
}

/* The layer of the header comment. */
static void hand_layer(MLAttention *a) {
    MLAConfig cfg = {.hidden = 4, .n_heads = 2, .q_lora_rank = 0, .kv_lora_rank = 1,
                     .qk_nope_head_dim = 1, .qk_rope_head_dim = 2, .v_head_dim = 1};
    RopeSpec rope;
    ck_assert_int_eq(rope_spec_init(&rope, 2, 2, FX_THETA, ROPE_HALF), 0);
    rope.inv_freq[0] = (float)(M_PI / 2);          /* a quarter turn per position */
    ck_assert_msg(mla_init(a, &cfg, &rope, NULL) == 0, "mla_init: %s", tl_error());
    float alpha = (float)(sqrt(3.0) * log(3.0) / 2), beta = (float)(sqrt(3.0) * log(3.0));
    /* q_proj rows per head: [q_nope, q_rope0, q_rope1]; columns x[0..3]. */
    const float wq[6 * 4] = {0, alpha, 0, 0,   0, 0, 0, 0,   0, 0, 0, 0,
                             0, 0, 0, 0,       0, beta, 0, 0, 0, 0, 0, 0};
    const float wkv_a[3 * 4] = {2, -2, 0, 0,   1, 1, 0, 0,   0, 0, 0, 0};
    const float wkv_b[4 * 1] = {1, 4, 1, 4};       /* per head: k_nope, then v */
    const float wo[4 * 2] = {1, 1,   1, -1,   0, 0,   0, 0};
    set_param(a->q_proj, "weight", wq, 6, 4);
    set_param(a->kv_a_proj_with_mqa, "weight", wkv_a, 3, 4);
    set_param(a->kv_b_proj, "weight", wkv_b, 4, 1);
    set_param(a->o_proj, "weight", wo, 4, 2);
}

START_TEST(test_hand_example_one_latent_two_heads)
{
    tl_scope_push();
    double rtol = mla_tol(HAND_TOL, "rtol"), atol = mla_tol(HAND_TOL, "atol");
    MLAttention a;
    hand_layer(&a);
    const float xs[2 * 4] = {1, 0, 0, 0,   0, 1, 0, 0};
    const float ys[2 * 4] = {8, 0, 0, 0,   0, 4, 0, 0};
    tl_tensor *x = tl_from_f32(xs, TL_SHAPE(1, 2, 4));
    tl_tensor *expected = tl_from_f32(ys, TL_SHAPE(1, 2, 4));
    const mla_path paths[2] = {MLA_PATH_NAIVE, MLA_PATH_ABSORBED};
    for (int p = 0; p < 2; p++) {
        a.path = paths[p];
        char what[96];
        snprintf(what, sizeof what, "the full forward (%s path)", mla_path_name(a.path));
        mla_assert_close(mla_forward(&a, x, NULL, NULL, NULL, 0), expected, rtol, atol, what);

        /* Token 0, then token 1, through the latent cache. */
        KVCache cache;
        MLAConfig cfg = {.hidden = 4, .n_heads = 2, .kv_lora_rank = 1, .qk_nope_head_dim = 1,
                         .qk_rope_head_dim = 2, .v_head_dim = 1};
        ck_assert_msg(mla_cache_init(&cache, &cfg, 1, 1, 2) == 0, "mla_cache_init: %s",
                      tl_error());
        tl_no_grad_push();
        tl_tensor *y0 = mla_forward(&a, tl_narrow(x, 1, 0, 1), NULL, NULL, &cache, 0);
        tl_tensor *y1 = mla_forward(&a, tl_narrow(x, 1, 1, 1), NULL, NULL, &cache, 0);
        tl_no_grad_pop();
        snprintf(what, sizeof what, "token 0 from the cache (%s path)", mla_path_name(a.path));
        mla_assert_close(y0, tl_narrow(expected, 1, 0, 1), rtol, atol, what);
        snprintf(what, sizeof what, "token 1 from the cache (%s path)", mla_path_name(a.path));
        mla_assert_close(y1, tl_narrow(expected, 1, 1, 1), rtol, atol, what);

        /* What the cache holds: RMS(c) and the rotated shared k_rope, 3 floats a token. */
        tl_tensor *keys, *values;
        ck_assert_msg(kv_cache_view(&cache, 0, &keys, &values) == 0, "%s", tl_error());
        const float latents[2] = {1, -1}, k_rope[2 * 2] = {1, 0,   0, 1};
        mla_assert_close(keys, tl_from_f32(latents, TL_SHAPE(1, 1, 2, 1)), rtol, atol,
                         "the cached latents RMS(c)");
        mla_assert_close(values, tl_from_f32(k_rope, TL_SHAPE(1, 1, 2, 2)), rtol, atol,
                         "the cached k_rope after RoPE");
        ck_assert_int_eq(cache.key_dim + cache.value_dim, 3);
        kv_cache_free(&cache);
    }
    mla_free(&a);
    tl_scope_pop();
}
END_TEST
