/* Reading gcov's line counts for NoCoverage. */
#include <check.h>
#include <stdlib.h>
#include "ol/coverage.h"

/* A source that includes a header with inline code: gcov prints a section
 * for each, with line numbers that overlap. */
static const char GCOV[] =
    "        -:    0:Source:reference/tinyllm/io/hf.c\n"
    "        -:    0:Graph:./hf.gcno\n"
    "        -:    0:Runs:10\n"
    "        -:    1:/* a comment */\n"
    "       12:    2:    int a = 1;\n"
    "    #####:    3:    never();\n"
    "        4*:   4:    partly();\n"
    "        -:    0:Source:/usr/include/x86_64-linux-gnu/curl/typecheck-gcc.h\n"
    "    #####:    2:static inline int check(void) { return 0; }\n"
    "        -:    3:\n";

START_TEST(test_counts_come_from_the_source_section_only)
{
    file_coverage fc = {0};
    coverage_parse_gcov(GCOV, "reference/tinyllm/io/hf.c", &fc);
    coverage c = {.f = &fc, .n = 1};
    fc.file = "tinyllm/io/hf.c";
    ck_assert_int_eq(coverage_count(&c, "tinyllm/io/hf.c", 1), -1);
    ck_assert_int_eq(coverage_count(&c, "tinyllm/io/hf.c", 2), 12); /* not the header's ##### */
    ck_assert_int_eq(coverage_count(&c, "tinyllm/io/hf.c", 3), 0);  /* not the header's "-" */
    ck_assert_int_eq(coverage_count(&c, "tinyllm/io/hf.c", 4), 4);
    ck_assert_int_eq(coverage_count(&c, "tinyllm/io/hf.c", 99), -1);
    free(fc.count);
}
END_TEST
