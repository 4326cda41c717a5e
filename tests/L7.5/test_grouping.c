/* L7.5 property: grouping. With Hq = 6 query heads and Hkv = 3 kv heads,
 * query head h reads kv head h / 2: kv head i serves exactly query heads 2i
 * and 2i + 1. With o_proj the identity (hidden = Hq * D), the output holds
 * each head's result in its own D features, so zeroing kv head i's key and
 * value rows must change heads 2i and 2i + 1 and leave the other four alone.
 * Tiling the kv heads (h mod Hkv, query heads i and i + 3) fails here. */
#include "attn_fixture.h"

enum { G_HQ = 6, G_HKV = 3, G_D = 4, G_HIDDEN = G_HQ * G_D, G_T = 5 };

/* Zeroes rows [i*D, (i+1)*D) of a projection's weight. */
static void zero_head_rows(tl_module *proj, int64_t head) {
    tl_tensor *w = tl_module_param(proj, "weight");
    tl_assert_ok(w);
    for (int64_t r = head * G_D; r < (head + 1) * G_D; r++)
        for (int64_t c = 0; c < G_HIDDEN; c++)
            ck_assert_int_eq(tl_set(w, (int64_t[]){r, c}, 0.0), 0);
}

START_TEST(test_grouping_kv_head_i_serves_query_heads_ig_to_ig_plus_g_minus_1)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(7503);
    tl_tensor *x = tl_randn(&rng, TL_SHAPE(1, G_T, G_HIDDEN));
    tl_tensor *eye = tl_zeros(TL_F32, TL_SHAPE(G_HIDDEN, G_HIDDEN));
    for (int64_t i = 0; i < G_HIDDEN; i++) tl_set(eye, (int64_t[]){i, i}, 1.0);
    RopeSpec rope = attn_rope(G_D);
    GQAConfig cfg = {.hidden = G_HIDDEN, .n_heads = G_HQ, .n_kv_heads = G_HKV, .head_dim = G_D};
    for (int64_t kv = 0; kv < G_HKV; kv++) {
        tl_pcg32 init = tl_test_rng(7504);   /* the same weights for every kv */
        GQAttention a;
        ck_assert_msg(gqa_init(&a, &cfg, &rope, &init) == 0, "gqa_init: %s", tl_error());
        ck_assert_int_eq(tl_copy_into(tl_module_param(a.o_proj, "weight"), eye), 0);
        tl_tensor *y = gqa_forward(&a, x, NULL, NULL, NULL, 0);
        tl_assert_ok(y);
        zero_head_rows(a.k_proj, kv);
        zero_head_rows(a.v_proj, kv);
        tl_tensor *y0 = gqa_forward(&a, x, NULL, NULL, NULL, 0);
        tl_assert_ok(y0);
        for (int64_t h = 0; h < G_HQ; h++) {
            bool in_group = h / (G_HQ / G_HKV) == kv;
            tl_tensor *head = tl_narrow(y, 2, h * G_D, G_D);
            tl_tensor *head0 = tl_narrow(y0, 2, h * G_D, G_D);
            char msg[768];
            bool same = tl_close_report(head0, head, 0.0, 1e-6, msg, sizeof msg);
            ck_assert_msg(same != in_group,
                          "zeroing kv head %lld %s query head %lld (%s); with %d query heads "
                          "and %d kv heads, kv head i serves query heads 2i and 2i + 1",
                          (long long)kv, same ? "did not change" : "changed", (long long)h,
                          in_group ? "one it serves" : "one it does not serve", G_HQ, G_HKV);
        }
        gqa_free(&a);
    }
    tl_scope_pop();
}
END_TEST
