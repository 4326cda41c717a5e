/* lesson: course/L7.x/lesson.json, validated once, here, against
 * course/FORMAT.md: every command that reads a lesson loads it through
 * lesson_load, and `ol lesson show` is how scripts and the Makefile read
 * one. Unknown keys, wrong types, malformed ids and paths that are not
 * there are errors naming the file, the key and the fix. */
#ifndef OL_LESSON_H
#define OL_LESSON_H

#include <stdbool.h>
#include "util.h"

typedef struct lesson {
    char *id, *slug, *title, *rung;
    bool draft;                /* not open to students yet: hidden from `ol list` and `ol start` */
    int level;                 /* 1..5 from the rung */
    double threshold;          /* mutation score to reach (R3+), from the rung or "threshold" */
    strlist needs;             /* lesson ids this lesson links */
    strlist sources;           /* relative to stubs/, reference/ and the student's c/ */
    strlist contracts;         /* relative to contracts/ */
    strlist required_pitfalls; /* mutant ids */
    strlist link;              /* extra linker flags; files made absolute by lesson_load */
    strlist release_files;     /* more files or folders (relative to the root) a release carries */
    char *course_tests;        /* folder, relative to the root */
    char *hidden_tests;        /* folder of course tests `ol dist` leaves out, or NULL */
    char *student_tests;       /* folder, relative to c/ */
    char *model_tests;         /* folder, relative to the root, or NULL */
    char *fixtures, *oracle;   /* folders, relative to the root, or NULL */
    char *example_test;        /* file relative to the root that `ol start` copies, or NULL */
    double test_timeout;       /* seconds per course test */
    double test_memory_mb;     /* what a test program may use, all its processes together (4096) */
    char *dir;                 /* absolute course/L7.x (lesson_load only) */
} lesson;

/* A course root is the course repository, a student release or a grader's
 * copy of one (`ol dist`): a release holds LESSON_RELEASE_MARKER, whose
 * "kind" is "student" or "grader". In a release lesson_load does not ask
 * for the oracle; in a student release, not for the reference's source or
 * the mutant files either (they are compiled objects there, prebuilt.h). */
#define LESSON_RELEASE_MARKER "release.json"
typedef enum { RELEASE_NONE, RELEASE_STUDENT, RELEASE_GRADER } release_kind;
release_kind lesson_release_kind(const char *root);

/* The keys course/FORMAT.md documents, NULL-ended. */
extern const char *const LESSON_KEYS[];

/* The schema alone (no file is looked at): keys, types, ids, the forms of
 * paths. `file` names the text in messages. -1 with *err (every problem,
 * one a line; caller frees). */
int lesson_parse(const char *file, const char *text, lesson *out, char **err);

/* Loads and validates ROOT/course/ID/lesson.json: the schema, then that
 * every path it names is there (stubs/ and reference/ sources, contracts,
 * test folders, fixtures, the oracle, the example test, the lessons it
 * needs, a mutant for each required pitfall). -1 with *err naming the file,
 * each key and what to do (caller frees). */
int lesson_load(const char *root, const char *id, lesson *out, char **err);
/* The same, for the commands that make what is missing: `ol fixtures`
 * (the fixtures folder) and `ol lesson stub` (the stubs). */
enum { LESSON_FIXTURES_MAY_BE_MISSING = 1, LESSON_STUBS_MAY_BE_MISSING = 2 };
int lesson_load_flags(const char *root, const char *id, unsigned flags, lesson *out, char **err);
void lesson_free(lesson *l);

/* The ids of ROOT/course/<id>/lesson.json, in natural order (L7.2 before
 * L7.10), whether they load or not. -1 when there is no course/. */
int lesson_ids(const char *root, strlist *ids);
/* The id of a lesson other than `except` whose lesson.json lists `entry` under
 * `key` ("sources", "contracts"), or NULL (caller frees). */
char *lesson_owner(const char *root, const char *key, const char *entry, const char *except);
/* Every lesson that loads, in natural id order; the others are reported on
 * stderr and skipped. */
int lesson_load_all(const char *root, lesson **out, int *n);
void lessons_free(lesson *ls, int n);

/* The lessons l needs, transitively, dependencies first. -1 with *err on a
 * missing lesson or a cycle. */
int lesson_needs_closure(const char *root, const lesson *l, lesson **out, int *n, char **err);

/* test_memory_mb in bytes. */
long long lesson_memory_bytes(const lesson *l);
/* A lesson id: a letter, then letters, digits, '.', '-', '_' (L7.1). */
bool lesson_id_valid(const char *id);
/* A mutant id ("s" and two or more digits) or, with wheat, a wheat's ("w01"). */
bool variant_id_valid(const char *id, bool wheat);

/* "R3" -> 3; 0 when not R1..R5. */
int rung_level(const char *rung);
/* The mutation threshold a rung asks for (0 for R1, R2). */
double rung_threshold(int level);

#endif
