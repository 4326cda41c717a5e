/* mutant: the .mutant and .wheat files of course/L7.x (course/FORMAT.md): a
 * header of "Key: value" lines, a line "---", then a unified diff against
 * reference/, applied with GNU patch to a scratch copy of the reference. */
#ifndef OL_MUTANT_H
#define OL_MUTANT_H

#include <stdbool.h>
#include "hash.h"
#include "lesson.h"
#include "util.h"
#include "workspace.h"

/* One line the diff removes or changes, in the original file. */
typedef struct {
    char *file;     /* relative to reference/ */
    int line;       /* 1-based, in the unmutated reference */
    int column;     /* 1-based: where the change starts on that line */
    int end_column; /* exclusive */
    bool inserted;  /* lines were only added before this line */
    char *function; /* the reference's function holding the line, where a student
                       release's manifest says it (its reference is not there to
                       read); else NULL */
} changed_line;

typedef struct mutant {
    bool wheat;          /* a correct variant (Wheat:) rather than a fault (Mutant:) */
    char *id;            /* s01, w01 */
    char *pitfall;       /* the chapter's pitfall number, or "-" */
    char *title, *symptom, *hint;
    strlist caught_by;   /* course tests that must kill it */
    char *path;          /* the file it came from */
    char *diff;          /* the unified diff */
    int diff_line;       /* the file's line of the diff's first line (patch counts from it) */
    char *replacement;   /* the added lines, for reports */
    changed_line *changes;
    int nchanges;
    char key[HASH_HEX];  /* hash of the file: part of its library's key */
} mutant;

/* Every *.mutant (or *.wheat) in dir, sorted by file name. A file that does
 * not parse is an error naming the file and line: returns -1 with *err. */
int mutants_load(const char *dir, bool wheats, mutant **out, int *n, char **err);
/* The same from a student release's manifest (prebuilt.h), which holds
 * every header field but Caught-by, and each change's place, but no diff. */
int mutants_load_prebuilt(ol_ctx *ctx, const lesson *l, bool wheats, mutant **out, int *n,
                          char **err);
/* Parses one file; refuses (file:line) what `ol mutants new` would refuse: an id
 * off the pattern (s01 for mutants, w01 for wheats), a file name not starting with
 * the id, a Pitfall that is neither a number nor "-". */
int mutant_parse(const char *path, const char *text, bool wheat, mutant *m, char **err);
/* The one of others[0..n) making m's change (blanks aside), or NULL; the error
 * naming both files. mutants_load refuses twins within a folder; callers that
 * hold mutants and wheats check across them. */
const mutant *mutant_twin(const mutant *m, const mutant *others, int n);
char *mutant_twin_error(const mutant *m, const mutant *twin);
/* Files of dir that are not *.mutant (or *.wheat), e.g. "s05-x.mutatn": never
 * read, so a misspelt extension drops a mutant silently unless said. */
void mutants_stray_files(const char *dir, bool wheats, strlist *out);
void mutants_free(mutant *m, int n);
void mutant_free(mutant *m);

/* A folder holding reference/<source> for every source of the lesson with
 * the diff applied exactly (no offset, no fuzz), cached by (reference
 * sources, diff); in a student release, the folder of the variant's
 * prebuilt objects. On failure (a stale mutant) returns NULL and *err
 * quotes patch and says to run `ol mutants rebase`. */
char *mutant_apply(ol_ctx *ctx, const lesson *l, const mutant *m, char **err);

/* m's diff re-anchored on the current reference: applied to a scratch
 * copy with GNU patch's offsets and fuzz, then diffed again against the
 * reference. NULL with *err (which hunk patch could not place, and why). */
char *mutant_rebase_diff(ol_ctx *ctx, const lesson *l, const mutant *m, char **err);
/* A mutant file's header, through its "---" line; NULL when it has none. */
char *mutant_header(const char *text);

/* The first changed line, for "file:line: warning: Survived ..." */
const changed_line *mutant_first_change(const mutant *m);

#endif
