/* scaffold: what `ol lesson new` and `ol lesson stub` write. A new lesson's
 * skeleton (every file course/FORMAT.md names, a draft until it is done),
 * and a stub generated from the contract's prototypes. Neither ever
 * overwrites a file. */
#ifndef OL_SCAFFOLD_H
#define OL_SCAFFOLD_H

#include <stdbool.h>
#include "cdecl.h"
#include "lesson.h"
#include "workspace.h"

typedef struct {
    const char *title;  /* one line */
    const char *module; /* "modern/gated_mlp": contracts/tinyllm/<module>.h and the sources */
    const char *rung;   /* R1..R5; NULL: R3 */
    const char *needs;  /* "L7.1,L7.3" or NULL */
} scaffold_options;

/* The headings every chapter has (docs/lesson-checklist.md), NULL-ended; a line
 * of the chapter starting with one (after its '#'s) has it. */
extern const char *const CHAPTER_SECTIONS[];
/* The sections of CHAPTER_SECTIONS the chapter text lacks. */
void chapter_missing_sections(const char *text, strlist *missing);

/* The example test `ol start` writes into an empty test folder: the lesson's
 * "example_test", else a generic one that asserts nothing; *name its file
 * name. Both malloc'd. */
char *example_test_text(ol_ctx *ctx, const lesson *l, char **name);

/* `ol lesson new ID`: OL_PASS, OL_FAIL (the oracle failed), OL_USAGE. */
int scaffold_lesson(ol_ctx *ctx, const char *id, const scaffold_options *o);
/* `ol lesson stub ID`: writes each missing stub, and rewrites one that is
 * still exactly what ol wrote (for the functions it defines) when the
 * contract has grown. One edited by hand is kept, and the functions of the
 * contract it lacks are printed (OL_FAIL). */
int scaffold_stubs(ol_ctx *ctx, const lesson *l);

/* The stub of `source` (relative to stubs/) for the functions f of its
 * contract: what scaffold_stubs writes (exposed for tests). fail_status:
 * the runtime has tl_fail_status for int results. */
char *stub_text(const lesson *l, const char *source, const char *contract, const c_function *f,
                int n, bool fail_status);

#endif
