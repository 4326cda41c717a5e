/* cli: what the commands share on the command line: help and usage
 * messages, and finding the workspace and the lesson a command works on. */
#ifndef OL_CLI_H
#define OL_CLI_H

#include "lesson.h"
#include "workspace.h"

/* Prints text on stdout (for --help) and returns 0. */
int print_help(const char *text);
/* "ol CMD: ..." on stderr, a pointer to --help, and OL_USAGE. */
int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Resolves the root and the workspace: --workspace, else $OL_WORKSPACE, else
 * the current folder, or the workspace above it when it has no c/ (a student
 * in c/tinyllm/modern/). Prints what went wrong; -1 on error. */
int open_workspace(ol_ctx *ctx, const char *workspace);
/* The student's commands (list, start, tests, check, diff) work in a folder
 * of the student's own, never in the course repository (but its build/):
 * -1, having said so, the same way for each. */
int require_student_workspace(ol_ctx *ctx);
/* Loads the root, the workspace and the lesson; prints what went wrong. */
int open_lesson(ol_ctx *ctx, lesson *l, const char *workspace, const char *id);
/* The same with lesson_load_flags' flags. */
int open_lesson_flags(ol_ctx *ctx, lesson *l, const char *workspace, const char *id,
                      unsigned flags);
/* The course's spelling of a lesson id the user typed: itself, or the one
 * it matches ignoring case (l7.1: L7.1). NULL, said with a "did you mean"
 * when one is near, when there is no such lesson. Caller frees. */
char *resolve_lesson_id(ol_ctx *ctx, const char *id);

#endif
