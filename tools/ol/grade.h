/* grade: one student's submission graded as `ol grade` does it, in a
 * process of its own (cmd_grade.c runs one per submission, N at a time):
 * the submission copied into a fresh workspace (regular files only, within
 * limits), then `ol check` per lesson as a child with a wall-clock limit,
 * its reports kept in OUT/<student>/, and one row per lesson for
 * grades.csv. Whatever the student's code or tests do, they run inside
 * ol check's sandbox and this process's limits: nothing is shared with the
 * other submissions but the read-only course. */
#ifndef OL_GRADE_H
#define OL_GRADE_H

#include "util.h"
#include "workspace.h"

/* The CSV's columns, in order. */
#define GRADE_CSV_HEADER "student,lesson,verdict,score,killed/valid,invalid tests"

typedef struct {
    ol_ctx *ctx;            /* the course */
    const char *student;    /* the submission folder's name */
    const char *submission; /* the folder */
    const char *out;        /* OUT: reports go to OUT/<student>/ */
    const strlist *lessons;
    double lesson_timeout; /* seconds per `ol check` */
} grade_job;

/* Grades one submission; writes OUT/<student>/rows.csv (one row per
 * lesson, no header) and the reports. 0, or -1 when the submission could
 * not even be laid out (said why; rows say "error"). */
int grade_one(const grade_job *g);

/* A CSV field, quoted when it holds a comma, a quote or a line break. */
void csv_field(strbuf *b, const char *text);

/* Is `name` a folder name ol grade takes for a student (letters, digits and
 * . _ - @ +, not starting with '.')? */
bool grade_student_name_ok(const char *name);

#endif
