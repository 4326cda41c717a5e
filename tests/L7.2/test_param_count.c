/* L7.2: the parameter count, 3 H I without biases and 3 H I + 2 I + H with.
 * SmolLM2-135M's MLP (hidden 576, intermediate 1536) has 2,654,208, the
 * number L7.9's hand count uses; built with init=false (rng NULL) so no
 * number is drawn. The count agrees with the module tree's own. */
#include <check.h>
#include "mlp_fixture.h"

START_TEST(test_param_count_smollm2_and_biases)
{
    GatedMLP m;
    ck_assert_msg(gated_mlp_init(&m, 576, 1536, TL_ACT_SILU, false, NULL) == 0,
                  "gated_mlp_init: %s", tl_error());
    ck_assert_int_eq(gated_mlp_param_count(&m), 2654208);
    ck_assert_int_eq(tl_module_param_count(m.module), 2654208);
    gated_mlp_free(&m);

    ck_assert_msg(gated_mlp_init(&m, 8, 12, TL_ACT_GELU, true, NULL) == 0, "gated_mlp_init: %s",
                  tl_error());
    ck_assert_int_eq(gated_mlp_param_count(&m), 3 * 8 * 12 + 2 * 12 + 8);
    ck_assert_int_eq(tl_module_param_count(m.module), 3 * 8 * 12 + 2 * 12 + 8);
    gated_mlp_free(&m);
}
END_TEST
