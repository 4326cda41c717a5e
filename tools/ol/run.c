#include "run.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "codegen.h"
#include "proc.h"
#include "landlock.h"
#include "sandbox.h"
#include "testgen.h"

#define OUTPUT_TAIL 4000
#define MESSAGE_MAX 2000          /* a longer assertion message is cut */
#define LOG_MAX (16 << 20)        /* how much of a log ol reads */
/* What a test program may use (a runaway test crashes, the machine stays up). */
#define TEST_MEMORY (4LL << 30)   /* heap and other writable data */
#define TEST_FILE_SIZE (64LL << 20)  /* any file, its output included */
#define TEST_EXTRA_TASKS 256      /* processes and threads */
/* How long past a test's timeout a program may go without finishing a
 * test (its start, the kill of a test that timed out) before ol stops it. */
#define IDLE_GRACE 5.0
/* fill_idle runs: at most this many times ctx->jobs at once (proc_run_filling) */
#define FILL_FACTOR 4
/* Every variant's program is the same file to the test: one name, a size
 * padded to this grain, one date. */
#define PROGRAM_NAME "tests"
#define PROGRAM_GRAIN (64 << 10)
#define PROGRAM_TIME 946684800    /* 2000-01-01 */

static const char *const STATUS_NAMES[] = {"pass", "fail", "crash", "timeout", "exit", "missing"};

const char *test_status_name(test_status s) { return STATUS_NAMES[s]; }

static test_status status_from_name(const char *s) {
    for (int i = 0; i < 6; i++)
        if (s && strcmp(s, STATUS_NAMES[i]) == 0) return (test_status)i;
    return TEST_MISSING;
}

/* ---- parsing Check's logs ---- */

static void classify(test_result *t, bool ok) {
    const char *m = t->message ? t->message : "";
    int value;
    if (ok) t->status = TEST_PASS;
    else if (sscanf(m, "Received signal %d", &value) == 1) {
        t->status = TEST_CRASH;
        t->signal = value;
    } else if (strncmp(m, "Test timeout expired", 20) == 0) t->status = TEST_TIMEOUT;
    else if (strncmp(m, "Early exit with return value", 28) == 0) t->status = TEST_EXIT;
    else t->status = TEST_FAIL;
}

/* "ok 3 - FILE:TCASE:TEST: MESSAGE" (Check 0.15's TAP). A message may span
 * lines: the lines that follow, up to the next result, belong to it. */
int parse_tap(const char *text, test_result **out, int *n) {
    *out = NULL;
    *n = 0;
    char *copy = xstrdup(text ? text : "");
    test_result *last = NULL;
    bool last_ok = false;
    for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        bool ok = strncmp(line, "ok ", 3) == 0;
        bool not_ok = strncmp(line, "not ok ", 7) == 0;
        if (!ok && !not_ok) {
            if (last && strncmp(line, "1..", 3) != 0 && strlen(last->message) < MESSAGE_MAX) {
                char *more = xasprintf("%s\n%s", last->message, line);
                free(last->message);
                last->message = more;
            }
            continue;
        }
        char *rest = strstr(line, " - ");
        if (!rest) continue;
        rest += 3;
        char *colon_space = strstr(rest, ": ");
        char *msg = colon_space ? colon_space + 2 : (char *)"";
        char *head = xstrndup(rest, colon_space ? (size_t)(colon_space - rest) : strlen(rest));
        char *name = strrchr(head, ':');
        if (!name) {
            free(head);
            continue;
        }
        *name++ = 0;
        char *tcase = strrchr(head, ':');
        if (tcase) *tcase++ = 0;
        if (last) classify(last, last_ok);
        *out = xrealloc(*out, (size_t)(*n + 1) * sizeof **out);
        last = &(*out)[(*n)++];
        memset(last, 0, sizeof *last);
        last->name = xstrdup(name);
        last->tcase = xstrdup(tcase ? tcase : "");
        last->file = xstrdup(tcase ? head : "");
        last->message = strlen(msg) > MESSAGE_MAX ? xasprintf("%.*s [... cut]", MESSAGE_MAX, msg)
                                                  : xstrdup(msg);
        last->seconds = -1;
        last_ok = ok;
        free(head);
    }
    if (last) classify(last, last_ok);
    free(copy);
    return 0;
}

