/* lessonlib: one lesson's code built into its own static library: the
 * student's (c/), the reference, the reference with coverage, a patched
 * copy of the reference (a mutant or a wheat), or the stub (stubs/). */
#ifndef OL_LESSONLIB_H
#define OL_LESSONLIB_H

#include "build.h"
#include "lesson.h"

typedef enum { LIB_STUDENT, LIB_REFERENCE, LIB_COVERAGE, LIB_PATCHED, LIB_STUB } lib_kind;

typedef struct lesson_lib {
    const lesson *l;
    lib_kind kind;
    char *label;          /* "your code", "the reference", "mutant s01" */
    unit *units;          /* one per source */
    int n;
    link_input archive;
    bool prebuilt;        /* a release's compiled reference (prebuilt.h): nothing to compile */
    bool ok;
} lesson_lib;

/* Sets up the units. patched_dir: the folder holding reference/<sources>
 * (LIB_PATCHED only; in a student release, the variant's objects). In a
 * release every kind but LIB_STUDENT takes the prebuilt objects. -1 with
 * *err when a student's source is missing. */
int lesson_lib_prepare(ol_ctx *ctx, lesson_lib *lib, const lesson *l, lib_kind kind,
                       const char *patched_dir, const char *label, char **err);
/* Compiles every library's units in one batch, then archives them. Returns
 * how many libraries failed (their units' logs say why), -1 if interrupted. */
int lesson_libs_build(ol_ctx *ctx, lesson_lib **libs, int n);
void lesson_lib_free(lesson_lib *lib);

/* Prints each unit's compiler messages. */
void lesson_lib_print_log(ol_ctx *ctx, const lesson_lib *lib);

#endif
