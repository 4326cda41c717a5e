/* L7.9 golden: every dense tiny checkpoint (GQA, MQA, Mistral's window, Qwen2's
 * biases and windowed layers, Llama's attention_bias with Llama-3 rope, YaRN
 * and dynamic rope, tied and untied, BF16 in shards), loaded from its folder by
 * llama_from_pretrained, gives the oracle's float32 logits (transformers'
 * modeling code re-implemented in oracle/L7.9, eager, float32) for the fixture
 * ids at positions 0 .. T-1. */
#include "llama_fixture.h"

START_TEST(test_tiny_hf_logits_golden)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(LL_ST);
    double rtol = ll_tol("test_tiny_hf_logits_golden", "rtol");
    double atol = ll_tol("test_tiny_hf_logits_golden", "atol");
    for (int i = 0; i < LL_N_DENSE; i++) {
        const char *name = LL_DENSE[i];
        LlamaForCausalLM m;
        ll_load(&m, name);
        tl_tensor *logits = ll_forward(&m, ll_golden(fx, name, "ids"), NULL, NULL);
        char msg[768];
        ck_assert_msg(tl_close_report(logits, ll_golden(fx, name, "logits"), rtol, atol, msg,
                                      sizeof msg), "%s: %s", name, msg);
        llama_free(&m);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* Positions given explicitly are the ones RoPE uses: 0 .. T-1 as a tensor
 * [T] or [B, T] gives the same logits as the default; other distances give
 * other logits. */
START_TEST(test_explicit_positions_equal_the_default)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(LL_ST);
    double rtol = ll_tol("test_tiny_hf_logits_golden", "rtol");
    double atol = ll_tol("test_tiny_hf_logits_golden", "atol");
    LlamaForCausalLM m;
    ll_load(&m, "llama3-bias");
    tl_tensor *ids = ll_golden(fx, "llama3-bias", "ids");
    int64_t b = ids->shape[0], t = ids->shape[1];
    tl_tensor *flat = tl_arange(0, t);
    tl_tensor *rows = tl_contiguous(tl_expand(tl_unsqueeze(flat, 0), TL_SHAPE(b, t)));
    tl_tensor *want = ll_golden(fx, "llama3-bias", "logits");
    tl_assert_close(ll_forward(&m, ids, flat, NULL), want, rtol, atol);
    tl_assert_close(ll_forward(&m, ids, rows, NULL), want, rtol, atol);
    /* RoPE sees distances: positions all shifted by 5 give the same logits, and
     * positions 0, 2, 4, ... (every distance doubled) do not. */
    tl_assert_close(ll_forward(&m, ids, tl_arange(5, 5 + t), NULL), want, rtol, atol);
    tl_tensor *stretched = tl_mul_scalar(tl_cast(flat, TL_F32), 2.0);
    tl_tensor *doubled = ll_forward(&m, ids, tl_cast(stretched, TL_I64), NULL);
    ck_assert_msg(!tl_close_report(doubled, want, rtol, atol, NULL, 0),
                  "positions 0, 2, 4, ... gave the logits of positions 0, 1, 2, ...");
    llama_free(&m);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* A BF16 checkpoint stays BF16: loaded in its own dtype the weights are BF16
 * views of the mapped file (read-only); asked for F32 they are widened exactly;
 * either way the logits are HF's. */
START_TEST(test_bf16_checkpoint_is_adopted_in_place)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(LL_ST);
    double rtol = ll_tol("test_tiny_hf_logits_golden", "rtol");
    double atol = ll_tol("test_tiny_hf_logits_golden", "atol");
    const char *name = "llama-bf16-sharded";
    LlamaForCausalLM own, wide;
    ll_load_as(&own, name, -1);
    ll_load_as(&wide, name, TL_F32);
    tl_tensor *q = tl_module_param(own.module, "model.layers.1.self_attn.q_proj.weight");
    ck_assert_msg(q->dtype == TL_BF16, "a BF16 checkpoint loaded as itself is %s, not BF16",
                  tl_dtype_name(q->dtype));
    ck_assert_msg(tl_set(q, (int64_t[]){0, 0}, 1.0) != 0,
                  "an adopted weight is the file's bytes: it must be read-only");
    ck_assert_int_eq(tl_module_param(wide.module, "model.norm.weight")->dtype, TL_F32);
    tl_assert_close(tl_module_param(wide.module, "model.layers.1.self_attn.q_proj.weight"), q,
                    0, 0);
    tl_tensor *ids = ll_golden(fx, name, "ids");
    tl_assert_close(ll_forward(&own, ids, NULL, NULL), ll_golden(fx, name, "logits"), rtol, atol);
    tl_assert_close(ll_forward(&wide, ids, NULL, NULL), ll_golden(fx, name, "logits"), rtol,
                    atol);
    llama_free(&own);
    llama_free(&wide);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
