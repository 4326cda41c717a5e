/* L7.3 gradcheck: autograd's gradient of rope_apply with respect to x agrees
 * with central differences, for both pairings, a partial rotary_dim and an
 * attention_scaling that is not 1. RoPE is linear in x, so its gradient is
 * the transposed rotation: a rotation by minus the angle, times a. */
#include <check.h>
#include "tinyllm/autograd.h"
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rope.h"

typedef struct {
    RopeSpec spec;
    tl_tensor *positions;
} rope_case;

static tl_tensor *rope_of_inputs(tl_tensor *const *inputs, void *ctx) {
    const rope_case *c = ctx;
    return rope_apply(&c->spec, inputs[0], c->positions);
}

START_TEST(test_gradcheck_x)
{
    tl_scope_push();
    double tol = tl_fixture_number("L7.3/rope.json", "tolerances.test_gradcheck_x.max_rel_error");
    tl_pcg32 rng = tl_test_rng(7341);
    const int64_t pos[3] = {2, 5, 11};
    for (int pairing = ROPE_HALF; pairing <= ROPE_INTERLEAVED; pairing++) {
        rope_case c;
        ck_assert_msg(rope_spec_init(&c.spec, 6, 4, 100.0, (rope_pairing)pairing) == 0,
                      "rope_spec_init: %s", tl_error());
        c.spec.attention_scaling = 1.5;
        c.positions = tl_from_i64(pos, TL_SHAPE(3));
        tl_tensor *inputs[1] = {tl_requires_grad(tl_randn(&rng, TL_SHAPE(1, 3, 2, 6)), true)};
        tl_assert_ok(inputs[0]);
        tl_assert_gradcheck(rope_of_inputs, &c, inputs, 1, tol);
        tl_zero_grad(inputs[0]);
    }
    tl_scope_pop();
}
END_TEST