/* "FILE:LINE:R:TCASE:TEST:ITER: MESSAGE" (Check's plain log): the file and
 * line of each result, which the TAP log leaves out. */
void merge_log(const char *text, test_result *t, int n) {
    char *copy = xstrdup(text ? text : "");
    bool *used = xcalloc((size_t)n + 1, sizeof *used);
    for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        /* find ":<digits>:<P|F|E>:" */
        char *p = line, *file_end = NULL;
        long lineno = 0;
        while ((p = strchr(p, ':')) != NULL) {
            char *q = p + 1;
            if (isdigit((unsigned char)*q)) {
                char *end;
                long v = strtol(q, &end, 10);
                if (end[0] == ':' && strchr("PFE", end[1]) && end[1] && end[2] == ':') {
                    file_end = p;
                    lineno = v;
                    p = end + 3;
                    break;
                }
            }
            p++;
        }
        if (!file_end) continue;
        char *tcase = p, *c1 = strchr(tcase, ':');
        if (!c1) continue;
        char *name = c1 + 1, *c2 = strchr(name, ':');
        if (!c2) continue;
        *c1 = *c2 = 0;
        for (int i = 0; i < n; i++) {
            if (used[i] || strcmp(t[i].name, name) != 0 || strcmp(t[i].tcase, tcase) != 0) continue;
            used[i] = true;
            free(t[i].file);
            t[i].file = xstrndup(line, (size_t)(file_end - line));
            t[i].line = (int)lineno;
            break;
        }
    }
    free(used);
    free(copy);
}

/* Check's XML log is the one that records each test's duration. */
static void merge_durations(const char *xml, test_result *t, int n) {
    const char *p = xml;
    while (p && (p = strstr(p, "<id>")) != NULL) {
        p += 4;
        const char *end = strstr(p, "</id>");
        if (!end) break;
        char *name = xstrndup(p, (size_t)(end - p));
        const char *d = strstr(end, "<duration>");
        const char *next = strstr(end, "<id>");
        if (d && (!next || d < next)) {
            double secs = atof(d + 10);
            for (int i = 0; i < n; i++)
                if (strcmp(t[i].name, name) == 0 && t[i].seconds < 0) {
                    t[i].seconds = secs;
                    break;
                }
        }
        free(name);
        p = end;
    }
}

/* ---- results as JSON, for the cache ---- */

static cJSON *result_to_json(const run_result *r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "exit", r->exit_code);
    cJSON_AddNumberToObject(o, "signal", r->term_signal);
    cJSON_AddBoolToObject(o, "watchdog", r->watchdog);
    cJSON_AddNumberToObject(o, "seconds", r->seconds);
    cJSON_AddStringToObject(o, "output", r->output ? r->output : "");
    cJSON *tests = cJSON_AddArrayToObject(o, "tests");
    for (int i = 0; i < r->n; i++) {
        const test_result *t = &r->t[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", t->name);
        cJSON_AddStringToObject(x, "tcase", t->tcase ? t->tcase : "");
        cJSON_AddStringToObject(x, "file", t->file ? t->file : "");
        cJSON_AddNumberToObject(x, "line", t->line);
        cJSON_AddStringToObject(x, "status", test_status_name(t->status));
        cJSON_AddNumberToObject(x, "signal", t->signal);
        cJSON_AddStringToObject(x, "message", t->message ? t->message : "");
        cJSON_AddNumberToObject(x, "seconds", t->seconds);
        cJSON_AddBoolToObject(x, "out_of_memory", t->out_of_memory);
        cJSON_AddItemToArray(tests, x);
    }
    return o;
}

