/* L7.6 golden: what the latent cache holds. After a prefill of the fixture's
 * 6 tokens, every case's cache holds exactly HF's RMS(c) [kv_lora_rank] as
 * its keys and the rotated shared k_rope [qk_rope_head_dim] as its values
 * (de-interleaved with rope_interleave, as HF's rotation leaves it), and
 * nothing else: kv_lora_rank + qk_rope_head_dim = 20 floats per token and
 * layer, where HF's cache of full keys and values would hold
 * n (dn + dr + dv) = 57. */
#include "mla_fixture.h"

#define CACHE_TOL "test_latent_cache_holds_normed_latent_and_rotated_k_rope"

START_TEST(test_latent_cache_holds_normed_latent_and_rotated_k_rope)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MLA_ST);
    double rtol = mla_tol(CACHE_TOL, "rtol"), atol = mla_tol(CACHE_TOL, "atol");
    tl_tensor *x = tl_fixture_tensor(fx, "x"), *positions = mla_positions(fx);
    for (int i = 0; i < MLA_N_CASES; i++) {
        const mla_case *c = &MLA_CASES[i];
        MLAttention a;
        mla_from_fixture(&a, fx, c);
        MLAConfig cfg = mla_config(c);
        enum { LAYERS = 2, MAX_LEN = 9 };
        KVCache cache;
        ck_assert_msg(mla_cache_init(&cache, &cfg, LAYERS, FX_B, MAX_LEN) == 0,
                      "mla_cache_init: %s", tl_error());
        /* The size: one kv head, the latent and the rope key, per token and layer. */
        ck_assert_int_eq(cache.n_kv_heads, 1);
        ck_assert_int_eq(cache.key_dim, FX_KV_RANK);
        ck_assert_int_eq(cache.value_dim, FX_ROPE);
        for (int l = 0; l < LAYERS; l++) {
            int64_t floats = tl_numel(cache.keys[l]) + tl_numel(cache.values[l]);
            ck_assert_msg(floats == (int64_t)FX_B * MAX_LEN * (FX_KV_RANK + FX_ROPE),
                          "layer %d stores %lld floats for %d rows of %d tokens; a latent cache "
                          "stores kv_lora_rank + qk_rope_head_dim = %d per token", l,
                          (long long)floats, FX_B, MAX_LEN, FX_KV_RANK + FX_ROPE);
        }

        /* Prefill layer 1 (a layer of a shared cache) and read back what it holds. */
        tl_no_grad_push();
        tl_tensor *y = mla_forward(&a, x, positions, NULL, &cache, 1);
        tl_no_grad_pop();
        tl_assert_ok(y);
        ck_assert_int_eq(kv_cache_seq_len(&cache, 1), FX_T);
        ck_assert_int_eq(kv_cache_seq_len(&cache, 0), 0);
        tl_tensor *keys, *values;
        ck_assert_msg(kv_cache_view(&cache, 1, &keys, &values) == 0, "%s", tl_error());
        char name[96];
        snprintf(name, sizeof name, "%s.cache.latent", c->name);
        mla_assert_close(keys, tl_fixture_tensor(fx, name), rtol, atol, name);
        snprintf(name, sizeof name, "%s.cache.k_rope", c->name);
        mla_assert_close(values, tl_fixture_tensor(fx, name), rtol, atol, name);
        kv_cache_free(&cache);
        mla_free(&a);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
