/* run: runs a Check test program the way grading needs it: each test in
 * its own process (CK_FORK=yes), a per-test timeout, and per-test results
 * read back from Check's TAP log (status) and plain log (file:line).
 * Every run starts from a fresh scratch folder holding the program under
 * one neutral name (padded to one size, one date), with an empty working
 * folder, the same environment and the sandbox (sandbox.h): whether it is
 * the reference, a wheat or a mutant, a test can tell only by behaviour.
 * Results are cached by the program's key, the timeout and the fixtures. */
#ifndef OL_RUN_H
#define OL_RUN_H

#include <stdbool.h>
#include "hash.h"
#include "util.h"
#include "workspace.h"

typedef enum {
    TEST_PASS,
    TEST_FAIL,    /* an assertion failed */
    TEST_CRASH,   /* a signal: SIGSEGV, SIGABRT, ... */
    TEST_TIMEOUT, /* Check's per-test timeout */
    TEST_EXIT,    /* the test called exit() */
    TEST_MISSING  /* no result: the program itself died or was stopped */
} test_status;

typedef struct {
    char *name, *tcase;  /* the test and its file's name (the TCase) */
    char *file;          /* the assertion's (or last mark's) file, as Check saw it */
    int line;
    test_status status;
    int signal;          /* TEST_CRASH */
    char *message;       /* Check's message */
    double seconds;      /* Check's duration, -1 when unknown */
    bool out_of_memory;  /* TEST_CRASH by SIGKILL, when the run's control group ran out of memory */
    char *crash_in;      /* TEST_CRASH, when its backtrace was read (crash.h): the function it
                          * crashed in; file and line are then where, not the last assertion */
} test_result;

typedef struct {
    test_result *t;
    int n;
    int exit_code, term_signal;
    bool watchdog;       /* ol stopped the whole program (its time, its idleness or the deadline) */
    bool past_deadline;  /* ... at the check's overall deadline, or it never started */
    double seconds;      /* wall clock of the whole run */
    char *output;        /* what the program printed (the tail) */
    char key[HASH_HEX];
    bool cached;
} run_result;

typedef struct {
    const char *bin;      /* the test program */
    const char *bin_key;  /* its build key */
    const strlist *tests; /* the names it should report, in order */
    const char *filter;   /* -k NAME or NULL */
    bool exact;           /* the filter is a whole name (-x NAME) */
    bool no_fork;         /* CK_FORK=no: the test runs in the program (a failing one
                           * still writes its coverage, which Check's forked child,
                           * leaving by _exit, does not) */
    const char *tcase;    /* run only this file's tests (CK_RUN_CASE), or NULL */
    double timeout;       /* per test, seconds */
    const char *data_key; /* the fixtures' hash: a result depends on them */
    bool no_cache;        /* always run (e.g. to collect coverage) */
    bool retry_timeouts;  /* a result with a timeout is not kept: the student's code on a
                           * loaded machine may be slow once, and would fail until edited */
    const char *gcov_dir; /* a coverage build: its line counts are written inside the run's folder
                           * (GCOV_PREFIX), then moved to this path (which must not exist yet) */
    long long memory_bytes; /* what the program may use (0: ol's default) */
    int threads;          /* OMP/TINYLLM threads per program; 0: leave as is */
    int replica; /* the same program run again (a control): its own result and cache entry */
    bool fill_idle;       /* more than ctx->jobs at once while the cores go unused (proc.h's
                           * proc_run_filling): runs that mostly wait, such as course tests */
} run_spec;

/* Runs the programs, ctx->jobs at a time (up to 4 times that when
 * every spec has fill_idle and the cores go unused), within ctx->run_budget (when set:
 * what is left of it afterwards is there; a program it stopped, or never
 * started, is past_deadline, all its tests without a result). 0, or -1
 * when interrupted (or, with a message, when a program could not be set up
 * to run). */
int run_tests(ol_ctx *ctx, const run_spec *specs, run_result *out, int n);
void run_result_free(run_result *r);
/* The cache key run_tests gives a spec (to keep more data beside it). */
void run_spec_key(ol_ctx *ctx, const run_spec *s, char out[HASH_HEX]);

/* How many tests did not pass. */
int run_failures(const run_result *r);
const test_result *run_find(const run_result *r, const char *name);
/* "assertion failed", "crashed with signal 11 (Segmentation fault)", ... */
char *test_describe(const test_result *t);
const char *test_status_name(test_status s);

/* The parsers, exposed for ol's own tests. */
int parse_tap(const char *text, test_result **out, int *n);
void merge_log(const char *text, test_result *t, int n);

#endif
