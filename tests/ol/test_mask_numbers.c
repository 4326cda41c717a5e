/* INVALID reports hide numbers: the reference's values must not leak. */
#include <check.h>
#include <stdlib.h>
#include "ol/results.h"

static void expect(const char *in, const char *out) {
    char *got = mask_numbers(in);
    ck_assert_msg(strcmp(got, out) == 0, "mask_numbers(\"%s\") = \"%s\", expected \"%s\"", in, got,
                  out);
    free(got);
}

START_TEST(test_numbers_are_masked)
{
    expect("actual 1.52181625, expected 0.0447", "actual #, expected #");
    expect("abs err -1.48e-05 rel err 3E+2", "abs err # rel err #");
    expect("worst at [1, 0, 12]", "worst at [#, #, #]");
    expect("got nan and -inf", "got # and #");
}
END_TEST

START_TEST(test_identifiers_keep_their_digits)
{
    expect("y_l2 vs x2: rmsnorm_forward", "y_l2 vs x2: rmsnorm_forward");
    expect("info and nano", "info and nano");
}
END_TEST

/* The student's own text stays theirs: a number their source line holds. */
START_TEST(test_the_students_own_numbers_are_kept)
{
    const char *line = "ck_assert_msg(y > 2.5, \"y[0] = %g is not above 2.5\", tl_item_at(v, 0));";
    char *got = mask_numbers_keeping("y[0] = 0.848528 is not above 2.5", line);
    ck_assert_str_eq(got, "y[0] = # is not above 2.5");
    free(got);
    /* a value the source does not hold is masked even where it looks like one it does */
    got = mask_numbers_keeping("expected 2.55, got 25", line);
    ck_assert_str_eq(got, "expected #, got #");
    free(got);
}
END_TEST
