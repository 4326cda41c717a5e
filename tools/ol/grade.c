#include "grade.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lesson.h"
#include "proc.h"
#include "report.h"

/* What a submission may bring: more is refused, not copied in part. */
#define MAX_DEPTH 12
#define MAX_FILES 4000
#define MAX_FILE_BYTES (8LL << 20)
#define MAX_TOTAL_BYTES (64LL << 20)
/* A terminal report longer than this is cut to its head and tail. */
#define MAX_LOG_BYTES (1LL << 20)

bool grade_student_name_ok(const char *name) {
    if (!name || !*name || name[0] == '.') return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("._-@+", *p)))
            return false;
    return true;
}

void csv_field(strbuf *b, const char *text) {
    if (!strpbrk(text, ",\"\r\n")) {
        sb_add(b, text);
        return;
    }
    sb_add(b, "\"");
    for (const char *p = text; *p; p++) sb_add(b, *p == '"' ? "\"\"" : (char[]){*p, 0});
    sb_add(b, "\"");
}

typedef struct {
    int files;
    long long bytes;
    char *refused; /* why the submission was not taken */
} copy_state;

/* Regular files and folders only: a link could lead to another student's
 * files or the course, a FIFO could hang the copy. */
static void copy_tree(const char *from, const char *to, int depth, copy_state *c) {
    if (c->refused) return;
    if (depth > MAX_DEPTH) {
        c->refused = xasprintf("folders nested more than %d deep", MAX_DEPTH);
        return;
    }
    DIR *d = opendir(from);
    if (!d || mkdir_p(to) != 0) {
        if (d) closedir(d);
        c->refused = xasprintf("cannot read %s or create %s: %s", from, to, strerror(errno));
        return;
    }
    struct dirent *e;
    while (!c->refused && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char *src = path_join(from, e->d_name), *dst = path_join(to, e->d_name);
        struct stat st;
        if (lstat(src, &st) == 0 && S_ISDIR(st.st_mode)) {
            copy_tree(src, dst, depth + 1, c);
        } else if (lstat(src, &st) == 0 && S_ISREG(st.st_mode)) {
            c->files++;
            c->bytes += st.st_size;
            if (st.st_size > MAX_FILE_BYTES)
                c->refused = xasprintf("%s has %lld bytes (at most %lld MiB a file)", e->d_name,
                                       (long long)st.st_size, MAX_FILE_BYTES >> 20);
            else if (c->files > MAX_FILES || c->bytes > MAX_TOTAL_BYTES)
                c->refused =
                    xasprintf("more than %d files or %lld MiB", MAX_FILES, MAX_TOTAL_BYTES >> 20);
            else if (copy_file_atomic(src, dst) != 0)
                c->refused = xasprintf("cannot copy %s: %s", e->d_name, strerror(errno));
        } /* links, FIFOs and devices are left out */
        free(src);
        free(dst);
    }
    closedir(d);
}

/* A folder itself, not a symbolic link to one: a link in a submission could
 * lead anywhere on the grader's machine (the course's reference/). */
static bool plain_dir(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_link(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

/* Why a link in place of a submission's folder is not graded. */
static char *link_refused(const char *path) {
    return xasprintf("%s is a symbolic link: a submission holds its folders and files "
                     "themselves, never links (ask the student to submit again without them)",
                     path);
}

/* The submission's c/: SUB/c, SUB itself when it holds tinyllm/ or tests/,
 * or the c/ of its only folder (a workspace zipped with its folder). None
 * of them may be a symbolic link: then *why says which is, and NULL. */
static char *find_code(const char *sub, char **why) {
    *why = is_link(sub) ? link_refused(sub) : NULL;
    const char *names[] = {"c", "tinyllm", "tests"};
    for (size_t i = 0; !*why && i < sizeof names / sizeof *names; i++) {
        char *p = path_join(sub, names[i]);
        if (is_link(p)) *why = link_refused(p);
        free(p);
    }
    if (*why) return NULL;
    char *c = path_join(sub, "c");
    if (plain_dir(c)) return c;
    free(c);
    char *t1 = path_join(sub, "tinyllm"), *t2 = path_join(sub, "tests");
    bool here = plain_dir(t1) || plain_dir(t2);
    free(t1);
    free(t2);
    if (here) return xstrdup(sub);
    DIR *d = opendir(sub);
    char *only = NULL;
    int folders = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char *p = path_join(sub, e->d_name);
        if (plain_dir(p)) {
            folders++;
            free(only);
            only = path_join(p, "c");
        }
        free(p);
    }
    if (d) closedir(d);
    if (folders == 1 && is_link(only)) *why = link_refused(only);
    if (folders == 1 && plain_dir(only)) return only;
    free(only);
    return NULL;
}

/* A report cut to its first and last half megabyte. */
static void cap_log(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size <= MAX_LOG_BYTES) return;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    long long half = MAX_LOG_BYTES / 2;
    char *head = xmalloc((size_t)half), *tail = xmalloc((size_t)half);
    size_t h = fread(head, 1, (size_t)half, f);
    fseeko(f, (off_t)(st.st_size - half), SEEK_SET);
    size_t t = fread(tail, 1, (size_t)half, f);
    fclose(f);
    strbuf b = {0};
    sb_addn(&b, head, h);
    sb_printf(&b, "\n[... ol grade cut %lld bytes of this report ...]\n",
              (long long)st.st_size - (long long)(h + t));
    sb_addn(&b, tail, t);
    write_file_atomic(path, b.s, b.len);
    sb_free(&b);
    free(head);
    free(tail);
}

static const char *const STAGE_VERDICTS[] = {"FAIL-BUILD", "FAIL-COURSE-TESTS", "FAIL-NO-TESTS",
                                             "INVALID",    "FAIL-CANARY",       "FAIL-SCORE"};

