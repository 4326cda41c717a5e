/* L7.8 section 3, the load-balancing loss by hand: E = 4 experts, top_k = 2,
 * 4 tokens. aux = E * sum_e f_e P_e with f_e the share of choices per token
 * that went to e and P_e the mean probability.
 *   balanced: row t is [2, 1, 0, -1] rotated by t, so every expert gets each
 *     probability once (P_e = 1/4) and is chosen twice (f_e = 1/2):
 *     aux = 4 * 4 * (1/2)(1/4) = 2 = top_k
 *   uniform logits: P_e = 1/4 again, so aux = top_k whatever the ties choose
 *   collapsed: every row [3, 2, 0, 0]: f = [1, 1, 0, 0], aux = 4 (p_0 + p_1)
 *     = 4 (1 - 2 / (e^3 + e^2 + 2)) = 3.7286...
 * Without the E factor the balanced router would give 0.5; counting only the
 * first choice, 1. */
#include <check.h>
#include <math.h>
#include "moe_fixture.h"

static double aux_of(const float *logits, int rows, int top_k) {
    tl_tensor *aux = moe_aux_loss(tl_from_f32(logits, TL_SHAPE(rows, 4)), top_k);
    ck_assert_msg(aux != NULL, "moe_aux_loss: %s", tl_error());
    ck_assert_msg(aux->ndim == 0, "the aux loss must be rank 0 (a scalar), got rank %d", aux->ndim);
    return tl_item(aux);
}

START_TEST(test_hand_example_balanced_router_aux_is_k)
{
    tl_scope_push();
    double tol = fx_tol("test_hand_example_balanced_router_aux_is_k", "atol");
    float rotated[16];
    const float base[4] = {2, 1, 0, -1};
    for (int t = 0; t < 4; t++)
        for (int e = 0; e < 4; e++) rotated[t * 4 + e] = base[(e - t + 4) % 4];
    double balanced = aux_of(rotated, 4, 2);
    ck_assert_msg(fabs(balanced - 2.0) <= tol, "a balanced router (rows rotated): aux = %.9g, "
                  "expected top_k = 2", balanced);
    for (int k = 1; k <= 3; k++) {
        const float uniform[8] = {0};
        double u = aux_of(uniform, 2, k);
        ck_assert_msg(fabs(u - k) <= tol, "uniform logits, top_k %d: aux = %.9g, expected %d", k,
                      u, k);
    }
    float collapsed[16];
    for (int t = 0; t < 4; t++) {
        const float row[4] = {3, 2, 0, 0};
        memcpy(collapsed + 4 * t, row, sizeof row);
    }
    double want = 4.0 * (1.0 - 2.0 / (exp(3.0) + exp(2.0) + 2.0));
    double got = aux_of(collapsed, 4, 2);
    ck_assert_msg(fabs(got - want) <= tol * want, "every token on experts 0 and 1: aux = %.9g, "
                  "expected 4 (p0 + p1) = %.9g", got, want);
    tl_scope_pop();
}
END_TEST
