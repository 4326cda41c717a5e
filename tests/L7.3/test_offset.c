/* L7.3 differential: positions are data, never "0, 1, 2, ...". The last
 * tokens of a sequence, rotated alone at their own positions, equal the tail
 * of the whole sequence rotated at once; so does each token decoded one at a
 * time. That is what a KV cache relies on: keys rotated when they arrived
 * stay right. With positions [B, T], each batch row uses its own. */
#include <check.h>
#include <stdio.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rope.h"

enum { OF_B = 2, OF_T = 10, OF_H = 2, OF_D = 8, OF_PAST = 4 };

static double tolerance(const char *which) {
    char key[128];
    snprintf(key, sizeof key, "tolerances.test_offset_sequence_equals_tail.%s", which);
    return tl_fixture_number("L7.3/rope.json", key);
}

static void assert_same(const tl_tensor *got, const tl_tensor *want, const char *what) {
    char msg[768];
    ck_assert_msg(got != NULL, "%s: NULL (%s)", what, tl_error() ? tl_error() : "no message");
    ck_assert_msg(tl_close_report(got, want, tolerance("rtol"), tolerance("atol"), msg,
                                  sizeof msg), "%s: %s", what, msg);
}

START_TEST(test_offset_sequence_equals_tail)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(7321);
    for (int pairing = ROPE_HALF; pairing <= ROPE_INTERLEAVED; pairing++) {
        RopeSpec spec;
        ck_assert_msg(rope_spec_init(&spec, OF_D, OF_D, 10000.0, (rope_pairing)pairing) == 0,
                      "rope_spec_init: %s", tl_error());
        tl_tensor *x = tl_randn(&rng, TL_SHAPE(OF_B, OF_T, OF_H, OF_D));
        tl_tensor *full = rope_apply(&spec, x, tl_arange(0, OF_T));
        tl_assert_ok(full);

        /* The prompt was OF_PAST tokens; the rest arrive at positions 4..9. */
        tl_tensor *tail = rope_apply(&spec, tl_narrow(x, 1, OF_PAST, OF_T - OF_PAST),
                                     tl_arange(OF_PAST, OF_T));
        assert_same(tail, tl_narrow(full, 1, OF_PAST, OF_T - OF_PAST),
                    "rope_apply(x[:, 4:], positions 4..9) vs rope_apply(x, 0..9)[:, 4:]");

        /* Decoding: one token at a time, at its own position. */
        for (int64_t t = 0; t < OF_T; t++) {
            tl_tensor *one = rope_apply(&spec, tl_narrow(x, 1, t, 1), tl_arange(t, t + 1));
            char what[96];
            snprintf(what, sizeof what, "token %lld decoded alone at position %lld",
                     (long long)t, (long long)t);
            assert_same(one, tl_narrow(full, 1, t, 1), what);
        }
    }
    tl_scope_pop();
}
END_TEST

START_TEST(test_batch_rows_use_their_own_positions)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(7322);
    RopeSpec spec;
    ck_assert_msg(rope_spec_init(&spec, OF_D, OF_D, 10000.0, ROPE_HALF) == 0,
                  "rope_spec_init: %s", tl_error());
    tl_tensor *x = tl_randn(&rng, TL_SHAPE(OF_B, 3, OF_H, OF_D));
    /* Row 0 is a fresh prompt, row 1 continues a cache of 20 tokens. */
    const int64_t pos[OF_B * 3] = {0, 1, 2, 20, 21, 22};
    tl_tensor *both = rope_apply(&spec, x, tl_from_i64(pos, TL_SHAPE(OF_B, 3)));
    tl_assert_ok(both);
    for (int64_t b = 0; b < OF_B; b++) {
        tl_tensor *row = rope_apply(&spec, tl_narrow(x, 0, b, 1),
                                    tl_from_i64(pos + 3 * b, TL_SHAPE(3)));
        char what[96];
        snprintf(what, sizeof what, "batch row %lld rotated alone at [%lld, %lld, %lld]",
                 (long long)b, (long long)pos[3 * b], (long long)pos[3 * b + 1],
                 (long long)pos[3 * b + 2]);
        assert_same(row, tl_narrow(both, 0, b, 1), what);
    }
    /* [1, T] is shared by the batch, like [T]. */
    tl_tensor *shared = rope_apply(&spec, x, tl_from_i64(pos + 3, TL_SHAPE(1, 3)));
    assert_same(shared, rope_apply(&spec, x, tl_from_i64(pos + 3, TL_SHAPE(3))),
                "positions [1, T] vs the same positions [T]");
    tl_scope_pop();
}
END_TEST
