/* L7.6 property: what positions may and may not change.
 *   - causality: changing the inputs at t >= 3 leaves the outputs at t < 3
 *     unchanged (and moves the rest), on both paths;
 *   - the nope part carries no position: with the rope rows of the queries
 *     zeroed, moving every position anywhere changes nothing;
 *   - the rope part sees only relative positions: shifting every position by
 *     the same amount changes nothing (RoPE's rotations compose). */
#include "mla_fixture.h"

static const mla_path PATHS[2] = {MLA_PATH_NAIVE, MLA_PATH_ABSORBED};

START_TEST(test_causality_future_inputs_do_not_matter)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MLA_ST);
    double atol = mla_tol("test_causality_future_inputs_do_not_matter", "atol");
    MLAttention a;
    mla_from_fixture(&a, fx, mla_case_named("yarn_bias"));
    tl_tensor *x = tl_fixture_tensor(fx, "x"), *positions = mla_positions(fx);
    /* The same first 3 tokens, different last 3. */
    tl_pcg32 rng = tl_test_rng(3);
    tl_tensor *parts[2] = {tl_narrow(x, 1, 0, 3), tl_randn(&rng, TL_SHAPE(FX_B, 3, FX_HIDDEN))};
    tl_tensor *x2 = tl_concat(parts, 2, 1);
    for (int p = 0; p < 2; p++) {
        a.path = PATHS[p];
        tl_tensor *y = mla_forward(&a, x, positions, NULL, NULL, 0);
        tl_tensor *y2 = mla_forward(&a, x2, positions, NULL, NULL, 0);
        tl_assert_ok(y);
        tl_assert_ok(y2);
        char what[96];
        snprintf(what, sizeof what, "outputs at t < 3 (%s path)", mla_path_name(a.path));
        mla_assert_close(tl_narrow(y2, 1, 0, 3), tl_narrow(y, 1, 0, 3), 0.0, atol, what);
        char msg[768];
        ck_assert_msg(!tl_close_report(tl_narrow(y2, 1, 3, 3), tl_narrow(y, 1, 3, 3), 0.0, 1e-3,
                                       msg, sizeof msg),
                      "new inputs at t >= 3 must change the outputs there (%s path)",
                      mla_path_name(a.path));
    }
    mla_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* Zeroes the rope rows of every query head (rows h(dn + dr) + dn ..). */
static void zero_query_rows(const MLAttention *a, int64_t first, int64_t count) {
    tl_module *q = a->q_lora_rank > 0 ? a->q_b_proj : a->q_proj;
    tl_tensor *w = tl_module_param(q, "weight");
    int64_t dqk = a->qk_nope_head_dim + a->qk_rope_head_dim;
    for (int64_t h = 0; h < a->n_heads; h++) {
        tl_tensor *rows = tl_narrow(w, 0, h * dqk + first, count);
        ck_assert_msg(tl_copy_into(rows, tl_zeros_like(rows)) == 0, "%s", tl_error());
    }
}

START_TEST(test_nope_part_ignores_positions)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MLA_ST);
    double atol = mla_tol("test_nope_part_ignores_positions", "atol");
    tl_tensor *x = tl_fixture_tensor(fx, "x");
    const int64_t ids[FX_T] = {0, 1, 2, 3, 4, 5}, far[FX_T] = {90, 7, 400, 31, 2, 1000};
    const int64_t shifted[FX_T] = {50, 51, 52, 53, 54, 55};
    tl_tensor *base = tl_from_i64(ids, TL_SHAPE(FX_T));
    const char *names[3] = {"lora_interleave", "noq_interleave", "v2_pairs"};
    for (int i = 0; i < 3; i++) {
        const mla_case *c = mla_case_named(names[i]);
        for (int p = 0; p < 2; p++) {
            MLAttention a;
            mla_from_fixture(&a, fx, c);
            a.path = PATHS[p];
            char what[128];
            /* Shifting every position by 50: only differences count. */
            tl_tensor *y = mla_forward(&a, x, base, NULL, NULL, 0);
            tl_assert_ok(y);
            snprintf(what, sizeof what, "%s (%s path): positions shifted by 50", c->name,
                     mla_path_name(a.path));
            mla_assert_close(mla_forward(&a, x, tl_from_i64(shifted, TL_SHAPE(FX_T)), NULL,
                                         NULL, 0), y, 0.0, atol, what);
            /* No rope part in the queries: no position matters at all. */
            zero_query_rows(&a, a.qk_nope_head_dim, a.qk_rope_head_dim);
            y = mla_forward(&a, x, base, NULL, NULL, 0);
            tl_assert_ok(y);
            snprintf(what, sizeof what, "%s (%s path), q_rope zeroed: positions moved anywhere",
                     c->name, mla_path_name(a.path));
            mla_assert_close(mla_forward(&a, x, tl_from_i64(far, TL_SHAPE(FX_T)), NULL, NULL, 0),
                             y, 0.0, atol, what);
            mla_free(&a);
        }
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
