/* My activation tests: names, values I can compute in double, and the
 * places where the gelu forms differ. */
#include <check.h>
#include <math.h>
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"
#include "tinyllm/modern/mlp.h"

static double at(tl_activation a, double v) {
    tl_tensor *y = activation_forward(a, tl_from_f32((const float[]){(float)v}, TL_SHAPE(1)));
    tl_assert_ok(y);
    return tl_item_at(y, 0);
}

static tl_activation named(const char *name) {
    tl_activation a;
    ck_assert_msg(activation_from_name(name, &a) == 0, "%s: %s", name, tl_error());
    ck_assert_str_eq(activation_name(a), name);
    return a;
}

START_TEST(my_names_and_unknown_name)
{
    const char *names[] = {"silu", "swish", "gelu", "gelu_pytorch_tanh", "gelu_new",
                           "gelu_fast", "quick_gelu", "relu", "relu2"};
    for (int i = 0; i < 9; i++) named(names[i]);
    tl_activation a;
    ck_assert_int_eq(activation_from_name("geglu", &a), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "gelu_pytorch_tanh"));
    tl_clear_error();
}
END_TEST

START_TEST(my_values_against_formulas)
{
    tl_scope_push();
    for (double v = -6; v <= 6; v += 0.75) {
        double s = 1 / (1 + exp(-v));
        ck_assert_msg(fabs(at(named("silu"), v) - v * s) < 1e-6, "silu(%g)", v);
        ck_assert_msg(fabs(at(named("swish"), v) - v * s) < 1e-6, "swish(%g)", v);
        ck_assert_msg(fabs(at(named("gelu"), v) - 0.5 * v * (1 + erf(v / sqrt(2)))) < 1e-6,
                      "gelu(%g)", v);
        double t = 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
        ck_assert_msg(fabs(at(named("gelu_pytorch_tanh"), v) - t) < 1e-6,
                      "gelu_pytorch_tanh(%g)", v);
        ck_assert_msg(fabs(at(named("gelu_new"), v) - t) < 1e-6, "gelu_new(%g)", v);
        ck_assert_msg(fabs(at(named("gelu_fast"), v) - t) < 1e-6, "gelu_fast(%g)", v);
        ck_assert_msg(fabs(at(named("quick_gelu"), v) - v / (1 + exp(-1.702 * v))) < 1e-6,
                      "quick_gelu(%g)", v);
        ck_assert_msg(fabs(at(named("relu"), v) - (v > 0 ? v : 0)) < 1e-6, "relu(%g)", v);
        ck_assert_msg(fabs(at(named("relu2"), v) - (v > 0 ? v * v : 0)) < 1e-5, "relu2(%g)", v);
    }
    tl_scope_pop();
}
END_TEST

/* At +-3 the erf and tanh forms differ by 4e-4: a real difference. */
START_TEST(my_gelu_forms_differ_at_three)
{
    tl_scope_push();
    for (int sign = -1; sign <= 1; sign += 2) {
        double x = 3.0 * sign;
        double exact = at(named("gelu"), x), approx = at(named("gelu_pytorch_tanh"), x);
        ck_assert_msg(fabs(exact - approx) > 3e-4, "gelu(%g) %g vs tanh form %g", x, exact, approx);
        ck_assert_msg(fabs(exact - 0.5 * x * (1 + erf(x / sqrt(2)))) < 2e-7, "gelu(%g)", x);
    }
    tl_scope_pop();
}
END_TEST

/* Large inputs: finite results, no NaN from exp overflowing. */
START_TEST(my_large_inputs_stay_finite)
{
    tl_scope_push();
    const char *names[] = {"silu", "gelu", "gelu_pytorch_tanh", "gelu_fast", "quick_gelu", "relu2"};
    for (int i = 0; i < 6; i++) {
        ck_assert_msg(fabs(at(named(names[i]), -100.0)) < 1e-6, "%s(-100)", names[i]);
        double big = at(named(names[i]), 100.0);
        ck_assert_msg(isfinite(big) && big >= 100.0 - 1e-3, "%s(100) = %g", names[i], big);
    }
    tl_scope_pop();
}
END_TEST
