/* L7.1 golden: outputs and gradients against the oracle (oracle/L7.1), which
 * runs transformers 5's LlamaRMSNorm and GemmaRMSNorm in float32 on x [2, 5, 16]
 * whose rows have rms from 1e-4 to 1e2, for eps 1e-5 and 1e-6. */
#include <check.h>
#include <stdio.h>
#include "tinyllm/autograd.h"
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"

#define GOLDEN_ST "L7.1/rmsnorm.safetensors"
#define GOLDEN_JSON "L7.1/rmsnorm.json"

typedef struct {
    const char *kind;      /* "llama" or "gemma": the fixture's tensor prefix */
    bool unit_offset;
    double eps;
    const char *eps_name;  /* as the oracle names it */
} golden_case;

static const golden_case CASES[] = {
    {"llama", false, 1e-5, "eps1e-05"},
    {"llama", false, 1e-6, "eps1e-06"},
    {"gemma", true, 1e-5, "eps1e-05"},
    {"gemma", true, 1e-6, "eps1e-06"},
};
#define N_CASES ((int)(sizeof CASES / sizeof CASES[0]))

static double tolerance(const char *test, const char *which) {
    char key[128];
    snprintf(key, sizeof key, "tolerances.%s.%s", test, which);
    return tl_fixture_number(GOLDEN_JSON, key);
}

static tl_tensor *golden(const tl_checkpoint *fx, const golden_case *c, const char *what) {
    char name[96];
    snprintf(name, sizeof name, "%s.%s.%s", c->kind, c->eps_name, what);
    return tl_fixture_tensor(fx, name);
}

/* A norm of the case's kind and eps carrying the fixture's weight. */
static void init_case(RMSNorm *n, const tl_checkpoint *fx, const golden_case *c) {
    char name[64];
    snprintf(name, sizeof name, "%s.weight", c->kind);
    ck_assert_msg(rmsnorm_init(n, 16, c->eps, c->unit_offset) == 0, "rmsnorm_init: %s", tl_error());
    ck_assert_int_eq(tl_copy_into(n->weight, tl_fixture_tensor(fx, name)), 0);
}

static void assert_close_case(const tl_tensor *got, const tl_tensor *want, double rtol,
                              double atol, const golden_case *c, const char *what) {
    char msg[768];
    ck_assert_msg(got != NULL, "%s %s %s: NULL (%s)", c->kind, c->eps_name, what,
                  tl_error() ? tl_error() : "no error message");
    ck_assert_msg(tl_close_report(got, want, rtol, atol, msg, sizeof msg), "%s %s %s: %s",
                  c->kind, c->eps_name, what, msg);
}

START_TEST(test_golden_matches_hf)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(GOLDEN_ST);
    double rtol = tolerance("test_golden_matches_hf", "rtol");
    double atol = tolerance("test_golden_matches_hf", "atol");
    tl_tensor *x = tl_fixture_tensor(fx, "x");
    for (int i = 0; i < N_CASES; i++) {
        RMSNorm n;
        init_case(&n, fx, &CASES[i]);
        tl_tensor *y = rmsnorm_forward(&n, x);
        assert_close_case(y, golden(fx, &CASES[i], "y"), rtol, atol, &CASES[i], "y");
        rmsnorm_free(&n);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_golden_gradients_match_hf)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(GOLDEN_ST);
    double rtol = tolerance("test_golden_gradients_match_hf", "rtol");
    double atol = tolerance("test_golden_gradients_match_hf", "atol");
    tl_tensor *upstream = tl_fixture_tensor(fx, "upstream");
    for (int i = 0; i < N_CASES; i++) {
        const golden_case *c = &CASES[i];
        RMSNorm n;
        init_case(&n, fx, c);
        tl_tensor *x = tl_requires_grad(tl_clone(tl_fixture_tensor(fx, "x")), true);
        tl_tensor *y = rmsnorm_forward(&n, x);
        tl_assert_ok(y);
        ck_assert_msg(tl_backward_with(y, upstream) == 0, "backward: %s", tl_error());
        ck_assert_msg(x->grad != NULL, "%s %s: no gradient reached x", c->kind, c->eps_name);
        ck_assert_msg(n.weight->grad != NULL,
                      "%s %s: no gradient reached the weight (is it detached from the graph?)",
                      c->kind, c->eps_name);
        assert_close_case(x->grad, golden(fx, c, "grad_x"), rtol, atol, c, "grad_x");
        assert_close_case(n.weight->grad, golden(fx, c, "grad_weight"), rtol, atol, c,
                          "grad_weight");
        tl_zero_grad(x);
        rmsnorm_free(&n);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* The residual's sublayer: a bias-free linear map, standing in for attention. */
static tl_tensor *linear_sublayer(tl_tensor *h, void *weight) {
    return tl_linear(h, (tl_tensor *)weight, NULL);
}

START_TEST(test_golden_pre_norm_residual)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(GOLDEN_ST);
    double rtol = tolerance("test_golden_pre_norm_residual", "rtol");
    double atol = tolerance("test_golden_pre_norm_residual", "atol");
    RMSNorm n;
    init_case(&n, fx, &CASES[0]);   /* Llama, eps 1e-5 */
    tl_tensor *y = pre_norm_residual(tl_fixture_tensor(fx, "x"), &n, linear_sublayer,
                                     tl_fixture_tensor(fx, "residual.sublayer_weight"));
    tl_assert_ok(y);
    tl_assert_close(y, tl_fixture_tensor(fx, "residual.llama.eps1e-05.y"), rtol, atol);
    rmsnorm_free(&n);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
