/* My property tests: rotations keep lengths, scores depend on i - j only,
 * and positions are data (an offset sequence is the tail of a longer one). */
#include <check.h>
#include <math.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rope.h"

/* Pairs keep their length (times a); features past rotary_dim pass through. */
START_TEST(my_pairs_keep_their_length)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(31);
    const double scales[2] = {1.0, 1.5};
    for (int pairing = ROPE_HALF; pairing <= ROPE_INTERLEAVED; pairing++)
        for (int k = 0; k < 2; k++) {
            RopeSpec s;
            ck_assert_int_eq(rope_spec_init(&s, 8, 6, 10000.0, (rope_pairing)pairing), 0);
            s.attention_scaling = scales[k];
            tl_tensor *x = tl_randn(&rng, TL_SHAPE(1, 4, 2, 8));
            const int64_t p[4] = {1, 7, 300, 5000};
            tl_tensor *y = rope_apply(&s, x, tl_from_i64(p, TL_SHAPE(4)));
            tl_assert_ok(y);
            for (int row = 0; row < 8; row++)
                for (int i = 0; i < 3; i++) {
                    int u = pairing == ROPE_HALF ? i : 2 * i;
                    int v = pairing == ROPE_HALF ? i + 3 : 2 * i + 1;
                    double xu = tl_item_at(x, row * 8 + u), xv = tl_item_at(x, row * 8 + v);
                    double yu = tl_item_at(y, row * 8 + u), yv = tl_item_at(y, row * 8 + v);
                    double want = scales[k] * scales[k] * (xu * xu + xv * xv);
                    ck_assert_double_eq_tol(yu * yu + yv * yv, want, 1e-5 * (1 + want));
                }
            for (int row = 0; row < 8; row++)
                for (int d = 6; d < 8; d++)
                    ck_assert_double_eq(tl_item_at(y, row * 8 + d), tl_item_at(x, row * 8 + d));
        }
    tl_scope_pop();
}
END_TEST

static double score(const RopeSpec *s, tl_tensor *q, tl_tensor *k, int64_t i, int64_t j) {
    tl_tensor *qr = rope_apply(s, q, tl_from_i64(&i, TL_SHAPE(1)));
    tl_tensor *kr = rope_apply(s, k, tl_from_i64(&j, TL_SHAPE(1)));
    tl_assert_ok(qr);
    tl_assert_ok(kr);
    return tl_item(tl_sum_all(tl_mul(qr, kr)));
}

/* q(i) . k(j) = q(i + n) . k(j + n). */
START_TEST(my_scores_depend_on_the_distance_only)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(32);
    for (int pairing = ROPE_HALF; pairing <= ROPE_INTERLEAVED; pairing++) {
        RopeSpec s;
        ck_assert_int_eq(rope_spec_init(&s, 8, 8, 100.0, (rope_pairing)pairing), 0);
        tl_tensor *q = tl_randn(&rng, TL_SHAPE(1, 1, 1, 8));
        tl_tensor *k = tl_randn(&rng, TL_SHAPE(1, 1, 1, 8));
        for (int64_t i = 0; i < 6; i++)
            for (int64_t j = 0; j < 6; j++) {
                double base = score(&s, q, k, i, j);
                ck_assert_double_eq_tol(score(&s, q, k, i + 9, j + 9), base, 1e-4);
                ck_assert_double_eq_tol(score(&s, q, k, i + 500, j + 500), base, 1e-4);
            }
    }
    tl_scope_pop();
}
END_TEST

/* The last 3 of 8 tokens, rotated alone at positions 5..7, are the tail of the
 * whole; each batch row uses its own row of positions. */
START_TEST(my_offset_sequence_is_the_tail)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(33);
    RopeSpec s;
    ck_assert_int_eq(rope_spec_init(&s, 8, 8, 10000.0, ROPE_HALF), 0);
    tl_tensor *x = tl_randn(&rng, TL_SHAPE(2, 8, 2, 8));
    tl_tensor *full = rope_apply(&s, x, tl_arange(0, 8));
    tl_tensor *tail = rope_apply(&s, tl_narrow(x, 1, 5, 3), tl_arange(5, 8));
    tl_assert_ok(full);
    tl_assert_close(tail, tl_narrow(full, 1, 5, 3), 1e-6, 1e-6);

    const int64_t rows[6] = {0, 1, 2, 5, 6, 7};
    tl_tensor *both = rope_apply(&s, tl_narrow(x, 1, 0, 3), tl_from_i64(rows, TL_SHAPE(2, 3)));
    tl_assert_ok(both);
    tl_assert_close(tl_narrow(both, 0, 0, 1), tl_narrow(tl_narrow(full, 1, 0, 3), 0, 0, 1),
                    1e-6, 1e-6);
    tl_tensor *second = rope_apply(&s, tl_narrow(tl_narrow(x, 1, 0, 3), 0, 1, 1),
                                   tl_arange(5, 8));
    tl_assert_close(tl_narrow(both, 0, 1, 1), second, 1e-6, 1e-6);
    tl_scope_pop();
}
END_TEST

/* Tables shared by q and k, and the [B, H, T, D] layout, change nothing. */
START_TEST(my_layouts_agree)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(34);
    RopeSpec s;
    ck_assert_int_eq(rope_spec_init(&s, 8, 8, 1000.0, ROPE_INTERLEAVED), 0);
    tl_tensor *x = tl_randn(&rng, TL_SHAPE(1, 3, 5, 8));          /* T = 3, H = 5 */
    tl_tensor *p = tl_arange(10, 13), *c, *sn;
    ck_assert_int_eq(rope_cos_sin(&s, p, &c, &sn), 0);
    tl_tensor *want = rope_apply(&s, x, p);
    tl_assert_close(rope_apply_cos_sin(&s, x, c, sn, ROPE_BTHD), want, 1e-6, 1e-6);
    tl_tensor *y = rope_apply_cos_sin(&s, tl_transpose(x, 1, 2), c, sn, ROPE_BHTD);
    tl_assert_ok(y);
    tl_assert_close(tl_transpose(y, 1, 2), want, 1e-6, 1e-6);
    tl_scope_pop();
}
END_TEST
