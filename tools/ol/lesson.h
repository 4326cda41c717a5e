/* lesson: course/L7.x/lesson.json, read exactly as course/FORMAT.md says. */
#ifndef OL_LESSON_H
#define OL_LESSON_H

#include <stdbool.h>
#include "util.h"

typedef struct lesson {
    char *id, *slug, *title, *rung;
    int level;                 /* 1..5 from the rung */
    double threshold;          /* mutation score to reach (R3+), from the rung or "threshold" */
    strlist needs;             /* lesson ids this lesson links */
    strlist sources;           /* relative to stubs/, reference/ and the student's c/ */
    strlist contracts;         /* relative to contracts/ */
    strlist required_pitfalls; /* mutant ids */
    strlist link;              /* extra linker flags */
    char *course_tests;        /* folder, relative to the root */
    char *student_tests;       /* folder, relative to c/ */
    char *model_tests;         /* folder, relative to the root, or NULL */
    char *fixtures, *oracle;   /* folders, relative to the root, or NULL */
    char *example_test;        /* file relative to the root that `ol start` copies, or NULL */
    double test_timeout;       /* seconds per course test */
    double test_memory_mb;     /* what a test program may use, all its processes together (4096) */
    char *dir;                 /* absolute course/L7.x */
} lesson;

/* Loads ROOT/course/ID/lesson.json. On failure returns -1 and sets *err to
 * a message naming the file, the key and what to do (caller frees). */
int lesson_load(const char *root, const char *id, lesson *out, char **err);
void lesson_free(lesson *l);

/* Every lesson under ROOT/course, in natural id order (L7.2 before L7.10).
 * Lessons that fail to load are reported on stderr and skipped. */
int lesson_load_all(const char *root, lesson **out, int *n);
void lessons_free(lesson *ls, int n);

/* The lessons l needs, transitively, dependencies first. -1 with *err on a
 * missing lesson or a cycle. */
int lesson_needs_closure(const char *root, const lesson *l, lesson **out, int *n, char **err);

/* test_memory_mb in bytes. */
long long lesson_memory_bytes(const lesson *l);

/* "R3" -> 3; 0 when not R1..R5. */
int rung_level(const char *rung);
/* The mutation threshold a rung asks for (0 for R1, R2). */
double rung_threshold(int level);

#endif
