/* L7.3 golden: frequencies, tables, rotations and gradients against the
 * oracle (oracle/L7.3), which runs transformers 5's LlamaRotaryEmbedding,
 * rotate_half and apply_rotary_pos_emb in float32, GPT-J's interleaved
 * rotation (checked there against Meta's complex-number code), and Phi's
 * partial rotary. Positions start past 0 wherever a cache would. */
#include <check.h>
#include <stdio.h>
#include "tinyllm/autograd.h"
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rope.h"

#define GOLDEN_ST "L7.3/rope.safetensors"
#define GOLDEN_JSON "L7.3/rope.json"

static double tolerance(const char *test, const char *which) {
    char key[128];
    snprintf(key, sizeof key, "tolerances.%s.%s", test, which);
    return tl_fixture_number(GOLDEN_JSON, key);
}

static RopeSpec make_spec(int64_t head_dim, int64_t rotary_dim, double theta,
                          rope_pairing pairing, double a) {
    RopeSpec spec;
    ck_assert_msg(rope_spec_init(&spec, head_dim, rotary_dim, theta, pairing) == 0,
                  "rope_spec_init(%lld, %lld, %g): %s", (long long)head_dim,
                  (long long)rotary_dim, theta, tl_error());
    spec.attention_scaling = a;
    return spec;
}

/* The fixture stores positions as exact float32 integers. */
static tl_tensor *positions(const tl_checkpoint *fx, const char *name) {
    tl_tensor *p = tl_cast(tl_fixture_tensor(fx, name), TL_I64);
    tl_assert_ok(p);
    return p;
}

static void assert_golden(const tl_tensor *got, const tl_checkpoint *fx, const char *name,
                          const char *test, const char *what) {
    char msg[768];
    ck_assert_msg(got != NULL, "%s: NULL (%s)", what, tl_error() ? tl_error() : "no message");
    ck_assert_msg(tl_close_report(got, tl_fixture_tensor(fx, name), tolerance(test, "rtol"),
                                  tolerance(test, "atol"), msg, sizeof msg),
                  "%s vs the oracle's %s: %s", what, name, msg);
}

