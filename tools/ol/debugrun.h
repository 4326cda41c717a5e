/* debugrun: a test program run in the foreground, for debugging: under gdb
 * or valgrind, or built with AddressSanitizer and UBSan. The program gets a
 * readable name (build/ol/debug/L7.1-course-tests), the terminal, an empty
 * scratch folder to run in, and what a test needs (the fixtures, Check's
 * settings); its output goes straight to the terminal. Not cached. It runs
 * in the test programs' sandbox (sandbox.h: the jail, the control group,
 * the user, Landlock), as a debug run: the program is readable, the tool
 * may trace what it starts and exec; the student's c/ is readable too, so
 * gdb shows their sources; the reference is not. */
#ifndef OL_DEBUGRUN_H
#define OL_DEBUGRUN_H

#include "lesson.h"
#include "workspace.h"

typedef enum { TOOL_NONE, TOOL_GDB, TOOL_ASAN, TOOL_VALGRIND } debug_tool;

typedef struct {
    const char *bin;      /* the program built */
    const char *readable; /* its name in build/ol/debug/ */
    debug_tool tool;
    const char *test;   /* one test, or NULL */
    const char *filter; /* without test: the tests whose name holds it, or NULL for all */
    const char *tcase;  /* that test's file (its TCase), or NULL */
    double timeout;     /* per test, seconds (Check's, when it forks) */
    const strlist *sources; /* the lesson's files: valgrind's reports count when they name one */
    long long memory_bytes; /* the lesson's test_memory_mb, held where a control group can */
} debug_spec;

/* The tool's name as an option says it ("--gdb"). */
const char *debug_tool_option(debug_tool tool);

/* Runs it, and returns the exit status ol gives: OL_PASS when the program
 * passed (and the tool found nothing), OL_FAIL otherwise, OL_USAGE when it
 * could not start. Says first what runs, as a command the student can
 * repeat. */
int debug_run(ol_ctx *ctx, const debug_spec *spec);

#endif
