/* check: the grading pipeline of `ol check` (docs/grading.md):
 * build -> course tests -> the student's tests exist and include only
 * contracts -> validity on the reference, every wheat and the student's code
 * -> canary -> every mutant -> score against the rung. Stages after a failed
 * one are skipped. */
#ifndef OL_CHECK_H
#define OL_CHECK_H

#include <stdbool.h>
#include "coverage.h"
#include "lesson.h"
#include "mutant.h"
#include "run.h"
#include "suite.h"
#include "workspace.h"

enum { ST_BUILD, ST_COURSE, ST_TESTS, ST_VALID, ST_CANARY, ST_MUTATION, N_STAGES };
typedef enum { STAGE_SKIPPED, STAGE_PASS, STAGE_FAIL } stage_state;

typedef struct {
    const char *title;
    stage_state state;
    bool required;   /* the rung asks for it */
    char *summary;   /* one line */
} stage;

/* Stryker's statuses (mutation-testing-report-schema). */
typedef enum {
    MS_KILLED,
    MS_SURVIVED,
    MS_NOCOVERAGE,
    MS_TIMEOUT,
    MS_COMPILE_ERROR,
    MS_RUNTIME_ERROR,
    MS_IGNORED
} mutant_status;
const char *mutant_status_name(mutant_status s);

/* The per-test timeout for mutants: Stryker's 1.5 x the slowest test on the
 * reference + 2 s, but never past the lesson's own limit (a test that
 * sleeps on the reference must not make every mutant's run that long). */
double mutant_timeout(double slowest, double limit);

typedef struct {
    const mutant *m;
    mutant_status status;
    strlist killed_by;
    char *reason;         /* statusReason */
    bool required;        /* in lesson.json's required_pitfalls */
    int uncovered_line;   /* NoCoverage: the changed line no test reached */
    double seconds;
} mutant_outcome;

/* A test that fails where it must pass. */
typedef struct {
    char *where;          /* "the reference", "wheat w01" */
    test_result t;        /* copied */
} invalid_test;

typedef struct check_report {
    const lesson *l;
    stage stages[N_STAGES];
    test_result *course_failed; /* stage 2: the course tests that fail on the student's code */
    int ncourse_failed;
    strlist problems;        /* stage 3: "file:line: message", what the test files may not do */
    strlist student_tests;   /* names */
    strlist student_files;   /* the file of each, relative to the workspace */
    invalid_test *invalid;
    int ninvalid;
    test_result *own_failed; /* stage 4: the student's tests that fail on their own code */
    int nown_failed;
    strlist hints;           /* Examplar: misconceptions an invalid test agrees with */
    bool invalid_on_rerun;   /* the invalid tests passed once, failed on the reference's rerun */
    mutant *mutants, *wheats;
    int nmutants, nwheats;
    mutant_outcome *outcomes; /* parallel to mutants, in report order */
    double timeout;          /* per test, for mutants */
    double baseline_seconds; /* what it was derived from */
    int killed, timed_out, survived, no_coverage, errors, valid;
    double score;            /* -1 when unknown */
    strlist required_missed;
    strlist kill_nothing;
    bool passed;
    bool out_of_time;        /* the test runs reached the check's overall time limit */
    double time_limit;       /* that limit, seconds */
    bool tests_only;         /* --tests-only: stages 1 and 2 were not run */
    bool tests_pass;         /* the stages of the student's tests (3 to 6) pass at the rung */
    bool harness_broken;     /* exit 2: never a grade */
    char *harness_message;
    double seconds;
} check_report;

/* Progress: called as each stage ends (r->stages[stage] is set), with the
 * caller's data. The pipeline prints nothing of its own but the compiler's
 * messages. */
typedef void (*check_progress)(const check_report *r, int stage, void *data);

typedef struct {
    bool ref_deps;
    bool tests_only;         /* grade the student's tests alone (stages 3 to 6): never a pass */
    check_progress on_stage; /* NULL: not told */
    void *data;
} check_options;

/* Runs the pipeline, telling opt->on_stage as each stage ends. Returns the
 * exit status: OL_PASS, OL_FAIL, OL_USAGE (broken harness), 130 if
 * interrupted; with tests_only, OL_PASS means the student's tests reach the
 * rung (the lesson is not passed, and the last check's status is kept). */
int check_run(ol_ctx *ctx, const lesson *l, const check_options *opt, check_report *r);
void check_report_free(check_report *r);

#endif
