/* coverage: which reference lines the student's tests execute, from gcov
 * data of the baseline run (the reference built with --coverage). A mutant
 * none of whose changed lines ran is NoCoverage, and is not run. */
#ifndef OL_COVERAGE_H
#define OL_COVERAGE_H

#include "lessonlib.h"

typedef struct {
    char *file;  /* relative to reference/ */
    int nlines;
    int *count;  /* count[line - 1]: times executed, or -1 when not executable */
} file_coverage;

typedef struct {
    file_coverage *f;
    int n;
} coverage;

/* Reads the counters the baseline wrote under `counts` (run_spec's
 * gcov_dir) for cov_lib (a LIB_COVERAGE library) with gcov. -1 (said why)
 * when gcov cannot: its notes in the cache may be spoiled. */
int coverage_collect(ol_ctx *ctx, const lesson_lib *cov_lib, const char *counts, coverage *out);
int coverage_save(const coverage *c, const char *path);
int coverage_load(coverage *c, const char *path);
void coverage_free(coverage *c);
/* Reads `gcov -t` output into fc, keeping only the section of `source`
 * (headers with inline code get sections of their own). For tests. */
void coverage_parse_gcov(const char *text, const char *source, file_coverage *fc);
/* Times executed; -1 when not executable or unknown. */
int coverage_count(const coverage *c, const char *file, int line);

#endif
