/* L7.1 gradcheck: autograd's gradients with respect to x AND the weight
 * agree with central differences, for both variants. A weight detached
 * from the graph gets no gradient and fails here. */
#include <check.h>
#include "tinyllm/autograd.h"
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"

typedef struct {
    double eps;
    bool unit_offset;
} norm_spec;

/* inputs[0] = x [2, 3, 8], inputs[1] = the weight [8]. */
static tl_tensor *norm_of_inputs(tl_tensor *const *inputs, void *ctx) {
    const norm_spec *s = ctx;
    RMSNorm n = {.weight = inputs[1], .eps = s->eps, .unit_offset = s->unit_offset, .dim = 8};
    return rmsnorm_forward(&n, inputs[0]);
}

START_TEST(test_gradcheck_x_and_weight)
{
    tl_scope_push();
    double tol = tl_fixture_number("L7.1/rmsnorm.json",
                                   "tolerances.test_gradcheck_x_and_weight.max_rel_error");
    tl_pcg32 rng = tl_test_rng(7106);
    for (int variant = 0; variant < 2; variant++) {
        norm_spec spec = {.eps = 1e-5, .unit_offset = variant == 1};
        tl_tensor *inputs[2] = {
            tl_requires_grad(tl_add_scalar(tl_randn(&rng, TL_SHAPE(2, 3, 8)), 0.5), true),
            tl_requires_grad(tl_randn(&rng, TL_SHAPE(8)), true),
        };
        tl_assert_ok(inputs[0]);
        tl_assert_ok(inputs[1]);
        tl_assert_gradcheck(norm_of_inputs, &spec, inputs, 2, tol);
        tl_zero_grad(inputs[0]);
        tl_zero_grad(inputs[1]);
    }
    tl_scope_pop();
}
END_TEST
