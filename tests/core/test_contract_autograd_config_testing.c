/* autograd.h, model_config.h and testing.h keep their promises: each
 * documented failure gives the documented value and message (issue 7,
 * item 5). pcg32.h and bf16.h promise no failure (their values are
 * test_pcg32.c's and test_bf16.c's). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tinyllm/autograd.h"
#include "tinyllm/model_config.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"

#define assert_status(expr, needle)                                                     \
    do {                                                                                \
        tl_clear_error();                                                               \
        long long s_ = (long long)(expr);                                               \
        const char *e_ = tl_error();                                                    \
        ck_assert_msg(s_ == -1, "%s returned %lld; expected -1 and '%s'", #expr, s_, needle); \
        ck_assert_msg(e_ && strstr(e_, needle), "%s failed with '%s'; expected '%s'",   \
                      #expr, e_ ? e_ : "(no message)", needle);                         \
    } while (0)

START_TEST(requires_grad_errors)
{
    tl_assert_error(tl_requires_grad(NULL, true), "tl_requires_grad: input 1 is NULL");
    tl_assert_error(tl_requires_grad(tl_arange(0, 3), true),
                    "tl_requires_grad: tensor [3] is I64; only F32 and BF16 tensors have "
                    "gradients");
    tl_tensor *x = tl_requires_grad(tl_ones(TL_F32, TL_SHAPE(2)), true);
    tl_tensor *y = tl_add(x, x);
    tl_assert_error(tl_requires_grad(y, false),
                    "tl_requires_grad: tensor [2] was made by add, so it needs a gradient for "
                    "its inputs; use tl_detach for a copy without history");
    ck_assert_ptr_eq(tl_requires_grad(x, false), x);   /* a leaf may be unmarked */
    ck_assert(!x->requires_grad);
}
END_TEST

START_TEST(backward_errors)
{
    tl_tensor *x = tl_requires_grad(tl_ones(TL_F32, TL_SHAPE(2, 3)), true);
    assert_status(tl_backward(NULL), "tl_backward: input 1 is NULL");
    assert_status(tl_backward(tl_mul_scalar(x, 2)),
                  "tl_backward: the loss [2, 3] has 6 elements; it needs exactly one (reduce it "
                  "with tl_sum_all or tl_mean_all, or use tl_backward_with)");
    assert_status(tl_backward(tl_scalar(1)),
                  "tl_backward: tensor [] does not depend on any tensor that requires a "
                  "gradient");
    assert_status(tl_backward_with(x, NULL), "tl_backward: input 2 is NULL");
    tl_tensor *y = tl_sum(x, 0, false);
    assert_status(tl_backward_with(y, tl_ones(TL_F32, TL_SHAPE(2))),
                  "tl_backward: the upstream gradient [2] does not match the output [3]");
    ck_assert_int_eq(tl_backward_with(y, tl_ones(TL_BF16, TL_SHAPE(3))), 0);
    ck_assert_double_eq(tl_item_at(x->grad, 0), 1.0);
    tl_zero_grad(x);
    ck_assert_ptr_null(x->grad);
    tl_zero_grad(NULL);
    tl_zero_grad(x);
    tl_clear_error();
}
END_TEST

START_TEST(no_grad_pop_without_push_is_an_error_and_changes_nothing)
{
    tl_clear_error();
    ck_assert(tl_grad_enabled());
    tl_no_grad_pop();
    ck_assert_str_eq(tl_error(), "tl_no_grad_pop: no tl_no_grad_push is open");
    ck_assert(tl_grad_enabled());
    tl_no_grad_push();
    tl_no_grad_push();
    tl_no_grad_pop();
    ck_assert(!tl_grad_enabled());
    tl_no_grad_pop();
    ck_assert(tl_grad_enabled());
    tl_assert_error(tl_detach(NULL), "detach: input 1 is NULL");
}
END_TEST