START_TEST(test_golden_default_inv_freq)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(GOLDEN_ST);
    /* (head_dim, rotary_dim, theta): the exponent divides by rotary_dim. */
    static const struct { int64_t head_dim, rotary_dim; double theta; } CASES[] = {
        {8, 8, 10000.0}, {16, 16, 500000.0}, {64, 64, 100000.0}, {128, 128, 1000000.0},
        {80, 32, 10000.0}, {256, 64, 10000.0},
    };
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        RopeSpec spec = make_spec(CASES[c].head_dim, CASES[c].rotary_dim, CASES[c].theta,
                                  ROPE_HALF, 1.0);
        int64_t half = CASES[c].rotary_dim / 2;
        char name[96], what[96];
        snprintf(name, sizeof name, "inv_freq.D%lld.d%lld.theta%g", (long long)CASES[c].head_dim,
                 (long long)CASES[c].rotary_dim, CASES[c].theta);
        snprintf(what, sizeof what, "rope_spec_init(%lld, %lld, %g).inv_freq",
                 (long long)CASES[c].head_dim, (long long)CASES[c].rotary_dim, CASES[c].theta);
        assert_golden(tl_from_f32(spec.inv_freq, 1, &half), fx, name,
                      "test_golden_default_inv_freq", what);
        for (int i = (int)half; i < TL_ROPE_MAX_FREQS; i++)
            ck_assert_msg(spec.inv_freq[i] == 0.0f, "%s: unused inv_freq[%d] = %g, not 0", what,
                          i, spec.inv_freq[i]);
        ck_assert_msg(spec.head_dim == CASES[c].head_dim && spec.rotary_dim == CASES[c].rotary_dim
                      && spec.theta == CASES[c].theta && spec.pairing == ROPE_HALF &&
                      spec.attention_scaling == 1.0, "%s: the spec's fields are not the "
                      "arguments (and attention_scaling 1)", what);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_golden_cos_sin_tables)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(GOLDEN_ST);
    const char *test = "test_golden_cos_sin_tables";
    tl_tensor *cos, *sin;

    /* [B, T] positions, a = 1 and gpt-oss's a: HF's tables [B, T, d]. */
    RopeSpec half = make_spec(8, 8, 10000.0, ROPE_HALF, 1.0);
    ck_assert_msg(rope_cos_sin(&half, positions(fx, "half.positions"), &cos, &sin) == 0,
                  "rope_cos_sin: %s", tl_error());
    assert_golden(cos, fx, "half.cos", test, "cos, half pairing, positions [2, 5]");
    assert_golden(sin, fx, "half.sin", test, "sin, half pairing, positions [2, 5]");
    half.attention_scaling = tl_fixture_number(GOLDEN_JSON, "gpt_oss_attention_scaling");
    ck_assert_msg(rope_cos_sin(&half, positions(fx, "half.positions"), &cos, &sin) == 0,
                  "rope_cos_sin: %s", tl_error());
    assert_golden(cos, fx, "half.scaled.cos", test, "cos times attention_scaling");
    assert_golden(sin, fx, "half.scaled.sin", test, "sin times attention_scaling");

    /* [T] positions up to 32767: tables [T, d]. */
    RopeSpec llama3 = make_spec(16, 16, 500000.0, ROPE_HALF, 1.0);
    ck_assert_msg(rope_cos_sin(&llama3, positions(fx, "long.positions"), &cos, &sin) == 0,
                  "rope_cos_sin: %s", tl_error());
    assert_golden(cos, fx, "long.cos", test, "cos at positions up to 32767");
    assert_golden(sin, fx, "long.sin", test, "sin at positions up to 32767");

    /* Interleaved layout: column j holds frequency j / 2, HF's column j mod d/2. */
    RopeSpec inter = make_spec(16, 16, 500000.0, ROPE_INTERLEAVED, 1.0);
    ck_assert_msg(rope_cos_sin(&inter, positions(fx, "long.positions"), &cos, &sin) == 0,
                  "rope_cos_sin: %s", tl_error());
    int64_t cols[16];
    for (int j = 0; j < 16; j++) cols[j] = j / 2;
    tl_tensor *index = tl_expand(tl_from_i64(cols, TL_SHAPE(1, 16)), TL_SHAPE(6, 16));
    tl_tensor *want_cos = tl_gather(tl_fixture_tensor(fx, "long.cos"), 1, index);
    tl_tensor *want_sin = tl_gather(tl_fixture_tensor(fx, "long.sin"), 1, index);
    char msg[768];
    tl_assert_ok(cos);
    ck_assert_msg(tl_close_report(cos, want_cos, tolerance(test, "rtol"), tolerance(test, "atol"),
                                  msg, sizeof msg), "interleaved cos [f0, f0, f1, f1, ...]: %s",
                  msg);
    ck_assert_msg(tl_close_report(sin, want_sin, tolerance(test, "rtol"), tolerance(test, "atol"),
                                  msg, sizeof msg), "interleaved sin [f0, f0, f1, f1, ...]: %s",
                  msg);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_golden_half_matches_hf)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(GOLDEN_ST);
    const char *test = "test_golden_half_matches_hf";
    tl_tensor *x = tl_fixture_tensor(fx, "half.x");
    tl_tensor *pos = positions(fx, "half.positions");
    RopeSpec spec = make_spec(8, 8, 10000.0, ROPE_HALF, 1.0);
    assert_golden(rope_apply(&spec, x, pos), fx, "half.y", test,
                  "rope_apply, half pairing, positions [[0..4], [7..11]]");
    spec.attention_scaling = tl_fixture_number(GOLDEN_JSON, "gpt_oss_attention_scaling");
    assert_golden(rope_apply(&spec, x, pos), fx, "half.scaled.y", test,
                  "rope_apply with attention_scaling 1.3465735902799727");
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_golden_long_positions)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(GOLDEN_ST);
    RopeSpec spec = make_spec(16, 16, 500000.0, ROPE_HALF, 1.0);
    assert_golden(rope_apply(&spec, tl_fixture_tensor(fx, "long.x"),
                             positions(fx, "long.positions")),
                  fx, "long.y", "test_golden_long_positions",
                  "rope_apply at positions [0, 1, 1023, 4095, 8191, 32767], theta 500000");
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_golden_interleaved_matches_meta)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(GOLDEN_ST);
    RopeSpec spec = make_spec(8, 8, 10000.0, ROPE_INTERLEAVED, 1.0);
    assert_golden(rope_apply(&spec, tl_fixture_tensor(fx, "half.x"),
                             positions(fx, "half.positions")),
                  fx, "interleaved.y", "test_golden_interleaved_matches_meta",
                  "rope_apply, interleaved pairing (GPT-J, Meta)");
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_golden_partial_rotary)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(GOLDEN_ST);
    const char *test = "test_golden_partial_rotary";
    RopeSpec phi = make_spec(10, 4, 10000.0, ROPE_HALF, 1.0);
    assert_golden(rope_apply(&phi, tl_fixture_tensor(fx, "partial_half.x"),
                             positions(fx, "partial_half.positions")),
                  fx, "partial_half.y", test, "half pairing, rotary_dim 4 of head_dim 10");
    RopeSpec gptj = make_spec(16, 4, 10000.0, ROPE_INTERLEAVED, 1.0);
    assert_golden(rope_apply(&gptj, tl_fixture_tensor(fx, "partial_interleaved.x"),
                             positions(fx, "partial_half.positions")),
                  fx, "partial_interleaved.y", test,
                  "interleaved pairing, rotary_dim 4 of head_dim 16");
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* The gradient of sum(y * upstream) with respect to x. */
static void check_gradient(const tl_checkpoint *fx, const RopeSpec *spec, const char *x_name,
                           const char *pos_name, const char *up_name, const char *want,
                           const char *what) {
    tl_tensor *x = tl_requires_grad(tl_clone(tl_fixture_tensor(fx, x_name)), true);
    tl_tensor *y = rope_apply(spec, x, positions(fx, pos_name));
    tl_assert_ok(y);
    ck_assert_msg(tl_backward_with(y, tl_fixture_tensor(fx, up_name)) == 0, "backward: %s",
                  tl_error());
    ck_assert_msg(x->grad != NULL, "%s: no gradient reached x", what);
    assert_golden(x->grad, fx, want, "test_golden_gradients_match_hf", what);
    tl_zero_grad(x);
}

START_TEST(test_golden_gradients_match_hf)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(GOLDEN_ST);
    RopeSpec half = make_spec(8, 8, 10000.0, ROPE_HALF, 1.0);
    check_gradient(fx, &half, "half.x", "half.positions", "half.upstream", "half.grad_x",
                   "half pairing: dL/dx");
    half.attention_scaling = tl_fixture_number(GOLDEN_JSON, "gpt_oss_attention_scaling");
    check_gradient(fx, &half, "half.x", "half.positions", "half.upstream", "half.scaled.grad_x",
                   "half pairing with attention_scaling: dL/dx");
    RopeSpec inter = make_spec(8, 8, 10000.0, ROPE_INTERLEAVED, 1.0);
    check_gradient(fx, &inter, "half.x", "half.positions", "half.upstream", "interleaved.grad_x",
                   "interleaved pairing: dL/dx");
    RopeSpec partial = make_spec(10, 4, 10000.0, ROPE_HALF, 1.0);
    check_gradient(fx, &partial, "partial_half.x", "partial_half.positions",
                   "partial_half.upstream", "partial_half.grad_x",
                   "partial rotary: dL/dx (1 on the features that pass through)");
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