static const char *jstr(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static double jnum(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static int result_from_json(const char *text, run_result *r) {
    cJSON *o = cJSON_Parse(text);
    const cJSON *tests = cJSON_GetObjectItemCaseSensitive(o, "tests");
    if (!o || !cJSON_IsArray(tests)) {
        cJSON_Delete(o);
        return -1;
    }
    r->exit_code = (int)jnum(o, "exit");
    r->term_signal = (int)jnum(o, "signal");
    r->watchdog = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "watchdog"));
    if (r->watchdog) { /* never written: a result ol had to stop is not kept */
        cJSON_Delete(o);
        return -1;
    }
    r->seconds = jnum(o, "seconds");
    r->output = xstrdup(jstr(o, "output"));
    r->n = cJSON_GetArraySize(tests);
    r->t = xcalloc((size_t)r->n, sizeof *r->t);
    int i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, tests) {
        test_result *t = &r->t[i++];
        t->name = xstrdup(jstr(x, "name"));
        t->tcase = xstrdup(jstr(x, "tcase"));
        t->file = xstrdup(jstr(x, "file"));
        t->line = (int)jnum(x, "line");
        t->status = status_from_name(jstr(x, "status"));
        t->signal = (int)jnum(x, "signal");
        t->message = xstrdup(jstr(x, "message"));
        t->seconds = jnum(x, "seconds");
        t->out_of_memory = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "out_of_memory"));
    }
    cJSON_Delete(o);
    return 0;
}

/* ---- running ---- */

void run_spec_key(ol_ctx *ctx, const run_spec *s, char out[HASH_HEX]) {
    hasher *h = hash_new();
    hash_str(h, "run-4"); /* 4: jailed where possible; an unfinished runner gives no result */
    hash_str(h, ctx->toolchain);
    hash_str(h, s->bin_key);
    hash_str(h, s->filter ? s->filter : "");
    hash_str(h, s->exact ? "exact" : "");
    hash_str(h, s->no_fork ? "no-fork" : "");
    hash_str(h, s->tcase ? s->tcase : "");
    char t[96];
    snprintf(t, sizeof t, "%.3f %d %d %lld", s->timeout, s->threads, s->replica, s->memory_bytes);
    hash_str(h, t);
    hash_str(h, s->data_key ? s->data_key : "");
    for (int i = 0; s->tests && i < s->tests->n; i++) hash_str(h, s->tests->v[i]);
    /* what a test could reach changes what it does */
    static char *mode;
    if (!mode) {
        strlist keep_out = {0};
        sl_push(&keep_out, ctx->root);
        sl_push(&keep_out, ctx->ws);
        mode = sandbox_mode(&keep_out);
        sl_free(&keep_out);
    }
    hash_str(h, mode);
    hash_done(h, out);
}

/* Orders results as the expected names, marking absent ones missing. */
static void settle(run_result *r, test_result *found, int nfound, const strlist *expected,
                   const char *filter) {
    r->t = NULL;
    r->n = 0;
    bool *taken = xcalloc((size_t)nfound + 1, sizeof *taken);
    for (int i = 0; expected && i < expected->n; i++) {
        const char *name = expected->v[i];
        if (filter && !strstr(name, filter)) continue;
        r->t = xrealloc(r->t, (size_t)(r->n + 1) * sizeof *r->t);
        test_result *dst = &r->t[r->n++];
        int k;
        for (k = 0; k < nfound; k++)
            if (!taken[k] && strcmp(found[k].name, name) == 0) break;
        if (k < nfound) {
            *dst = found[k];
            taken[k] = true;
            /* Check reports each test once: a second result was written by
             * the test itself, so neither can be believed */
            bool forged = false;
            for (int j = k + 1; j < nfound; j++)
                if (!taken[j] && strcmp(found[j].name, name) == 0) {
                    taken[j] = forged = true;
                    free(found[j].name);
                    free(found[j].tcase);
                    free(found[j].file);
                    free(found[j].message);
                }
            if (forged) {
                dst->status = TEST_FAIL;
                dst->line = 0;
                free(dst->message);
                dst->message = xstrdup(
                    "two results for this test in Check's log: something other than Check "
                    "wrote to it, so the test counts as failed (a test must not write to "
                    "the files named by CK_*_LOG_FILE_NAME)");
            }
        } else {
            memset(dst, 0, sizeof *dst);
            dst->name = xstrdup(name);
            dst->tcase = xstrdup("");
            dst->file = xstrdup("");
            dst->status = TEST_MISSING;
            dst->message = xstrdup("no result: the test program stopped before this test ran");
            dst->seconds = -1;
        }
    }
    for (int k = 0; k < nfound; k++) {
        if (taken[k]) continue;
        r->t = xrealloc(r->t, (size_t)(r->n + 1) * sizeof *r->t);
        r->t[r->n++] = found[k];
    }
    free(taken);
    free(found);
}

