/* How ol reads Check's TAP and plain logs: per-test status, signal, file:line. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "ol/run.h"

static const char TAP[] =
    "ok 1 - /ws/c/tests/t/a.c:a.c:test_pass: Passed\n"
    "not ok 2 - /ws/c/tests/t/a.c:a.c:test_fail: values 3 vs 2.5\n"
    "not ok 3 - /ws/c/tests/t/b.c:b.c:test_segv: Received signal 11 (Segmentation fault)\n"
    "not ok 4 - /ws/c/tests/t/b.c:b.c:test_hang: Test timeout expired\n"
    "not ok 5 - /ws/c/tests/t/b.c:b.c:test_exit: Early exit with return value 3\n"
    "not ok 6 - /ws/c/tests/t/b.c:b.c:test_multi: first line\n"
    "second line\n"
    "1..6\n";

static const char LOG[] =
    "Running suite demo\n"
    "/ws/c/tests/t/a.c:5:P:a.c:test_pass:0: Passed\n"
    "/ws/c/tests/t/a.c:6:F:a.c:test_fail:0: values 3 vs 2.5\n"
    "/ws/c/tests/t/b.c:9:E:b.c:test_segv:0: (after this point) Received signal 11 (Segmentation fault)\n"
    "/ws/c/tests/t/b.c:11:E:b.c:test_hang:0: (after this point) Test timeout expired\n"
    "/ws/c/tests/t/b.c:12:E:b.c:test_exit:0: (after this point) Early exit with return value 3\n"
    "/ws/c/tests/t/b.c:20:F:b.c:test_multi:0: first line\n"
    "second line\n"
    "Results for all suites run:\n";

static void free_results(test_result *t, int n) {
    run_result r = {.t = t, .n = n};
    run_result_free(&r);
}

START_TEST(test_tap_gives_each_test_its_status)
{
    test_result *t;
    int n;
    parse_tap(TAP, &t, &n);
    ck_assert_int_eq(n, 6);
    ck_assert_str_eq(t[0].name, "test_pass");
    ck_assert_str_eq(t[0].tcase, "a.c");
    ck_assert_int_eq(t[0].status, TEST_PASS);
    ck_assert_int_eq(t[1].status, TEST_FAIL);
    ck_assert_str_eq(t[1].message, "values 3 vs 2.5");
    ck_assert_int_eq(t[2].status, TEST_CRASH);
    ck_assert_int_eq(t[2].signal, 11);
    ck_assert_int_eq(t[3].status, TEST_TIMEOUT);
    ck_assert_int_eq(t[4].status, TEST_EXIT);
    free_results(t, n);
}
END_TEST

START_TEST(test_tap_keeps_a_message_that_spans_lines)
{
    test_result *t;
    int n;
    parse_tap(TAP, &t, &n);
    ck_assert_str_eq(t[5].message, "first line\nsecond line");
    free_results(t, n);
}
END_TEST

START_TEST(test_log_adds_file_and_line)
{
    test_result *t;
    int n;
    parse_tap(TAP, &t, &n);
    merge_log(LOG, t, n);
    ck_assert_str_eq(t[1].file, "/ws/c/tests/t/a.c");
    ck_assert_int_eq(t[1].line, 6);
    ck_assert_int_eq(t[2].line, 9);
    ck_assert_int_eq(t[5].line, 20);
    free_results(t, n);
}
END_TEST

START_TEST(test_empty_logs_give_no_results)
{
    test_result *t;
    int n;
    parse_tap("", &t, &n);
    ck_assert_int_eq(n, 0);
    merge_log("garbage:line\n", t, n);
    free(t);
}
END_TEST
