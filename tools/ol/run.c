#include "run.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "proc.h"

#define OUTPUT_TAIL 4000

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
            if (last && strncmp(line, "1..", 3) != 0) {
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
        last->message = xstrdup(msg);
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
    }
    cJSON_Delete(o);
    return 0;
}

/* ---- running ---- */

void run_spec_key(ol_ctx *ctx, const run_spec *s, char out[HASH_HEX]) {
    hasher *h = hash_new();
    hash_str(h, "run-2");
    hash_str(h, ctx->toolchain);
    hash_str(h, s->bin_key);
    hash_str(h, s->filter ? s->filter : "");
    hash_str(h, s->tcase ? s->tcase : "");
    char t[64];
    snprintf(t, sizeof t, "%.3f %d", s->timeout, s->threads);
    hash_str(h, t);
    hash_str(h, s->data_key ? s->data_key : "");
    for (int i = 0; s->tests && i < s->tests->n; i++) hash_str(h, s->tests->v[i]);
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

static char *tail_of(const char *path) {
    size_t len = 0;
    char *text = read_file(path, &len);
    if (!text) return xstrdup("");
    if (len <= OUTPUT_TAIL) return text;
    char *t = xasprintf("...%s", text + len - OUTPUT_TAIL);
    free(text);
    return t;
}

int run_tests(ol_ctx *ctx, const run_spec *specs, run_result *out, int n) {
    char *cache = ctx_cache_dir(ctx, "run");
    char *tmp = ctx_cache_dir(ctx, "tmp");
    if (!cache || !tmp) {
        free(cache);
        free(tmp);
        return -1;
    }
    proc_job *jobs = xcalloc((size_t)n, sizeof *jobs);
    char **dirs = xcalloc((size_t)n, sizeof *dirs);
    int *which = xcalloc((size_t)n, sizeof *which);
    int njobs = 0, rc = 0;
    char *fixtures = path_join(ctx->root, "fixtures");
    for (int i = 0; i < n; i++) {
        const run_spec *s = &specs[i];
        run_result *r = &out[i];
        memset(r, 0, sizeof *r);
        run_spec_key(ctx, s, r->key);
        char *cached = xasprintf("%s/%s.json", cache, r->key);
        char *text = s->no_cache ? NULL : read_file(cached, NULL);
        if (text && result_from_json(text, r) == 0) {
            cache_touch(cached);
            free(cached);
            r->cached = true;
            free(text);
            continue;
        }
        free(text);
        free(cached);
        char *dir = make_temp_dir(tmp, "run");
        if (!dir) {
            ol_error("cannot create a scratch folder under %s", tmp);
            rc = -1;
            break;
        }
        proc_job *j = &jobs[njobs];
        proc_arg(j, s->bin);
        if (s->filter) {
            proc_arg(j, "-k");
            proc_arg(j, s->filter);
        }
        j->clear_check_env = true;
        proc_env(j, "CK_FORK", "yes");
        if (s->tcase) proc_env(j, "CK_RUN_CASE", s->tcase);
        proc_env(j, "CK_VERBOSITY", "silent");
        char *tap = path_join(dir, "tap.txt"), *log = path_join(dir, "log.txt"),
             *xml = path_join(dir, "log.xml");
        proc_env(j, "CK_TAP_LOG_FILE_NAME", tap);
        proc_env(j, "CK_LOG_FILE_NAME", log);
        proc_env(j, "CK_XML_LOG_FILE_NAME", xml);
        free(tap);
        free(log);
        free(xml);
        char value[64];
        snprintf(value, sizeof value, "%g", s->timeout);
        proc_env(j, "OL_TEST_TIMEOUT", value);
        if (!getenv("TINYLLM_FIXTURES")) proc_env(j, "TINYLLM_FIXTURES", fixtures);
        if (s->threads > 0) {
            snprintf(value, sizeof value, "%d", s->threads);
            proc_env(j, "OMP_NUM_THREADS", value);
            proc_env(j, "TINYLLM_THREADS", value);
            proc_env(j, "OPENBLAS_NUM_THREADS", value);
        }
        j->cwd = xstrdup(dir);
        j->out_path = path_join(dir, "output.txt");
        int count = s->tests ? s->tests->n : 1;
        j->timeout = s->timeout * (count > 0 ? count : 1) + 10;
        dirs[njobs] = dir;
        which[njobs++] = i;
    }
    free(fixtures);
    if (rc == 0 && njobs && proc_run_all(jobs, njobs, ctx->jobs) != 0) rc = -1;
    for (int k = 0; k < njobs && rc == 0; k++) {
        const run_spec *s = &specs[which[k]];
        run_result *r = &out[which[k]];
        char *tap_path = path_join(dirs[k], "tap.txt"), *log_path = path_join(dirs[k], "log.txt"),
             *xml_path = path_join(dirs[k], "log.xml");
        char *tap = read_file(tap_path, NULL), *log = read_file(log_path, NULL),
             *xml = read_file(xml_path, NULL);
        test_result *found;
        int nfound;
        parse_tap(tap, &found, &nfound);
        merge_log(log, found, nfound);
        if (xml) merge_durations(xml, found, nfound);
        settle(r, found, nfound, s->tests, s->filter);
        r->exit_code = jobs[k].exit_code;
        r->term_signal = jobs[k].term_signal;
        r->watchdog = jobs[k].timed_out;
        r->seconds = jobs[k].seconds;
        r->output = tail_of(jobs[k].out_path);
        free(tap);
        free(log);
        free(xml);
        free(tap_path);
        free(log_path);
        free(xml_path);
        /* a run ol had to stop is not a result to keep */
        if (!r->watchdog) {
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
        remove_tree(dirs[k], ctx->cache);
        free(dirs[k]);
        proc_job_free(&jobs[k]);
    }
    free(dirs);
    free(jobs);
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
    case TEST_CRASH: return xasprintf("crashed with signal %d (%s)", t->signal, strsignal(t->signal));
    case TEST_TIMEOUT: return xstrdup("timed out");
    case TEST_EXIT: return xstrdup("exited early");
    default: return xstrdup("no result");
    }
}
