/* mlp_fixture.h: what the L7.2 course tests share: the golden file, its
 * tolerances, an MLP carrying the fixture's weights, and error assertions.
 * Included by test files only (each is its own translation unit, so these
 * statics stay private to it). */
#ifndef TESTS_L7_2_MLP_FIXTURE_H
#define TESTS_L7_2_MLP_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <string.h>
#include "tinyllm/nn.h"
#include "tinyllm/testing.h"
#include "tinyllm/modern/mlp.h"

#define MLP_ST "L7.2/mlp.safetensors"
#define MLP_JSON "L7.2/mlp.json"
enum { FX_H = 8, FX_I = 12 };   /* the fixture's hidden and intermediate sizes */

/* Every activation of the fixture, with HF's name. */
static const struct {
    const char *name;
    tl_activation act;
} FX_ACTS[] = {
    {"silu", TL_ACT_SILU},
    {"swish", TL_ACT_SWISH},
    {"gelu", TL_ACT_GELU},
    {"gelu_pytorch_tanh", TL_ACT_GELU_PYTORCH_TANH},
    {"gelu_new", TL_ACT_GELU_NEW},
    {"gelu_fast", TL_ACT_GELU_FAST},
    {"quick_gelu", TL_ACT_QUICK_GELU},
    {"relu", TL_ACT_RELU},
    {"relu2", TL_ACT_RELU2},
};
#define FX_N_ACTS ((int)(sizeof FX_ACTS / sizeof FX_ACTS[0]))

static const char *const FX_PARAMS[6] = {
    "gate_proj.weight", "gate_proj.bias", "up_proj.weight",
    "up_proj.bias", "down_proj.weight", "down_proj.bias",
};

/* tolerances.<test>.<which> from the fixture's JSON. */
static double fx_tol(const char *test, const char *which) {
    char key[160];
    snprintf(key, sizeof key, "tolerances.%s.%s", test, which);
    return tl_fixture_number(MLP_JSON, key);
}

/* An MLP of the fixture's shape carrying its weights, copied by HF name. */
static void fx_mlp(GatedMLP *m, const tl_checkpoint *fx, tl_activation act, bool bias) {
    ck_assert_msg(gated_mlp_init(m, FX_H, FX_I, act, bias, NULL) == 0, "gated_mlp_init: %s",
                  tl_error());
    for (int p = 0; p < 6; p++) {
        if (!bias && strstr(FX_PARAMS[p], ".bias")) continue;
        char name[64];
        snprintf(name, sizeof name, "params.%s", FX_PARAMS[p]);
        tl_tensor *slot = tl_module_param(m->module, FX_PARAMS[p]);
        ck_assert_msg(slot != NULL, "the MLP has no parameter %s: %s", FX_PARAMS[p], tl_error());
        ck_assert_int_eq(tl_copy_into(slot, tl_fixture_tensor(fx, name)), 0);
    }
}

/* got must be within (rtol, atol) of want; what names the comparison. */
static void fx_assert_close(const tl_tensor *got, const tl_tensor *want, double rtol,
                            double atol, const char *what) {
    char msg[768];
    ck_assert_msg(got != NULL, "%s: NULL (%s)", what, tl_error() ? tl_error() : "no message");
    ck_assert_msg(tl_close_report(got, want, rtol, atol, msg, sizeof msg), "%s: %s", what, msg);
}

/* expr must return NULL with an error mentioning each of the needles. */
#define assert_error3(expr, n1, n2, n3)                                                 \
    do {                                                                                \
        tl_clear_error();                                                               \
        const void *r_ = (const void *)(expr);                                          \
        const char *e_ = tl_error() ? tl_error() : "(no message)";                       \
        ck_assert_msg(r_ == NULL, "%s succeeded; expected an error", #expr);             \
        ck_assert_msg(strstr(e_, n1) && strstr(e_, n2) && strstr(e_, n3),               \
                      "%s failed with '%s'; expected it to mention '%s', '%s' and '%s'",  \
                      #expr, e_, n1, n2, n3);                                           \
        tl_clear_error();                                                               \
    } while (0)

/* An int-returning call must return -1 with an error mentioning both needles. */
#define assert_status_error(expr, n1, n2)                                               \
    do {                                                                                \
        tl_clear_error();                                                               \
        int s_ = (int)(expr);                                                           \
        const char *e_ = tl_error() ? tl_error() : "(no message)";                       \
        ck_assert_msg(s_ == -1, "%s returned %d; expected -1", #expr, s_);              \
        ck_assert_msg(strstr(e_, n1) && strstr(e_, n2),                                 \
                      "%s failed with '%s'; expected it to mention '%s' and '%s'", #expr, \
                      e_, n1, n2);                                                      \
        tl_clear_error();                                                               \
    } while (0)

#endif
