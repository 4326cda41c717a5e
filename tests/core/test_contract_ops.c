/* ops.h keeps its promises: every "Errors:" clause of the header, op by op,
 * produces the failure value and the message it quotes (issue 7, item 5).
 * The common clauses (a NULL input, an integer input to arithmetic) are
 * checked for every op of the header. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tinyllm/ops.h"
#include "tinyllm/testing.h"

/* expr must give NULL and a message holding needle (the cause kept: no clear
 * before the call, unlike tl_assert_error). */
#define assert_fails(expr, needle)                                                      \
    do {                                                                                \
        const void *r_ = (const void *)(expr);                                          \
        const char *e_ = tl_error();                                                    \
        ck_assert_msg(r_ == NULL, "%s succeeded; expected '%s'", #expr, needle);       \
        ck_assert_msg(e_ && strstr(e_, needle), "%s failed with '%s'; expected '%s'",   \
                      #expr, e_ ? e_ : "(no message)", needle);                         \
    } while (0)

#define assert_status(expr, needle)                                                     \
    do {                                                                                \
        tl_clear_error();                                                               \
        int s_ = (expr);                                                                \
        const char *e_ = tl_error();                                                    \
        ck_assert_msg(s_ == -1, "%s returned %d; expected -1 and '%s'", #expr, s_, needle); \
        ck_assert_msg(e_ && strstr(e_, needle), "%s failed with '%s'; expected '%s'",   \
                      #expr, e_ ? e_ : "(no message)", needle);                         \
    } while (0)

static tl_tensor *f32(int ndim, const int64_t *shape) { return tl_ones(TL_F32, ndim, shape); }

/* ---- the common clauses, for every op --------------------------------- */

typedef tl_tensor *(*unary_fn)(tl_tensor *);
typedef tl_tensor *(*binary_fn)(tl_tensor *, tl_tensor *);

static tl_tensor *add_scalar2(tl_tensor *t) { return tl_add_scalar(t, 2); }
static tl_tensor *mul_scalar2(tl_tensor *t) { return tl_mul_scalar(t, 2); }
static tl_tensor *pow3(tl_tensor *t) { return tl_pow(t, 3); }
static tl_tensor *clamp01(tl_tensor *t) { return tl_clamp(t, 0, 1); }
static tl_tensor *sum0(tl_tensor *t) { return tl_sum(t, 0, false); }
static tl_tensor *mean0(tl_tensor *t) { return tl_mean(t, 0, true); }
static tl_tensor *max0(tl_tensor *t) { return tl_max(t, 0, false); }
static tl_tensor *softmax0(tl_tensor *t) { return tl_softmax(t, 0); }
static tl_tensor *log_softmax0(tl_tensor *t) { return tl_log_softmax(t, 0); }
static tl_tensor *argmax0(tl_tensor *t) { return tl_argmax(t, 0, false); }
static tl_tensor *matmul_self(tl_tensor *t) { return tl_matmul(t, t); }
static tl_tensor *linear4(tl_tensor *t) {
    return tl_linear(t, tl_ones(TL_F32, TL_SHAPE(2, 4)), NULL);
}

static const struct { const char *name; unary_fn f; } UNARY[] = {
    {"neg", tl_neg}, {"add_scalar", add_scalar2}, {"mul_scalar", mul_scalar2},
    {"square", tl_square}, {"pow", pow3}, {"sqrt", tl_sqrt}, {"rsqrt", tl_rsqrt},
    {"exp", tl_exp}, {"log", tl_log}, {"tanh", tl_tanh}, {"erf", tl_erf},
    {"sigmoid", tl_sigmoid}, {"silu", tl_silu}, {"relu", tl_relu}, {"gelu", tl_gelu},
    {"gelu_tanh", tl_gelu_tanh}, {"cos", tl_cos}, {"sin", tl_sin}, {"clamp", clamp01},
    {"sum", sum0}, {"mean", mean0}, {"max", max0}, {"sum_all", tl_sum_all},
    {"mean_all", tl_mean_all}, {"softmax", softmax0}, {"log_softmax", log_softmax0},
    {"argmax", argmax0}, {"matmul", matmul_self}, {"linear", linear4},
};
static const struct { const char *name; binary_fn f; } BINARY[] = {
    {"add", tl_add}, {"sub", tl_sub}, {"mul", tl_mul}, {"div", tl_div},
    {"minimum", tl_minimum}, {"maximum", tl_maximum},
};
#define COUNT(a) (int)(sizeof a / sizeof a[0])

START_TEST(every_op_keeps_the_cause_of_a_null_input)
{
    tl_tensor *x = f32(TL_SHAPE(2, 2));
    for (int i = 0; i < COUNT(UNARY); i++) {
        tl_fail("the cause %d", i);
        ck_assert_msg(UNARY[i].f(NULL) == NULL, "%s(NULL) succeeded", UNARY[i].name);
        char want[32];
        snprintf(want, sizeof want, "the cause %d", i);
        ck_assert_msg(strcmp(tl_error(), want) == 0, "%s replaced the cause with '%s'",
                      UNARY[i].name, tl_error());
    }
    for (int i = 0; i < COUNT(BINARY); i++) {
        tl_fail("binary cause");
        ck_assert_ptr_null(BINARY[i].f(x, NULL));
        ck_assert_str_eq(tl_error(), "binary cause");
    }
    tl_fail("the cause");
    assert_fails(tl_where(NULL, x, x), "the cause");
    assert_fails(tl_masked_fill(x, NULL, 0), "the cause");
    assert_fails(tl_cross_entropy(NULL, tl_arange(0, 2), -100), "the cause");
    assert_fails(tl_embedding(NULL, tl_arange(0, 2)), "the cause");
    assert_fails(tl_gather(x, 0, NULL), "the cause");
    assert_fails(tl_concat((tl_tensor *[]){x, NULL}, 2, 0), "the cause");
    tl_tensor *parts[2];
    ck_assert_int_eq(tl_split(NULL, 0, (const int64_t[]){1, 1}, 2, parts), -1);
    ck_assert_str_eq(tl_error(), "the cause");
    ck_assert_int_eq(tl_topk(NULL, 1, NULL, parts), -1);
    ck_assert_str_eq(tl_error(), "the cause");
    tl_clear_error();
}
END_TEST

START_TEST(every_op_names_a_null_input_without_a_cause)
{
    tl_tensor *x = f32(TL_SHAPE(2, 2));
    for (int i = 0; i < COUNT(UNARY); i++) {
        tl_clear_error();
        ck_assert_ptr_null(UNARY[i].f(NULL));
        ck_assert_msg(tl_error() && strstr(tl_error(), "is NULL"),
                      "%s(NULL) said '%s'", UNARY[i].name, tl_error() ? tl_error() : "nothing");
    }
    for (int i = 0; i < COUNT(BINARY); i++) {
        tl_clear_error();
        char want[64];
        snprintf(want, sizeof want, "%s: input 2 is NULL", BINARY[i].name);
        assert_fails(BINARY[i].f(x, NULL), want);
    }
    tl_clear_error();
    assert_fails(tl_concat((tl_tensor *[]){x, NULL}, 2, 0), "concat: tensor 1 of 2 is NULL");
    tl_clear_error();
}
END_TEST

START_TEST(every_arithmetic_op_refuses_an_integer_input)
{
    tl_tensor *ids = tl_arange(0, 4), *x = f32(TL_SHAPE(4));
    for (int i = 0; i < COUNT(UNARY); i++) {
        tl_clear_error();
        ck_assert_msg(UNARY[i].f(ids) == NULL, "%s(I64) succeeded", UNARY[i].name);
        ck_assert_msg(tl_error() && strstr(tl_error(), "is I64"), "%s(I64) said '%s'",
                      UNARY[i].name, tl_error() ? tl_error() : "nothing");
    }
    for (int i = 0; i < COUNT(BINARY); i++) {
        tl_clear_error();
        char want[96];
        snprintf(want, sizeof want, "%s: tensor [4] is I64; arithmetic needs F32 or BF16",
                 BINARY[i].name);
        assert_fails(BINARY[i].f(x, ids), want);
    }
    tl_clear_error();
    tl_tensor *mask = tl_cast(x, TL_BOOL);
    assert_fails(tl_where(mask, ids, x), "where: tensor [4] is I64");
    assert_fails(tl_masked_fill(ids, mask, 0), "masked_fill: tensor [4] is I64");
    assert_fails(tl_gather(ids, 0, ids), "gather: tensor [4] is I64");
    tl_tensor *parts[1];
    assert_status(tl_topk(ids, 1, NULL, parts), "topk: tensor [4] is I64");
    tl_clear_error();
}
END_TEST

/* ---- each function's own clauses -------------------------------------- */

START_TEST(elementwise_shapes_must_broadcast)
{
    tl_tensor *a = f32(TL_SHAPE(2, 3)), *b = f32(TL_SHAPE(4, 3));
    tl_clear_error();
    for (int i = 0; i < COUNT(BINARY); i++) {
        char want[128];
        snprintf(want, sizeof want, "%s: shapes [2, 3] and [4, 3] do not broadcast at axis 0 "
                 "(2 vs 4); sizes must match or be 1", BINARY[i].name);
        assert_fails(BINARY[i].f(a, b), want);
    }
    tl_tensor *mask = tl_cast(a, TL_BOOL);
    assert_fails(tl_where(mask, a, b), "where: shapes [2, 3] and [4, 3] do not broadcast");
    assert_fails(tl_where(tl_cast(b, TL_BOOL), a, a), "where: shapes [4, 3] and [2, 3]");
    tl_clear_error();
}
END_TEST

START_TEST(where_and_masked_fill_need_a_bool_mask_that_fits)
{
    tl_tensor *t = f32(TL_SHAPE(3)), *m = tl_cast(f32(TL_SHAPE(2, 3)), TL_BOOL);
    assert_fails(tl_where(f32(TL_SHAPE(1)), t, t), "where: mask [1] is F32; it must be BOOL");
    assert_fails(tl_masked_fill(t, t, 0), "masked_fill: mask [3] is F32; it must be BOOL");
    assert_fails(tl_masked_fill(t, m, 0), "masked_fill: mask [2, 3] is larger than the tensor "
                                          "[3]; it must broadcast to the tensor's shape");
    assert_fails(tl_masked_fill(t, tl_cast(f32(TL_SHAPE(2)), TL_BOOL), 0),
                 "masked_fill: shapes [3] and [2] do not broadcast");
    tl_clear_error();
}
END_TEST

START_TEST(clamp_refuses_empty_bounds)
{
    tl_tensor *t = f32(TL_SHAPE(3));
    assert_fails(tl_clamp(t, 1, 0), "clamp: the bounds 1..0 are empty (lo must be <= hi)");
    assert_fails(tl_clamp(t, NAN, 1), "clamp: the bounds nan..1 are empty");
    tl_tensor *ok = tl_clamp(t, 2, 2);
    tl_assert_ok(ok);
    ck_assert_double_eq(tl_item_at(ok, 0), 2.0);
    tl_clear_error();
}
END_TEST

START_TEST(unary_domain_errors_are_ieee_values_not_failures)
{
    tl_tensor *x = tl_from_f32((const float[]){-1.0f, 0.0f}, TL_SHAPE(2));
    ck_assert(isnan(tl_item_at(tl_sqrt(x), 0)));
    ck_assert(isinf(tl_item_at(tl_log(x), 1)) && tl_item_at(tl_log(x), 1) < 0);
    ck_assert(isinf(tl_item_at(tl_div(tl_ones_like(x), x), 1)));
}
END_TEST

START_TEST(reductions_check_the_axis)
{
    tl_tensor *t = f32(TL_SHAPE(5, 2, 3)), *empty = f32(TL_SHAPE(0, 3));
    assert_fails(tl_sum(t, 3, false), "sum: axis 3 is out of range for shape [5, 2, 3]");
    assert_fails(tl_mean(t, -4, false), "mean: axis -4 is out of range for shape [5, 2, 3]");
    assert_fails(tl_max(t, 7, true), "max: axis 7 is out of range for shape [5, 2, 3]");
    assert_fails(tl_max(empty, 0, false), "max: axis 0 of shape [0, 3] is empty; a maximum "
                                          "needs one element");
    tl_tensor *m = tl_mean(empty, 0, false);   /* 0 / 0, as PyTorch */
    tl_assert_ok(m);
    ck_assert(isnan(tl_item_at(m, 0)));
    tl_clear_error();
}
END_TEST

START_TEST(matmul_errors_name_both_operands)
{
    tl_tensor *s = tl_scalar(1), *v3 = f32(TL_SHAPE(3));
    assert_fails(tl_matmul(s, v3), "matmul: operands need at least one axis; got a [] and b [3]");
    assert_fails(tl_matmul(f32(TL_SHAPE(2, 3)), f32(TL_SHAPE(4, 2))),
                 "matmul: a [2, 3] has K=3 on its last axis but b [4, 2] has K=4 on its "
                 "second-to-last axis");
    assert_fails(tl_matmul(f32(TL_SHAPE(2, 3)), f32(TL_SHAPE(4))),
                 "b [4] has K=4 on its only axis");
    assert_fails(tl_matmul(f32(TL_SHAPE(2, 1, 3)), f32(TL_SHAPE(3, 3, 1))),
                 "matmul: batch axes of a [2, 1, 3] and b [3, 3, 1] do not broadcast: batch "
                 "axis 0 has sizes 2 and 3");
    /* A column stride beyond int: an expanded view costs no memory. */
    tl_tensor *wide = tl_expand(f32(TL_SHAPE(1, 1)), TL_SHAPE(2, 3000000000LL));
    tl_tensor *tall = tl_expand(f32(TL_SHAPE(1, 1)), TL_SHAPE(3000000000LL, 2));
    tl_assert_ok(wide);
    assert_fails(tl_matmul(wide, tall), "matmul: a dimension or stride exceeds BLAS's int range");
    tl_clear_error();
}
END_TEST

START_TEST(linear_errors_name_input_weight_and_bias)
{
    tl_tensor *x = f32(TL_SHAPE(2, 5)), *w = f32(TL_SHAPE(3, 4));
    assert_fails(tl_linear(x, tl_arange(0, 3), NULL),
                 "linear: the weight must be a float matrix [out, in]; got I64 [3]");
    assert_fails(tl_linear(x, f32(TL_SHAPE(12)), NULL), "got F32 [12]");
    assert_fails(tl_linear(x, w, NULL), "linear: input [2, 5] must end with in=4 features to "
                                        "match the weight [3, 4] [out, in]");
    assert_fails(tl_linear(tl_scalar(1), w, NULL), "linear: input [] must end with in=4");
    assert_fails(tl_linear(f32(TL_SHAPE(2, 4)), w, f32(TL_SHAPE(2))),
                 "linear: bias [2] must be [out] = [3] for the weight [3, 4]");
    tl_clear_error();
}
END_TEST

START_TEST(softmax_checks_the_axis)
{
    tl_tensor *t = f32(TL_SHAPE(2, 3));
    assert_fails(tl_softmax(t, 2), "softmax: axis 2 is out of range for a tensor [2, 3] of "
                                   "rank 2");
    assert_fails(tl_log_softmax(t, -3), "log_softmax: axis -3 is out of range");
    assert_fails(tl_softmax(tl_scalar(1), 0), "softmax: axis 0 is out of range for a tensor [] "
                                              "of rank 0");
    tl_clear_error();
}
END_TEST

START_TEST(cross_entropy_checks_shapes_dtypes_and_targets)
{
    tl_tensor *logits = f32(TL_SHAPE(2, 3));
    assert_fails(tl_cross_entropy(f32(TL_SHAPE(2, 3, 4)), tl_arange(0, 2), -100),
                 "cross_entropy: logits must be [N, C] and targets [N]; got logits [2, 3, 4] "
                 "and targets [2]");
    assert_fails(tl_cross_entropy(logits, tl_arange(0, 3), -100), "targets [3]");
    assert_fails(tl_cross_entropy(logits, f32(TL_SHAPE(2)), -100),
                 "cross_entropy: indices [2] are F32; they must be I32 or I64");
    tl_tensor *bad = tl_from_i64((const int64_t[]){0, 7}, TL_SHAPE(2));
    assert_fails(tl_cross_entropy(logits, bad, -100),
                 "cross_entropy: target 7 at row 1 is out of range [0, C=3)");
    tl_tensor *ignored = tl_from_i64((const int64_t[]){-100, -100}, TL_SHAPE(2));
    tl_tensor *nan = tl_cross_entropy(logits, ignored, -100);
    tl_assert_ok(nan);
    ck_assert(isnan(tl_item(nan)));
    tl_clear_error();
}
END_TEST

START_TEST(embedding_checks_table_ids_and_range)
{
    tl_tensor *w = f32(TL_SHAPE(4, 3)), *ids = tl_from_i64((const int64_t[]){1, 9}, TL_SHAPE(2));
    assert_fails(tl_embedding(f32(TL_SHAPE(4)), ids),
                 "embedding: the weight must be a float table [V, D]; got F32 [4]");
    assert_fails(tl_embedding(tl_arange(0, 4), ids), "got I64 [4]");
    assert_fails(tl_embedding(w, f32(TL_SHAPE(2))),
                 "embedding: indices [2] are F32; they must be I32 or I64");
    tl_tensor *deep = tl_zeros(TL_I64, TL_SHAPE(1, 1, 1, 1, 1, 1));
    assert_fails(tl_embedding(w, deep), "embedding: ids [1, 1, 1, 1, 1, 1] have rank 6; the "
                                        "result would exceed 6 axes");
    assert_fails(tl_embedding(w, ids), "embedding: id 9 at position [1] of ids [2] is out of "
                                       "range [0, V=4) for the table [4, 3]");
    tl_clear_error();
}
END_TEST

START_TEST(gather_checks_axis_rank_sizes_and_values)
{
    tl_tensor *t = f32(TL_SHAPE(2, 3)), *idx = tl_zeros(TL_I64, TL_SHAPE(2, 1));
    assert_fails(tl_gather(t, 2, idx), "gather: axis 2 is out of range for t [2, 3] of rank 2");
    assert_fails(tl_gather(t, 1, tl_zeros(TL_I64, TL_SHAPE(2))),
                 "gather: index [2] must have the rank of t [2, 3] (2)");
    assert_fails(tl_gather(t, 1, tl_zeros(TL_I64, TL_SHAPE(3, 1))),
                 "gather: index [3, 1] is larger than t [2, 3] on axis 0 (3 > 2)");
    assert_fails(tl_gather(t, 1, tl_full(TL_I64, TL_SHAPE(1, 1), 5)),
                 "gather: index value 5 at position [0, 0] is out of range [0, 3) for axis 1 "
                 "of t [2, 3]");
    assert_fails(tl_gather(t, 1, f32(TL_SHAPE(2, 1))),
                 "gather: indices [2, 1] are F32; they must be I32 or I64");
    tl_clear_error();
}
END_TEST

START_TEST(concat_checks_count_axis_shapes_and_dtypes)
{
    tl_tensor *a = f32(TL_SHAPE(2, 3, 1)), *b = f32(TL_SHAPE(2, 4, 1));
    assert_fails(tl_concat((tl_tensor *[]){a}, 0, 0), "concat: needs at least one tensor (got 0)");
    assert_fails(tl_concat(NULL, 2, 0), "concat: needs at least one tensor (got 0)");
    assert_fails(tl_concat((tl_tensor *[]){a, b}, 2, 3),
                 "concat: axis 3 is out of range for tensor 0 [2, 3, 1] of rank 3");
    assert_fails(tl_concat((tl_tensor *[]){a, b}, 2, 2),
                 "concat: tensor 1 [2, 4, 1] does not fit tensor 0 [2, 3, 1]: shapes may differ "
                 "only on the concat axis 2");
    assert_fails(tl_concat((tl_tensor *[]){tl_arange(0, 2), f32(TL_SHAPE(2))}, 2, 0),
                 "concat: cannot mix index or mask dtypes with others (tensor 0 is I64)");
    tl_tensor *mixed = tl_concat((tl_tensor *[]){a, tl_cast(a, TL_BF16)}, 2, 1);
    tl_assert_ok(mixed);
    ck_assert_int_eq(mixed->dtype, TL_F32);
    tl_clear_error();
}
END_TEST

START_TEST(split_checks_arguments_and_clears_out)
{
    tl_tensor *t = f32(TL_SHAPE(4, 6)), *out[2] = {t, t};
    assert_status(tl_split(t, 1, (const int64_t[]){3, 3}, 0, out),
                  "split: needs n >= 1 sizes and an output array (got n=0)");
    assert_status(tl_split(t, 1, NULL, 2, out), "split: needs n >= 1 sizes");
    assert_status(tl_split(t, 1, (const int64_t[]){3, 3}, 2, NULL), "split: needs n >= 1");
    assert_status(tl_split(t, 2, (const int64_t[]){3, 3}, 2, out),
                  "split: axis 2 is out of range for [4, 6] of rank 2");
    assert_status(tl_split(t, 1, (const int64_t[]){8, -2}, 2, out),
                  "split: size 1 is negative (-2)");
    out[0] = out[1] = t;
    assert_status(tl_split(t, 1, (const int64_t[]){2, 3}, 2, out),
                  "split: the 2 sizes add up to 5 but axis 1 of [4, 6] has 6");
    ck_assert_ptr_null(out[0]);
    ck_assert_ptr_null(out[1]);
    tl_clear_error();
}
END_TEST

START_TEST(argmax_and_topk_check_their_arguments)
{
    tl_tensor *t = f32(TL_SHAPE(3)), *empty = f32(TL_SHAPE(0));
    assert_fails(tl_argmax(t, 1, false), "argmax: axis 1 is out of range for [3] of rank 1");
    assert_fails(tl_argmax(empty, 0, false), "argmax: axis 0 of [0] is empty; there is no "
                                             "largest element");
    tl_tensor *values = t, *indices = t, *two = f32(TL_SHAPE(2, 3));
    assert_status(tl_topk(two, 1, &values, NULL), "topk: indices must not be NULL (values may "
                                                  "be)");
    ck_assert_ptr_null(values);
    assert_status(tl_topk(tl_scalar(1), 1, &values, &indices),
                  "topk: needs at least one axis; got a scalar");
    assert_status(tl_topk(two, 4, &values, &indices),
                  "topk: k=4 is out of range [1, 3] for the last axis of [2, 3]");
    assert_status(tl_topk(two, 0, &values, &indices), "topk: k=0 is out of range [1, 3]");
    ck_assert_ptr_null(values);
    ck_assert_ptr_null(indices);
    tl_clear_error();
}
END_TEST
