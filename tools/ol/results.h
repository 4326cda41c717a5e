/* results: a run's test results as a student reads them: each failure with
 * what happened, file:line and the assertion's source line; a summary. */
#ifndef OL_RESULTS_H
#define OL_RESULTS_H

#include <stdbool.h>
#include <stdio.h>
#include "run.h"
#include "workspace.h"

/* A failing test: its name, what happened, file:line and the assertion's
 * source line. hide_values masks every number in Check's message (the
 * values the reference computed must not leak to students). */
void print_test_failure(ol_ctx *ctx, FILE *f, const test_result *t, bool hide_values);
/* "       rerun it: COMMAND", under a failure. */
void print_rerun(FILE *f, const char *command);
/* Every number of msg becomes "#" (a digit run not glued to an identifier,
 * with its sign, decimals and exponent; inf and nan), except, with keep,
 * those keep holds as numbers of its own: the student's source line. */
char *mask_numbers(const char *msg);
char *mask_numbers_keeping(const char *msg, const char *keep);

/* Prints each test's result and a summary line; returns the failures.
 * rerun (NULL: none) is the command that reruns a test given -k NAME. */
int print_results(ol_ctx *ctx, const run_result *r, const char *what, bool hide_values,
                  bool list_passes, const char *rerun);

#endif
