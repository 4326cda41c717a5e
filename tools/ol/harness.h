/* harness: what several commands build and run. The student's code of a
 * lesson and of the lessons it needs (or their references), the course
 * tests, one test program per variant of the lesson, and a suite run one
 * process per test. Compiler messages are printed as they come. */
#ifndef OL_HARNESS_H
#define OL_HARNESS_H

#include <stdbool.h>
#include "lesson.h"
#include "lessonlib.h"
#include "run.h"
#include "suite.h"
#include "workspace.h"

/* The libraries of the lessons l needs, dependents first: the reference
 * when `reference` is set, else the student's code where they started the
 * lesson; a lesson they have not started is an error unless ref_deps. */
typedef struct {
    lesson *lessons;
    int n;
    lesson_lib *libs;
} deps;
int deps_prepare(ol_ctx *ctx, const lesson *l, bool reference, bool ref_deps, deps *d, char **err);
void deps_free(deps *d);
/* A test program: the suite, the lesson's library, the needed ones, the link flags. */
void program_spec(link_spec *spec, const suite *s, const lesson_lib *lib, const lesson *l,
                  const deps *d);

/* The files the lessons' "link" lists (libraries the Makefile builds)
 * exist; else says to run make. */
int require_link_files(ol_ctx *ctx, const lesson *l);

/* Has the student started lesson l (every source present in c/)? */
bool lesson_started(ol_ctx *ctx, const lesson *l);

/* Builds the student's code of l and of the lessons it needs (the student's,
 * or the reference with ref_deps), in the compiler's sandbox (build.c);
 * sanitize: with AddressSanitizer and UBSan. OL_PASS; OL_FAIL when their
 * code does not compile, or breaks a rule of what it may hold (only
 * regular files; includes of contracts, system headers and its own files;
 * no symbol a library or grading defines): the compiler's messages, or the
 * rule's, are printed; OL_USAGE otherwise. */
int build_student_code(ol_ctx *ctx, const lesson *l, bool ref_deps, bool sanitize, lesson_lib *mine,
                       deps *d);
/* "file:line: message" problems as a compiler says them, on stderr. */
void print_problems(const strlist *problems);
/* Scans, registers and compiles the course tests of l. OL_PASS or OL_USAGE.
 * sanitize: with AddressSanitizer and UBSan (the code too, then). */
int build_course_suite(ol_ctx *ctx, const lesson *l, bool sanitize, suite *s);
/* The student's own tests of l (c/<student_tests>), held to the rules of
 * ol check's stage 3 (only regular files, the include rule, no asm, no
 * symbol of grading, a library or the lesson), compiled in the compiler's
 * sandbox. OL_PASS; OL_FAIL (missing, empty, refused or not compiling:
 * said); OL_USAGE. */
int build_student_suite(ol_ctx *ctx, const lesson *l, bool sanitize, suite *s);
/* Runs a suite's program once per test (its file by Check's CK_RUN_CASE,
 * its name by -k), ctx->jobs at once, and gathers the results in the
 * suite's order: slow, sleeping tests (the downloader's) then overlap.
 * 0, or -1 if interrupted. */
int run_suite_by_file(ol_ctx *ctx, const suite *s, const run_spec *base, run_result *out);

/* The hash of a lesson's fixtures: test results depend on them. */
void fixtures_key(ol_ctx *ctx, const lesson *l, char out[HASH_HEX]);

#endif
