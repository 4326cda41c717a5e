/* L7.6 boundary: what mla_init, mla_param_count, mla_cache_init and
 * mla_forward refuse, each with a message that names the function and what
 * was wrong: widths that disagree (a RopeSpec of another width, an odd rope
 * dim, a pairing rope_interleave cannot use), sizes < 1, inputs, positions
 * and masks of the wrong shape, a checkpoint of another config, a cache of
 * another shape, and NULLs. A refused forward leaves the cache as it was. */
#include "mla_fixture.h"

static MLAConfig small_config(void) {
    MLAConfig cfg = {.hidden = FX_HIDDEN, .n_heads = FX_HEADS, .q_lora_rank = FX_Q_RANK,
                     .kv_lora_rank = FX_KV_RANK, .qk_nope_head_dim = FX_NOPE,
                     .qk_rope_head_dim = FX_ROPE, .v_head_dim = FX_V, .rope_interleave = true};
    return cfg;
}

static RopeSpec spec(int64_t head_dim, int64_t rotary_dim, rope_pairing pairing) {
    RopeSpec r;
    ck_assert_msg(rope_spec_init(&r, head_dim, rotary_dim, FX_THETA, pairing) == 0, "%s",
                  tl_error());
    return r;
}

/* mla_init must fail with a message holding both needles, and leave no module. */
static void assert_init_refuses(const MLAConfig *cfg, const RopeSpec *rope, const char *needle,
                                const char *needle2) {
    MLAttention a;
    tl_clear_error();
    ck_assert_int_eq(mla_init(&a, cfg, rope, NULL), -1);
    const char *e = tl_error() ? tl_error() : "(no message)";
    ck_assert_msg(strstr(e, "mla_init") && strstr(e, needle) && strstr(e, needle2),
                  "mla_init's refusal must name '%s' and '%s'; got '%s'", needle, needle2, e);
    ck_assert_msg(a.module == NULL, "a refused mla_init leaves no module (%s)", e);
    mla_free(&a);
    tl_clear_error();
}

