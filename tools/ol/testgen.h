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

/* The file a passing test's last mark names when finish_line is given. */
#define TESTGEN_FINISH_FILE "ol-finished"

/* Writes out_dir/wrap_<i>.c for each file and out_dir/main.c. suite is the
 * Check suite name. With finish_line > 0, each test's body runs inside a
 * function that, when the body returns, marks TESTGEN_FINISH_FILE at that
 * line (Check's mark_point), so a passing result that does not name it
 * ended early: Check counts a forked test that calls exit(0) as passed.
 * Returns the number of tests found, -1 on an I/O error (message in
 * errbuf). */
int testgen_write(const char *out_dir, const char *suite, const char *const *files,
                  int nfiles, long finish_line, char *errbuf, size_t errsize);

#endif
