/* L7.6 differential: the absorbed path equals the naive one. Folding W_UK
 * into the query and applying W_UV after the weighted sum reorders the same
 * products, so outputs and gradients agree up to rounding: on every fixture
 * layer, and on random layers of other shapes (a latent narrower than dn, one
 * head, q_lora and biases, rope_interleave off), without a cache and through
 * one. */
#include "mla_fixture.h"

#define ABS_TOL "test_absorbed_equals_naive"

/* Both paths on a's current weights: outputs, then gradients for x and every
 * parameter of sum(y * upstream). */
static void assert_paths_agree(MLAttention *a, tl_tensor *x, tl_tensor *positions,
                               tl_tensor *upstream, const char *what) {
    double rtol = mla_tol(ABS_TOL, "rtol"), atol = mla_tol(ABS_TOL, "atol");
    tl_state_dict sd = tl_module_state_dict(a->module);
    tl_tensor *y[2], *gx[2], *gp[2][16];
    ck_assert_msg(sd.count <= 16, "%s: %d parameters", what, sd.count);
    const mla_path paths[2] = {MLA_PATH_NAIVE, MLA_PATH_ABSORBED};
    for (int p = 0; p < 2; p++) {
        a->path = paths[p];
        tl_tensor *xg = tl_requires_grad(tl_clone(x), true);
        y[p] = mla_forward(a, xg, positions, NULL, NULL, 0);
        ck_assert_msg(y[p] != NULL, "%s (%s path): %s", what, mla_path_name(a->path), tl_error());
        ck_assert_msg(tl_backward_with(y[p], upstream) == 0, "backward: %s", tl_error());
        gx[p] = tl_clone(xg->grad);
        for (int k = 0; k < sd.count; k++) {
            ck_assert_msg(sd.items[k].tensor->grad, "%s (%s path): no gradient for %s", what,
                          mla_path_name(a->path), sd.items[k].name);
            gp[p][k] = tl_clone(sd.items[k].tensor->grad);
            tl_zero_grad(sd.items[k].tensor);
        }
    }
    char msg[160];
    snprintf(msg, sizeof msg, "%s: absorbed vs naive output", what);
    mla_assert_close(y[1], y[0], rtol, atol, msg);
    snprintf(msg, sizeof msg, "%s: absorbed vs naive grad of x", what);
    mla_assert_close(gx[1], gx[0], rtol, atol, msg);
    for (int k = 0; k < sd.count; k++) {
        snprintf(msg, sizeof msg, "%s: absorbed vs naive grad of %s", what, sd.items[k].name);
        mla_assert_close(gp[1][k], gp[0][k], rtol, atol, msg);
    }
    tl_state_dict_free(&sd);

    /* Through the latent cache, prefill 4 then decode one at a time. */
    int64_t t = x->shape[1];
    MLAConfig cfg = {.hidden = a->hidden, .n_heads = a->n_heads, .kv_lora_rank = a->kv_lora_rank,
                     .qk_nope_head_dim = a->qk_nope_head_dim,
                     .qk_rope_head_dim = a->qk_rope_head_dim, .v_head_dim = a->v_head_dim};
    tl_tensor *decoded[2];
    for (int p = 0; p < 2; p++) {
        a->path = paths[p];
        KVCache cache;
        ck_assert_msg(mla_cache_init(&cache, &cfg, 1, x->shape[0], t) == 0, "%s",
                      tl_error());
        tl_tensor *parts[16];
        int n = 0;
        tl_no_grad_push();
        for (int64_t start = 0; start < t; n++) {
            int64_t len = start == 0 ? 4 : 1;
            tl_tensor *pos = positions ? tl_narrow(positions, positions->ndim - 1, start, len)
                                       : NULL;
            parts[n] = mla_forward(a, tl_narrow(x, 1, start, len), pos, NULL, &cache, 0);
            ck_assert_msg(parts[n] != NULL, "%s: cached step at %lld: %s", what,
                          (long long)start, tl_error());
            start += len;
        }
        tl_no_grad_pop();
        decoded[p] = tl_concat(parts, n, 1);
        kv_cache_free(&cache);
    }
    snprintf(msg, sizeof msg, "%s: absorbed vs naive through the latent cache", what);
    mla_assert_close(decoded[1], decoded[0], rtol, atol, msg);
    snprintf(msg, sizeof msg, "%s: cached vs full forward", what);
    mla_assert_close(decoded[1], y[0], rtol, atol, msg);
}

