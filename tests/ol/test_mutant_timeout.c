/* The mutants' per-test timeout: Stryker's shape, capped at the lesson's limit. */
#include <check.h>

#include "ol/check.h"

START_TEST(test_timeout_is_stryker_shape_below_the_limit)
{
    ck_assert_double_eq_tol(mutant_timeout(0.001, 10), 2.0015, 1e-12);
    ck_assert_double_eq_tol(mutant_timeout(4.0, 10), 8.0, 1e-12);
}
END_TEST

START_TEST(test_timeout_never_passes_the_lessons_limit)
{
    /* a test that sleeps 9 s on the reference: 15.5 s would be Stryker's */
    ck_assert_double_eq_tol(mutant_timeout(9.0, 10), 10.0, 1e-12);
    /* a lesson limit below the 2 s margin still wins */
    ck_assert_double_eq_tol(mutant_timeout(0.0, 1.0), 1.0, 1e-12);
}
END_TEST