/* At most `max` bytes of a file from `from_end` bytes before its end (0:
 * from its start); NULL when it cannot be read. A test's output or log can
 * be as large as the file-size limit: ol reads only what it shows. */
static char *read_part(const char *path, long long max, bool tail) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    struct stat st;
    long long size = fstat(fileno(f), &st) == 0 ? (long long)st.st_size : 0;
    bool cut = tail && size > max;
    if (cut) fseeko(f, (off_t)(size - max), SEEK_SET);
    char *buf = xmalloc((size_t)max + 1);
    size_t got = fread(buf, 1, (size_t)max, f);
    fclose(f);
    buf[got] = 0;
    if (!cut) return buf;
    char *t = xasprintf("...%s", buf);
    free(buf);
    return t;
}

/* Did Check's runner finish on its own? Then the TAP log ends with its plan
 * "1..N", N counting every result, and the program (testgen's main) exits 0
 * when all passed, else 1. Anything else means something in the program
 * stopped or subverted the runner (killed it, wrote into its files or its
 * messages): then its passes cannot be believed. */
static bool runner_finished(const char *tap, int nfound, int exit_code, const test_result *t) {
    if (!tap || (exit_code != 0 && exit_code != 1)) return false;
    const char *end = tap + strlen(tap);
    while (end > tap && (end[-1] == '\n' || end[-1] == ' ')) end--;
    const char *last = end;
    while (last > tap && last[-1] != '\n') last--;
    int plan = -1;
    if (sscanf(last, "1..%d", &plan) != 1 || plan != nfound) return false;
    int failed = 0;
    for (int i = 0; i < nfound; i++) failed += t[i].status != TEST_PASS;
    return (exit_code == 0) == (failed == 0);
}

/* Check counts a forked test that ends its process with status 0 as passed,
 * wherever it ends: a pass must name the mark testgen's wrapper makes when
 * the test's body has returned (testgen.h), else the test ended early. */
static void mark_unfinished(test_result *t, int n, const char secret[HASH_HEX]) {
    for (int i = 0; i < n; i++) {
        if (t[i].status != TEST_PASS) continue;
        bool marked = t[i].file && strcmp(t[i].file, TESTGEN_FINISH_FILE) == 0 &&
                      t[i].line == codegen_finish_line(secret, t[i].name);
        free(t[i].file);
        t[i].file = xstrdup("");
        t[i].line = 0;
        if (marked) continue;
        t[i].status = TEST_EXIT;
        free(t[i].message);
        t[i].message = xstrdup(
            "the process ended with status 0 before the test's last line (exit or _Exit, in "
            "the code under test or in the test): a test passes only when it runs to its end, "
            "so lesson functions must return, never end the program");
    }
}

/* A runner that did not finish reports nothing that can be believed, a
 * failure no more than a pass (a test could stop it on purpose, after
 * writing whatever it liked): every test is "no result", never a kill. */
static void no_results(run_result *r, const char *why) {
    for (int i = 0; i < r->n; i++) {
        test_result *t = &r->t[i];
        t->status = TEST_MISSING;
        t->signal = 0;
        t->line = 0;
        free(t->file);
        t->file = xstrdup("");
        free(t->message);
        t->message = xasprintf(
            "no trustworthy result: the test program %s before Check's runner finished, so "
            "nothing it reported can be believed (a test must not kill, stop, signal or write "
            "to the runner)",
            why);
    }
}

static char *tail_of(const char *path) {
    char *text = read_part(path, OUTPUT_TAIL, true);
    return text ? text : xstrdup("");
}

/* Puts the program into the run's folder under the one neutral name, padded
 * to `size` (ELF ignores trailing bytes) and dated PROGRAM_TIME, so no
 * variant can be told apart by its path, name, size or date. */
