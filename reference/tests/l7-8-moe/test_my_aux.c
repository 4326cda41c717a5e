/* My aux-loss tests: values I can work out. */
#include <check.h>
#include <math.h>
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"
#include "tinyllm/modern/moe.h"

static double aux(const float *l, int rows, int e, int k) {
    tl_tensor *a = moe_aux_loss(tl_from_f32(l, TL_SHAPE(rows, e)), k);
    ck_assert_msg(a != NULL, "%s", tl_error());
    return tl_item(a);
}

/* 3 tokens, 3 experts, each token prefers a different expert (rows are
 * rotations): P uniform, every expert chosen k times out of 3 tokens. */
START_TEST(my_balanced_router_gives_k)
{
    tl_scope_push();
    const float l[9] = {3, 1, 0, 0, 3, 1, 1, 0, 3};
    ck_assert_msg(fabs(aux(l, 3, 3, 1) - 1.0) < 1e-6, "top-1: %g", aux(l, 3, 3, 1));
    ck_assert_msg(fabs(aux(l, 3, 3, 2) - 2.0) < 1e-6, "top-2: %g", aux(l, 3, 3, 2));
    tl_scope_pop();
}
END_TEST

/* Every token prefers expert 0: aux = E p0 for top-1 (f = [1, 0]). */
START_TEST(my_collapsed_router)
{
    tl_scope_push();
    const float l[4] = {2, 0, 2, 0};
    double p0 = exp(2) / (exp(2) + 1);
    ck_assert_msg(fabs(aux(l, 2, 2, 1) - 2 * p0) < 1e-6, "aux = %g", aux(l, 2, 2, 1));
    tl_scope_pop();
}
END_TEST
