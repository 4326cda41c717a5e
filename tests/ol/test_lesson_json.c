/* lesson.json as course/FORMAT.md says, validated in one place: unknown
 * keys, wrong types, malformed ids and missing paths are errors naming the
 * file, the key and the fix; a well-formed lesson loads with its defaults. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ol/lesson.h"

#define MINIMAL                                                                           \
    "{\"id\":\"L9.1\",\"slug\":\"l9-1-x\",\"title\":\"X\",\"sources\":[\"tinyllm/x.c\"]," \
    "\"contracts\":[\"tinyllm/x.h\"],\"course_tests\":\"tests/L9.1\",\"student_tests\":\"tests/l9-1-x\""

/* Parses text as course/L9.1/lesson.json; returns the error (caller frees) or NULL. */
static char *parse_error(const char *text) {
    lesson l;
    char *err = NULL;
    if (lesson_parse("course/L9.1/lesson.json", text, &l, &err) == 0) lesson_free(&l);
    return err;
}

static void assert_error_has(const char *text, const char *a, const char *b) {
    char *err = parse_error(text);
    ck_assert_msg(err != NULL, "accepted: %s", text);
    ck_assert_msg(strstr(err, a) && (!b || strstr(err, b)), "error \"%s\" lacks \"%s\" / \"%s\"",
                  err, a, b ? b : "");
    ck_assert_msg(strstr(err, "course/L9.1/lesson.json") == err, "error does not name the file: %s",
                  err);
    free(err);
}

START_TEST(test_rung_sets_the_threshold_and_defaults_hold)
{
    lesson l;
    char *err = NULL;
    ck_assert_msg(lesson_parse("f", MINIMAL ",\"rung\":\"R4\"}", &l, &err) == 0, "%s", err);
    ck_assert_int_eq(l.level, 4);
    ck_assert_double_eq_tol(l.threshold, 0.70, 1e-12);
    ck_assert_double_eq_tol(l.test_timeout, 10, 1e-12);
    ck_assert(!l.draft);
    ck_assert_int_eq(l.needs.n, 0);
    lesson_free(&l);
    ck_assert_msg(lesson_parse("f", MINIMAL ",\"rung\":\"R4\",\"threshold\":0.9,\"draft\":true}",
                               &l, &err) == 0,
                  "%s", err);
    ck_assert_double_eq_tol(l.threshold, 0.9, 1e-12);
    ck_assert(l.draft);
    lesson_free(&l);
}
END_TEST

START_TEST(test_an_unknown_key_is_an_error_with_the_near_one)
{
    /* a typo must not grade silently with no pitfall required */
    assert_error_has(MINIMAL ",\"rung\":\"R3\",\"required_pitfall\":[\"s01\"]}",
                     "\"required_pitfall\"", "did you mean \"required_pitfalls\"?");
    assert_error_has(MINIMAL ",\"rung\":\"R3\",\"colour\":1}", "\"colour\": is not a key",
                     "FORMAT.md");
}
END_TEST

START_TEST(test_missing_keys_and_wrong_types_are_named)
{
    assert_error_has("{\"id\":\"L9.1\",\"slug\":\"s\",\"title\":\"X\",\"rung\":\"R3\"}",
                     "\"course_tests\": is missing", "\"sources\": is missing");
    assert_error_has(MINIMAL ",\"rung\":3}", "\"rung\": must be a non-empty string", NULL);
    assert_error_has(MINIMAL ",\"rung\":\"R3\",\"needs\":\"L7.1\"}", "\"needs\": must be an array",
                     NULL);
    assert_error_has(MINIMAL ",\"rung\":\"R3\",\"draft\":\"yes\"}",
                     "\"draft\": must be true or false", NULL);
    assert_error_has(MINIMAL ",\"rung\":\"R3\",\"test_timeout_seconds\":0}",
                     "\"test_timeout_seconds\"", "positive");
    assert_error_has(MINIMAL ",\"rung\":\"R3\",\"test_timeout_seconds\":1e12}",
                     "\"test_timeout_seconds\"", "at most 86400");
    assert_error_has(MINIMAL ",\"rung\":\"R3\",\"threshold\":1.5}", "\"threshold\"",
                     "between 0 and 1");
    assert_error_has(MINIMAL ",\"rung\":\"R9\"}", "\"rung\": \"R9\" is not one of R1 to R5", NULL);
    assert_error_has("[1, 2]", "top level must be a JSON object", NULL);
}
END_TEST

