/* dist: the student release `ol dist` writes (prebuilt.h says how ol
 * grades inside it). From the course repository it copies what students
 * read and build against (chapters, lesson.json without the instructor's
 * keys, contracts, stubs, course tests, fixtures, the runtime's libraries,
 * bin/ol and bin/tinyllm, each lesson's "release_files") and compiles the
 * reference, its coverage build, every wheat and every mutant with ol's own
 * build into prebuilt/<lesson>/, with no source, diff or Caught-by. */
#ifndef OL_DIST_H
#define OL_DIST_H

#include <stdbool.h>
#include "util.h"
#include "workspace.h"

typedef struct {
    strlist lessons; /* ids; empty: every lesson. The lessons they need come too. */
    /* a grader's copy (the Gradescope autograder's): each lesson's hidden
     * tests, and the reference's source, mutants and wheats instead of
     * prebuilt/ (graded from sources by the grader's own GCC; reports show
     * the reference once a check passes) */
    bool grader;
    bool quiet; /* no progress lines */
} dist_options;

/* Writes the release into out, which must not exist (or be an empty
 * folder): built beside it under a temporary name and renamed at the end,
 * so a failed run leaves nothing under that name. Says what went wrong;
 * OL_PASS, OL_FAIL (the course is not consistent: a mutant does not
 * apply, a file lesson.json names is missing) or OL_USAGE. */
int dist_write(ol_ctx *ctx, const dist_options *opt, const char *out);

/* Every lesson id under ctx's course, in order, when `ids` is empty; else
 * the ids given with the lessons they need, dependencies first. -1 with a
 * message on an unknown lesson. */
int dist_lessons(ol_ctx *ctx, const strlist *ids, strlist *out);

#endif
