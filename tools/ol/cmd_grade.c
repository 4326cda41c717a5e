/* ol grade SUBMISSIONS --lessons ... --out DIR: a class at once. One
 * process per submission (grade.c, `ol grade --student`), at most --jobs at
 * once, each with a wall-clock limit; progress as each one ends; then
 * grades.csv. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "grade.h"
#include "lesson.h"
#include "prebuilt.h"
#include "opts.h"
#include "proc.h"

static const char HELP[] =
    "usage: ol grade SUBMISSIONS_DIR --lessons L7.1,... --out DIR [--jobs N] [--timeout SECONDS]\n"
    "\n"
    "Grades every submission: each folder of SUBMISSIONS_DIR is one student (its\n"
    "name, letters, digits and . _ - @ +, is the student's), holding their c/ (or\n"
    "being it). Each is copied into its own workspace under DIR/work/ (regular\n"
    "files only, at most 64 MiB) and graded there by `ol check LESSON --ref-deps`\n"
    "per lesson, in a process of its own: at most N submissions at once (default\n"
    "2), each lesson's check stopped after --timeout seconds (default 900). Tests\n"
    "run in ol check's sandbox, so a hostile submission (an endless loop, a fork\n"
    "bomb, a flood of output, a test that deletes files) can spoil only its own\n"
    "grade. Writes DIR/<student>/<lesson>.{txt,json,html,gradescope.json}, and\n"
    "DIR/grades.csv: student, lesson, verdict, score, killed/valid, invalid tests.\n"
    "Verdicts: PASS, FAIL-BUILD, FAIL-COURSE-TESTS, FAIL-NO-TESTS, INVALID,\n"
    "FAIL-CANARY, FAIL-SCORE, NOT-SUBMITTED, TIMEOUT, ERROR (not graded: why is in\n"
    "DIR/<student>/). DIR must be new or empty.\n"
    "\n"
    "  --lessons IDS     comma-separated lesson ids\n"
    "  --out DIR         where the reports and grades.csv go\n"
    "  --jobs N          submissions graded at once (each runs one program at a time)\n"
    "  --timeout S       seconds for one lesson's check\n"
    "  --student NAME    grade only SUBMISSIONS_DIR/NAME (what ol grade runs for each)\n"
    "\n"
    "Exit status: 0 every submission graded, 1 some could not be (ERROR, TIMEOUT),\n"
    "2 usage.\n";

typedef struct {
    const char *out;
    int total, done;
    double started, slowest;
    char *slowest_name;
} progress;

typedef struct {
    progress *p;
    const char *student;
} job_data;

/* Said as each submission ends: done/total, its verdicts, the time so far
 * and the slowest submission yet. */
static void on_done(proc_job *j) {
    job_data *d = j->data;
    progress *p = d->p;
    p->done++;
    if (j->seconds > p->slowest) {
        p->slowest = j->seconds;
        free(p->slowest_name);
        p->slowest_name = shown_text(d->student); /* a folder's name, as a terminal may show it */
    }
    char *rows_path = xasprintf("%s/%s/rows.csv", p->out, d->student);
    char *rows = read_file(rows_path, NULL);
    strbuf said = {0};
    for (char *save = NULL, *line = rows ? strtok_r(rows, "\n", &save) : NULL; line;
         line = strtok_r(NULL, "\n", &save)) {
        /* "student,lesson,verdict,...": the lesson and the verdict */
        char *lesson = strchr(line, ',');
        char *verdict = lesson ? strchr(lesson + 1, ',') : NULL;
        if (!verdict) continue;
        sb_printf(&said, "%s%.*s %.*s", said.len ? ", " : "", (int)(verdict - lesson - 1),
                  lesson + 1, (int)strcspn(verdict + 1, ","), verdict + 1);
    }
    double elapsed = now_seconds() - p->started;
    char *student = shown_text(d->student);
    printf("[%d/%d] %s: %s (%.1f s)   elapsed %d:%02d, slowest so far %s (%.1f s)\n", p->done,
           p->total, student,
           j->timed_out ? "stopped: ran past its time"
           : said.len   ? said.s
                        : "no grade",
           j->seconds, (int)elapsed / 60, (int)elapsed % 60, p->slowest_name, p->slowest);
    fflush(stdout);
    free(student);
    sb_free(&said);
    free(rows);
    free(rows_path);
}

static void split_ids(const char *text, strlist *out) {
    char *copy = xstrdup(text ? text : "");
    for (char *save = NULL, *w = strtok_r(copy, ", ", &save); w; w = strtok_r(NULL, ", ", &save))
        if (!sl_contains(out, w)) sl_push(out, w);
    free(copy);
}

