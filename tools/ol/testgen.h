/* testgen: registers Check tests the way checkmk does, so test files hold
 * only START_TEST ... END_TEST blocks. For every test file it writes a
 * wrapper that #includes the file (its statics stay private to it) and adds
 * a registration function; a main() runs them all with -k filtering. */
#ifndef OL_TESTGEN_H
#define OL_TESTGEN_H

#include <stddef.h>

/* Test names found in a C source, in file order (comments and strings are
 * skipped). Returns the count, or -1 when the file cannot be read. names is
 * malloc'd; free each and the array with testgen_free_names. */
int testgen_scan(const char *path, char ***names);
void testgen_free_names(char **names, int n);

/* The file a passing test's last mark names when finish lines are given. */
#define TESTGEN_FINISH_FILE "ol-finished"

/* The line a test's finish mark names (> 0). */
typedef long testgen_finish_fn(const char *test, void *ctx);

/* Writes out_dir/wrap_<i>.c for each file and out_dir/main.c. suite is the
 * Check suite name. With finish_line (else NULL), each test's body is
 * inlined into a function that, when the body returns, marks
 * TESTGEN_FINISH_FILE at finish_line(test) (Check's mark_point), so a
 * passing result that does not name its own line ended early: Check counts
 * a forked test that calls exit(0) as passed. The body is never a frame of
 * its own, so no return into the wrapper reaches the mark. Returns the
 * number of tests found, -1 on an I/O error (message in errbuf). */
int testgen_write(const char *out_dir, const char *suite, const char *const *files,
                  int nfiles, testgen_finish_fn *finish_line, void *finish_ctx, char *errbuf,
                  size_t errsize);

#endif
