/* lesson.json as course/FORMAT.md says, with errors that name the key. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ol/lesson.h"

/* A scratch course root holding course/<id>/lesson.json with text. */
static char *make_root(const char *id, const char *text) {
    char tmpl[] = "/tmp/ol-lesson-XXXXXX";
    char *root = strdup(mkdtemp(tmpl));
    char path[512];
    snprintf(path, sizeof path, "%s/course", root);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/course/%s", root, id);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/course/%s/lesson.json", root, id);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return root;
}

static void drop_root(char *root, const char *id) {
    char path[512];
    snprintf(path, sizeof path, "%s/course/%s/lesson.json", root, id);
    unlink(path);
    snprintf(path, sizeof path, "%s/course/%s", root, id);
    rmdir(path);
    snprintf(path, sizeof path, "%s/course", root);
    rmdir(path);
    rmdir(root);
    free(root);
}

#define MINIMAL \
    "{\"id\":\"L9.1\",\"slug\":\"l9-1-x\",\"title\":\"X\",\"sources\":[\"a.c\"]," \
    "\"contracts\":[\"a.h\"],\"course_tests\":\"tests/L9.1\",\"student_tests\":\"tests/l9-1-x\""

START_TEST(test_rung_sets_the_threshold)
{
    char *root = make_root("L9.1", MINIMAL ",\"rung\":\"R4\"}");
    lesson l;
    char *err = NULL;
    ck_assert_msg(lesson_load(root, "L9.1", &l, &err) == 0, "%s", err);
    ck_assert_int_eq(l.level, 4);
    ck_assert_double_eq_tol(l.threshold, 0.70, 1e-12);
    ck_assert_double_eq_tol(l.test_timeout, 10, 1e-12);
    lesson_free(&l);
    drop_root(root, "L9.1");
}
END_TEST

START_TEST(test_threshold_overrides_the_rung)
{
    char *root = make_root("L9.1", MINIMAL ",\"rung\":\"R4\",\"threshold\":0.9}");
    lesson l;
    char *err = NULL;
    ck_assert_msg(lesson_load(root, "L9.1", &l, &err) == 0, "%s", err);
    ck_assert_double_eq_tol(l.threshold, 0.9, 1e-12);
    lesson_free(&l);
    drop_root(root, "L9.1");
}
END_TEST

START_TEST(test_missing_key_is_named)
{
    char *root = make_root("L9.1", "{\"id\":\"L9.1\",\"slug\":\"s\",\"title\":\"X\",\"rung\":\"R3\"}");
    lesson l;
    char *err = NULL;
    ck_assert_int_eq(lesson_load(root, "L9.1", &l, &err), -1);
    ck_assert_ptr_nonnull(strstr(err, "course_tests"));
    free(err);
    drop_root(root, "L9.1");
}
END_TEST

START_TEST(test_bad_rung_and_escaping_paths_are_refused)
{
    char *root = make_root("L9.1", MINIMAL ",\"rung\":\"R9\"}");
    lesson l;
    char *err = NULL;
    ck_assert_int_eq(lesson_load(root, "L9.1", &l, &err), -1);
    free(err);
    drop_root(root, "L9.1");
    root = make_root("L9.1", "{\"id\":\"L9.1\",\"slug\":\"s\",\"title\":\"X\",\"rung\":\"R3\",\"sources\":[\"../x.c\"],"
                             "\"contracts\":[],\"course_tests\":\"t\",\"student_tests\":\"s\"}");
    ck_assert_int_eq(lesson_load(root, "L9.1", &l, &err), -1);
    ck_assert_ptr_nonnull(strstr(err, "relative path"));
    free(err);
    drop_root(root, "L9.1");
}
END_TEST

START_TEST(test_unknown_lesson_and_bad_ids_are_refused)
{
    char *root = make_root("L9.1", MINIMAL ",\"rung\":\"R4\"}");
    lesson l;
    char *err = NULL;
    ck_assert_int_eq(lesson_load(root, "L9.2", &l, &err), -1);
    ck_assert_ptr_nonnull(strstr(err, "no lesson L9.2"));
    free(err);
    ck_assert_int_eq(lesson_load(root, "../etc", &l, &err), -1);
    free(err);
    drop_root(root, "L9.1");
}
END_TEST

START_TEST(test_invalid_json_gives_a_line)
{
    char *root = make_root("L9.1", "{\n\"id\": \"L9.1\",\n\"slug\" \"x\"\n}");
    lesson l;
    char *err = NULL;
    ck_assert_int_eq(lesson_load(root, "L9.1", &l, &err), -1);
    ck_assert_ptr_nonnull(strstr(err, "lesson.json:3"));
    free(err);
    drop_root(root, "L9.1");
}
END_TEST

START_TEST(test_link_files_are_made_absolute)
{
    char *root = make_root("L9.1", MINIMAL ",\"rung\":\"R3\",\"link\":[\"-lcurl\",\"build/lib/libx.a\"]}");
    lesson l;
    char *err = NULL;
    ck_assert_msg(lesson_load(root, "L9.1", &l, &err) == 0, "%s", err);
    ck_assert_str_eq(l.link.v[0], "-lcurl");
    char want[512];
    snprintf(want, sizeof want, "%s/build/lib/libx.a", root);
    ck_assert_str_eq(l.link.v[1], want);
    lesson_free(&l);
    drop_root(root, "L9.1");
    root = make_root("L9.1", MINIMAL ",\"rung\":\"R3\",\"link\":[\"../outside.a\"]}");
    ck_assert_int_eq(lesson_load(root, "L9.1", &l, &err), -1);
    ck_assert_ptr_nonnull(strstr(err, "inside the course"));
    free(err);
    drop_root(root, "L9.1");
}
END_TEST
