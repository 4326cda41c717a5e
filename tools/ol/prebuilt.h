/* prebuilt: the reference of a student release, present only as compiled
 * objects (`ol dist` writes them, dist.c). A release is a course root that
 * holds release.json; its prebuilt/<lesson>/ holds, per variant (the
 * reference, its coverage build, each wheat and each mutant), one object
 * per source of the lesson (<variant>/<i>.o for sources[i]), and
 * manifest.json:
 *
 *   {"format": 1, "lesson": "L7.1", "sources": ["tinyllm/modern/rmsnorm.c"],
 *    "coverage_gcda": ["/.../cov/KEY/rmsnorm.gcda"],     one per source
 *    "wheats":  [{"id": "w01", "title": "...", "symptom": "..."}],
 *    "mutants": [{"id": "s01", "pitfall": "1", "title": "...", "symptom": "...",
 *                 "hint": "...", "changes": [{"file": "tinyllm/modern/rmsnorm.c",
 *                 "line": 20, "column": 5, "end_column": 9, "inserted": false}]}]}
 *
 * A variant's objects are the ones ol itself compiles in the course
 * repository (same compiler, flags and cache layout), debug information
 * stripped; each prebuilt object's key is the hash of its bytes, so the
 * cache and the grade work as with sources. blank/reference/<source> holds
 * as many empty lines as the reference file has lines: gcov reads the line
 * counts against it (reports show the student's own file instead). The
 * coverage objects write their counts to the path recorded in
 * coverage_gcda; prebuilt_units rewrites it to the place in the student's
 * cache where ol's own coverage build would write them. */
#ifndef OL_PREBUILT_H
#define OL_PREBUILT_H

#include <stdbool.h>
#include "build.h"
#include "lesson.h"
#include "workspace.h"

#define PREBUILT_FORMAT 1
#define PREBUILT_MARKER LESSON_RELEASE_MARKER
/* tools/tinyllm, the milestone's command line `ol tinyllm` builds, compiled
 * (its source shares code with the lessons' answers): <stem>.o per file,
 * in a folder no lesson id can name. */
#define PREBUILT_TINYLLM "prebuilt/_tinyllm"
/* The variant folders that are not wheats or mutants. */
#define PREBUILT_REFERENCE "reference"
#define PREBUILT_COVERAGE "coverage"

/* Is the course root a student release (it holds release.json, of any kind
 * but "grader": a grader's copy holds the sources and grades from them)? */
bool prebuilt_release(const ol_ctx *ctx);

/* ROOT/prebuilt/<lesson>/<variant> (caller frees). */
char *prebuilt_variant_dir(ol_ctx *ctx, const char *lesson_id, const char *variant);

/* The lesson's manifest.json, parsed (a cJSON object the caller deletes),
 * or NULL with *err saying what is missing and what to do. */
struct cJSON *prebuilt_manifest(ol_ctx *ctx, const lesson *l, char **err);

/* Fills units[0..l->sources.n) with the objects in variant_dir (the folder
 * prebuilt_variant_dir names): each ok and cached, its key the object's
 * hash, its source the blank copy (what gcov reads). coverage: the objects
 * are first installed in the cache (build/ol/cov/KEY/NAME.o and its .gcno)
 * with their counts' path rewritten to lie beside them. -1 with *err. */
int prebuilt_units(ol_ctx *ctx, const lesson *l, const char *variant_dir, bool coverage,
                   unit *units, char **err);

/* The units of a release's PREBUILT_TINYLLM (*out holds *n, each ok and
 * cached, named tools/tinyllm/<stem>.c), -1 with *err when there are none. */
int prebuilt_tinyllm_units(ol_ctx *ctx, unit **out, int *n, char **err);

/* In an object's bytes, replaces the one NUL-ended occurrence of `from`
 * with `to` (not longer), padded with NULs. -1 when `from` is not there
 * exactly once or `to` is longer. Exposed for ol's tests. */
int prebuilt_rewrite_string(char *bytes, size_t len, const char *from, const char *to);

#endif
