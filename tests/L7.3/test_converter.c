/* L7.3 golden and differential: HF's checkpoint converter. Meta's files pair
 * features interleaved; HF's code pairs them by halves; the converter
 * (convert_llama_weights_to_hf.py, permute()) reorders the rows of q_proj and
 * k_proj per head so that both compute the same attention. Checked: the
 * permutation equals the oracle's exactly and its inverse undoes it; half
 * pairing on the converted weights gives HF's rotated q and k; interleaved
 * pairing on Meta's weights gives the same scores q . k per head; and the
 * rows past a partial rotary_dim keep their place. */
#include <check.h>
#include <stdio.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rope.h"

enum { CV_HEADS = 2, CV_D = 8, CV_IN = 6, CV_T = 5 };

static double tolerance(const char *which) {
    char key[128];
    snprintf(key, sizeof key, "tolerances.test_converter_permutation_meta_to_hf.%s", which);
    return tl_fixture_number("L7.3/rope.json", key);
}

static void assert_close_msg(const tl_tensor *got, const tl_tensor *want, double rtol,
                             double atol, const char *what) {
    char msg[768];
    ck_assert_msg(got != NULL, "%s: NULL (%s)", what, tl_error() ? tl_error() : "no message");
    ck_assert_msg(tl_close_report(got, want, rtol, atol, msg, sizeof msg), "%s: %s", what, msg);
}

/* q or k [1, T, heads, D] from the input and a weight [heads * D, in]. */
static tl_tensor *project(tl_tensor *x, tl_tensor *w) {
    return tl_reshape(tl_linear(x, w, NULL), TL_SHAPE(1, CV_T, CV_HEADS, CV_D));
}

/* Scores [1, heads, T, T] = q_t . k_s per head. */
static tl_tensor *scores(tl_tensor *q, tl_tensor *k) {
    return tl_matmul(tl_transpose(q, 1, 2), tl_transpose(tl_transpose(k, 1, 2), 2, 3));
}

START_TEST(test_converter_permutation_meta_to_hf)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load("L7.3/rope.safetensors");
    double rtol = tolerance("rtol"), atol = tolerance("atol");
    tl_tensor *x = tl_fixture_tensor(fx, "converter.x");
    tl_tensor *pos = tl_cast(tl_fixture_tensor(fx, "converter.positions"), TL_I64);
    RopeSpec half, inter;
    ck_assert_msg(rope_spec_init(&half, CV_D, CV_D, 10000.0, ROPE_HALF) == 0,
                  "rope_spec_init: %s", tl_error());
    ck_assert_msg(rope_spec_init(&inter, CV_D, CV_D, 10000.0, ROPE_INTERLEAVED) == 0,
                  "rope_spec_init: %s", tl_error());

    tl_tensor *rotated_meta[2], *rotated_hf[2];
    const char *which[2] = {"q", "k"};
    for (int n = 0; n < 2; n++) {
        char name[64], want[64], what[128];
        snprintf(name, sizeof name, "converter.w%s_meta", which[n]);
        snprintf(want, sizeof want, "converter.w%s_hf", which[n]);
        tl_tensor *w_meta = tl_fixture_tensor(fx, name);
        /* A permutation moves values: exact. */
        tl_tensor *w_hf = rope_permute_for_half(w_meta, CV_HEADS, CV_D);
        snprintf(what, sizeof what, "rope_permute_for_half(%s) vs the converter's", name);
        assert_close_msg(w_hf, tl_fixture_tensor(fx, want), 0.0, 0.0, what);
        snprintf(what, sizeof what, "rope_permute_for_interleaved(rope_permute_for_half(%s))",
                 name);
        assert_close_msg(rope_permute_for_interleaved(w_hf, CV_HEADS, CV_D), w_meta, 0.0, 0.0,
                         what);

        rotated_hf[n] = rope_apply(&half, project(x, w_hf), pos);
        snprintf(want, sizeof want, "converter.%s_hf", which[n]);
        snprintf(what, sizeof what, "half pairing on the converted %s_proj vs HF's", which[n]);
        assert_close_msg(rotated_hf[n], tl_fixture_tensor(fx, want), rtol, atol, what);
        rotated_meta[n] = rope_apply(&inter, project(x, w_meta), pos);
        tl_assert_ok(rotated_meta[n]);

        /* The same features, in the converter's order: [r0, r2, .., r1, r3, ..] per head. */
        tl_tensor *features = tl_transpose(tl_reshape(rotated_meta[n],
                                                      TL_SHAPE(CV_T, CV_HEADS * CV_D)), 0, 1);
        tl_tensor *reordered = tl_transpose(rope_permute_for_half(features, CV_HEADS, CV_D), 0, 1);
        snprintf(what, sizeof what, "Meta's rotated %s, reordered as the converter does", which[n]);
        assert_close_msg(tl_reshape(reordered, TL_SHAPE(1, CV_T, CV_HEADS, CV_D)), rotated_hf[n],
                         rtol, atol, what);
    }
    tl_tensor *want = tl_fixture_tensor(fx, "converter.scores_meta");
    assert_close_msg(scores(rotated_meta[0], rotated_meta[1]), want, rtol, atol,
                     "interleaved scores on Meta's weights vs Meta's");
    assert_close_msg(scores(rotated_hf[0], rotated_hf[1]), want, rtol, atol,
                     "half-pairing scores on HF's weights vs Meta's");
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_converter_partial_rotary_and_bias)
{
    tl_scope_push();
    /* Rows numbered 0..19: 2 heads of 10, rotary_dim 6, width 3 (row r = r everywhere). */
    float rows[20 * 3];
    for (int r = 0; r < 20; r++)
        for (int c = 0; c < 3; c++) rows[r * 3 + c] = (float)r;
    tl_tensor *w = tl_from_f32(rows, TL_SHAPE(20, 3));
    tl_tensor *permuted = rope_permute_for_half(w, 2, 6);
    tl_assert_ok(permuted);
    /* Per head: the first 6 rows [0 1 2 3 4 5] become [0 2 4 1 3 5]; 6..9 stay. */
    const int head_order[10] = {0, 2, 4, 1, 3, 5, 6, 7, 8, 9};
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 10; j++)
            for (int c = 0; c < 3; c++)
                ck_assert_msg(tl_item_at(permuted, (h * 10 + j) * 3 + c) == h * 10 + head_order[j],
                              "row %d of the permuted weight holds row %g; expected row %d",
                              h * 10 + j, tl_item_at(permuted, (h * 10 + j) * 3 + c),
                              h * 10 + head_order[j]);
    /* A bias [rows] moves the same way, and the inverse restores it. */
    float bias[20];
    for (int r = 0; r < 20; r++) bias[r] = (float)r;
    tl_tensor *b = tl_from_f32(bias, TL_SHAPE(20));
    tl_tensor *pb = rope_permute_for_half(b, 2, 6);
    tl_assert_ok(pb);
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 10; j++)
            ck_assert_msg(tl_item_at(pb, h * 10 + j) == h * 10 + head_order[j],
                          "bias entry %d holds %g; expected %d", h * 10 + j,
                          tl_item_at(pb, h * 10 + j), h * 10 + head_order[j]);
    char msg[768];
    ck_assert_msg(tl_close_report(rope_permute_for_interleaved(pb, 2, 6), b, 0.0, 0.0, msg,
                                  sizeof msg), "the inverse on a bias: %s", msg);
    tl_scope_pop();
}
END_TEST