START_TEST(test_boundary_widths_that_disagree)
{
    tl_scope_push();
    MLAConfig cfg = small_config();
    RopeSpec rope = spec(FX_ROPE, FX_ROPE, ROPE_HALF);
    /* A RopeSpec of another width, or rotating only part of the rope features. */
    RopeSpec wide = spec(12, 12, ROPE_HALF), partial = spec(FX_ROPE, 4, ROPE_HALF);
    assert_init_refuses(&cfg, &wide, "qk_rope_head_dim is 8", "12");
    assert_init_refuses(&cfg, &partial, "rotates 4 of 8", "qk_rope_head_dim");
    /* rope_interleave de-interleaves for a half rotation: not with interleaved pairs. */
    RopeSpec pairs = spec(FX_ROPE, FX_ROPE, ROPE_INTERLEAVED);
    assert_init_refuses(&cfg, &pairs, "rope_interleave", "ROPE_INTERLEAVED");
    MLAttention a;
    cfg.rope_interleave = false;                    /* DeepSeek-V2: pairs in place */
    ck_assert_msg(mla_init(&a, &cfg, &pairs, NULL) == 0, "V2's pairing: %s", tl_error());
    mla_free(&a);
    cfg.rope_interleave = true;

    /* An odd rope dim cannot be paired. */
    MLAConfig odd = cfg;
    odd.qk_rope_head_dim = 7;
    RopeSpec seven;
    memset(&seven, 0, sizeof seven);
    seven.head_dim = seven.rotary_dim = 7;
    assert_init_refuses(&odd, &seven, "qk_rope_head_dim is 7", "even");
    tl_clear_error();
    ck_assert_int_eq(mla_param_count(&odd), -1);
    ck_assert_msg(tl_error() && strstr(tl_error(), "mla_param_count"), "got '%s'",
                  tl_error() ? tl_error() : "(no message)");

    /* Every width at least 1 (q_lora_rank may be 0: null), by name. */
    const char *names[6] = {"hidden", "n_heads", "kv_lora_rank", "qk_nope_head_dim",
                            "qk_rope_head_dim", "v_head_dim"};
    for (int i = 0; i < 6; i++) {
        MLAConfig bad = cfg;
        int64_t *fields[6] = {&bad.hidden, &bad.n_heads, &bad.kv_lora_rank,
                              &bad.qk_nope_head_dim, &bad.qk_rope_head_dim, &bad.v_head_dim};
        *fields[i] = 0;
        char needle[64];
        snprintf(needle, sizeof needle, "%s is 0", names[i]);
        assert_init_refuses(&bad, &rope, needle, "at least 1");
        tl_clear_error();
        ck_assert_int_eq(mla_param_count(&bad), -1);
    }
    MLAConfig neg = cfg;
    neg.q_lora_rank = -1;
    assert_init_refuses(&neg, &rope, "q_lora_rank is -1", "null");
    MLAConfig nan_factor = cfg;
    nan_factor.rope_factor = NAN;
    assert_init_refuses(&nan_factor, &rope, "rope_factor", "finite");
    nan_factor.rope_factor = 40;
    nan_factor.mscale_all_dim = -1;
    assert_init_refuses(&nan_factor, &rope, "mscale_all_dim", "finite");

    /* Fields edited after init: the forward re-checks them. */
    tl_tensor *x = tl_zeros(TL_F32, TL_SHAPE(1, 2, FX_HIDDEN));
    ck_assert_msg(mla_init(&a, &cfg, &rope, NULL) == 0, "mla_init: %s", tl_error());
    a.qk_rope_head_dim = 7;
    tl_assert_error(mla_forward(&a, x, NULL, NULL, NULL, 0), "qk_rope_head_dim is 7");
    a.qk_rope_head_dim = FX_ROPE;
    a.kv_lora_rank = 11;           /* the weights are for 12: a checkpoint of another config */
    tl_assert_error(mla_forward(&a, x, NULL, NULL, NULL, 0), "kv_a_proj_with_mqa.weight has "
                    "shape [20, 16]; expected [19, 16]");
    a.kv_lora_rank = FX_KV_RANK;
    a.v_head_dim = 4;
    tl_assert_error(mla_forward(&a, x, NULL, NULL, NULL, 0), "kv_b_proj.weight has shape");
    a.v_head_dim = FX_V;
    a.scale = 0;
    tl_assert_error(mla_forward(&a, x, NULL, NULL, NULL, 0), "scale");
    a.scale = 0.25;
    a.path = (mla_path)7;
    tl_assert_error(mla_forward(&a, x, NULL, NULL, NULL, 0), "path");
    mla_free(&a);
    tl_scope_pop();
}
END_TEST

