/* gradescope: the autograder zip Gradescope's Docker-based autograder
 * expects (`ol dist --gradescope`): setup.sh and run_autograder (from
 * tools/ol/gradescope/), autograder.json (the lessons, the milestone) and a
 * grader's release (dist.h: hidden tests in, the reference's source for the
 * report after a pass). run_autograder runs `ol check` per lesson on the
 * submission and writes /autograder/results/results.json. */
#ifndef OL_GRADESCOPE_H
#define OL_GRADESCOPE_H

#include "dist.h"
#include "workspace.h"

/* Writes zip (a new file; replaced atomically). milestone: an id or NULL.
 * OL_PASS, OL_FAIL or OL_USAGE, having said why. */
int gradescope_write(ol_ctx *ctx, const dist_options *opt, const char *milestone, const char *zip);

#endif