START_TEST(test_malformed_ids_are_refused)
{
    assert_error_has(MINIMAL ",\"rung\":\"R3\",\"required_pitfalls\":[\"p1\"]}",
                     "\"p1\" is not a mutant id", NULL);
    assert_error_has(MINIMAL ",\"rung\":\"R3\",\"required_pitfalls\":[\"s1\"]}",
                     "\"s1\" is not a mutant id", NULL);
    assert_error_has(MINIMAL ",\"rung\":\"R3\",\"required_pitfalls\":[\"s01\",\"s01\"]}",
                     "lists \"s01\" twice", NULL);
    assert_error_has(MINIMAL ",\"rung\":\"R3\",\"needs\":[\"../L7.1\"]}",
                     "\"../L7.1\" is not a lesson id", NULL);
    assert_error_has(MINIMAL ",\"rung\":\"R3\",\"needs\":[\"L9.1\"]}", "cannot need itself", NULL);
    assert_error_has(
        "{\"id\":\"L9.1\",\"slug\":\"Bad Slug\",\"title\":\"X\",\"rung\":\"R3\",\"sources\":[\"a.c\"],"
        "\"contracts\":[\"a.h\"],\"course_tests\":\"t\",\"student_tests\":\"tests/x\"}",
        "\"slug\"", "lower-case");
    /* the student's folder is tests/<slug> */
    assert_error_has(
        "{\"id\":\"L9.1\",\"slug\":\"l9-1-x\",\"title\":\"X\",\"rung\":\"R3\",\"sources\":[\"a.c\"],"
        "\"contracts\":[\"a.h\"],\"course_tests\":\"t\",\"student_tests\":\"tests/other\"}",
        "\"student_tests\"", "tests/l9-1-x");
    ck_assert(variant_id_valid("s01", false) && variant_id_valid("s123", false) &&
              variant_id_valid("w02", true));
    ck_assert(!variant_id_valid("w01", false) && !variant_id_valid("s01", true) &&
              !variant_id_valid("s0x", false));
}
END_TEST

START_TEST(test_paths_must_stay_inside_and_be_of_their_kind)
{
    assert_error_has(
        "{\"id\":\"L9.1\",\"slug\":\"s\",\"title\":\"X\",\"rung\":\"R3\",\"sources\":[\"../x.c\"],"
        "\"contracts\":[\"a.h\"],\"course_tests\":\"t\",\"student_tests\":\"tests/s\"}",
        "\"sources\"", "relative path");
    assert_error_has(MINIMAL ",\"rung\":\"R3\",\"link\":[\"../outside.a\"]}", "\"link\"",
                     "inside the course");
    assert_error_has(MINIMAL ",\"rung\":\"R3\",\"model_tests\":\"/abs\"}", "\"model_tests\"",
                     "relative path");
    assert_error_has(
        "{\"id\":\"L9.1\",\"slug\":\"s\",\"title\":\"X\",\"rung\":\"R3\",\"sources\":[\"x.h\"],"
        "\"contracts\":[\"a.c\"],\"course_tests\":\"t\",\"student_tests\":\"tests/s\"}",
        "\"x.h\" is not a .c file", "\"a.c\" is not a .h file");
}
END_TEST

START_TEST(test_every_problem_is_said_at_once)
{
    char *err = parse_error(MINIMAL ",\"rung\":\"R7\",\"colour\":1,\"required_pitfalls\":[\"x\"]}");
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strstr(err, "3 problems") && strstr(err, "\"rung\"") &&
                      strstr(err, "\"colour\"") && strstr(err, "\"x\" is not a mutant id"),
                  "%s", err);
    free(err);
}
END_TEST

START_TEST(test_invalid_json_gives_a_line)
{
    char *err = parse_error("{\n\"id\": \"L9.1\",\n\"slug\" \"x\"\n}");
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strstr(err, "lesson.json:3:8: not valid JSON at '\"x\"'") != NULL, "%s", err);
    free(err);
}
END_TEST