START_TEST(model_config_errors)
{
    tl_model_config c = tl_model_config_smollm2_135m();
    assert_status(tl_model_config_head_dim(NULL), "model_config: config is NULL");
    assert_status(tl_model_config_param_count(NULL), "model_config: config is NULL");
    tl_model_config bad = c;
    bad.num_attention_heads = 0;
    assert_status(tl_model_config_head_dim(&bad),
                  "model_config: num_attention_heads must be positive, got 0");
    bad = c;
    bad.head_dim = -1;
    assert_status(tl_model_config_head_dim(&bad),
                  "model_config: head_dim must be positive (or 0 for hidden_size / "
                  "num_attention_heads), got -1");
    bad = c;
    bad.num_attention_heads = 7;
    bad.num_key_value_heads = 7;
    assert_status(tl_model_config_head_dim(&bad),
                  "model_config: num_attention_heads 7 does not divide hidden_size 576; pick a "
                  "divisor or set head_dim explicitly");
    const char *sizes[] = {"vocab_size", "hidden_size", "intermediate_size",
                           "num_hidden_layers", "num_attention_heads"};
    for (int i = 0; i < 5; i++) {
        bad = c;
        int64_t *field[] = {&bad.vocab_size, &bad.hidden_size, &bad.intermediate_size,
                            &bad.num_hidden_layers, &bad.num_attention_heads};
        *field[i] = 0;
        char want[96];
        snprintf(want, sizeof want, "model_config: %s must be positive, got 0", sizes[i]);
        assert_status(tl_model_config_param_count(&bad), want);
    }
    bad = c;
    bad.num_key_value_heads = -1;
    assert_status(tl_model_config_param_count(&bad),
                  "model_config: num_key_value_heads must be positive (or 0 for "
                  "num_attention_heads), got -1");
    bad = c;
    bad.num_key_value_heads = 4;
    assert_status(tl_model_config_param_count(&bad),
                  "model_config: num_key_value_heads 4 does not divide num_attention_heads 9; "
                  "each KV head must serve a whole group of query heads");
    bad = c;
    bad.vocab_size = INT64_MAX / 2;
    assert_status(tl_model_config_param_count(&bad),
                  "model_config: the parameter count overflows 64 bits");
    tl_clear_error();
}
END_TEST

START_TEST(close_report_says_why)
{
    char msg[256];
    tl_tensor *a = tl_ones(TL_F32, TL_SHAPE(2)), *b = tl_ones(TL_F32, TL_SHAPE(3));
    tl_fail("upstream");
    ck_assert(!tl_close_report(NULL, a, 0, 0, msg, sizeof msg));
    ck_assert_str_eq(msg, "actual is NULL (upstream)");
    ck_assert(!tl_close_report(a, NULL, 0, 0, msg, sizeof msg));
    ck_assert(strstr(msg, "expected is NULL"));
    ck_assert(!tl_close_report(a, b, 0, 0, msg, sizeof msg));
    ck_assert_str_eq(msg, "shapes differ: actual [2], expected [3]");
    tl_tensor *c = tl_from_f32((const float[]){1.0f, 1.5f}, TL_SHAPE(2));
    ck_assert(!tl_close_report(c, a, 0.1, 0, NULL, 0));   /* msg may be NULL */
    ck_assert(!tl_close_report(c, a, 0.1, 0, msg, sizeof msg));
    ck_assert(strstr(msg, "1 of 2 elements differ; worst at [1]: actual 1.5, expected 1"));
    ck_assert(tl_close_report(c, a, 0.5, 0, msg, sizeof msg));
    tl_clear_error();
}
END_TEST

static tl_tensor *square_fn(tl_tensor *const *in, void *ctx) {
    (void)ctx;
    return tl_square(in[0]);
}

static tl_tensor *failing_fn(tl_tensor *const *in, void *ctx) {
    (void)in;
    (void)ctx;
    return tl_fail("f: refused");
}

START_TEST(gradcheck_errors)
{
    tl_tensor *x = tl_requires_grad(tl_ones(TL_F32, TL_SHAPE(3)), true);
    assert_status(tl_gradcheck(square_fn, NULL, (tl_tensor *[]){NULL}, 1, 1e-3),
                  "gradcheck: input 1 is NULL");
    tl_tensor *made = tl_mul_scalar(x, 2);
    assert_status(tl_gradcheck(square_fn, NULL, (tl_tensor *[]){x, made}, 2, 1e-3),
                  "gradcheck: input 2 is the result of an op, not a leaf");
    assert_status(tl_gradcheck(failing_fn, NULL, (tl_tensor *[]){x}, 1, 1e-3), "f: refused");
    ck_assert(tl_gradcheck(square_fn, NULL, (tl_tensor *[]){x}, 1, 1e-3) < 1e-3);
    tl_clear_error();
}
END_TEST

START_TEST(random_tensors_fail_as_creation_does)
{
    tl_pcg32 rng = tl_test_rng(1);
    tl_assert_error(tl_randn(&rng, TL_SHAPE(-1)), "tensor: size -1 at axis 0 is negative");
    tl_assert_error(tl_rand_uniform(&rng, 0, 1, 2, NULL), "tensor: rank 2 but the shape is NULL");
    tl_tensor *u = tl_rand_uniform(&rng, 2, 3, TL_SHAPE(64));
    for (int i = 0; i < 64; i++) ck_assert(tl_item_at(u, i) >= 2 && tl_item_at(u, i) < 3);
}
END_TEST

