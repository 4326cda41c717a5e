/* My golden tests: the course's oracle data (HF's RoPE in float32). */
#include <check.h>
#include <stdio.h>
#include "tinyllm/autograd.h"
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rope.h"

#define FX "L7.3/rope.safetensors"

static double tol(const char *test, const char *which) {
    char key[128];
    snprintf(key, sizeof key, "tolerances.%s.%s", test, which);
    return tl_fixture_number("L7.3/rope.json", key);
}

static tl_tensor *pos(const tl_checkpoint *fx, const char *name) {
    return tl_cast(tl_fixture_tensor(fx, name), TL_I64);
}

static RopeSpec spec(int64_t head_dim, int64_t rotary_dim, double theta, rope_pairing p) {
    RopeSpec s;
    ck_assert_int_eq(rope_spec_init(&s, head_dim, rotary_dim, theta, p), 0);
    return s;
}

#define CHECK(got, fx, name, test) \
    tl_assert_close((got), tl_fixture_tensor((fx), (name)), tol(test, "rtol"), tol(test, "atol"))

START_TEST(my_golden_half_interleaved_and_scaled)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(FX);
    tl_tensor *x = tl_fixture_tensor(fx, "half.x"), *p = pos(fx, "half.positions");
    RopeSpec h = spec(8, 8, 10000.0, ROPE_HALF);
    CHECK(rope_apply(&h, x, p), fx, "half.y", "test_golden_half_matches_hf");
    RopeSpec i = spec(8, 8, 10000.0, ROPE_INTERLEAVED);
    CHECK(rope_apply(&i, x, p), fx, "interleaved.y", "test_golden_interleaved_matches_meta");
    h.attention_scaling = tl_fixture_number("L7.3/rope.json", "gpt_oss_attention_scaling");
    CHECK(rope_apply(&h, x, p), fx, "half.scaled.y", "test_golden_half_matches_hf");
    tl_tensor *c, *s;
    ck_assert_int_eq(rope_cos_sin(&h, p, &c, &s), 0);
    CHECK(c, fx, "half.scaled.cos", "test_golden_cos_sin_tables");
    CHECK(s, fx, "half.scaled.sin", "test_golden_cos_sin_tables");
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(my_golden_long_positions)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(FX);
    RopeSpec s = spec(16, 16, 500000.0, ROPE_HALF);
    CHECK(rope_apply(&s, tl_fixture_tensor(fx, "long.x"), pos(fx, "long.positions")), fx,
          "long.y", "test_golden_long_positions");
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(my_golden_partial_rotary_and_frequencies)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(FX);
    RopeSpec phi = spec(10, 4, 10000.0, ROPE_HALF);
    CHECK(rope_apply(&phi, tl_fixture_tensor(fx, "partial_half.x"),
                     pos(fx, "partial_half.positions")),
          fx, "partial_half.y", "test_golden_partial_rotary");
    RopeSpec gptj = spec(16, 4, 10000.0, ROPE_INTERLEAVED);
    CHECK(rope_apply(&gptj, tl_fixture_tensor(fx, "partial_interleaved.x"),
                     pos(fx, "partial_half.positions")),
          fx, "partial_interleaved.y", "test_golden_partial_rotary");
    RopeSpec phi2 = spec(80, 32, 10000.0, ROPE_HALF);
    int64_t n = 16;
    CHECK(tl_from_f32(phi2.inv_freq, 1, &n), fx, "inv_freq.D80.d32.theta10000",
          "test_golden_default_inv_freq");
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(my_golden_gradient)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(FX);
    RopeSpec h = spec(8, 8, 10000.0, ROPE_HALF);
    tl_tensor *x = tl_requires_grad(tl_clone(tl_fixture_tensor(fx, "half.x")), true);
    tl_tensor *y = rope_apply(&h, x, pos(fx, "half.positions"));
    tl_assert_ok(y);
    ck_assert_int_eq(tl_backward_with(y, tl_fixture_tensor(fx, "half.upstream")), 0);
    ck_assert_ptr_nonnull(x->grad);
    CHECK(x->grad, fx, "half.grad_x", "test_golden_gradients_match_hf");
    tl_zero_grad(x);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
