/* L7.6 unit: the softmax scale. It is (dn + dr)^-1/2, the width of a
 * query/key head (not dv, not dn), times m^2 with m = 0.1 mscale_all_dim
 * ln(factor) + 1 when the rope is scaled and mscale_all_dim is set: HF's
 * yarn_get_mscale, squared. DeepSeek-V3 (dn 128, dr 64, yarn factor 40,
 * mscale_all_dim 1): 192^-1/2 * 1.3688879^2 = 0.1352338. The fixture's yarn
 * case must get the oracle's own number. */
#include "mla_fixture.h"

static double scale_of(MLAConfig cfg) {
    RopeSpec rope;
    ck_assert_int_eq(rope_spec_init(&rope, cfg.qk_rope_head_dim, cfg.qk_rope_head_dim, 1e4,
                                    ROPE_HALF), 0);
    MLAttention a;
    ck_assert_msg(mla_init(&a, &cfg, &rope, NULL) == 0, "mla_init: %s", tl_error());
    double s = a.scale;
    mla_free(&a);
    return s;
}

START_TEST(test_scale_from_qk_head_dim_and_mscale)
{
    tl_scope_push();
    /* A DeepSeek-V3 head shape, narrowed: dn 12, dr 4, dv 8 (dn + dr = 16). */
    MLAConfig cfg = {.hidden = 8, .n_heads = 2, .q_lora_rank = 4, .kv_lora_rank = 6,
                     .qk_nope_head_dim = 12, .qk_rope_head_dim = 4, .v_head_dim = 8,
                     .rope_interleave = true};
    ck_assert_msg(fabs(scale_of(cfg) - 0.25) < 1e-15, "the default scale is 1/sqrt(dn + dr) = "
                  "1/4, got %.17g (1/sqrt(dv) would be %.6g)", scale_of(cfg), 1 / sqrt(8.0));

    /* yarn with mscale_all_dim: times m^2. */
    cfg.rope_factor = 40;
    cfg.mscale_all_dim = 1;
    double m = 0.1 * log(40.0) + 1;
    ck_assert_msg(fabs(scale_of(cfg) - 0.25 * m * m) < 1e-15, "factor 40, mscale_all_dim 1: "
                  "expected 0.25 * %.9g^2 = %.9g, got %.17g", m, 0.25 * m * m, scale_of(cfg));
    cfg.mscale_all_dim = 0.707;                    /* DeepSeek-V2's rope dict */
    m = 0.1 * 0.707 * log(40.0) + 1;
    ck_assert_msg(fabs(scale_of(cfg) - 0.25 * m * m) < 1e-15, "mscale_all_dim 0.707: expected "
                  "%.9g, got %.17g", 0.25 * m * m, scale_of(cfg));
    /* No mscale_all_dim, or a factor that does not stretch: no change. */
    cfg.mscale_all_dim = 0;
    ck_assert_msg(fabs(scale_of(cfg) - 0.25) < 1e-15, "mscale_all_dim 0 leaves the scale");
    cfg.mscale_all_dim = 1;
    cfg.rope_factor = 1;
    ck_assert_msg(fabs(scale_of(cfg) - 0.25) < 1e-15, "factor 1 leaves the scale");

    /* DeepSeek-V3 itself. */
    MLAConfig v3 = {.hidden = 64, .n_heads = 1, .q_lora_rank = 0, .kv_lora_rank = 4,
                    .qk_nope_head_dim = 128, .qk_rope_head_dim = 64, .v_head_dim = 128,
                    .rope_interleave = true, .rope_factor = 40, .mscale_all_dim = 1};
    double v3_scale = pow(192.0, -0.5) * pow(0.1 * log(40.0) + 1, 2);
    ck_assert_msg(fabs(scale_of(v3) - v3_scale) < 1e-15 && fabs(v3_scale - 0.1352338) < 1e-7,
                  "DeepSeek-V3's scale is %.9g, got %.17g", v3_scale, scale_of(v3));

    /* The oracle's scaling for each fixture layer. */
    for (int i = 0; i < MLA_N_CASES; i++) {
        const mla_case *c = &MLA_CASES[i];
        MLAConfig fc = mla_config(c);
        RopeSpec rope = mla_rope(c);
        MLAttention a;
        ck_assert_msg(mla_init(&a, &fc, &rope, NULL) == 0, "mla_init: %s", tl_error());
        char key[96];
        snprintf(key, sizeof key, "scaling.%s", c->name);
        double hf = tl_fixture_number(MLA_JSON, key);
        ck_assert_msg(fabs(a.scale - hf) < 1e-12, "%s: scale %.17g, HF's %.17g", c->name,
                      a.scale, hf);
        mla_free(&a);
    }
    tl_scope_pop();
}
END_TEST
