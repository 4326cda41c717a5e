/* My golden tests: the course's tiny checkpoints give HF's logits.
 * Oracle: llama.safetensors (HF's logits for each checkpoint's ids). */
#include "my_llama.h"

static void check_logits(const tl_checkpoint *fx, const char *name) {
    LlamaForCausalLM m;
    my_load(&m, name);
    tl_tensor *y = my_forward(&m, my_tensor(fx, name, "ids"), NULL);
    char msg[512];
    ck_assert_msg(tl_close_report(y, my_tensor(fx, name, "logits"),
                                  my_tol("test_tiny_hf_logits_golden", "rtol"),
                                  my_tol("test_tiny_hf_logits_golden", "atol"), msg, sizeof msg),
                  "%s: %s", name, msg);
    llama_free(&m);
}

/* GQA and MQA, a 5.x config with Llama-3 rope, a 4.x one with YaRN. */
START_TEST(my_llama_checkpoints_match_hf)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    check_logits(fx, "llama-gqa");
    check_logits(fx, "llama-mqa-tied");
    check_logits(fx, "llama3-bias");
    check_logits(fx, "llama-yarn");
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* Mistral with 12 tokens over a window of 5; Qwen2 with its biases and windows. */
START_TEST(my_mistral_and_qwen2_match_hf)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    check_logits(fx, "mistral-window");
    check_logits(fx, "qwen2-window-bias");
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* DeepSeek-V3: dense layer 0, MoE from layer 1; a llama with MLA and experts. */
START_TEST(my_latent_and_expert_checkpoints_match_hf)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    LlamaForCausalLM m;
    my_load(&m, "deepseek-v3");
    ck_assert(!m.decoder[0].sparse && m.decoder[1].sparse && m.decoder[2].sparse);
    llama_free(&m);
    check_logits(fx, "deepseek-v3");
    check_logits(fx, "llama-mla-moe");
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* A window of 4 with 2 sink tokens and learned sinks. */
START_TEST(my_sink_checkpoint_matches_hf)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    check_logits(fx, "llama-sinks");
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