START_TEST(test_a_repeated_key_is_refused_with_its_lines)
{
    assert_error_has(MINIMAL ",\n\"rung\": \"R3\",\n\"rung\": \"R5\"}",
                     "\"rung\": is given twice (lines 2 and 3)", NULL);
}
END_TEST

/* ---- loading from a course root: the paths must be there ---- */

static char root[256];

static void put(const char *rel, const char *text) {
    char path[512], cmd[600];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
    ck_assert_int_eq(system(cmd), 0);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* A course root with a lesson L9.1 whose every file is there. */
static void make_root(const char *json) {
    strcpy(root, "/tmp/ol-lesson-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
    put("course/L9.1/lesson.json", json);
    put("stubs/tinyllm/x.c", "");
    put("reference/tinyllm/x.c", "");
    put("contracts/tinyllm/x.h", "");
    put("tests/L9.1/test_x.c", "");
}

static void drop_root(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_a_complete_lesson_loads_and_its_link_files_are_absolute)
{
    make_root(MINIMAL ",\"rung\":\"R3\",\"link\":[\"-lcurl\",\"build/lib/libx.a\"]}");
    lesson l;
    char *err = NULL;
    ck_assert_msg(lesson_load(root, "L9.1", &l, &err) == 0, "%s", err);
    ck_assert_str_eq(l.link.v[0], "-lcurl");
    char want[512];
    snprintf(want, sizeof want, "%s/build/lib/libx.a", root);
    ck_assert_str_eq(l.link.v[1], want);
    lesson_free(&l);
    drop_root();
}
END_TEST

START_TEST(test_missing_paths_are_named_with_the_fix)
{
    make_root(
        MINIMAL
        ",\"rung\":\"R3\",\"model_tests\":\"reference/tests/l9-1-x\",\"fixtures\":\"fixtures/L9.1\","
        "\"oracle\":\"oracle/L9.1\",\"needs\":[\"L9.0\"],\"required_pitfalls\":[\"s01\"]}");
    char path[512];
    snprintf(path, sizeof path, "%s/stubs/tinyllm/x.c", root);
    unlink(path);
    lesson l;
    char *err = NULL;
    ck_assert_int_eq(lesson_load(root, "L9.1", &l, &err), -1);
    const char *want[] = {"stubs/tinyllm/x.c does not exist",
                          "ol lesson stub L9.1",
                          "reference/tests/l9-1-x does not exist",
                          "`ol fixtures L9.1` makes it",
                          "oracle/L9.1/make_fixtures.py does not exist",
                          "there is no lesson L9.0",
                          "s01 has no mutant in course/L9.1/mutants/",
                          "ol mutants new L9.1 --id s01"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        ck_assert_msg(strstr(err, want[i]) != NULL, "no \"%s\" in: %s", want[i], err);
    free(err);
    /* the commands that make them load it anyway */
    put("reference/tests/l9-1-x/test_my.c", "");
    put("oracle/L9.1/make_fixtures.py", "");
    put("course/L9.0/lesson.json", "{}");
    put("course/L9.1/mutants/s01-x.mutant", "");
    ck_assert_int_eq(lesson_load(root, "L9.1", &l, &err), -1);
    free(err);
    ck_assert_msg(lesson_load_flags(root, "L9.1",
                                    LESSON_FIXTURES_MAY_BE_MISSING | LESSON_STUBS_MAY_BE_MISSING,
                                    &l, &err) == 0,
                  "%s", err);
    lesson_free(&l);
    drop_root();
}
END_TEST

START_TEST(test_unknown_lesson_and_bad_ids_are_refused)
{
    make_root(MINIMAL ",\"rung\":\"R4\"}");
    lesson l;
    char *err = NULL;
    ck_assert_int_eq(lesson_load(root, "L9.2", &l, &err), -1);
    ck_assert_ptr_nonnull(strstr(err, "no lesson L9.2"));
    free(err);
    ck_assert_int_eq(lesson_load(root, "../etc", &l, &err), -1);
    free(err);
    put("course/L9.3/lesson.json", MINIMAL ",\"rung\":\"R4\"}");
    ck_assert_int_eq(lesson_load(root, "L9.3", &l, &err), -1);
    ck_assert_msg(strstr(err, "\"id\": is \"L9.1\" but the folder is course/L9.3") != NULL, "%s",
                  err);
    free(err);
    drop_root();
}
END_TEST
