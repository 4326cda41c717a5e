/* tinyllm/testing.h: support for course tests and students' tests alike.
 * Include it after <check.h>. The fixture helpers and the assertion macros
 * report through Check, so a failure names the test and the file:line of the
 * assertion (ck_abort: the test stops there). The functions that return a
 * value (tl_close_report, tl_gradcheck, the random tensors) fail as tensor.h
 * says. Tensors they return live in the current scope; checkpoints are the
 * caller's (tl_checkpoint_free).
 */
#ifndef TINYLLM_TESTING_H
#define TINYLLM_TESTING_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include "tinyllm/pcg32.h"
#include "tinyllm/safetensors.h"
#include "tinyllm/tensor.h"

/* ---- fixtures ---------------------------------------------------------- */
/* The fixtures folder: $TINYLLM_FIXTURES when set and not empty, else the
 * course's fixtures/ (a path compiled in). Never fails. */
const char *tl_fixture_dir(void);
/* tl_fixture_dir()/rel ("L7.1/rmsnorm.safetensors"), in a thread-local
 * buffer that the next call overwrites (cut at PATH_MAX). rel NULL is "". */
const char *tl_fixture_path(const char *rel);
/* Loads a fixture's tensors as F32 (tl_checkpoint_load); the caller frees it.
 * A missing or broken file fails the test: "fixture <path> cannot be loaded:
 * <reason> (regenerate fixtures with `make fixtures`, ...)". */
tl_checkpoint *tl_fixture_load(const char *rel);
/* The named tensor of a loaded fixture (owned by fx). An absent name fails
 * the test: "fixture has no tensor 'x' (it holds: a, b, ...)". */
tl_tensor *tl_fixture_tensor(const tl_checkpoint *fx, const char *name);
/* A number from a fixture's JSON by dotted path ("tolerances.golden.rtol").
 * Fails the test: an unreadable file ("fixture <path> cannot be read
 * (regenerate with `make fixtures`)"); bad JSON ("fixture <path> is not valid
 * JSON"); no number at the key ("fixture <path> has no number at 'a.b'"). */
double tl_fixture_number(const char *rel_json, const char *dotted_key);

/* ---- comparisons ------------------------------------------------------- */
/* True when shapes agree and |a - e| <= atol + rtol * |e| everywhere (NaN
 * only matches NaN; any dtypes, any strides). Otherwise false, and msg (may
 * be NULL) gets why: a NULL tensor ("actual is NULL (<tl_error()>)"), other
 * shapes ("shapes differ: actual [2], expected [3]"), or the worst element
 * ("3 of 6 elements differ; worst at [1, 2]: actual ..., expected ..., abs
 * err ..., rel err ... (rtol ..., atol ...)"). Sets no error. */
bool tl_close_report(const tl_tensor *actual, const tl_tensor *expected,
                     double rtol, double atol, char *msg, size_t msg_size);

#define tl_assert_close(actual, expected, rtol, atol)                              \
    do {                                                                           \
        char tl_msg_[768];                                                         \
        bool tl_ok_ = tl_close_report((actual), (expected), (rtol), (atol),        \
                                      tl_msg_, sizeof tl_msg_);                    \
        ck_assert_msg(tl_ok_, "%s vs %s: %s", #actual, #expected, tl_msg_);        \
    } while (0)

/* Fails the test with tl_error() when t is NULL. */
#define tl_assert_ok(t)                                                            \
    ck_assert_msg((t) != NULL, "%s returned NULL: %s", #t,                         \
                  tl_error() ? tl_error() : "(no error message)")

/* Fails unless expr returned NULL and the error message contains needle. */
#define tl_assert_error(expr, needle)                                              \
    do {                                                                           \
        tl_clear_error();                                                          \
        const void *tl_r_ = (const void *)(expr);                                  \
        const char *tl_e_ = tl_error();                                            \
        ck_assert_msg(tl_r_ == NULL, "%s succeeded; expected an error about '%s'", \
                      #expr, (needle));                                            \
        ck_assert_msg(tl_e_ && strstr(tl_e_, (needle)),                           \
                      "%s failed with '%s'; expected it to mention '%s'", #expr,   \
                      tl_e_ ? tl_e_ : "(no message)", (needle));                  \
        tl_clear_error();                                                          \
    } while (0)

/* ---- gradcheck --------------------------------------------------------- */
/* A function under test: builds its output from inputs (any shape). */
typedef tl_tensor *(*tl_grad_fn)(tl_tensor *const *inputs, void *ctx);

/* Compares autograd's gradient of sum(f(inputs) * R) (R a fixed random
 * tensor) with central differences of step eps, computed in double over the
 * inputs marked requires_grad (they are written and restored in place, so
 * they must be writable leaves; their .grad is reset). Returns the worst
 * relative error |a - n| / max(1, |a|, |n|) (INFINITY for a NaN), or -1 with
 * an error: an input NULL ("gradcheck: input 2 is NULL", or its cause); an
 * input made by an op ("gradcheck: input 1 is the result of an op, not a
 * leaf"); f failing or changing its output's shape (f's message). */
double tl_gradcheck(tl_grad_fn f, void *ctx, tl_tensor *const *inputs, int n, double eps);

#define tl_assert_gradcheck(f, ctx, inputs, n, tol)                                \
    do {                                                                           \
        double tl_worst_ = tl_gradcheck((f), (ctx), (inputs), (n), 1e-3);          \
        ck_assert_msg(tl_worst_ >= 0, "gradcheck of %s failed: %s", #f,            \
                      tl_error() ? tl_error() : "?");                              \
        ck_assert_msg(tl_worst_ <= (tol),                                          \
                      "gradcheck of %s: worst relative error %.3g > %.3g", #f,     \
                      tl_worst_, (double)(tol));                                   \
    } while (0)

/* ---- random data ------------------------------------------------------- */
/* A generator on the tests' fixed stream, started at seed (never fails). */
tl_pcg32 tl_test_rng(uint64_t seed);
/* F32 tensors in the current scope, filled in C order from rng: N(0, 1)
 * (tl_pcg32_normal) or U[lo, hi) (tl_pcg32_uniform). Errors: those of
 * tensor creation (tensor.h), NULL returned. */
tl_tensor *tl_randn(tl_pcg32 *rng, int ndim, const int64_t *shape);
tl_tensor *tl_rand_uniform(tl_pcg32 *rng, double lo, double hi, int ndim, const int64_t *shape);

#endif