static bool empty_or_missing(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n == 0;
}

/* The rows of one submission, or rows saying why it has none. */
static void collect(const char *out, const char *student, const strlist *lessons, bool timed_out,
                    strbuf *csv, int *ungraded) {
    char *path = xasprintf("%s/%s/rows.csv", out, student);
    char *rows = read_file(path, NULL);
    free(path);
    int lines = 0;
    for (const char *p = rows; p && *p; p++) lines += *p == '\n';
    if (rows && lines == lessons->n) {
        sb_add(csv, rows);
        for (const char *p = rows; (p = strstr(p, ",ERROR,")) != NULL; p++) (*ungraded)++;
        for (const char *p = rows; (p = strstr(p, ",TIMEOUT,")) != NULL; p++) (*ungraded)++;
    } else {
        /* the grading process itself was stopped (its time limit) or died */
        for (int i = 0; i < lessons->n; i++) {
            csv_field(csv, student);
            sb_printf(csv, ",%s,%s,,,\n", lessons->v[i], timed_out ? "TIMEOUT" : "ERROR");
            (*ungraded)++;
        }
    }
    free(rows);
}

static int grade_all(const char *subs, const strlist *lessons, const char *lesson_arg,
                     const char *out, int jobs, double timeout) {
    DIR *d = opendir(subs);
    if (!d) {
        ol_error("cannot read the submissions folder %s: %s", subs, strerror(errno));
        return OL_USAGE;
    }
    strlist students = {0};
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *p = path_join(subs, e->d_name);
        if (e->d_name[0] != '.' && is_dir(p)) {
            if (grade_student_name_ok(e->d_name))
                sl_push(&students, e->d_name);
            else
                ol_warn(
                    "%s: skipped: a student's folder name has only letters, digits and . _ - @ +",
                    p);
        }
        free(p);
    }
    closedir(d);
    sl_sort(&students);
    if (students.n == 0) {
        ol_error("%s holds no submission folder: one folder per student, each holding their c/",
                 subs);
        sl_free(&students);
        return OL_USAGE;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    progress p = {
        .out = out, .total = students.n, .started = now_seconds(), .slowest_name = xstrdup("-")};
    proc_job *all = xcalloc((size_t)students.n, sizeof *all);
    job_data *data = xcalloc((size_t)students.n, sizeof *data);
    char *t = xasprintf("%g", timeout);
    printf("ol grade: %d submission%s, %s, %d at a time\n", students.n, students.n == 1 ? "" : "s",
           lesson_arg, jobs);
    fflush(stdout);
    for (int i = 0; i < students.n; i++) {
        proc_job *j = &all[i];
        char *dir = path_join(out, students.v[i]);
        mkdir_p(dir);
        proc_arg(j, exe);
        proc_arg(j, "grade");
        proc_arg(j, subs);
        proc_arg(j, "--student");
        proc_arg(j, students.v[i]);
        proc_arg(j, "--lessons");
        proc_arg(j, lesson_arg);
        proc_arg(j, "--out");
        proc_arg(j, out);
        proc_arg(j, "--timeout");
        proc_arg(j, t);
        proc_env(j, "OL_JOBS", "1"); /* N submissions: N programs at once */
        j->out_path = path_join(dir, "grade.log");
        j->timeout = lessons->n * timeout + 120;
        data[i] = (job_data){.p = &p, .student = students.v[i]};
        j->data = &data[i];
        j->on_done = on_done;
        free(dir);
    }
    int rc = proc_run_all(all, students.n, jobs) == 0 ? OL_PASS : 130;
    strbuf csv = {0};
    sb_add(&csv, GRADE_CSV_HEADER "\n");
    int ungraded = 0;
    for (int i = 0; i < students.n; i++)
        collect(out, students.v[i], lessons, all[i].timed_out, &csv, &ungraded);
    char *csv_path = path_join(out, "grades.csv");
    if (rc == OL_PASS && write_file_atomic(csv_path, csv.s, csv.len) != 0) {
        ol_error("cannot write %s: %s", csv_path, strerror(errno));
        rc = OL_USAGE;
    }
    /* the workspaces (sources and build caches); the reports stay */
    char *work = path_join(out, "work");
    if (is_dir(work)) remove_tree(work, out);
    free(work);
    double elapsed = now_seconds() - p.started;
    if (rc == OL_PASS) {
        printf("ol grade: %d submission%s graded in %.0f s (%.1f a minute); %s\n", students.n,
               students.n == 1 ? "" : "s", elapsed, elapsed > 0 ? students.n * 60.0 / elapsed : 0,
               csv_path);
        if (ungraded)
            printf("ol grade: %d row%s of grades.csv could not be graded (ERROR or TIMEOUT): "
                   "DIR/<student>/ says why\n",
                   ungraded, ungraded == 1 ? "" : "s");
        if (ungraded) rc = OL_FAIL;
    }
    for (int i = 0; i < students.n; i++) proc_job_free(&all[i]);
    free(all);
    free(data);
    free(t);
    free(csv_path);
    sb_free(&csv);
    free(p.slowest_name);
    sl_free(&students);
    return rc;
}

