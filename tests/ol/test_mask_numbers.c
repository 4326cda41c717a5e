/* INVALID reports hide numbers: the reference's values must not leak. */
#include <check.h>
#include <stdlib.h>
#include "ol/results.h"

static void expect(const char *in, const char *out) {
    char *got = mask_numbers(in);
    ck_assert_msg(strcmp(got, out) == 0, "mask_numbers(\"%s\") = \"%s\", expected \"%s\"", in, got, out);
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
