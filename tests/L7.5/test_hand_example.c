/* L7.5 section 3, by hand: two query heads share one kv head (Hq = 2,
 * Hkv = 1, D = 2, hidden 4), a RoPE whose one frequency is pi/2 (position p
 * turns a pair by p quarter turns), and the causal mask.
 *
 *   x0 = e0, x1 = e1;  W_k picks x[0:2], W_v = 4 W_k, so k0 = [1, 0],
 *   k1 = [0, 1] -> RoPE at position 1 -> [-1, 0];  v0 = [4, 0], v1 = [0, 4].
 *   Head 0 reads a x[0:2] and head 1 reads -a x[0:2], a = ln(3) / sqrt(2), so
 *   at token 1 the scaled scores are -+ln(3)/2: softmax [1/4, 3/4] for head 0,
 *   [3/4, 1/4] for head 1. Token 0 sees only itself.
 *   o = [[4, 0], [4, 0]] at token 0 and [[1, 3], [3, 1]] at token 1;
 *   y = [o_h0 + o_h1, o_h0 - o_h1]: y0 = [8, 0, 0, 0], y1 = [4, 4, -2, 2].
 * The same numbers come out of two cached steps (token 0, then token 1). */
#include <check.h>
#include <math.h>
#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"
#include "tinyllm/modern/attention.h"

static void set_weight(tl_module *proj, const float *w, int64_t out, int64_t in) {
    tl_tensor *src = tl_from_f32(w, TL_SHAPE(out, in));
    ck_assert_int_eq(tl_copy_into(tl_module_param(proj, "weight"), src), 0);
}

static void hand_attention(GQAttention *a) {
    RopeSpec r;
    ck_assert_msg(rope_spec_init(&r, 2, 2, 10000.0, ROPE_HALF) == 0, "rope: %s", tl_error());
    r.inv_freq[0] = (float)(M_PI / 2);            /* a quarter turn per position */
    GQAConfig cfg = {.hidden = 4, .n_heads = 2, .n_kv_heads = 1, .head_dim = 2};
    ck_assert_msg(gqa_init(a, &cfg, &r, NULL) == 0, "gqa_init: %s", tl_error());
    const float s = (float)(log(3.0) / sqrt(2.0));
    const float wq[16] = {s, 0, 0, 0, 0, s, 0, 0, -s, 0, 0, 0, 0, -s, 0, 0};
    const float wk[8] = {1, 0, 0, 0, 0, 1, 0, 0};
    const float wv[8] = {4, 0, 0, 0, 0, 4, 0, 0};
    const float wo[16] = {1, 0, 1, 0, 0, 1, 0, 1, 1, 0, -1, 0, 0, 1, 0, -1};
    set_weight(a->q_proj, wq, 4, 4);
    set_weight(a->k_proj, wk, 2, 4);
    set_weight(a->v_proj, wv, 2, 4);
    set_weight(a->o_proj, wo, 4, 4);
}

START_TEST(test_hand_example_two_heads_share_a_kv_head)
{
    tl_scope_push();
    double rtol = tl_fixture_number("L7.5/attention.json",
                                    "tolerances.test_hand_example_two_heads_share_a_kv_head.rtol");
    double atol = tl_fixture_number("L7.5/attention.json",
                                    "tolerances.test_hand_example_two_heads_share_a_kv_head.atol");
    GQAttention a;
    hand_attention(&a);
    const float xs[8] = {1, 0, 0, 0, 0, 1, 0, 0};
    const float want[8] = {8, 0, 0, 0, 4, 4, -2, 2};
    tl_tensor *x = tl_from_f32(xs, TL_SHAPE(1, 2, 4));
    tl_tensor *positions = tl_arange(0, 2);
    char msg[768];

    tl_tensor *y = gqa_forward(&a, x, positions, NULL, NULL, 0);
    tl_assert_ok(y);
    ck_assert_msg(tl_close_report(y, tl_from_f32(want, TL_SHAPE(1, 2, 4)), rtol, atol, msg,
                                  sizeof msg),
                  "the full forward of section 3: %s", msg);

    /* Token 0, then token 1 through a cache: the same two rows. */
    KVCache cache;
    ck_assert_msg(kv_cache_init(&cache, 1, 1, 1, 2, 2, 4) == 0, "kv_cache_init: %s", tl_error());
    tl_no_grad_push();
    for (int t = 0; t < 2; t++) {
        tl_tensor *yt = gqa_forward(&a, tl_narrow(x, 1, t, 1), NULL, NULL, &cache, 0);
        ck_assert_msg(yt != NULL, "cached step %d: %s", t, tl_error());
        ck_assert_msg(tl_close_report(yt, tl_from_f32(want + 4 * t, TL_SHAPE(1, 1, 4)), rtol,
                                      atol, msg, sizeof msg),
                      "cached step %d of section 3: %s", t, msg);
    }
    tl_no_grad_pop();
    kv_cache_free(&cache);
    gqa_free(&a);
    tl_scope_pop();
}
END_TEST
