/* cli: the commands of ol and what they share (option parsing, the lesson
 * being worked on, the student's dependencies). */
#ifndef OL_CLI_H
#define OL_CLI_H

#include <stdbool.h>
#include "lesson.h"
#include "lessonlib.h"
#include "run.h"
#include "suite.h"
#include "workspace.h"

int cmd_list(int argc, char **argv);
int cmd_start(int argc, char **argv);
int cmd_tests(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_mutants(int argc, char **argv);
int cmd_fixtures(int argc, char **argv);
int cmd_hub(int argc, char **argv);

/* Prints text on stdout (for --help) and returns 0. */
int print_help(const char *text);
/* "ol CMD: ..." on stderr, a pointer to --help, and OL_USAGE. */
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Resolves the root and the workspace: --workspace, else $OL_WORKSPACE, else
 * the current folder, or the workspace above it when it has no c/ (a student
 * in c/tinyllm/modern/). Prints what went wrong; -1 on error. */
int open_workspace(ol_ctx *ctx, const char *workspace);
/* The usage error for getopt_long's ':' (a value missing) or '?' (an unknown
 * option), naming the option. Commands parse with opterr = 0 and an
 * optstring that starts with ':'. */
int option_error(const char *cmd, int c, char **argv);
/* Loads the root, the workspace and the lesson; prints what went wrong. */
int open_lesson(ol_ctx *ctx, lesson *l, const char *workspace, const char *id);

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
void program_spec(link_spec *spec, const suite *s, const lesson_lib *lib, const lesson *l, const deps *d);

/* The files the lessons' "link" lists (libraries the Makefile builds)
 * exist; else says to run make. */
int require_link_files(ol_ctx *ctx, const lesson *l);

/* Has the student started lesson l (every source present in c/)? */
bool lesson_started(ol_ctx *ctx, const lesson *l);

/* Builds the student's code of l and of the lessons it needs (the student's,
 * or the reference with ref_deps). OL_PASS; OL_FAIL when their code does not
 * compile (the compiler's messages are printed); OL_USAGE otherwise. */
int build_student_code(ol_ctx *ctx, const lesson *l, bool ref_deps, lesson_lib *mine, deps *d);
/* Scans, registers and compiles the course tests of l. OL_PASS or OL_USAGE. */
int build_course_suite(ol_ctx *ctx, const lesson *l, suite *s);
/* Runs a suite's program once per test (its file by Check's CK_RUN_CASE,
 * its name by -k), ctx->jobs at once, and gathers the results in the
 * suite's order: slow, sleeping tests (the downloader's) then overlap.
 * 0, or -1 if interrupted. */
int run_suite_by_file(ol_ctx *ctx, const suite *s, const run_spec *base, run_result *out);

/* Prints each test's result and a summary line; returns the failures. */
int print_results(ol_ctx *ctx, const run_result *r, const char *what, bool hide_values, bool list_passes);

/* The hash of a lesson's fixtures: test results depend on them. */
void fixtures_key(ol_ctx *ctx, const lesson *l, char out[HASH_HEX]);

/* Test output ---------------------------------------------------------- */
/* A failing test: its name, what happened, file:line and the assertion's
 * source line. hide_values masks every number in Check's message (the
 * values the reference computed must not leak to students). */
void print_test_failure(ol_ctx *ctx, FILE *f, const test_result *t, bool hide_values);
char *mask_numbers(const char *msg);
/* A result's file relative to the workspace or root. */
const char *shown_path(ol_ctx *ctx, const char *path);

#endif
