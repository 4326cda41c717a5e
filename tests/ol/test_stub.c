/* `ol lesson stub` reads a contract's prototypes the way contracts are
 * written, and each stubbed function fails with "not implemented: NAME
 * (L7.x)" returning what its type says a failure returns. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "ol/cdecl.h"
#include "ol/scaffold.h"

static const char HEADER[] =
    "/* a contract: int not_a_prototype(void); in a comment */\n"
    "#ifndef X_H\n#define X_H\n"
    "#define MACRO(a, b) ((a) + (b))\n"
    "#define LONG_MACRO(a) \\\n    do_something(a)\n"
    "#include \"tinyllm/tensor.h\"\n"
    "typedef struct {\n    int (*inside)(int x);\n    double eps;\n} Thing;\n"
    "typedef tl_tensor *(*sublayer_fn)(tl_tensor *x, void *ctx);\n"
    "static inline int helper(int x) { return x + 1; }\n"
    "extern int a_global;\n"
    "int thing_init(Thing *t, int64_t dim,\n               double eps, bool flag);\n"
    "void thing_free(Thing *t);\n"
    "tl_tensor *thing_forward(const Thing *t, tl_tensor *x, sublayer_fn f,\n"
    "                         void *ctx);\n"
    "const char *thing_name(void);\n"
    "bool thing_known(const char *name);\n"
    "double thing_value(const float v[4], int (*pick)(int i));\n"
    "size_t thing_count(const Thing *t);\n"
    "Thing thing_copy(const struct Thing *from);\n"
    "#endif\n";

START_TEST(test_prototypes_are_read_as_contracts_write_them)
{
    c_function *f;
    int n;
    char *err = NULL;
    ck_assert_msg(cdecl_prototypes(HEADER, &f, &n, &err) == 0, "%s", err);
    const char *names[] = {"thing_init", "thing_free", "thing_forward", "thing_name", "thing_known",
                           "thing_value", "thing_count", "thing_copy"};
    const ret_kind kinds[] = {RET_SIGNED, RET_VOID, RET_POINTER, RET_POINTER,
                              RET_BOOL,   RET_FLOAT, RET_UNSIGNED, RET_OTHER};
    ck_assert_int_eq(n, 8);
    for (int i = 0; i < n; i++) {
        ck_assert_str_eq(f[i].name, names[i]);
        ck_assert_msg(f[i].kind == kinds[i], "%s: kind %d", f[i].name, (int)f[i].kind);
    }
    ck_assert_str_eq(f[0].signature,
                     "int thing_init(Thing *t, int64_t dim, double eps, bool flag)");
    ck_assert_int_eq(f[0].line, 15);
    ck_assert_int_eq(f[0].params.n, 4);
    ck_assert_str_eq(f[0].params.v[3], "flag");
    ck_assert_str_eq(
        f[2].signature,
        "tl_tensor *thing_forward(const Thing *t, tl_tensor *x, sublayer_fn f, void *ctx)");
    ck_assert_int_eq(f[3].params.n, 0); /* (void) */
    ck_assert_int_eq(f[5].params.n, 2);
    ck_assert_str_eq(f[5].params.v[0], "v");
    ck_assert_str_eq(f[5].params.v[1], "pick");
    ck_assert_str_eq(f[7].params.v[0], "from");
    cdecl_free(f, n);
}
END_TEST

START_TEST(test_an_unnamed_parameter_is_an_error_with_its_line)
{
    c_function *f;
    int n;
    char *err = NULL;
    ck_assert_int_eq(
        cdecl_prototypes("/* x */\nint ok(int a);\nint bad(const char *, int n);\n", &f, &n, &err),
        -1);
    ck_assert_msg(strstr(err, "3: parameter 1 of bad (\"const char *\") has no name") != NULL, "%s",
                  err);
    free(err);
    ck_assert_int_eq(cdecl_prototypes("int bad2(int);\n", &f, &n, &err), -1);
    free(err);
    ck_assert_int_eq(cdecl_prototypes("int bad3(struct Thing);\n", &f, &n, &err), -1);
    free(err);
}
END_TEST

START_TEST(test_definitions_are_found)
{
    strlist names = {0};
    cdecl_definitions("static int helper(int x) { if (x) { return 1; } return 0; }\n"
                      "struct S { int a; };\n"
                      "int f(int a, int b)\n{\n    const char *s = \"}\";\n    return a + b;\n}\n"
                      "tl_tensor *g(void) { return NULL; }\nint declared_only(void);\n",
                      &names);
    ck_assert_int_eq(names.n, 3);
    ck_assert_str_eq(names.v[0], "helper");
    ck_assert_str_eq(names.v[1], "f");
    ck_assert_str_eq(names.v[2], "g");
    sl_free(&names);
}
END_TEST

START_TEST(test_the_stub_fails_with_the_value_each_type_implies)
{
    c_function *f;
    int n;
    char *err = NULL;
    ck_assert_msg(cdecl_prototypes(HEADER, &f, &n, &err) == 0, "%s", err);
    lesson l = {.id = "L9.1", .title = "Things"};
    char *text = stub_text(&l, "tinyllm/x.c", "tinyllm/x.h", f, n, false);
    const char *want[] = {
        "#include <math.h>",
        "#include \"tinyllm/x.h\"",
        "int thing_init(Thing *t, int64_t dim, double eps, bool flag) {\n",
        "    (void)t; (void)dim; (void)eps; (void)flag;\n"
        "    tl_fail(\"not implemented: thing_init (L9.1)\");\n    return -1;\n}",
        "void thing_free(Thing *t) {",
        "    tl_fail(\"not implemented: thing_free (L9.1)\");\n}",
        "    return tl_fail(\"not implemented: thing_forward (L9.1)\");",
        "const char *thing_name(void) {",
        "    return false;",
        "    return NAN;",
        "    return 0;",
        "    return (Thing){0};",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        ck_assert_msg(strstr(text, want[i]) != NULL, "no \"%s\" in:\n%s", want[i], text);
    /* every line fits in 100 columns: the long prototype is wrapped at a comma */
    for (const char *line = text; *line;) {
        size_t len = strcspn(line, "\n");
        ck_assert_msg(len <= 100, "a line of %zu columns: %.*s", len, (int)len, line);
        line += len + (line[len] == '\n');
    }
    free(text);
    text = stub_text(&l, "tinyllm/x.c", "tinyllm/x.h", f, n, true);
    ck_assert_ptr_nonnull(
        strstr(text, "    return tl_fail_status(\"not implemented: thing_init (L9.1)\");"));
    free(text);
    cdecl_free(f, n);
}
END_TEST

START_TEST(test_a_chapter_without_a_section_is_told)
{
    strlist missing = {0};
    chapter_missing_sections("# L9.1 X\n## Overview\n## Key Takeaways\n## 5. Pitfalls\n", &missing);
    ck_assert(sl_contains(&missing, "1. Why now") && sl_contains(&missing, "What the tests check"));
    ck_assert(!sl_contains(&missing, "Overview") && !sl_contains(&missing, "5. Pitfalls"));
    sl_free(&missing);
}
END_TEST
