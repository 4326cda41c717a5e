/* L7.3 fault: what a forward meets inside a model. A NULL input made by a
 * failing op upstream (a reshape, a projection) keeps that op's message, so
 * the caller learns what really went wrong. Parameters and checkpoint views
 * may be read-only or BF16: rope_apply reads them and never writes into its
 * input, and I32 positions mean what I64 ones do. */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rope.h"

START_TEST(test_fault_upstream_error_is_kept)
{
    tl_scope_push();
    RopeSpec s;
    ck_assert_msg(rope_spec_init(&s, 8, 8, 10000.0, ROPE_HALF) == 0,
                  "rope_spec_init: %s", tl_error());
    tl_tensor *pos = tl_arange(0, 3);
    const struct { const char *what; int which; } CASES[] = {
        {"x", 0}, {"positions", 1}, {"w", 2}, {"tables", 3},
    };
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        tl_clear_error();
        /* An upstream failure: 24 values cannot be [5, 5]. */
        tl_tensor *bad = tl_reshape(tl_ones(TL_F32, TL_SHAPE(24)), TL_SHAPE(5, 5));
        ck_assert_msg(bad == NULL && tl_error(), "the upstream reshape was expected to fail");
        char upstream[512];
        snprintf(upstream, sizeof upstream, "%s", tl_error());
        const void *r = NULL;
        int status = 0;
        tl_tensor *cos = NULL, *sin = NULL;
        switch (CASES[c].which) {
        case 0: r = rope_apply(&s, bad, pos); break;
        case 1: r = rope_apply(&s, tl_ones(TL_F32, TL_SHAPE(1, 3, 1, 8)), bad); break;
        case 2: r = rope_permute_for_half(bad, 2, 4); break;
        case 3:
            status = rope_cos_sin(&s, bad, &cos, &sin);
            ck_assert_msg(status == -1 && cos == NULL && sin == NULL,
                          "rope_cos_sin on NULL positions must fail with NULL tables");
            r = rope_apply_cos_sin(&s, tl_ones(TL_F32, TL_SHAPE(1, 3, 1, 8)), bad, bad,
                                   ROPE_BTHD);
            break;
        }
        ck_assert_msg(r == NULL, "a NULL %s from a failed op must give NULL", CASES[c].what);
        ck_assert_msg(tl_error() && strcmp(tl_error(), upstream) == 0,
                      "NULL %s: the message became '%s'; the upstream one ('%s') must be kept",
                      CASES[c].what, tl_error() ? tl_error() : "(none)", upstream);
    }
    tl_clear_error();
    tl_scope_pop();
}
END_TEST

START_TEST(test_fault_read_only_bf16_and_i32_inputs)
{
    tl_scope_push();
    RopeSpec s;
    ck_assert_msg(rope_spec_init(&s, 8, 6, 10000.0, ROPE_INTERLEAVED) == 0,
                  "rope_spec_init: %s", tl_error());
    tl_pcg32 rng = tl_test_rng(7351);
    /* Values that BF16 holds exactly, so the widened input is the same x. */
    tl_tensor *x = tl_cast(tl_cast(tl_randn(&rng, TL_SHAPE(2, 3, 2, 8)), TL_BF16), TL_F32);
    tl_assert_ok(x);
    float data[2 * 3 * 2 * 8], before[2 * 3 * 2 * 8];
    ck_assert_int_eq(tl_to_f32_buffer(x, data, 96), 0);
    memcpy(before, data, sizeof data);
    const int64_t pos64[3] = {4, 9, 16};
    tl_tensor *want = rope_apply(&s, x, tl_from_i64(pos64, TL_SHAPE(3)));
    tl_assert_ok(want);

    /* A read-only view (as over an mmapped checkpoint). */
    tl_tensor *ro = tl_tensor_wrap_external(data, TL_F32, 4, (const int64_t[]){2, 3, 2, 8});
    tl_assert_ok(ro);
    char msg[768];
    tl_tensor *y = rope_apply(&s, ro, tl_from_i64(pos64, TL_SHAPE(3)));
    tl_assert_ok(y);
    ck_assert_msg(tl_close_report(y, want, 0.0, 0.0, msg, sizeof msg), "read-only x: %s", msg);
    ck_assert_msg(memcmp(data, before, sizeof data) == 0, "rope_apply wrote into its input");
    tl_tensor_free(ro);

    /* BF16 x, I32 positions. */
    tl_tensor *pos32 = tl_cast(tl_from_i64(pos64, TL_SHAPE(3)), TL_I32);
    y = rope_apply(&s, tl_cast(x, TL_BF16), pos32);
    tl_assert_ok(y);
    ck_assert_msg(y->dtype == TL_F32, "rope_apply returned %s; the contract says F32",
                  tl_dtype_name(y->dtype));
    ck_assert_msg(tl_close_report(y, want, 0.0, 0.0, msg, sizeof msg), "BF16 x, I32 positions: %s",
                  msg);
    tl_scope_pop();
}
END_TEST
