/* suite: a folder of Check test files (START_TEST blocks only), found and
 * registered by testgen the way checkmk does, compiled once per content. */
#ifndef OL_SUITE_H
#define OL_SUITE_H

#include "build.h"
#include "util.h"
#include "workspace.h"

typedef struct suite {
    char *name;       /* Check's suite name */
    char *dir;        /* the folder (absolute) */
    strlist more_dirs;/* folders added by suite_add_dir (absolute) */
    strlist files;    /* its *.c files, sorted, absolute */
    strlist tests;    /* every test, in file order */
    strlist test_file;/* the file of each test */
    unit *units;      /* a wrapper per file, then main */
    int nunits;
} suite;

/* Lists dir's *.c files and their tests. -1 with *err when dir is missing
 * or two files define the same test name (reports name tests by name). */
int suite_scan(suite *s, const char *name, const char *dir, char **err);
/* Adds another folder's tests (a lesson's hidden tests) after the first's.
 * -1 with *err when dir is missing, a test name is taken, or a file has
 * the name of one already in (each file is a TCase, named after it). */
int suite_add_dir(suite *s, const char *dir, char **err);
/* Writes testgen's wrappers under build/ol/gen and prepares the units. */
int suite_generate(ol_ctx *ctx, suite *s, char **err);
/* Compiles the units; prints the compiler's messages with `label`. Returns
 * the number of files that failed, -1 when interrupted. */
int suite_compile(ol_ctx *ctx, suite *s, const char *label);
void suite_free(suite *s);

/* Student tests may include only contract headers, <check.h>, standard C
 * headers and files of their own folder (which are held to the same rule),
 * as the preprocessor resolves them (after suite_generate). Each offence
 * goes into problems as "file:line: message" (or "file: message"). Returns
 * how many, or -1 when interrupted. */
int suite_check_includes(ol_ctx *ctx, suite *s, strlist *problems);

/* The student's code may include contract headers, system headers and its
 * own files under c/ (nothing of the course, nothing else of the
 * workspace), as the preprocessor resolves them. Like suite_check_includes. */
int code_check_includes(ol_ctx *ctx, unit *units, int n, strlist *problems);

/* Symbolic links, named pipes, sockets and devices beneath dir (a student's
 * folder), each a problem "path: path is a ...". Returns how many. */
int student_files_check(ol_ctx *ctx, const char *dir, strlist *problems);

/* The link inputs of the suite's objects. */
void suite_link(const suite *s, link_spec *l);

#endif
