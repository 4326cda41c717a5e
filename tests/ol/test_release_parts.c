/* The small parts of ol's release and batch grading: the rewrite that moves
 * a prebuilt coverage object's counts into the student's cache, grades.csv's
 * fields, and which folder names ol grade takes for students. */
#include <check.h>
#include <string.h>

#include "ol/grade.h"
#include "ol/prebuilt.h"

START_TEST(test_rewrite_replaces_the_one_path_and_pads_it) {
    char bytes[] = "\x7f"
                   "ELF\0/long/old/place/cov/K/x.gcda\0after";
    size_t len = sizeof bytes - 1;
    ck_assert_int_eq(
        prebuilt_rewrite_string(bytes, len, "/long/old/place/cov/K/x.gcda", "/new/x.gcda"), 0);
    ck_assert_str_eq(bytes + 5, "/new/x.gcda");
    /* the rest of the old string is NULs, and what follows is untouched */
    for (size_t i = 5 + strlen("/new/x.gcda"); i < 5 + strlen("/long/old/place/cov/K/x.gcda"); i++)
        ck_assert_int_eq(bytes[i], 0);
    ck_assert_str_eq(bytes + 5 + strlen("/long/old/place/cov/K/x.gcda") + 1, "after");
}
END_TEST

START_TEST(test_rewrite_refuses_a_longer_path_a_missing_one_and_two) {
    char one[] = "a\0/p/x.gcda\0b";
    ck_assert_int_eq(
        prebuilt_rewrite_string(one, sizeof one - 1, "/p/x.gcda", "/much/longer/x.gcda"), -1);
    ck_assert_int_eq(prebuilt_rewrite_string(one, sizeof one - 1, "/q/x.gcda", "/q"), -1);
    char two[] = "/p/x.gcda\0/p/x.gcda\0";
    ck_assert_int_eq(prebuilt_rewrite_string(two, sizeof two - 1, "/p/x.gcda", "/y"), -1);
    /* a match must end with its NUL: a longer string that starts the same is not it */
    char prefix[] = "/p/x.gcdaz\0";
    ck_assert_int_eq(prebuilt_rewrite_string(prefix, sizeof prefix - 1, "/p/x.gcda", "/y"), -1);
    char suffix[] = "\0/a/p/x.gcda\0";
    ck_assert_int_eq(prebuilt_rewrite_string(suffix, sizeof suffix - 1, "/p/x.gcda", "/y"), -1);
}
END_TEST

START_TEST(test_csv_fields_are_quoted_only_when_needed) {
    strbuf b = {0};
    csv_field(&b, "alice");
    sb_add(&b, "|");
    csv_field(&b, "a,b");
    sb_add(&b, "|");
    csv_field(&b, "say \"hi\"");
    sb_add(&b, "|");
    csv_field(&b, "two\nlines");
    ck_assert_str_eq(b.s, "alice|\"a,b\"|\"say \"\"hi\"\"\"|\"two\nlines\"");
    sb_free(&b);
}
END_TEST

START_TEST(test_student_names) {
    ck_assert(grade_student_name_ok("alice"));
    ck_assert(grade_student_name_ok("bob.smith-2@uni+x_y"));
    ck_assert(!grade_student_name_ok(".hidden"));
    ck_assert(!grade_student_name_ok("a b"));
    ck_assert(!grade_student_name_ok("a/b"));
    ck_assert(!grade_student_name_ok("x,y"));
    ck_assert(!grade_student_name_ok(""));
}
END_TEST
