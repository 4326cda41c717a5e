/* L7.3 boundary: arguments RoPE cannot work with fail with a message that
 * names the function and what was wrong (shapes as "[2, 5, 8]"), and never
 * crash: an odd or oversized rotary_dim, a base that does not rotate, shapes
 * of x, positions and tables that do not fit, and a spec whose public fields
 * were changed into nonsense after rope_spec_init. */
#include <check.h>
#include <math.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rope.h"

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

/* An int-returning call must return -1 with an error mentioning n1 and n2. */
#define assert_status_error(expr, n1, n2)                                               \
    do {                                                                                \
        tl_clear_error();                                                               \
        int s_ = (expr);                                                                \
        const char *e_ = tl_error() ? tl_error() : "(no message)";                       \
        ck_assert_msg(s_ == -1, "%s returned %d; expected -1", #expr, s_);              \
        ck_assert_msg(strstr(e_, n1) && strstr(e_, n2),                                 \
                      "%s failed with '%s'; expected it to mention '%s' and '%s'",        \
                      #expr, e_, n1, n2);                                               \
        tl_clear_error();                                                               \
    } while (0)

static bool all_zero(const RopeSpec *s) {
    static const RopeSpec zero;
    return memcmp(s, &zero, sizeof zero) == 0;
}

START_TEST(test_boundary_bad_spec)
{
    tl_scope_push();
    RopeSpec s;
    assert_status_error(rope_spec_init(&s, 8, 5, 10000.0, ROPE_HALF), "rope_spec_init", "5");
    ck_assert_msg(all_zero(&s), "a failed rope_spec_init must leave the spec zeroed");
    assert_status_error(rope_spec_init(&s, 8, 10, 10000.0, ROPE_HALF), "rotary_dim", "10");
    assert_status_error(rope_spec_init(&s, 8, 0, 10000.0, ROPE_HALF), "rotary_dim", "0");
    assert_status_error(rope_spec_init(&s, 8, -2, 10000.0, ROPE_HALF), "rotary_dim", "-2");
    assert_status_error(rope_spec_init(&s, 1, 2, 10000.0, ROPE_HALF), "head_dim", "1");
    assert_status_error(rope_spec_init(&s, 4096, 2 * TL_ROPE_MAX_FREQS + 2, 10000.0, ROPE_HALF),
                        "rope_spec_init", "rotary_dim");
    assert_status_error(rope_spec_init(&s, 8, 8, 1.0, ROPE_HALF), "theta", "1");
    assert_status_error(rope_spec_init(&s, 8, 8, -10000.0, ROPE_HALF), "theta", "-10000");
    assert_status_error(rope_spec_init(&s, 8, 8, NAN, ROPE_HALF), "theta", "nan");
    assert_status_error(rope_spec_init(&s, 8, 8, INFINITY, ROPE_HALF), "theta", "inf");
    assert_status_error(rope_spec_init(&s, 8, 8, 10000.0, (rope_pairing)7), "pairing", "7");
    assert_status_error(rope_spec_init(NULL, 8, 8, 10000.0, ROPE_HALF), "rope_spec_init", "NULL");
    /* The largest rotary_dim a spec holds is fine. */
    ck_assert_msg(rope_spec_init(&s, 2 * TL_ROPE_MAX_FREQS, 2 * TL_ROPE_MAX_FREQS, 10000.0,
                                 ROPE_HALF) == 0, "rotary_dim %d: %s", 2 * TL_ROPE_MAX_FREQS,
                  tl_error());

    /* The fields are public: every entry point re-checks them. */
    tl_tensor *x = tl_ones(TL_F32, TL_SHAPE(1, 2, 1, 8));
    tl_tensor *pos = tl_arange(0, 2);
    tl_tensor *cos, *sin;
    ck_assert_msg(rope_spec_init(&s, 8, 8, 10000.0, ROPE_HALF) == 0,
                  "rope_spec_init: %s", tl_error());
    s.rotary_dim = 7;
    assert_error3(rope_apply(&s, x, pos), "rope_apply", "rotary_dim", "7");
    assert_status_error(rope_cos_sin(&s, pos, &cos, &sin), "rope_cos_sin", "7");
    ck_assert_msg(cos == NULL && sin == NULL, "a failed rope_cos_sin must set *cos, *sin = NULL");
    s.rotary_dim = 8;
    s.attention_scaling = NAN;
    assert_error3(rope_apply(&s, x, pos), "rope_apply", "attention_scaling", "nan");
    s.attention_scaling = 1.0;
    s.pairing = (rope_pairing)3;
    assert_error3(rope_apply(&s, x, pos), "rope_apply", "pairing", "3");
    assert_error3(rope_apply(NULL, x, pos), "rope_apply", "RopeSpec", "NULL");
    tl_scope_pop();
}
END_TEST

START_TEST(test_boundary_shape_mismatches)
{
    tl_scope_push();
    RopeSpec s;
    ck_assert_msg(rope_spec_init(&s, 8, 8, 10000.0, ROPE_HALF) == 0,
                  "rope_spec_init: %s", tl_error());
    tl_tensor *pos5 = tl_arange(0, 5);
    /* x must be [B, T, H, head_dim]. */
    assert_error3(rope_apply(&s, tl_ones(TL_F32, TL_SHAPE(2, 5, 8)), pos5), "rope_apply",
                  "[2, 5, 8]", "head_dim");
    assert_error3(rope_apply(&s, tl_ones(TL_F32, TL_SHAPE(2, 5, 3, 6)), pos5), "rope_apply",
                  "[2, 5, 3, 6]", "8");
    /* positions must fit x's T (and B). */
    tl_tensor *x = tl_ones(TL_F32, TL_SHAPE(2, 5, 3, 8));
    assert_error3(rope_apply(&s, x, tl_arange(0, 4)), "rope_apply", "[4]", "[2, 5, 3, 8]");
    assert_error3(rope_apply(&s, x, tl_zeros(TL_I64, TL_SHAPE(3, 5))), "rope_apply", "[3, 5]",
                  "[2, 5, 3, 8]");
    assert_error3(rope_apply(&s, x, tl_zeros(TL_F32, TL_SHAPE(5))), "rope_apply", "F32", "I64");
    assert_error3(rope_apply(&s, x, tl_zeros(TL_I64, TL_SHAPE(1, 2, 5))), "rope_apply",
                  "[1, 2, 5]", "[B, T]");

    /* Tables must be [T, d] or [B, T, d] of x's T, in pairs. */
    tl_tensor *cos, *sin, *cos4, *sin4;
    ck_assert_msg(rope_cos_sin(&s, pos5, &cos, &sin) == 0, "rope_cos_sin: %s", tl_error());
    ck_assert_msg(rope_cos_sin(&s, tl_arange(0, 4), &cos4, &sin4) == 0,
                  "rope_cos_sin: %s", tl_error());
    assert_error3(rope_apply_cos_sin(&s, x, cos4, sin4, ROPE_BTHD), "rope_apply_cos_sin",
                  "[4, 8]", "[2, 5, 3, 8]");
    assert_error3(rope_apply_cos_sin(&s, x, cos, sin4, ROPE_BTHD), "rope_apply_cos_sin",
                  "[5, 8]", "[4, 8]");
    assert_error3(rope_apply_cos_sin(&s, x, tl_ones(TL_F32, TL_SHAPE(5, 6)),
                                     tl_ones(TL_F32, TL_SHAPE(5, 6)), ROPE_BTHD),
                  "rope_apply_cos_sin", "[5, 6]", "8");
    /* In [B, H, T, D], T is axis 2: x [2, 5, 3, 8] has T = 3 there. */
    assert_error3(rope_apply_cos_sin(&s, x, cos, sin, ROPE_BHTD), "rope_apply_cos_sin",
                  "[5, 8]", "T = 3");
    assert_error3(rope_apply_cos_sin(&s, x, cos, sin, (rope_layout)9), "rope_apply_cos_sin",
                  "layout", "9");

    /* The converter: rows must split into heads; rotary_dim must fit a head. */
    tl_tensor *w = tl_ones(TL_F32, TL_SHAPE(12, 4));
    assert_error3(rope_permute_for_half(w, 5, 2), "rope_permute_for_half", "12", "5");
    assert_error3(rope_permute_for_half(w, 0, 2), "rope_permute_for_half", "12", "0");
    assert_error3(rope_permute_for_half(w, 2, 8), "rope_permute_for_half", "rotary_dim", "8");
    assert_error3(rope_permute_for_interleaved(w, 2, 3), "rope_permute_for_interleaved",
                  "rotary_dim", "3");
    assert_error3(rope_permute_for_half(tl_ones(TL_F32, TL_SHAPE(2, 6, 4)), 2, 2),
                  "rope_permute_for_half", "[2, 6, 4]", "[rows, in]");
    tl_scope_pop();
}
END_TEST
