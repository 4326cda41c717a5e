/* codegen: different but equivalent machine code for every build of the
 * lesson that grading runs (each control, each mutant, the canary), so a
 * test that recognises the reference by its code bytes (a whitelist) fails
 * on a control, and is INVALID. Each build gets its own function entry
 * padding (-fpatchable-function-entry), alignments, frame pointer, stack
 * protector, scheduling, register allocation, block order and function
 * order; none changes what the code computes (no flag touches floating
 * point: -std=c11 keeps contraction off and no -ffast-math is used).
 * The choices follow a seed: HMAC-style SHA-256 of a secret kept in ol's
 * cache (build/ol/secret, out of the tests' reach) with the suite and the
 * build, so a rerun of the same suite reuses its builds, and a student who
 * cannot read the secret (on CI) cannot know them. Which runtime functions
 * the code calls does not change: docs/grading.md says what that leaves. */
#ifndef OL_CODEGEN_H
#define OL_CODEGEN_H

#include "hash.h"
#include "util.h"
#include "workspace.h"

/* The cache's secret, made once (32 random bytes, mode 0600). 0 or -1. */
int codegen_secret(ol_ctx *ctx, char out[HASH_HEX]);
/* The seed of one build: the secret, a context (the suite's key) and the
 * build's name ("control 3", "mutant s05", "canary"). */
void codegen_seed(const char *secret, const char *context, const char *build, char out[HASH_HEX]);
/* The compiler flags a seed stands for (appended to flags). */
void codegen_flags(const char *seed, strlist *flags);
/* The line testgen's wrapper marks when test's body has run to its end
 * (testgen.h): 1 .. 2^30, from the secret and the test's name, so neither
 * an early exit nor another test's mark can name it without reading it out
 * of the program's code. */
long codegen_finish_line(const char secret[HASH_HEX], const char *test);

#endif