static int place_program(const char *bin, const char *dst, long long size) {
    int in = open(bin, O_RDONLY | O_CLOEXEC);
    if (in < 0) return -1;
    /* close-on-exec: a sibling started meanwhile must not hold it open for
     * writing, or exec fails with ETXTBSY */
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
    int rc = out < 0 ? -1 : 0;
    char buf[65536];
    ssize_t got;
    while (rc == 0 && (got = read(in, buf, sizeof buf)) != 0) {
        if (got < 0 && errno == EINTR) continue;
        for (ssize_t done = 0; rc == 0 && got > 0 && done < got;) {
            ssize_t w = write(out, buf + done, (size_t)(got - done));
            if (w < 0 && errno != EINTR) rc = -1;
            else if (w > 0) done += w;
        }
        if (got < 0) rc = -1;
    }
    struct stat st;
    if (rc == 0 && fstat(out, &st) == 0 && st.st_size < size && ftruncate(out, (off_t)size) != 0)
        rc = -1;
    const struct timespec when[2] = {{PROGRAM_TIME, 0}, {PROGRAM_TIME, 0}};
    if (rc == 0) futimens(out, when);
    if (out >= 0 && close(out) != 0) rc = -1;
    close(in);
    return rc;
}

static void sandbox_copy(sandbox *dst, const sandbox *src) {
    memset(dst, 0, sizeof *dst);
    for (int i = 0; i < src->read.n; i++) sl_push(&dst->read, src->read.v[i]);
    for (int i = 0; i < src->write.n; i++) sl_push(&dst->write, src->write.v[i]);
    dst->sealed = src->sealed;
    dst->unsealed_by = src->unsealed_by ? xstrdup(src->unsealed_by) : NULL;
    dst->file_bytes = src->file_bytes;
    dst->extra_tasks = src->extra_tasks;
}

/* Once per ol run: say what the sandbox cannot do here. */
static void sandbox_notes(const sandbox *sb) {
    static bool said;
    if (said) return;
    said = true;
    strlist gaps = {0};
    sandbox_gaps(&gaps);
    for (int i = 0; i < gaps.n; i++)
        ol_warn("test programs are less sandboxed here: %s", gaps.v[i]);
    if (!sandbox_jails() && landlock_abi() > 0 && !sb->sealed)
        ol_warn(
            "%s holds the workspace or the course, and tests may write there, so the sandbox "
            "cannot keep them out of it: keep the workspace outside %s",
            sb->unsealed_by, sb->unsealed_by);
    sl_free(&gaps);
}

/* The cached result holds exactly the tests asked for, in their order? */
static bool cached_result_fits(const run_result *r, const run_spec *s) {
    int k = 0;
    for (int i = 0; s->tests && i < s->tests->n; i++) {
        if (s->filter && !strstr(s->tests->v[i], s->filter)) continue;
        if (k >= r->n || strcmp(r->t[k].name, s->tests->v[i]) != 0) return false;
        k++;
    }
    return s->tests ? k <= r->n : true;
}

/* How many folders deep a path is ("/a/b" is 2): GCOV_PREFIX_STRIP. */
static int depth_of(const char *path) {
    int n = 0;
    for (const char *p = path; *p; p++)
        if (*p == '/' && p[1] && p[1] != '/') n++;
    return n;
}

/* One run's folder: the program under its neutral name, an empty working
 * folder, a TMPDIR, the logs and (coverage) the line counts. */
typedef struct {
    char *dir, *prog, *work, *tmp, *gcov;
} run_folder;

static void run_folder_free(ol_ctx *ctx, run_folder *f) {
    if (f->dir) remove_tree(f->dir, ctx->cache);
    free(f->dir);
    free(f->prog);
    free(f->work);
    free(f->tmp);
    free(f->gcov);
    memset(f, 0, sizeof *f);
}

static int make_run_folder(ol_ctx *ctx, const char *tmp, const run_spec *s, long long padded,
                           run_folder *f) {
    memset(f, 0, sizeof *f);
    f->dir = make_temp_dir(tmp, "run");
    if (!f->dir) return -1;
    f->prog = path_join(f->dir, PROGRAM_NAME);
    f->work = path_join(f->dir, "work");
    f->tmp = path_join(f->dir, "tmp");
    if (s->gcov_dir) f->gcov = path_join(f->dir, "gcov");
    if (chmod(f->dir, 0755) != 0 || mkdir_p(f->work) != 0 || mkdir_p(f->tmp) != 0 ||
        (f->gcov && mkdir_p(f->gcov) != 0) || place_program(s->bin, f->prog, padded) != 0) {
        int saved = errno;
        run_folder_free(ctx, f);
        errno = saved;
        return -1;
    }
    return 0;
}