START_TEST(test_absorbed_equals_naive)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MLA_ST);
    tl_tensor *x = tl_fixture_tensor(fx, "x"), *positions = mla_positions(fx);
    tl_tensor *upstream = tl_fixture_tensor(fx, "upstream");
    for (int i = 0; i < MLA_N_CASES; i++) {
        MLAttention a;
        mla_from_fixture(&a, fx, &MLA_CASES[i]);
        assert_paths_agree(&a, x, positions, upstream, MLA_CASES[i].name);
        mla_free(&a);
    }
    tl_checkpoint_free(fx);

    /* Random layers of other shapes: {H, n, r_q, r_kv, dn, dr, dv, bias, interleave}. */
    const int64_t shapes[4][9] = {
        {8, 1, 0, 3, 6, 4, 7, 0, 1},      /* one head; a latent narrower than dn */
        {12, 4, 5, 9, 2, 6, 3, 1, 0},     /* q_lora and biases, rope by halves */
        {10, 2, 0, 16, 8, 2, 8, 0, 0},    /* the smallest rope part */
        {6, 3, 4, 5, 3, 10, 2, 1, 1},     /* the rope part wider than the nope part */
    };
    tl_pcg32 rng = tl_test_rng(20240706);
    for (int s = 0; s < 4; s++) {
        const int64_t *d = shapes[s];
        MLAConfig cfg = {.hidden = d[0], .n_heads = d[1], .q_lora_rank = d[2],
                         .kv_lora_rank = d[3], .qk_nope_head_dim = d[4],
                         .qk_rope_head_dim = d[5], .v_head_dim = d[6],
                         .attention_bias = d[7] != 0, .rope_interleave = d[8] != 0};
        RopeSpec rope;
        ck_assert_int_eq(rope_spec_init(&rope, d[5], d[5], 500.0, ROPE_HALF), 0);
        MLAttention a;
        ck_assert_msg(mla_init(&a, &cfg, &rope, &rng) == 0, "mla_init: %s", tl_error());
        tl_tensor *xr = tl_randn(&rng, TL_SHAPE(2, 7, d[0]));
        tl_tensor *up = tl_randn(&rng, TL_SHAPE(2, 7, d[0]));
        const int64_t pos[7] = {5, 6, 7, 8, 9, 10, 11};
        char what[64];
        snprintf(what, sizeof what, "random layer %d", s);
        assert_paths_agree(&a, tl_mul_scalar(xr, 3.0), tl_from_i64(pos, TL_SHAPE(7)), up, what);
        mla_free(&a);
    }
    tl_scope_pop();
}
END_TEST

/* MLA_PATH_AUTO's choice (mla_choose_path): naive without a cache; with one,
 * the path of fewer multiply-adds. For the fixture's widths (n 3, r_kv 12,
 * dn 6, dr 8, dv 5) a prefill of 5 tokens costs 3405 naive against 4380
 * absorbed, a decode step over 6 latents 2718 against 972. With DeepSeek-V3's
 * widths a chunk of 163 new tokens over 4096 latents is still cheaper
 * absorbed, 164 is not; a prefill into an empty cache is always naive. A path
 * set by hand is kept. */
START_TEST(test_auto_path_absorbs_decode_not_prefill)
{
    tl_scope_push();
    const mla_case *c = mla_case_named("lora_interleave");
    MLAConfig cfg = mla_config(c);
    RopeSpec rope = mla_rope(c);
    MLAttention a;
    ck_assert_msg(mla_init(&a, &cfg, &rope, NULL) == 0, "mla_init: %s", tl_error());
    ck_assert_int_eq(a.path, MLA_PATH_AUTO);
    ck_assert_msg(mla_choose_path(&a, 6, 6, false) == MLA_PATH_NAIVE,
                  "without a cache AUTO is the naive path (%s)", tl_error());
    ck_assert_msg(mla_choose_path(&a, 1, 1, false) == MLA_PATH_NAIVE, "no cache, one token");
    ck_assert_msg(mla_choose_path(&a, 5, 5, true) == MLA_PATH_NAIVE,
                  "a prefill of 5 tokens is cheaper naive (3405 < 4380)");
    ck_assert_msg(mla_choose_path(&a, 1, 6, true) == MLA_PATH_ABSORBED,
                  "one token over 6 latents is cheaper absorbed (972 < 2718)");
    a.path = MLA_PATH_NAIVE;
    ck_assert_int_eq(mla_choose_path(&a, 1, 6, true), MLA_PATH_NAIVE);
    a.path = MLA_PATH_ABSORBED;
    ck_assert_int_eq(mla_choose_path(&a, 6, 6, false), MLA_PATH_ABSORBED);
    mla_free(&a);

    /* DeepSeek-V3's attention widths (fields only: its weights would be 750 MB). */
    MLAttention v3 = {.hidden = 7168, .n_heads = 128, .q_lora_rank = 1536,
                      .kv_lora_rank = 512, .qk_nope_head_dim = 128, .qk_rope_head_dim = 64,
                      .v_head_dim = 128, .path = MLA_PATH_AUTO};
    ck_assert_int_eq(mla_choose_path(&v3, 1, 4096, true), MLA_PATH_ABSORBED);
    ck_assert_int_eq(mla_choose_path(&v3, 1, 2, true), MLA_PATH_ABSORBED);
    ck_assert_int_eq(mla_choose_path(&v3, 163, 4096, true), MLA_PATH_ABSORBED);
    ck_assert_int_eq(mla_choose_path(&v3, 164, 4096, true), MLA_PATH_NAIVE);
    ck_assert_int_eq(mla_choose_path(&v3, 1, 1, true), MLA_PATH_NAIVE);
    ck_assert_int_eq(mla_choose_path(&v3, 4096, 4096, true), MLA_PATH_NAIVE);

    /* Refusals: MLA_PATH_AUTO with an error. */
    tl_clear_error();
    ck_assert_int_eq(mla_choose_path(NULL, 1, 1, true), MLA_PATH_AUTO);
    ck_assert_msg(tl_error() && strstr(tl_error(), "mla_choose_path"), "NULL attention");
    tl_clear_error();
    ck_assert_int_eq(mla_choose_path(&v3, 0, 1, true), MLA_PATH_AUTO);
    ck_assert_msg(tl_error() && strstr(tl_error(), "mla_choose_path"), "0 new tokens");
    tl_clear_error();
    ck_assert_int_eq(mla_choose_path(&v3, 2, 0, true), MLA_PATH_AUTO);
    ck_assert_msg(tl_error() && strstr(tl_error(), "n_keys"), "no keys");
    tl_clear_error();
    tl_scope_pop();
}
END_TEST