START_TEST(fixture_paths)
{
    setenv("TINYLLM_FIXTURES", "/some/where", 1);
    ck_assert_str_eq(tl_fixture_dir(), "/some/where");
    ck_assert_str_eq(tl_fixture_path("a/b.json"), "/some/where/a/b.json");
    ck_assert_str_eq(tl_fixture_path(NULL), "/some/where/");
    setenv("TINYLLM_FIXTURES", "", 1);
    ck_assert(strstr(tl_fixture_dir(), "/fixtures") != NULL);   /* empty counts as unset */
    unsetenv("TINYLLM_FIXTURES");
}
END_TEST

/* The fixture helpers fail the test that calls them: each is run as the one
 * test of an inner Check runner (forked), whose failure message we read. */
static const char *inner_message;
static char inner_buf[1024];

static void run_inner(TFun fn) {
    TTest t = {"inner", fn, __FILE__, __LINE__};
    Suite *s = suite_create("inner");
    TCase *tc = tcase_create("inner");
    tcase_add_test(tc, &t);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_set_fork_status(r, CK_FORK);
    /* the outer run's case filter (CK_RUN_CASE) would select none of these */
    const char *only = getenv("CK_RUN_CASE");
    char *saved = only ? strdup(only) : NULL;
    unsetenv("CK_RUN_CASE");
    srunner_run_all(r, CK_SILENT);
    if (saved) setenv("CK_RUN_CASE", saved, 1);
    free(saved);
    inner_message = NULL;
    if (srunner_ntests_failed(r) == 1) {
        TestResult **res = srunner_failures(r);
        snprintf(inner_buf, sizeof inner_buf, "%s", tr_msg(res[0]));
        inner_message = inner_buf;
        free(res);
    }
    srunner_free(r);
}

static void load_missing(int i) {
    (void)i;
    tl_fixture_load("no/such/fixture.safetensors");
}
static void tensor_missing(int i) {
    (void)i;
    tl_checkpoint *c = tl_fixture_load("core/st_golden.safetensors");
    tl_fixture_tensor(c, "no.such.tensor");
}
static void number_file_missing(int i) {
    (void)i;
    tl_fixture_number("no/such.json", "a");
}
static void number_key_missing(int i) {
    (void)i;
    tl_fixture_number("L7.1/rmsnorm.json", "no.such.key");
}

static void number_bad_json(int i) {
    (void)i;
    tl_fixture_number("bad.json", "a");
}

START_TEST(fixture_helpers_fail_the_test_with_the_reason)
{
    /* The inner tests abort in forked children that never free what they
     * made: under valgrind (CK_FORK=no) those children would count as leaks. */
    const char *fork_mode = getenv("CK_FORK");
    if (fork_mode && strcmp(fork_mode, "no") == 0) return;
    char dir[] = "/tmp/tl-fixture-XXXXXX", path[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/bad.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"a\": ", f);
    fclose(f);
    setenv("TINYLLM_FIXTURES", dir, 1);
    run_inner(number_bad_json);
    unsetenv("TINYLLM_FIXTURES");
    unlink(path);
    rmdir(dir);
    ck_assert_msg(inner_message && strstr(inner_message, "bad.json is not valid JSON"),
                  "said: %s", inner_message ? inner_message : "(passed)");
    run_inner(load_missing);
    ck_assert_msg(inner_message && strstr(inner_message, "fixture ") &&
                      strstr(inner_message, "no/such/fixture.safetensors cannot be loaded: ") &&
                      strstr(inner_message, "regenerate fixtures with `make fixtures`"),
                  "said: %s", inner_message ? inner_message : "(passed)");
    run_inner(tensor_missing);
    ck_assert_msg(inner_message && strstr(inner_message, "fixture has no tensor "
                                                         "'no.such.tensor' (it holds: "),
                  "said: %s", inner_message ? inner_message : "(passed)");
    run_inner(number_file_missing);
    ck_assert_msg(inner_message && strstr(inner_message, "no/such.json cannot be read "
                                                         "(regenerate with `make fixtures`)"),
                  "said: %s", inner_message ? inner_message : "(passed)");
    run_inner(number_key_missing);
    ck_assert_msg(inner_message && strstr(inner_message, "has no number at 'no.such.key'"),
                  "said: %s", inner_message ? inner_message : "(passed)");
}
END_TEST