int run_tests(ol_ctx *ctx, const run_spec *specs, run_result *out, int n) {
    char *cache = ctx_cache_dir(ctx, "run");
    char *tmp = ctx_cache_dir(ctx, "tmp");
    char secret[HASH_HEX];   /* the programs' finish marks were made with it */
    if (!cache || !tmp || codegen_secret(ctx, secret) != 0) {
        free(cache);
        free(tmp);
        return -1;
    }
    proc_job *jobs = xcalloc((size_t)n + 1, sizeof *jobs);
    sandbox *boxes = xcalloc((size_t)n + 1, sizeof *boxes);
    run_folder *dirs = xcalloc((size_t)n + 1, sizeof *dirs);
    int *which = xcalloc((size_t)n + 1, sizeof *which);
    int njobs = 0, rc = 0;
    char *fixtures = path_join(ctx->root, "fixtures"), real[PATH_MAX];
    if (realpath(fixtures, real)) { /* what the jail holds: the folder a link leads to */
        free(fixtures);
        fixtures = xstrdup(real);
    }

    /* what runs, and the size every program is padded to */
    bool *to_run = xcalloc((size_t)n + 1, sizeof *to_run);
    long long padded = 0;
    for (int i = 0; i < n; i++) {
        const run_spec *s = &specs[i];
        run_result *r = &out[i];
        memset(r, 0, sizeof *r);
        run_spec_key(ctx, s, r->key);
        char *cached = xasprintf("%s/%s.json", cache, r->key);
        char *text = s->no_cache ? NULL : read_file(cached, NULL);
        /* an entry that does not read back as this run's result is made again */
        if (text && result_from_json(text, r) == 0 && cached_result_fits(r, s)) {
            cache_touch(cached);
            r->cached = true;
        } else {
            run_result_free(r);
            run_spec_key(ctx, s, r->key);
            to_run[i] = true;
            struct stat st;
            if (stat(s->bin, &st) == 0 && st.st_size > padded) padded = st.st_size;
        }
        free(text);
        free(cached);
    }
    padded = (padded + PROGRAM_GRAIN - 1) / PROGRAM_GRAIN * PROGRAM_GRAIN;

    bool jailed = sandbox_jails();
    sandbox base = {0};
    strlist keep_out = {0};
    sl_push(&keep_out, ctx->root);
    sl_push(&keep_out, ctx->ws);
    /* a jail has /tmp of its own; without one, tests share the machine's */
    sandbox_system(&base, &keep_out, !jailed);
    sl_free(&keep_out);
    sandbox_allow(&base, fixtures, false);
    base.file_bytes = TEST_FILE_SIZE;
    base.extra_tasks = TEST_EXTRA_TASKS;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    /* GCOV_PREFIX_STRIP takes the cache's folders off a .gcda's path: what stays is
     * cov/KEY/NAME.gcda */
    char strip[32];
    snprintf(strip, sizeof strip, "%d", depth_of(ctx->cache));

    for (int i = 0; i < n && rc == 0; i++) {
        if (!to_run[i]) continue;
        const run_spec *s = &specs[i];
        run_folder *f = &dirs[njobs];
        if (make_run_folder(ctx, tmp, s, padded, f) != 0) {
            ol_error("cannot prepare a scratch folder for a test program under %s: %s", tmp,
                     strerror(errno));
            rc = -1;
            break;
        }
        proc_job *j = &jobs[njobs];
        proc_arg(j, f->prog);
        if (s->filter) {
            proc_arg(j, s->exact ? "-x" : "-k");
            proc_arg(j, s->filter);
        }
        /* the whole environment: the same for every variant (CK_FORK=no only where coverage
         * of one test is measured, for hints, never for a grade) */
        j->clean_env = true;
        proc_env(j, "CK_FORK", s->no_fork ? "no" : "yes");
        if (s->tcase) proc_env(j, "CK_RUN_CASE", s->tcase);
        proc_env(j, "CK_VERBOSITY", "silent");
        char *tap = path_join(f->dir, "tap.txt"), *log = path_join(f->dir, "log.txt"),
             *xml = path_join(f->dir, "log.xml");
        proc_env(j, "CK_TAP_LOG_FILE_NAME", tap);
        proc_env(j, "CK_LOG_FILE_NAME", log);
        proc_env(j, "CK_XML_LOG_FILE_NAME", xml);
        char value[64];
        snprintf(value, sizeof value, "%g", s->timeout);
        proc_env(j, "OL_TEST_TIMEOUT", value);
        /* always the course's fixtures: golden values from elsewhere would grade nothing */
        proc_env(j, "TINYLLM_FIXTURES", fixtures);
        proc_env(j, "TMPDIR", f->tmp);
        if (f->gcov) {
            proc_env(j, "GCOV_PREFIX", f->gcov);
            proc_env(j, "GCOV_PREFIX_STRIP", strip);
        }
        if (s->threads > 0) {
            snprintf(value, sizeof value, "%d", s->threads);
            proc_env(j, "OMP_NUM_THREADS", value);
            proc_env(j, "TINYLLM_THREADS", value);
            proc_env(j, "OPENBLAS_NUM_THREADS", value);
        }
        j->cwd = xstrdup(f->work);
        j->out_path = path_join(f->dir, "output.txt");
        int count = s->tests ? s->tests->n : 1;
        j->timeout = s->timeout * (count > 0 ? count : 1) + 10;
        /* a program that finishes no test for a test's timeout and a little (a
         * constructor that loops, a runner stopped) costs no more than that */
        j->progress_path = tap;
        j->idle_timeout = s->timeout + IDLE_GRACE;
        free(log);
        free(xml);
        sandbox *box = &boxes[njobs];
        sandbox_copy(box, &base);
        sandbox_allow(box, f->dir, true);
        box->cpu_seconds = j->timeout * (double)(cpus > 0 ? cpus : 1);
        box->memory_bytes = s->memory_bytes > 0 ? s->memory_bytes : TEST_MEMORY;
        if (sandbox_test_program(box, f->prog, f->dir, f->work) != 0) {
            njobs++; /* freed below */
            rc = -1;
            break;
        }
        j->sandbox = box;
        which[njobs++] = i;
    }
    free(fixtures);
    free(to_run);
    if (rc == 0 && njobs) sandbox_notes(&base);
    sandbox_free(&base);
    double started = now_seconds();
    double deadline = ctx->run_budget > 0 ? started + ctx->run_budget : 0;
    bool fill = n > 0;
    for (int i = 0; i < n; i++) fill = fill && specs[i].fill_idle;
    int most = fill ? FILL_FACTOR * ctx->jobs : ctx->jobs;
    if (rc == 0 && njobs && proc_run_filling(jobs, njobs, ctx->jobs, most, deadline) != 0) rc = -1;
    if (ctx->run_budget > 0) {
        ctx->run_budget -= now_seconds() - started;
        if (ctx->run_budget <= 0) ctx->run_budget = 1e-3; /* spent: what runs next stops at once */
    }
    for (int k = 0; k < njobs && rc == 0; k++) {
        const run_spec *s = &specs[which[k]];
        run_result *r = &out[which[k]];
        proc_job *j = &jobs[k];
        bool oom = sandbox_release(&boxes[k]);
        char *tap_path = path_join(dirs[k].dir, "tap.txt"),
             *log_path = path_join(dirs[k].dir, "log.txt"),
             *xml_path = path_join(dirs[k].dir, "log.xml");
        char *tap = read_part(tap_path, LOG_MAX, false), *log = read_part(log_path, LOG_MAX, false),
             *xml = read_part(xml_path, LOG_MAX, false);
        test_result *found;
        int nfound;
        parse_tap(tap, &found, &nfound);
        merge_log(log, found, nfound);
        if (xml) merge_durations(xml, found, nfound);
        bool finished = !j->timed_out && runner_finished(tap, nfound, j->exit_code, found);
        mark_unfinished(found, nfound, secret);
        settle(r, found, nfound, s->tests, s->filter);
        if (!finished) {
            char *why =
                j->past_deadline ? xstrdup("was stopped at the check's overall time limit")
                : j->idle        ? xasprintf(
                                       "finished no test for %.1f s (a test's timeout + %.0f s), "
                                              "so ol stopped it",
                                       j->idle_timeout, IDLE_GRACE)
                : j->timed_out
                    ? xasprintf("ran past ol's limit of %.0f s for the whole program", j->timeout)
                    : proc_describe(j);
            char *what = j->timed_out ? xstrdup(why) : xasprintf("ended with %s", why);
            no_results(r, what);
            free(what);
            free(why);
        }
        for (int i = 0; oom && i < r->n; i++)
            if (r->t[i].status == TEST_CRASH && r->t[i].signal == SIGKILL)
                r->t[i].out_of_memory = true;
        r->exit_code = j->exit_code;
        r->term_signal = j->term_signal;
        r->watchdog = j->timed_out;
        r->past_deadline = j->past_deadline;
        if (j->past_deadline) ctx->run_budget_spent = true;
        r->seconds = j->seconds;
        r->output = tail_of(j->out_path);
        if ((j->exit_code == 126 || j->exit_code == 127) && r->output &&
            strstr(r->output, "ol: cannot")) {
            /* the sandbox could not be set up: say so rather than grade */
            ol_error("a test program could not start: %s", r->output);
            rc = -1;
        }
        /* the coverage build's line counts, out of the folder before it goes */
        if (rc == 0 && s->gcov_dir && dirs[k].gcov && rename(dirs[k].gcov, s->gcov_dir) != 0) {
            ol_error("cannot keep the baseline's line counts in %s: %s", s->gcov_dir,
                     strerror(errno));
            rc = -1;
        }
        free(tap);
        free(log);
        free(xml);
        free(tap_path);
        free(log_path);
        free(xml_path);
        /* a run ol had to stop is not a result to keep */
        bool timed_out = false;
        for (int t = 0; t < r->n; t++) timed_out = timed_out || r->t[t].status == TEST_TIMEOUT;
        if (!r->watchdog && rc == 0 && !(s->retry_timeouts && timed_out)) {
            cJSON *json = result_to_json(r);
            char *text = cJSON_Print(json);
            char *path = xasprintf("%s/%s.json", cache, r->key);
            write_file_atomic(path, text, strlen(text));
            free(path);
            free(text);
            cJSON_Delete(json);
        }
    }
    for (int k = 0; k < njobs; k++) {
        run_folder_free(ctx, &dirs[k]);
        proc_job_free(&jobs[k]);
        sandbox_free(&boxes[k]);
    }
    free(dirs);
    free(jobs);
    free(boxes);
    free(which);
    free(cache);
    free(tmp);
    return rc;
}