int cmd_grade(int argc, char **argv) {
    const char *lessons = NULL, *out = NULL, *jobs_text = NULL, *timeout_text = NULL,
               *student = NULL;
    const ol_option opts[] = {
        {"lessons", 0, "IDS", &lessons, NULL},  {"out", 'o', "DIR", &out, NULL},
        {"jobs", 'j', "N", &jobs_text, NULL},   {"timeout", 0, "SECONDS", &timeout_text, NULL},
        {"student", 0, "NAME", &student, NULL}, {0}};
    strlist args = {0};
    opts_result parsed = opts_parse("grade", argc, argv, opts, 0, &args);
    if (parsed != OPTS_RUN) {
        sl_free(&args);
        return parsed == OPTS_HELP ? print_help(HELP) : OL_USAGE;
    }
    int jobs = jobs_text ? atoi(jobs_text) : 2;
    double timeout = timeout_text ? atof(timeout_text) : 900;
    int rc = OL_USAGE;
    strlist ids = {0};
    split_ids(lessons, &ids);
    if (args.n != 1)
        rc = usage_error("grade", "give the folder of submissions, e.g. `ol grade submissions/ "
                                  "--lessons L7.1 --out grades/`");
    else if (!ids.n)
        rc = usage_error("grade", "--lessons names the lessons to grade, e.g. --lessons L7.1,L7.2");
    else if (!out)
        rc = usage_error("grade", "--out DIR says where the reports and grades.csv go");
    else if (jobs < 1)
        rc = usage_error("grade", "--jobs must be 1 or more");
    else if (timeout <= 0)
        rc = usage_error("grade", "--timeout must be a positive number of seconds");
    else if (student && !grade_student_name_ok(student))
        rc = usage_error("grade", "--student takes a folder name of letters, digits and . _ - @ +");
    else if (!student && !empty_or_missing(out))
        rc = usage_error(
            "grade", "%s is not empty: give a new folder (ol grade never overwrites grades)", out);
    else {
        ol_ctx ctx;
        int ready = ctx_init(&ctx, NULL) == 0;
        if (ready && prebuilt_release(&ctx)) {
            /* one fixed build of each control, which a suite can recognise (grading.md) */
            ol_error("this is a student release: its reference and wheats are one fixed build "
                     "each, so its grades are feedback, not grades. Grade a class in the course "
                     "repository (`ol grade` there), or with Gradescope's autograder (`ol dist "
                     "--gradescope`), where every run builds them anew");
            ctx_free(&ctx);
            rc = OL_USAGE;
        } else if (ready) {
            rc = OL_PASS;
            for (int i = 0; i < ids.n && rc == OL_PASS; i++) {
                lesson l;
                char *err = NULL;
                if (lesson_load(ctx.root, ids.v[i], &l, &err) != 0) {
                    ol_error("%s", err);
                    free(err);
                    rc = OL_USAGE;
                } else {
                    lesson_free(&l);
                }
            }
            char abs_out[PATH_MAX];
            if (rc == OL_PASS && (mkdir_p(out) != 0 || !realpath(out, abs_out))) {
                ol_error("cannot create %s: %s", out, strerror(errno));
                rc = OL_USAGE;
            }
            if (rc == OL_PASS && student) {
                char *sub = path_join(args.v[0], student);
                grade_job g = {.ctx = &ctx,
                               .student = student,
                               .submission = sub,
                               .out = abs_out,
                               .lessons = &ids,
                               .lesson_timeout = timeout};
                rc = grade_one(&g) == 0 ? OL_PASS : OL_FAIL;
                free(sub);
            } else if (rc == OL_PASS) {
                char *joined = sl_join(&ids, ",");
                rc = grade_all(args.v[0], &ids, joined, abs_out, jobs, timeout);
                free(joined);
            }
            ctx_free(&ctx);
        }
    }
    sl_free(&ids);
    sl_free(&args);
    return rc;
}