START_TEST(test_boundary_shapes_positions_and_masks)
{
    tl_scope_push();
    MLAConfig cfg = small_config();
    RopeSpec rope = spec(FX_ROPE, FX_ROPE, ROPE_HALF);
    MLAttention a;
    tl_pcg32 rng = tl_test_rng(1);
    ck_assert_msg(mla_init(&a, &cfg, &rope, &rng) == 0, "mla_init: %s", tl_error());
    tl_tensor *x = tl_randn(&rng, TL_SHAPE(2, 5, FX_HIDDEN));
    /* x of the wrong width or rank. */
    tl_assert_error(mla_forward(&a, tl_zeros(TL_F32, TL_SHAPE(2, 5, 12)), NULL, NULL, NULL, 0),
                    "x has shape [2, 5, 12]");
    tl_assert_error(mla_forward(&a, tl_zeros(TL_F32, TL_SHAPE(5, FX_HIDDEN)), NULL, NULL, NULL,
                                0), "[B, T, hidden]");
    /* positions of the wrong T, B or dtype. */
    tl_assert_error(mla_forward(&a, x, tl_arange(0, 4), NULL, NULL, 0), "positions [4]");
    tl_assert_error(mla_forward(&a, x, tl_zeros(TL_I64, TL_SHAPE(3, 5)), NULL, NULL, 0),
                    "positions [3, 5]");
    tl_assert_error(mla_forward(&a, x, tl_zeros(TL_F32, TL_SHAPE(5)), NULL, NULL, 0), "F32");
    ck_assert_ptr_nonnull(mla_forward(&a, x, tl_zeros(TL_I64, TL_SHAPE(1, 5)), NULL, NULL, 0));
    /* Masks that do not broadcast to [B, n, T, S] = [2, 3, 5, 5], or not F32. */
    tl_assert_error(mla_forward(&a, x, NULL, tl_zeros(TL_F32, TL_SHAPE(5, 4)), NULL, 0),
                    "[2, 3, 5, 5]");
    tl_assert_error(mla_forward(&a, x, NULL, tl_zeros(TL_F32, TL_SHAPE(2, 2, 5, 5)), NULL, 0),
                    "mask [2, 2, 5, 5]");
    tl_assert_error(mla_forward(&a, x, NULL, tl_zeros(TL_BF16, TL_SHAPE(5, 5)), NULL, 0),
                    "F32");
    ck_assert_ptr_nonnull(mla_forward(&a, x, NULL, tl_zeros(TL_F32, TL_SHAPE(2, 1, 5, 5)), NULL,
                                      0));
    mla_free(&a);
    tl_scope_pop();
}
END_TEST

START_TEST(test_boundary_cache_of_the_wrong_shape)
{
    tl_scope_push();
    MLAConfig cfg = small_config();
    RopeSpec rope = spec(FX_ROPE, FX_ROPE, ROPE_HALF);
    MLAttention a;
    tl_pcg32 rng = tl_test_rng(2);
    ck_assert_msg(mla_init(&a, &cfg, &rope, &rng) == 0, "mla_init: %s", tl_error());
    tl_tensor *x = tl_randn(&rng, TL_SHAPE(2, 3, FX_HIDDEN));
    tl_no_grad_push();
    /* A GQA cache (2 kv heads), the widths swapped, another batch: each named. */
    const int64_t shapes[4][4] = {
        {2, 2, FX_KV_RANK, FX_ROPE}, {2, 1, FX_ROPE, FX_KV_RANK}, {1, 1, FX_KV_RANK, FX_ROPE},
        {2, 1, FX_KV_RANK + FX_ROPE, FX_ROPE},
    };
    for (int i = 0; i < 4; i++) {
        KVCache c;
        ck_assert_int_eq(kv_cache_init(&c, 2, shapes[i][0], shapes[i][1], shapes[i][2],
                                       shapes[i][3], 8), 0);
        tl_assert_error(mla_forward(&a, x, NULL, NULL, &c, 0), "[B, 1, kv_lora_rank, "
                        "qk_rope_head_dim] = [2, 1, 12, 8]");
        ck_assert_int_eq(kv_cache_seq_len(&c, 0), 0);
        kv_cache_free(&c);
    }
    KVCache c;
    ck_assert_msg(mla_cache_init(&c, &cfg, 2, 2, 8) == 0, "mla_cache_init: %s", tl_error());
    /* Layers out of range, and a cache that rotates its keys itself. */
    tl_assert_error(mla_forward(&a, x, NULL, NULL, &c, 2), "layer 2 is out of range");
    tl_assert_error(mla_forward(&a, x, NULL, NULL, &c, -1), "layer -1 is out of range");
    c.rotates_keys = true;
    tl_assert_error(mla_forward(&a, x, NULL, NULL, &c, 0), "rotates its keys");
    c.rotates_keys = false;
    ck_assert_int_eq(kv_cache_seq_len(&c, 0), 0);
    ck_assert_int_eq(kv_cache_seq_len(&c, 1), 0);
    tl_no_grad_pop();
    /* Cached forwards are inference: refused while gradients are recorded. */
    tl_assert_error(mla_forward(&a, x, NULL, NULL, &c, 0), "tl_no_grad_push");
    ck_assert_int_eq(kv_cache_seq_len(&c, 0), 0);
    kv_cache_free(&c);
    mla_free(&a);
    tl_scope_pop();
}
END_TEST

