/* My golden tests: the course's fixture, HF's LlamaMLP and gpt-oss's gate. */
#include <check.h>
#include <stdio.h>
#include "tinyllm/autograd.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"
#include "tinyllm/modern/mlp.h"

static double tol(const char *test, const char *which) {
    char key[160];
    snprintf(key, sizeof key, "tolerances.%s.%s", test, which);
    return tl_fixture_number("L7.2/mlp.json", key);
}

static const char *PARAMS[6] = {"gate_proj.weight", "gate_proj.bias", "up_proj.weight",
                                "up_proj.bias", "down_proj.weight", "down_proj.bias"};

static void load(GatedMLP *m, const tl_checkpoint *fx, const char *act_name, bool bias) {
    tl_activation a;
    ck_assert_int_eq(activation_from_name(act_name, &a), 0);
    ck_assert_int_eq(gated_mlp_init(m, 8, 12, a, bias, NULL), 0);
    for (int p = 0; p < 6; p++) {
        if (!bias && p % 2 == 1) continue;
        char name[64];
        snprintf(name, sizeof name, "params.%s", PARAMS[p]);
        ck_assert_int_eq(tl_copy_into(tl_module_param(m->module, PARAMS[p]),
                                      tl_fixture_tensor(fx, name)), 0);
    }
}

START_TEST(my_golden_every_activation)
{
    tl_scope_push();
    const char *acts[9] = {"silu", "swish", "gelu", "gelu_pytorch_tanh", "gelu_new",
                           "gelu_fast", "quick_gelu", "relu", "relu2"};
    tl_checkpoint *fx = tl_fixture_load("L7.2/mlp.safetensors");
    for (int k = 0; k < 9; k++)
        for (int b = 0; b < 2; b++) {
            GatedMLP m;
            load(&m, fx, acts[k], b);
            char name[64];
            snprintf(name, sizeof name, "%s.%s.y", acts[k], b ? "bias" : "nobias");
            tl_tensor *y = gated_mlp_forward(&m, tl_fixture_tensor(fx, "x"));
            tl_assert_ok(y);
            tl_assert_close(y, tl_fixture_tensor(fx, name),
                            tol("test_golden_outputs_match_hf", "rtol"),
                            tol("test_golden_outputs_match_hf", "atol"));
            gated_mlp_free(&m);
        }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(my_golden_gradients_silu_with_bias)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load("L7.2/mlp.safetensors");
    GatedMLP m;
    load(&m, fx, "silu", true);
    tl_tensor *x = tl_requires_grad(tl_clone(tl_fixture_tensor(fx, "x")), true);
    tl_tensor *y = gated_mlp_forward(&m, x);
    tl_assert_ok(y);
    ck_assert_int_eq(tl_backward_with(y, tl_fixture_tensor(fx, "upstream")), 0);
    double rt = tol("test_golden_gradients_match_hf", "rtol");
    double at = tol("test_golden_gradients_match_hf", "atol");
    ck_assert_ptr_nonnull(x->grad);
    tl_assert_close(x->grad, tl_fixture_tensor(fx, "silu.bias.grad_x"), rt, at);
    for (int p = 0; p < 6; p++) {
        char name[64];
        snprintf(name, sizeof name, "silu.bias.grad.%s", PARAMS[p]);
        tl_tensor *param = tl_module_param(m.module, PARAMS[p]);
        ck_assert_msg(param->grad != NULL, "no gradient for %s", PARAMS[p]);
        tl_assert_close(param->grad, tl_fixture_tensor(fx, name), rt, at);
    }
    tl_zero_grad(x);
    gated_mlp_free(&m);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(my_golden_gpt_oss)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load("L7.2/mlp.safetensors");
    tl_tensor *h = gpt_oss_swiglu(tl_fixture_tensor(fx, "gpt_oss.gate_up"), 1.702, 7.0);
    tl_assert_ok(h);
    tl_assert_close(h, tl_fixture_tensor(fx, "gpt_oss.y"),
                    tol("test_golden_gpt_oss_swiglu", "rtol"),
                    tol("test_golden_gpt_oss_swiglu", "atol"));
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
