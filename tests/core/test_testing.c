/* The test-support library (testing.h): it must catch what it claims to. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"

START_TEST(close_report_accepts_within_tolerance)
{
    char msg[256];
    tl_tensor *e = tl_from_f32((float[]){ 1, 100, NAN, INFINITY }, TL_SHAPE(4));
    tl_tensor *a = tl_from_f32((float[]){ 1.05f, 101, NAN, INFINITY }, TL_SHAPE(4));
    ck_assert(tl_close_report(a, e, 0.01, 0.05, msg, sizeof msg));   /* NaN matches NaN */
    ck_assert(!tl_close_report(a, e, 0.001, 0.01, msg, sizeof msg));
}
END_TEST

START_TEST(close_report_names_the_worst_element)
{
    char msg[256];
    tl_tensor *e = tl_zeros(TL_F32, TL_SHAPE(2, 3));
    tl_tensor *a = tl_zeros(TL_F32, TL_SHAPE(2, 3));
    tl_set(a, (int64_t[]){ 0, 1 }, 0.5);
    tl_set(a, (int64_t[]){ 1, 0 }, -2);
    ck_assert(!tl_close_report(a, e, 1e-5, 1e-6, msg, sizeof msg));
    ck_assert_msg(strstr(msg, "2 of 6 elements differ; worst at [1, 0]: actual -2, expected 0"),
                  "%s", msg);
    ck_assert_msg(strstr(msg, "abs err 2") && strstr(msg, "atol 1e-06"), "%s", msg);
}
END_TEST

START_TEST(close_report_rejects_lone_nan_and_shape_mismatch)
{
    char msg[256];
    tl_tensor *e = tl_zeros(TL_F32, TL_SHAPE(2));
    tl_tensor *a = tl_from_f32((float[]){ 0, NAN }, TL_SHAPE(2));
    ck_assert(!tl_close_report(a, e, 1, 1, msg, sizeof msg));
    ck_assert_msg(strstr(msg, "worst at [1]"), "%s", msg);
    ck_assert(!tl_close_report(tl_zeros(TL_F32, TL_SHAPE(1, 2)), e, 1, 1, msg, sizeof msg));
    ck_assert_str_eq(msg, "shapes differ: actual [1, 2], expected [2]");
}
END_TEST

/* x * detach(x) claims a gradient of x where the true one is 2x. */
static tl_tensor *wrong_gradient(tl_tensor *const *in, void *ctx) {
    (void)ctx;
    return tl_mul(in[0], tl_detach(in[0]));
}

static tl_tensor *right_gradient(tl_tensor *const *in, void *ctx) {
    (void)ctx;
    return tl_mul(in[0], in[0]);
}

START_TEST(gradcheck_catches_a_wrong_gradient)
{
    tl_pcg32 rng = tl_test_rng(3);
    tl_tensor *x = tl_requires_grad(tl_rand_uniform(&rng, 1, 2, TL_SHAPE(2, 3)), true);
    double wrong = tl_gradcheck(wrong_gradient, NULL, &x, 1, 1e-3);
    double right = tl_gradcheck(right_gradient, NULL, &x, 1, 1e-3);
    ck_assert_msg(wrong > 0.1, "wrong gradient scored %g", wrong);
    ck_assert_msg(right >= 0 && right < 1e-3, "right gradient scored %g", right);
    ck_assert(tl_item_at(x, 0) >= 1 && tl_item_at(x, 0) < 2);   /* inputs restored */
}
END_TEST

static tl_tensor *failing(tl_tensor *const *in, void *ctx) {
    (void)ctx;
    return tl_add(in[0], tl_ones(TL_F32, TL_SHAPE(5)));
}

START_TEST(gradcheck_reports_a_failing_function)
{
    tl_tensor *x = tl_requires_grad(tl_ones(TL_F32, TL_SHAPE(2)), true);
    tl_clear_error();
    ck_assert(tl_gradcheck(failing, NULL, &x, 1, 1e-3) < 0);
    ck_assert_ptr_nonnull(strstr(tl_error(), "add: shapes [2] and [5]"));
    tl_clear_error();
}
END_TEST

START_TEST(random_tensors_repeat_per_seed)
{
    tl_pcg32 r1 = tl_test_rng(5), r2 = tl_test_rng(5), r3 = tl_test_rng(6);
    tl_tensor *a = tl_randn(&r1, TL_SHAPE(100)), *b = tl_randn(&r2, TL_SHAPE(100));
    tl_tensor *c = tl_randn(&r3, TL_SHAPE(100));
    char msg[256];
    ck_assert(tl_close_report(a, b, 0, 0, msg, sizeof msg));
    ck_assert(!tl_close_report(a, c, 0, 0, msg, sizeof msg));
    double mean = tl_item(tl_mean_all(a));
    ck_assert(fabs(mean) < 0.5);
    tl_tensor *u = tl_rand_uniform(&r1, -2, 3, TL_SHAPE(1000));
    for (int i = 0; i < 1000; i++) ck_assert(tl_item_at(u, i) >= -2 && tl_item_at(u, i) < 3);
}
END_TEST

START_TEST(fixture_numbers_follow_dotted_keys)
{
    char dir[] = "/tmp/tl_fixtures_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"tolerances\": {\"golden\": {\"rtol\": 1e-5}}, \"steps\": [3, {\"lr\": 0.5}]}", f);
    fclose(f);
    setenv("TINYLLM_FIXTURES", dir, 1);
    ck_assert_str_eq(tl_fixture_dir(), dir);
    ck_assert_str_eq(tl_fixture_path("meta.json"), path);
    ck_assert(tl_fixture_number("meta.json", "tolerances.golden.rtol") == 1e-5);
    ck_assert(tl_fixture_number("meta.json", "steps.1.lr") == 0.5);
    unsetenv("TINYLLM_FIXTURES");
    remove(path);
    rmdir(dir);
    ck_assert_ptr_nonnull(strstr(tl_fixture_dir(), "/fixtures"));
}
END_TEST
