/* My golden tests: the course's oracle data (HF's norms in float32). */
#include <check.h>
#include <stdio.h>
#include "tinyllm/autograd.h"
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"

static double tol(const char *test, const char *which) {
    char key[128];
    snprintf(key, sizeof key, "tolerances.%s.%s", test, which);
    return tl_fixture_number("L7.1/rmsnorm.json", key);
}

static void one_case(const tl_checkpoint *fx, const char *kind, double eps, const char *eps_name,
                     bool grads) {
    char name[96];
    RMSNorm n;
    ck_assert_int_eq(rmsnorm_init(&n, 16, eps, kind[0] == 'g'), 0);
    snprintf(name, sizeof name, "%s.weight", kind);
    ck_assert_int_eq(tl_copy_into(n.weight, tl_fixture_tensor(fx, name)), 0);
    tl_tensor *x = tl_requires_grad(tl_clone(tl_fixture_tensor(fx, "x")), true);
    tl_tensor *y = rmsnorm_forward(&n, x);
    tl_assert_ok(y);
    snprintf(name, sizeof name, "%s.%s.y", kind, eps_name);
    tl_assert_close(y, tl_fixture_tensor(fx, name), tol("test_golden_matches_hf", "rtol"),
                    tol("test_golden_matches_hf", "atol"));
    if (grads) {
        double rt = tol("test_golden_gradients_match_hf", "rtol");
        double at = tol("test_golden_gradients_match_hf", "atol");
        ck_assert_int_eq(tl_backward_with(y, tl_fixture_tensor(fx, "upstream")), 0);
        ck_assert_msg(x->grad && n.weight->grad, "%s: a gradient is missing", kind);
        snprintf(name, sizeof name, "%s.%s.grad_x", kind, eps_name);
        tl_assert_close(x->grad, tl_fixture_tensor(fx, name), rt, at);
        snprintf(name, sizeof name, "%s.%s.grad_weight", kind, eps_name);
        tl_assert_close(n.weight->grad, tl_fixture_tensor(fx, name), rt, at);
    }
    tl_zero_grad(x);
    rmsnorm_free(&n);
}

START_TEST(my_golden_llama_and_gemma)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load("L7.1/rmsnorm.safetensors");
    one_case(fx, "llama", 1e-5, "eps1e-05", true);
    one_case(fx, "llama", 1e-6, "eps1e-06", false);
    one_case(fx, "gemma", 1e-5, "eps1e-05", true);
    one_case(fx, "gemma", 1e-6, "eps1e-06", false);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

static tl_tensor *linear(tl_tensor *h, void *w) { return tl_linear(h, w, NULL); }

START_TEST(my_golden_residual)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load("L7.1/rmsnorm.safetensors");
    RMSNorm n;
    ck_assert_int_eq(rmsnorm_init(&n, 16, 1e-5, false), 0);
    ck_assert_int_eq(tl_copy_into(n.weight, tl_fixture_tensor(fx, "llama.weight")), 0);
    tl_tensor *y = pre_norm_residual(tl_fixture_tensor(fx, "x"), &n, linear,
                                     tl_fixture_tensor(fx, "residual.sublayer_weight"));
    tl_assert_ok(y);
    tl_assert_close(y, tl_fixture_tensor(fx, "residual.llama.eps1e-05.y"),
                    tol("test_golden_pre_norm_residual", "rtol"),
                    tol("test_golden_pre_norm_residual", "atol"));
    rmsnorm_free(&n);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
