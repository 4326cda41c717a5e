/* L7.1 boundary: wrong inputs fail with a message that names the function
 * and what was wrong, and never crash. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"

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

/* An int-returning call must return -1 with an error mentioning needle. */
#define assert_status_error(expr, needle)                                               \
    do {                                                                                \
        tl_clear_error();                                                               \
        int s_ = (expr);                                                                \
        const char *e_ = tl_error() ? tl_error() : "(no message)";                       \
        ck_assert_msg(s_ == -1, "%s returned %d; expected -1", #expr, s_);              \
        ck_assert_msg(strstr(e_, needle), "%s failed with '%s'; expected it to mention '%s'", \
                      #expr, e_, needle);                                               \
        tl_clear_error();                                                               \
    } while (0)

static tl_tensor *same(tl_tensor *h, void *ctx) { (void)ctx; return h; }
static tl_tensor *first_row(tl_tensor *h, void *ctx) { (void)ctx; return tl_narrow(h, 0, 0, 1); }
static tl_tensor *failing(tl_tensor *h, void *ctx) {
    (void)h; (void)ctx;
    return tl_fail("attention: the cache is full");
}

START_TEST(test_boundary_wrong_weight_width)
{
    tl_scope_push();
    RMSNorm n;
    ck_assert_msg(rmsnorm_init(&n, 16, 1e-5, false) == 0, "rmsnorm_init: %s", tl_error());
    /* x narrower than the norm. */
    assert_error3(rmsnorm_forward(&n, tl_ones(TL_F32, TL_SHAPE(2, 5, 12))), "rmsnorm_forward",
                  "[2, 5, 12]", "16");
    /* A weight of the wrong width (say, loaded from another checkpoint). */
    tl_tensor *w16 = n.weight;
    n.weight = tl_tensor_new_owned(TL_F32, TL_SHAPE(12));
    assert_error3(rmsnorm_forward(&n, tl_ones(TL_F32, TL_SHAPE(2, 5, 16))), "rmsnorm_forward",
                  "[12]", "[16]");
    /* ... even when x has the weight's width: the norm's width is dim, as the contract says */
    assert_error3(rmsnorm_forward(&n, tl_ones(TL_F32, TL_SHAPE(2, 5, 12))), "rmsnorm_forward",
                  "[12]", "[16]");
    tl_tensor_free(n.weight);
    /* A weight that is not one-dimensional, though it holds 16 numbers. */
    n.weight = tl_tensor_new_owned(TL_F32, TL_SHAPE(1, 16));
    assert_error3(rmsnorm_forward(&n, tl_ones(TL_F32, TL_SHAPE(2, 5, 16))), "rmsnorm_forward",
                  "[1, 16]", "[16]");
    tl_tensor_free(n.weight);
    n.weight = w16;
    /* A scalar has no last axis to normalise. */
    assert_error3(rmsnorm_forward(&n, tl_scalar(3.0)), "rmsnorm_forward", "[]", "16");
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST

START_TEST(test_boundary_bad_eps)
{
    tl_scope_push();
    RMSNorm n;
    assert_status_error(rmsnorm_init(&n, 16, -1e-6, false), "eps");
    ck_assert_msg(n.weight == NULL, "a failed rmsnorm_init must leave no weight");
    rmsnorm_free(&n);   /* safe after a failed init */
    assert_status_error(rmsnorm_init(&n, 16, NAN, true), "eps");
    assert_status_error(rmsnorm_init(&n, 16, INFINITY, false), "eps");
    /* eps is a public field: the forward checks it too. */
    ck_assert_msg(rmsnorm_init(&n, 16, 0.0, false) == 0, "eps = 0 is allowed: %s", tl_error());
    n.eps = -1.0;
    assert_error3(rmsnorm_forward(&n, tl_ones(TL_F32, TL_SHAPE(16))), "rmsnorm_forward", "eps",
                  "-1");
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST

START_TEST(test_boundary_null_and_bad_arguments)
{
    tl_scope_push();
    RMSNorm n;
    assert_status_error(rmsnorm_init(NULL, 16, 1e-5, false), "rmsnorm_init");
    assert_status_error(rmsnorm_init(&n, 0, 1e-5, false), "dim");
    assert_status_error(rmsnorm_init(&n, -4, 1e-5, false), "dim");
    rmsnorm_free(NULL);

    ck_assert_msg(rmsnorm_init(&n, 4, 1e-5, false) == 0, "rmsnorm_init: %s", tl_error());
    tl_tensor *x = tl_ones(TL_F32, TL_SHAPE(3, 4));
    tl_assert_error(rmsnorm_forward(NULL, x), "rmsnorm_forward");
    tl_assert_error(rmsnorm_forward(&n, NULL), "rmsnorm_forward");
    /* A NULL input keeps the message of the call that failed first. */
    tl_clear_error();
    tl_tensor *bad = tl_reshape(x, TL_SHAPE(5, 5));
    ck_assert_ptr_null(bad);
    ck_assert_ptr_nonnull(tl_error());
    char first[1024];   /* a copy: tl_error() is one buffer, rewritten by a failure */
    snprintf(first, sizeof first, "%s", tl_error());
    ck_assert_ptr_null(rmsnorm_forward(&n, bad));
    ck_assert_str_eq(tl_error(), first);
    tl_clear_error();

    tl_assert_error(pre_norm_residual(x, &n, NULL, NULL), "pre_norm_residual");
    tl_assert_error(pre_norm_residual(x, NULL, same, NULL), "rmsnorm_forward");
    /* The sublayer must keep the shape; its own error is passed through. */
    assert_error3(pre_norm_residual(x, &n, first_row, NULL), "pre_norm_residual", "[1, 4]",
                  "[3, 4]");
    tl_assert_error(pre_norm_residual(x, &n, failing, NULL), "attention: the cache is full");
    tl_assert_ok(pre_norm_residual(x, &n, same, NULL));
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST
