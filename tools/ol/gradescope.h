/* gradescope: the autograder zip Gradescope's Docker-based autograder
 * expects (`ol dist --gradescope`): setup.sh and run_autograder (from
 * tools/ol/gradescope/), autograder.json (the lessons, the milestone) and a
 * grader's copy of the release (dist.h: the hidden tests, and the
 * reference's source, mutants and wheats, compiled there by Gradescope's
 * own GCC; the report shows the reference after a pass). run_autograder
 * runs `ol check` per lesson on the submission and writes
 * /autograder/results/results.json. */
#ifndef OL_GRADESCOPE_H
#define OL_GRADESCOPE_H

#include "dist.h"
#include "workspace.h"

/* Writes zip (a new file; replaced atomically). milestone: an id or NULL.
 * OL_PASS, OL_FAIL or OL_USAGE, having said why. */
int gradescope_write(ol_ctx *ctx, const dist_options *opt, const char *milestone, const char *zip);

#endif
