/* The .mutant format of course/FORMAT.md: header, separator, diff. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "ol/mutant.h"

static const char GOOD[] =
    "Mutant: s01\n"
    "Pitfall: 1\n"
    "Title: eps outside the root\n"
    "Symptom: tiny rows blow up\n"
    "Caught-by: test_a, test_b\n"
    "Hint: try a tiny row\n"
    "---\n"
    "--- a/reference/tinyllm/modern/x.c\n"
    "+++ b/reference/tinyllm/modern/x.c\n"
    "@@ -10,4 +10,4 @@\n"
    " int a;\n"
    "-    y = rsqrt(ms + eps);\n"
    "+    y = 1 / (sqrt(ms) + eps);\n"
    " int b;\n"
    "--- old comment\n"  /* a removed line that starts with "-- " */
    "+-- new comment\n";

START_TEST(test_header_fields_are_read)
{
    mutant m;
    char *err = NULL;
    const char *text = GOOD; /* its hunk has 4 old lines: " int a", "-y", " int b", "--- old" */
    ck_assert_msg(mutant_parse("s01.mutant", text, false, &m, &err) == 0, "%s", err);
    ck_assert_str_eq(m.id, "s01");
    ck_assert_str_eq(m.pitfall, "1");
    ck_assert_str_eq(m.title, "eps outside the root");
    ck_assert_int_eq(m.caught_by.n, 2);
    ck_assert_str_eq(m.caught_by.v[1], "test_b");
    ck_assert_str_eq(m.hint, "try a tiny row");
    mutant_free(&m);
}
END_TEST

START_TEST(test_changed_lines_are_located)
{
    mutant m;
    char *err = NULL;
    const char *text = GOOD; /* its hunk has 4 old lines: " int a", "-y", " int b", "--- old" */
    ck_assert_msg(mutant_parse("s01.mutant", text, false, &m, &err) == 0, "%s", err);
    ck_assert_int_eq(m.nchanges, 2);
    ck_assert_str_eq(m.changes[0].file, "tinyllm/modern/x.c");
    ck_assert_int_eq(m.changes[0].line, 11);
    ck_assert_int_eq(m.changes[0].column, 9); /* "    y = " is shared */
    ck_assert_int_eq(m.changes[1].line, 13);  /* "-- old comment", inside the hunk */
    mutant_free(&m);
}
END_TEST

START_TEST(test_missing_caught_by_is_refused)
{
    mutant m;
    char *err = NULL;
    const char *text =
        "Mutant: s02\nTitle: t\n---\n--- a/reference/x.c\n+++ b/reference/x.c\n@@ -1 +1 @@\n-a\n+b\n";
    ck_assert_int_eq(mutant_parse("s02.mutant", text, false, &m, &err), -1);
    ck_assert_ptr_nonnull(strstr(err, "Caught-by"));
    free(err);
    mutant_free(&m);
}
END_TEST

START_TEST(test_unknown_key_names_the_line)
{
    mutant m;
    char *err = NULL;
    const char *text = "Mutant: s02\nCuaght-by: x\n---\n";
    ck_assert_int_eq(mutant_parse("s02.mutant", text, false, &m, &err), -1);
    ck_assert_ptr_nonnull(strstr(err, "s02.mutant:2"));
    ck_assert_ptr_nonnull(strstr(err, "Cuaght-by"));
    free(err);
    mutant_free(&m);
}
END_TEST

START_TEST(test_diff_outside_reference_is_refused)
{
    mutant m;
    char *err = NULL;
    const char *text =
        "Wheat: w01\nTitle: t\n---\n--- a/stubs/x.c\n+++ b/stubs/x.c\n@@ -1 +1 @@\n-a\n+b\n";
    ck_assert_int_eq(mutant_parse("w01.wheat", text, true, &m, &err), -1);
    ck_assert_ptr_nonnull(strstr(err, "reference/"));
    free(err);
    mutant_free(&m);
}
END_TEST

START_TEST(test_pure_insertion_is_located_before_the_next_line)
{
    mutant m;
    char *err = NULL;
    const char *text = "Wheat: w01\nTitle: t\n---\n--- a/reference/x.c\n+++ b/reference/x.c\n"
                       "@@ -5,2 +5,3 @@\n a\n+inserted\n b\n";
    ck_assert_msg(mutant_parse("w01.wheat", text, true, &m, &err) == 0, "%s", err);
    ck_assert_int_eq(m.nchanges, 1);
    ck_assert(m.changes[0].inserted);
    ck_assert_int_eq(m.changes[0].line, 6);
    mutant_free(&m);
}
END_TEST

/* A hand-written file is held to what `ol mutants new` refuses, at its line. */
START_TEST(test_hand_written_header_is_checked_like_new)
{
    const char *diff = "---\n--- a/reference/x.c\n+++ b/reference/x.c\n@@ -1 +1 @@\n-a\n+b\n";
    const struct {
        const char *path, *header, *said;
        bool wheat;
    } cases[] = {
        {"x01.mutant", "Mutant: x01\nTitle: t\nCaught-by: t\n", "x01.mutant:1: \"Mutant: x01\"", 0},
        {"w01.mutant", "Mutant: w01\nTitle: t\nCaught-by: t\n", "w.. is a wheat's id", 0},
        {"s01.wheat", "Wheat: s01\nTitle: t\n", "s.. is a mutant's id", 1},
        {"s02-x.mutant", "Mutant: s01\nTitle: t\nCaught-by: t\n", "does not start with its id", 0},
        {"s01.mutant", "Mutant: s01\nPitfall: 1a\nTitle: t\nCaught-by: t\n",
         "s01.mutant:2: \"Pitfall: 1a\"", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        mutant m;
        char *err = NULL, *text = xasprintf("%s%s", cases[i].header, diff);
        ck_assert_int_eq(mutant_parse(cases[i].path, text, cases[i].wheat, &m, &err), -1);
        ck_assert_msg(strstr(err, cases[i].said), "%s: %s", cases[i].path, err);
        free(err);
        free(text);
        mutant_free(&m);
    }
}
END_TEST

/* Counts that disagree with the hunk's lines: said at the header's line of the
 * file, not patch's "malformed patch at line N" of a diff no one sees. */
START_TEST(test_hunk_counts_that_disagree_are_malformed)
{
    mutant m;
    char *err = NULL;
    const char *text = "Mutant: s01\nTitle: t\nCaught-by: t\n---\n--- a/reference/x.c\n"
                       "+++ b/reference/x.c\n@@ -56,3 +56,1 @@\n a\n-b\n+c\n d\n";
    ck_assert_int_eq(mutant_parse("course/L7.4/mutants/s01.mutant", text, false, &m, &err), -1);
    ck_assert_msg(strstr(err, "s01.mutant:7: a malformed diff"), "%s", err);
    ck_assert_msg(strstr(err, "counts 3 old and 1 new lines, but the hunk holds 3 and 3"), "%s",
                  err);
    ck_assert_msg(strstr(err, "ol mutants new L7.4 --from"), "%s", err);
    free(err);
    mutant_free(&m);
}
END_TEST
