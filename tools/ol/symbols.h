/* symbols: a student's object may not define what grading relies on. Its
 * global symbols (nm, before any link) must not be Check's or the harness's
 * (main, srunner_*, suite_*, tcase_*, _ck_*, testgen_*, __wrap_*,
 * __real_*), the runtime's (tl_*), nor anything a library of the test
 * program defines (an _exit or a waitpid of its own would change what
 * Check reports): the linker would quietly take the student's. A test may
 * not define the lesson's functions either (they would replace the code it
 * grades); the student's code may, and the tl_* ones its contract names. */
#ifndef OL_SYMBOLS_H
#define OL_SYMBOLS_H

#include "build.h"
#include "lesson.h"
#include "util.h"
#include "workspace.h"

/* The global functions and data the lesson's reference (and the lessons it
 * needs) define: what the student's code may define, and tests may not. */
int symbols_of_reference(ol_ctx *ctx, const lesson *l, strlist *out);

/* Checks each unit's object (all compiled). `shown[i]`: the student's file
 * unit i stands for; `lesson_functions`: symbols_of_reference; `tests`:
 * whether they are tests (then the lesson's functions are refused too).
 * Each problem is "FILE: defines NAME, ...". Returns how many, -1 when nm
 * or the linker could not be asked (said why). */
int symbols_check(ol_ctx *ctx, const lesson *l, const unit *units, const char *const *shown, int n,
                  const strlist *lesson_functions, bool tests, strlist *problems);

#endif