/* One row: verdict, score, killed/valid, invalid tests, from the --json report. */
static void row_from_report(const char *json_path, int exit_code, bool timed_out, bool started,
                            strbuf *row) {
    char *text = read_file(json_path, NULL);
    cJSON *r = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *config = cJSON_GetObjectItemCaseSensitive(r, "config");
    const char *verdict = "ERROR";
    if (timed_out)
        verdict = "TIMEOUT";
    else if (!started)
        verdict = "NOT-SUBMITTED";
    else if (exit_code == 0 && config)
        verdict = "PASS";
    else if (config && !cJSON_GetObjectItemCaseSensitive(config, "harnessBroken")) {
        int i = 0;
        const cJSON *st;
        cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(config, "stages")) {
            if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(st, "passed")) && i < 6) {
                verdict = STAGE_VERDICTS[i];
                break;
            }
            i++;
        }
    }
    sb_add(row, verdict);
    sb_add(row, ",");
    const cJSON *score = cJSON_GetObjectItemCaseSensitive(config, "score");
    if (cJSON_IsNumber(score)) sb_printf(row, "%.4f", score->valuedouble);
    sb_add(row, ",");
    int killed = 0, valid = 0;
    const cJSON *file, *m;
    cJSON_ArrayForEach(file, cJSON_GetObjectItemCaseSensitive(r, "files"))
        cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(file, "mutants")) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(m, "status");
        const char *status = cJSON_IsString(s) ? s->valuestring : "";
        bool caught = !strcmp(status, "Killed") || !strcmp(status, "Timeout");
        killed += caught;
        valid += caught || !strcmp(status, "Survived") || !strcmp(status, "NoCoverage");
    }
    if (cJSON_IsNumber(score)) sb_printf(row, "%d/%d", killed, valid);
    sb_add(row, ",");
    strlist names = {0};
    const cJSON *t;
    cJSON_ArrayForEach(
        t, cJSON_GetObjectItemCaseSensitive(config, "invalidTests")) if (cJSON_IsString(t))
        sl_push(&names, t->valuestring);
    char *joined = sl_join(&names, " ");
    csv_field(row, joined);
    free(joined);
    sl_free(&names);
    cJSON_Delete(r);
}

/* Has the student started the lesson: is each of its sources in c/? */
static bool lesson_submitted(ol_ctx *ctx, const char *ws, const char *lesson_id) {
    lesson l;
    char *err = NULL;
    if (lesson_load(ctx->root, lesson_id, &l, &err) != 0) {
        free(err);
        return false;
    }
    bool all = true;
    for (int i = 0; i < l.sources.n && all; i++) {
        char *p = xasprintf("%s/c/%s", ws, l.sources.v[i]);
        all = is_file(p);
        free(p);
    }
    lesson_free(&l);
    return all;
}

int grade_one(const grade_job *g) {
    char *dir = path_join(g->out, g->student);
    char *ws = xasprintf("%s/work/%s", g->out, g->student);
    char *rows_path = path_join(dir, "rows.csv");
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    strbuf rows = {0};
    char *viewer = report_viewer_path(g->ctx);
    int rc = 0;
    char *why = NULL;
    if (mkdir_p(dir) != 0 || mkdir_p(ws) != 0)
        why = xasprintf("cannot create %s: %s", ws, strerror(errno));
    char *code = why ? NULL : find_code(g->submission, &why);
    if (!why && code) {
        copy_state c = {0};
        char *to = path_join(ws, "c");
        copy_tree(code, to, 0, &c);
        free(to);
        why = c.refused;
    }
    for (int i = 0; i < g->lessons->n; i++) {
        const char *id = g->lessons->v[i];
        csv_field(&rows, g->student);
        sb_printf(&rows, ",%s,", id);
        if (why) {
            sb_add(&rows, "ERROR,,,");
            sb_add(&rows, "\n");
            continue;
        }
        char *json = xasprintf("%s/%s.json", dir, id), *html = xasprintf("%s/%s.html", dir, id);
        char *gs = xasprintf("%s/%s.gradescope.json", dir, id),
             *log = xasprintf("%s/%s.txt", dir, id);
        unlink(json);
        proc_job job = {0};
        proc_arg(&job, exe);
        proc_arg(&job, "check");
        proc_arg(&job, id);
        proc_arg(&job, "--ref-deps");
        proc_arg(&job, "--workspace");
        proc_arg(&job, ws);
        proc_arg(&job, "--json");
        proc_arg(&job, json);
        proc_arg(&job, "--gradescope");
        proc_arg(&job, gs);
        if (viewer) { /* the HTML report, where Stryker's viewer is installed */
            proc_arg(&job, "--html");
            proc_arg(&job, html);
        }
        proc_env(&job, "NO_COLOR", "1");
        job.out_path = xstrdup(log);
        job.timeout = g->lesson_timeout;
        if (proc_run(&job) != 0) rc = -1;
        cap_log(log);
        row_from_report(json, job.exit_code, job.timed_out,
                        code && lesson_submitted(g->ctx, ws, id), &rows);
        sb_add(&rows, "\n");
        proc_job_free(&job);
        free(json);
        free(html);
        free(gs);
        free(log);
        if (rc != 0) break; /* interrupted */
    }
    if (why) {
        char *note = path_join(dir, "error.txt");
        char *text = xasprintf("ol grade: the submission was not graded: %s\n", why);
        write_file_atomic(note, text, strlen(text));
        free(text);
        free(note);
        rc = -1;
    }
    write_file_atomic(rows_path, rows.s ? rows.s : "", rows.len);
    sb_free(&rows);
    free(viewer);
    free(why);
    free(code);
    free(rows_path);
    free(ws);
    free(dir);
    return rc;
}
