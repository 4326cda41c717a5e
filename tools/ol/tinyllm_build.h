/* tinyllm_build: the milestone's command line (tools/tinyllm) built with the
 * student's code: each lesson they started links their code, the others the
 * reference (every lesson the reference with ref_deps), into the workspace's
 * build/bin/<name>. Used by `ol tinyllm` and `ol milestone`. */
#ifndef OL_TINYLLM_BUILD_H
#define OL_TINYLLM_BUILD_H

#include <stdbool.h>

#include "workspace.h"

/* Builds it and says on stderr whose code of which lesson it holds; *bin
 * gets the program's path (malloc'd, also on failure). Returns OL_PASS;
 * OL_FAIL when the student's code does not compile or link (the messages
 * printed); OL_USAGE when the course itself is broken; 130 after Ctrl-C. */
int tinyllm_build(ol_ctx *ctx, bool ref_deps, const char *name, char **bin);

#endif
