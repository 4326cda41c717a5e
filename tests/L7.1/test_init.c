/* L7.1: a fresh norm. Llama's weight starts at 1 and Gemma's at 0, so both
 * multiply by exactly 1: a fresh norm of either kind gives x * r. The weight
 * is an owned F32 [dim] parameter that requires a gradient. */
#include <check.h>
#include <math.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"

START_TEST(test_init_weight_ones_or_zeros)
{
    tl_scope_push();
    tl_pcg32 rng = tl_test_rng(7107);
    tl_tensor *x = tl_randn(&rng, TL_SHAPE(3, 6));
    RMSNorm llama, gemma;
    ck_assert_msg(rmsnorm_init(&llama, 6, 1e-6, false) == 0, "rmsnorm_init: %s", tl_error());
    ck_assert_msg(rmsnorm_init(&gemma, 6, 1e-6, true) == 0, "rmsnorm_init: %s", tl_error());
    for (int k = 0; k < 2; k++) {
        const RMSNorm *n = k == 0 ? &llama : &gemma;
        const char *name = k == 0 ? "Llama" : "Gemma";
        ck_assert_msg(n->weight != NULL, "%s: no weight", name);
        ck_assert_msg(n->weight->dtype == TL_F32 && n->weight->ndim == 1 &&
                      n->weight->shape[0] == 6, "%s: the weight must be F32 [6]", name);
        ck_assert_msg(n->weight->requires_grad, "%s: the weight must require a gradient", name);
        ck_assert_msg(n->weight->owned, "%s: the weight must be owned (it outlives scopes)", name);
        ck_assert_msg(n->dim == 6 && n->eps == 1e-6 && n->unit_offset == (k == 1),
                      "%s: dim, eps and unit_offset must be stored as given", name);
        for (int i = 0; i < 6; i++)
            ck_assert_msg(tl_item_at(n->weight, i) == (k == 0 ? 1.0 : 0.0),
                          "%s: weight[%d] = %g, expected %g", name, i, tl_item_at(n->weight, i),
                          k == 0 ? 1.0 : 0.0);
    }
    tl_tensor *y_llama = rmsnorm_forward(&llama, x);
    tl_tensor *y_gemma = rmsnorm_forward(&gemma, x);
    tl_assert_ok(y_llama);
    tl_assert_ok(y_gemma);
    tl_assert_close(y_gemma, y_llama, 0.0, 0.0);
    /* ...and that common output is x * r, row by row (r computed here in double). */
    const char *json = "L7.1/rmsnorm.json";
    double rtol = tl_fixture_number(json, "tolerances.test_init_weight_ones_or_zeros.rtol");
    double atol = tl_fixture_number(json, "tolerances.test_init_weight_ones_or_zeros.atol");
    float want[3 * 6];
    for (int i = 0; i < 3; i++) {
        double ms = 0;
        for (int j = 0; j < 6; j++) ms += tl_item_at(x, i * 6 + j) * tl_item_at(x, i * 6 + j);
        double r = 1.0 / sqrt(ms / 6 + 1e-6);
        for (int j = 0; j < 6; j++) want[i * 6 + j] = (float)(tl_item_at(x, i * 6 + j) * r);
    }
    tl_assert_close(y_llama, tl_from_f32(want, TL_SHAPE(3, 6)), rtol, atol);
    rmsnorm_free(&llama);
    rmsnorm_free(&gemma);
    ck_assert_msg(llama.weight == NULL && gemma.weight == NULL,
                  "rmsnorm_free must clear the struct");
    tl_scope_pop();
}
END_TEST
