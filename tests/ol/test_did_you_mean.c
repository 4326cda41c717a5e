/* "Did you mean": the near word for a slip (a letter missing, doubled,
 * swapped or wrong, case aside), and none for a word that is far off. */
#include <check.h>
#include <stddef.h>

#include "ol/util.h"

static const char *const COMMANDS[] = {"list", "start", "tests", "check", "diff",
                                       "mutants", "fixtures", "hub", "lesson", "tinyllm"};
static const char *const KEYS[] = {"required_pitfalls", "student_tests", "course_tests", "sources"};

START_TEST(test_a_slip_finds_the_word)
{
    ck_assert_str_eq(closest_word("test", COMMANDS, 10), "tests");
    ck_assert_str_eq(closest_word("chekc", COMMANDS, 10), "check");  /* a swap */
    ck_assert_str_eq(closest_word("Mutant", COMMANDS, 10), "mutants");
    ck_assert_str_eq(closest_word("required_pitfall", KEYS, 4), "required_pitfalls");
    ck_assert_str_eq(closest_word("source", KEYS, 4), "sources");
}
END_TEST

START_TEST(test_a_word_far_off_finds_nothing)
{
    ck_assert_ptr_null(closest_word("frobnicate", COMMANDS, 10));
    ck_assert_ptr_null(closest_word("colour", KEYS, 4));
    ck_assert_ptr_null(closest_word("x", COMMANDS, 10));
}
END_TEST