void run_result_free(run_result *r) {
    for (int i = 0; i < r->n; i++) {
        free(r->t[i].name);
        free(r->t[i].tcase);
        free(r->t[i].file);
        free(r->t[i].message);
        free(r->t[i].crash_in);
    }
    free(r->t);
    free(r->output);
    memset(r, 0, sizeof *r);
}

int run_failures(const run_result *r) {
    int failed = 0;
    for (int i = 0; i < r->n; i++) failed += r->t[i].status != TEST_PASS;
    return failed;
}

const test_result *run_find(const run_result *r, const char *name) {
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->t[i].name, name) == 0) return &r->t[i];
    return NULL;
}

char *test_describe(const test_result *t) {
    switch (t->status) {
    case TEST_PASS: return xstrdup("passed");
    case TEST_FAIL: return xstrdup("assertion failed");
    case TEST_CRASH:
        if (t->out_of_memory)
            return xasprintf(
                "crashed with signal %d (%s): it used more memory than the lesson allows "
                "(test_memory_mb)",
                t->signal, strsignal(t->signal));
        if (t->signal == SIGXFSZ)
            return xasprintf(
                "crashed with signal %d (%s): a test may write at most %lld MiB to a file, its "
                "output included",
                t->signal, strsignal(t->signal), TEST_FILE_SIZE >> 20);
        if (t->signal == SIGXCPU)
            return xasprintf("crashed with signal %d (%s): it used more CPU time than it may",
                             t->signal, strsignal(t->signal));
        return xasprintf("crashed with signal %d (%s)", t->signal, strsignal(t->signal));
    case TEST_TIMEOUT: return xstrdup("timed out");
    case TEST_EXIT: return xstrdup("exited early");
    default: return xstrdup("no result");
    }
}
