/* L7.6 unit: dtypes. A BF16 input is widened exactly (ops.h), so the layer of
 * a BF16 x equals the layer of the same values in F32, bit for bit, on both
 * paths and through the latent cache; the cache stores F32 whatever came in. */
#include "mla_fixture.h"

START_TEST(test_bf16_input_is_widened_exactly)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MLA_ST);
    double rtol = mla_tol("test_bf16_input_is_widened_exactly", "rtol");
    double atol = mla_tol("test_bf16_input_is_widened_exactly", "atol");
    const mla_case *c = mla_case_named("yarn_bias");
    MLAttention a;
    mla_from_fixture(&a, fx, c);
    MLAConfig cfg = mla_config(c);
    tl_tensor *xb = tl_cast(tl_fixture_tensor(fx, "x"), TL_BF16);
    tl_tensor *xf = tl_cast(xb, TL_F32);
    tl_tensor *positions = mla_positions(fx);
    const mla_path paths[2] = {MLA_PATH_NAIVE, MLA_PATH_ABSORBED};
    for (int p = 0; p < 2; p++) {
        a.path = paths[p];
        tl_tensor *yb = mla_forward(&a, xb, positions, NULL, NULL, 0);
        tl_assert_ok(yb);
        ck_assert_msg(yb->dtype == TL_F32, "the output is F32 for a BF16 input");
        tl_assert_close(yb, mla_forward(&a, xf, positions, NULL, NULL, 0), 0.0, 0.0);

        KVCache cache;
        ck_assert_msg(mla_cache_init(&cache, &cfg, 1, FX_B, FX_T) == 0, "mla_cache_init: %s",
                      tl_error());
        tl_no_grad_push();
        tl_tensor *y2 = mla_forward(&a, tl_narrow(xb, 1, 0, 2), tl_narrow(positions, 1, 0, 2),
                                    NULL, &cache, 0);
        tl_no_grad_pop();
        tl_assert_ok(y2);
        mla_assert_close(y2, tl_narrow(yb, 1, 0, 2), rtol, atol,
                         "a BF16 prefill through the cache vs the full forward");
        ck_assert_msg(cache.keys[0]->dtype == TL_F32 && cache.values[0]->dtype == TL_F32,
                      "the cache stores F32");
        kv_cache_free(&cache);
    }
    mla_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
