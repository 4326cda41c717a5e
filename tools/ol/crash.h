/* crash: where a test crashed. testgen's programs print a backtrace when a
 * test dies of a signal ("ol-backtrace: signal N", then "ol-frame: OFFSET
 * OBJECT" per frame); addr2line turns the program's frames into functions
 * and lines. A crash is then reported where it happened, not "after" the
 * last assertion that passed, and never at a line of the hidden reference:
 * a frame there is named by its function, and the line shown is the
 * nearest caller in a file the student may see. */
#ifndef OL_CRASH_H
#define OL_CRASH_H

#include "run.h"
#include "workspace.h"

/* For each crashed test of r, the matching backtrace of r->output (a
 * program runs its tests one after another, so the k-th backtrace is the
 * k-th crash; matched from the last, as the output kept is its tail): sets
 * its file, line and crash_in. bin is the program that ran. Tests whose
 * backtrace is missing (cut, or the program had none) are left as they are. */
void crash_locate(ol_ctx *ctx, run_result *r, const char *bin);

/* The frames of one backtrace block as addr2line says them, innermost first:
 * "FUNCTION\tFILE\tLINE" lines. Exposed for tests. */
char *crash_frames(const char *bin, const char *block);

#endif