START_TEST(test_boundary_null_and_bad_arguments)
{
    tl_scope_push();
    MLAConfig cfg = small_config();
    RopeSpec rope = spec(FX_ROPE, FX_ROPE, ROPE_HALF);
    MLAttention a;
    tl_clear_error();
    ck_assert_int_eq(mla_init(NULL, &cfg, &rope, NULL), -1);
    ck_assert_msg(tl_error() && strstr(tl_error(), "mla_init"), "NULL attention");
    ck_assert_int_eq(mla_init(&a, NULL, &rope, NULL), -1);
    ck_assert_msg(a.module == NULL, "a refused mla_init leaves no module (%s)", tl_error());
    ck_assert_int_eq(mla_init(&a, &cfg, NULL, NULL), -1);
    ck_assert_msg(a.module == NULL, "a refused mla_init leaves no module (%s)", tl_error());
    tl_clear_error();
    ck_assert_int_eq(mla_param_count(NULL), -1);
    ck_assert_msg(tl_error() && strstr(tl_error(), "mla_param_count"), "NULL config");
    mla_free(NULL);
    memset(&a, 0, sizeof a);
    mla_free(&a);
    /* A forward of nothing, and on an attention that was never built. */
    tl_tensor *x = tl_zeros(TL_F32, TL_SHAPE(1, 2, FX_HIDDEN));
    tl_assert_error(mla_forward(NULL, x, NULL, NULL, NULL, 0), "mla_init");
    tl_assert_error(mla_forward(&a, x, NULL, NULL, NULL, 0), "mla_init");
    ck_assert_msg(mla_init(&a, &cfg, &rope, NULL) == 0, "mla_init: %s", tl_error());
    /* A NULL x keeps the message of the call that made it. */
    tl_clear_error();
    tl_tensor *bad = tl_reshape(x, TL_SHAPE(7, 7));
    ck_assert_ptr_null(bad);
    char cause[256];
    snprintf(cause, sizeof cause, "%s", tl_error() ? tl_error() : "");
    ck_assert_ptr_null(mla_forward(&a, bad, NULL, NULL, NULL, 0));
    ck_assert_msg(tl_error() && strcmp(tl_error(), cause) == 0,
                  "a NULL x must keep its cause '%s'; got '%s'", cause,
                  tl_error() ? tl_error() : "(no message)");
    tl_clear_error();
    /* mla_cache_init: NULLs and sizes kv_cache_init refuses, with their names. */
    KVCache c;
    ck_assert_int_eq(mla_cache_init(NULL, &cfg, 1, 1, 4), -1);
    ck_assert_int_eq(mla_cache_init(&c, NULL, 1, 1, 4), -1);
    ck_assert_msg(tl_error() && strstr(tl_error(), "mla_cache_init"), "got '%s'",
                  tl_error() ? tl_error() : "(no message)");
    ck_assert_int_eq(mla_cache_init(&c, &cfg, 1, 1, 0), -1);
    ck_assert_msg(tl_error() && strstr(tl_error(), "mla_cache_init") &&
                  strstr(tl_error(), "max_len is 0"), "got '%s'",
                  tl_error() ? tl_error() : "(no message)");
    kv_cache_free(&c);
    MLAConfig no_latent = cfg;
    no_latent.kv_lora_rank = 0;
    ck_assert_int_eq(mla_cache_init(&c, &no_latent, 1, 1, 4), -1);
    ck_assert_msg(tl_error() && strstr(tl_error(), "kv_lora_rank"), "got '%s'",
                  tl_error() ? tl_error() : "(no message)");
    tl_clear_error();
    mla_free(&a);
    tl_scope_pop();
}
END_TEST
