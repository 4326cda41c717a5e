/* L7.7 golden and properties of attention_mask. The masks of the oracle
 * (masking_utils' causal_mask_function and sliding_window_overlay, with a sink
 * overlay) match exactly: 0 or fp32 min, never -inf. A window of W shows
 * exactly min(W, i + 1) keys, the query's own included, and i - j = W is not
 * visible; sink tokens stay visible however far the window has moved, but
 * never from a query before them. */
#include "mask_fixture.h"

typedef struct {
    const char *name;
    int64_t q0, nq, k[10], nk, window, sinks;
} mask_case;

/* As oracle/L7.7/make_fixtures.py's MASKS (queries are q0 .. q0 + nq - 1). */
static const mask_case CASES[] = {
    {"causal", 0, 6, {0, 1, 2, 3, 4, 5}, 6, 0, 0},
    {"window", 4, 6, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 10, 3, 0},
    {"window_sinks", 4, 6, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 10, 3, 2},
    {"window1", 3, 3, {0, 1, 2, 3, 4, 5}, 6, 1, 0},
    {"early_sinks", 0, 4, {0, 1, 2, 3}, 4, 2, 2},
    {"ring", 11, 1, {0, 1, 10, 11, 8, 9}, 6, 4, 2},
    {"ring_chunk", 12, 2, {0, 1, 10, 11, 8, 9, 12, 13}, 8, 4, 2},
};

START_TEST(test_golden_masks)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MASK_ST);
    double rtol = mask_tol("test_golden_masks", "rtol");
    double atol = mask_tol("test_golden_masks", "atol");
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        const mask_case *mc = &CASES[c];
        tl_tensor *mask = attention_mask(tl_arange(mc->q0, mc->q0 + mc->nq), i64s(mc->k, mc->nk),
                                         mc->window, mc->sinks);
        char name[64];
        snprintf(name, sizeof name, "mask.%s", mc->name);
        ck_assert_msg(mask && mask->dtype == TL_F32, "%s: %s", name, tl_error());
        mask_assert_close(mask, tl_fixture_tensor(fx, name), rtol, atol, name);
        for (int64_t i = 0; i < tl_numel(mask); i++) {
            double v = tl_item_at(mask, i);
            ck_assert_msg(v == 0.0 || v == ATTN_MASK_MIN,
                          "%s[%lld] = %g: a mask holds only 0 and fp32 min (never -inf)", name,
                          (long long)i, v);
        }
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_window_shows_exactly_w_keys)
{
    tl_scope_push();
    const int64_t n = 16;
    for (int64_t w = 1; w <= 5; w++) {
        tl_tensor *mask = attention_mask(tl_arange(0, n), tl_arange(0, n), w, 0);
        tl_assert_ok(mask);
        for (int64_t i = 0; i < n; i++) {
            int64_t shown = 0;
            for (int64_t j = 0; j < n; j++) shown += tl_item_at(mask, i * n + j) == 0.0;
            int64_t want = i + 1 < w ? i + 1 : w;
            ck_assert_msg(shown == want, "window %lld, query %lld: %lld keys visible, expected "
                          "%lld (the last W, its own included)", (long long)w, (long long)i,
                          (long long)shown, (long long)want);
            ck_assert_msg(tl_item_at(mask, i * n + i) == 0.0, "a query must see itself");
            if (i >= w)
                ck_assert_msg(tl_item_at(mask, i * n + i - w) != 0.0,
                              "window %lld: key i - W = %lld is visible to query %lld; "
                              "exactly W keys, i - j < W", (long long)w,
                              (long long)(i - w), (long long)i);
        }
    }
    tl_scope_pop();
}
END_TEST

START_TEST(test_sinks_stay_visible_after_leaving_the_window)
{
    tl_scope_push();
    const int64_t n = 20, w = 3, sinks = 2;
    tl_tensor *mask = attention_mask(tl_arange(0, n), tl_arange(0, n), w, sinks);
    tl_assert_ok(mask);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            bool want = j <= i && (j > i - w || j < sinks);
            bool got = tl_item_at(mask, i * n + j) == 0.0;
            ck_assert_msg(got == want, "query %lld, key %lld: %s, expected %s (window 3, "
                          "2 sinks)", (long long)i, (long long)j, got ? "visible" : "hidden",
                          want ? "visible" : "hidden");
        }
    /* Without a window everything causal is visible, sinks or not. */
    tl_tensor *causal = attention_mask(tl_arange(0, 5), tl_arange(0, 5), ATTN_NO_WINDOW, 2);
    tl_assert_ok(causal);
    for (int64_t i = 0; i < 5; i++)
        for (int64_t j = 0; j < 5; j++)
            ck_assert((tl_item_at(causal, i * 5 + j) == 0.0) == (j <= i));
    tl_scope_pop();
}
END_TEST
