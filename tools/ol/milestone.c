/* milestone.c: course/<ID>/milestone.json and the checks of `ol milestone`
 * (milestone.h). Every check runs the student's tinyllm as a program, the
 * way a person would, and compares what it prints or writes with a golden:
 * the oracle's (--smoke) or the course reference's on the same checkpoint.
 * Each run is jailed like a test program (sandbox.h): it reads only the
 * checkpoint of its check and writes only its own run folder. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cjson/cJSON.h>

#include "milestone.h"
#include "proc.h"
#include "sandbox.h"
#include "tinyllm/testing/hub.h"

/* A run of tinyllm: its memory (the run's, in a control group; a real
 * checkpoint is mapped, then widened), any file it writes (a pulled model),
 * its processes and threads. */
#define TINYLLM_MEMORY (8LL << 30)
#define TINYLLM_FILE_SIZE (4LL << 30)
#define TINYLLM_EXTRA_TASKS 256
/* The fake Hub's port in a pull's jail (the CDN's is the next): the jail's
 * loopback is its own, so any port is free there. */
#define JAIL_HUB_PORT 8000

/* ---- the definition -------------------------------------------------------- */

static char *json_string(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? xstrdup(v->valuestring) : NULL;
}

static double json_number(const cJSON *o, const char *key, double fallback) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : fallback;
}

static void json_list(const cJSON *o, const char *key, strlist *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key), *item;
    cJSON_ArrayForEach(item, v) {
        if (cJSON_IsString(item)) sl_push(out, item->valuestring);
        else if (cJSON_IsNumber(item)) sl_push_owned(out, xasprintf("%.0f", item->valuedouble));
    }
}

int milestone_load(const char *root, const char *id, milestone *m) {
    memset(m, 0, sizeof *m);
    char *path = xasprintf("%s/course/%s/milestone.json", root, id);
    char *text = read_file(path, NULL);
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!o) {
        ol_error("%s: %s (course/FORMAT.md describes milestone.json)", path,
                 is_file(path) ? "not JSON" : "there is no such milestone");
        free(path);
        return -1;
    }
    const cJSON *smoke = cJSON_GetObjectItemCaseSensitive(o, "smoke");
    const cJSON *full = cJSON_GetObjectItemCaseSensitive(o, "full");
    const cJSON *pull = cJSON_GetObjectItemCaseSensitive(smoke, "pull");
    const cJSON *tol = cJSON_GetObjectItemCaseSensitive(full, "logits_tolerance");
    m->id = json_string(o, "id");
    m->title = json_string(o, "title");
    json_list(o, "needs", &m->needs);
    m->golden = json_string(smoke, "golden");
    m->golden_tensors = json_string(smoke, "golden_tensors");
    m->checkpoints_dir = json_string(smoke, "checkpoints_dir");
    m->logits_tolerance_key = json_string(smoke, "logits_tolerance");
    json_list(smoke, "checkpoints", &m->checkpoints);
    m->pull_checkpoint = json_string(pull, "checkpoint");
    m->pull_repo = json_string(pull, "repo");
    m->smoke_timeout = json_number(smoke, "timeout_seconds", 120);
    m->repo = json_string(full, "repo");
    m->prompt = json_string(full, "prompt");
    m->param_count = (long long)json_number(full, "param_count", -1);
    m->new_tokens = (int)json_number(full, "new_tokens", 32);
    json_list(full, "logits_ids", &m->logits_ids);
    m->full_atol = json_number(tol, "atol", 1e-3);
    m->full_rtol = json_number(tol, "rtol", 1e-3);
    m->full_timeout = json_number(full, "timeout_seconds", 900);
    const char *env = getenv("OL_MILESTONE_TIMEOUT");   /* a slow machine, or a test */
    if (env && atof(env) > 0) m->smoke_timeout = m->full_timeout = atof(env);
    cJSON_Delete(o);
    const char *missing = !m->id ? "id" : strcmp(m->id, id) != 0 ? "id (another milestone's)"
                        : !m->golden || !m->golden_tensors || !m->checkpoints_dir ||
                                  !m->logits_tolerance_key || !m->checkpoints.n
                              ? "smoke's golden, golden_tensors, checkpoints_dir, "
                                "logits_tolerance or checkpoints"
                        : !m->pull_checkpoint || !m->pull_repo ? "smoke.pull"
                        : !m->repo || !m->prompt || m->param_count < 0 || !m->logits_ids.n
                              ? "full's repo, prompt, param_count or logits_ids" : NULL;
    if (missing) {
        ol_error("%s: %s is missing or wrong (course/FORMAT.md)", path, missing);
        free(path);
        milestone_free(m);
        return -1;
    }
    free(path);
    return 0;
}

void milestone_free(milestone *m) {
    free(m->id);
    free(m->title);
    sl_free(&m->needs);
    free(m->golden);
    free(m->golden_tensors);
    free(m->checkpoints_dir);
    free(m->logits_tolerance_key);
    sl_free(&m->checkpoints);
    free(m->pull_checkpoint);
    free(m->pull_repo);
    free(m->repo);
    free(m->prompt);
    sl_free(&m->logits_ids);
    memset(m, 0, sizeof *m);
}

void milestone_results_free(milestone_results *r) {
    for (int i = 0; i < r->n; i++) {
        free(r->v[i].name);
        free(r->v[i].detail);
    }
    free(r->v);
    memset(r, 0, sizeof *r);
}

/* Records a check and prints its line. */
static void report(milestone_results *r, char *name, bool passed, char *detail, double seconds) {
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 32;
        r->v = xrealloc(r->v, (size_t)r->cap * sizeof *r->v);
    }
    r->v[r->n++] = (milestone_check){name, passed, detail, seconds};
    char *shown = shown_text(detail); /* it may quote what the student's tinyllm printed */
    printf("%s %-44s %s\n", passed ? "ok  " : "FAIL", name, shown);
    free(shown);
    fflush(stdout);
}

/* ---- running tinyllm ---------------------------------------------------------- */

typedef struct {
    char *output;    /* stdout and stderr */
    int status;      /* exit status, -1 when it did not end by itself */
    char *describe;  /* "exit 1", "timed out after 120.0 s", ... */
    double seconds;
    bool interrupted;
    bool timed_out, crashed;
    bool skipped;    /* not run: earlier runs timed out */
} run_result;

static void run_free(run_result *r) {
    free(r->output);
    free(r->describe);
}

/* How each run of tinyllm is jailed: the student's program is hostile until
 * shown otherwise, so it runs as a test program does (sandbox.h), reading
 * only the system, the checkpoint of its check and its own run folder. */
typedef struct {
    const char *bin;  /* the program */
    const char *tmp;  /* the milestone's scratch folder: each run's folder lies beneath */
    strlist keep_out; /* the course and the workspace: never readable */
    double timeout;
    int *timeouts;    /* runs that timed out so far: after two, the rest are not run */
} runner;

/* A hang (a loop that never ends) would cost every check its whole timeout. */
#define MAX_TIMEOUTS 2

/* One run's folder: its copy of the program, its output log, the jail's
 * root, and work/, its working folder and the only one it may write. */
typedef struct {
    char *dir, *work;
} run_folder;

static int run_folder_make(const runner *rn, run_folder *f) {
    f->dir = make_temp_dir(rn->tmp, "run");
    f->work = f->dir ? path_join(f->dir, "work") : NULL;
    if (!f->dir || chmod(f->dir, 0755) != 0 || mkdir_p(f->work) != 0) {
        ol_error("cannot prepare a scratch folder for tinyllm under %s: %s", rn->tmp,
                 strerror(errno));
        if (f->dir) remove_tree(f->dir, rn->tmp);
        free(f->dir);
        free(f->work);
        memset(f, 0, sizeof *f);
        return -1;
    }
    return 0;
}

static void run_folder_free(const runner *rn, run_folder *f) {
    if (f->dir) remove_tree(f->dir, rn->tmp);
    free(f->dir);
    free(f->work);
    memset(f, 0, sizeof *f);
}

/* path's real path (taking path): what a jail holds is what links lead to. */
static char *real_path_of(char *path) {
    char *real = realpath(path, NULL);
    if (!real) return path;
    free(path);
    return real;
}

/* The course and the workspace: a run reads neither (but what it is given). */
static void runner_keep_out(runner *rn, const ol_ctx *ctx) {
    char real[PATH_MAX];
    sl_push(&rn->keep_out, realpath(ctx->root, real) ? real : ctx->root);
    sl_push(&rn->keep_out, realpath(ctx->ws, real) ? real : ctx->ws);
}

/* path (a real path) is dir or lies beneath it */
static bool path_beneath(const char *path, const char *dir) {
    char *real = realpath(dir, NULL);
    size_t n = real ? strlen(real) : 0;
    bool yes = real && strncmp(path, real, n) == 0 && (path[n] == 0 || path[n] == '/');
    free(real);
    return yes;
}

/* A file of the run's working folder (malloc'd). */
static char *work_file(const run_folder *f, const char *name) { return path_join(f->work, name); }

/* The checkpoint folder dir, readable: the folder and what its links lead to
 * (a cache may hold links to blobs), but never a link into the course or
 * the workspace. */
static void allow_checkpoint(sandbox *sb, const runner *rn, const char *dir) {
    sandbox_allow(sb, dir, false);
    strlist files = {0};
    list_files(dir, "", &files);
    for (int i = 0; i < files.n; i++) {
        struct stat st;
        char *real = lstat(files.v[i], &st) == 0 && S_ISLNK(st.st_mode)
                     ? realpath(files.v[i], NULL) : NULL;
        bool kept_out = false;
        for (int k = 0; real && k < rn->keep_out.n; k++)
            kept_out = kept_out || path_beneath(real, rn->keep_out.v[k]);
        if (real && !kept_out) sandbox_allow(sb, real, false);
        free(real);
    }
    sl_free(&files);
}

/* PID 1 of the pull's jail: the fake Hub on the jail's own loopback. */
static int serve_hub(void *arg) {
    hub *h = arg;
    if (hub_start(h, NULL) == 0) return 0;
    fprintf(stderr, "ol: cannot start the fake Hub in the jail: %s\n", hub_error(h));
    return -1;
}

/* Runs bin with args (a NULL-terminated list) in the sandbox, in folder f
 * (its output in f->dir/out.log), reading the checkpoint `reads` (NULL:
 * none); h, a fake Hub not yet started, is served in the run's jail. */
static run_result run_tinyllm(const runner *rn, const char *bin, const run_folder *f,
                              const char *reads, hub *h, const char *const *args) {
    run_result r = {0};
    r.status = -1;
    if (*rn->timeouts >= MAX_TIMEOUTS) {
        r.skipped = true;
        r.describe = xstrdup("not run");
        r.output = xstrdup("");
        return r;
    }
    if (!f->dir) { /* run_folder_make said why */
        r.describe = xstrdup("no scratch folder");
        r.output = xstrdup("");
        return r;
    }
    char *prog = path_join(f->dir, "tinyllm");
    sandbox sb = {0};
    proc_job job = {0};
    if (copy_file_atomic(bin, prog) != 0) {
        r.describe = xasprintf("no copy (%s)", strerror(errno));
        r.output = xasprintf("ol: cannot copy %s into %s", bin, f->dir);
        free(prog);
        return r;
    }
    bool jailed = sandbox_jails();
    sandbox_system(&sb, &rn->keep_out, !jailed);
    if (reads) allow_checkpoint(&sb, rn, reads);
    sandbox_allow(&sb, f->dir, true);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    sb.cpu_seconds = rn->timeout * (double)(cpus > 0 ? cpus : 1);
    sb.memory_bytes = TINYLLM_MEMORY;
    sb.file_bytes = TINYLLM_FILE_SIZE;
    sb.extra_tasks = TINYLLM_EXTRA_TASKS;
    if (sandbox_test_program(&sb, prog, f->dir, f->work) != 0) {
        r.describe = xstrdup("no sandbox");
        r.output = xstrdup("ol: cannot prepare the sandbox for tinyllm (see above)");
        sandbox_free(&sb);
        free(prog);
        return r;
    }
    if (h && jailed) {
        sb.jl.serve = serve_hub;
        sb.jl.serve_arg = h;
    }
    proc_arg(&job, prog);
    for (int i = 0; args[i]; i++) proc_arg(&job, args[i]);
    job.clean_env = true; /* none of ol's environment (proc.h) */
    proc_env(&job, "TMPDIR", f->work);
    job.sandbox = &sb;
    job.cwd = xstrdup(f->work);
    job.out_path = path_join(f->dir, "out.log");
    job.timeout = rn->timeout;
    static bool said; /* once per ol run: what the sandbox cannot do here */
    if (!said) {
        said = true;
        strlist gaps = {0};
        sandbox_gaps(&gaps);
        for (int i = 0; i < gaps.n; i++) ol_warn("tinyllm runs less sandboxed here: %s", gaps.v[i]);
        sl_free(&gaps);
    }
    r.interrupted = proc_run(&job) != 0;
    sandbox_release(&sb);
    r.output = read_file(job.out_path, NULL);
    if (!r.output) r.output = xstrdup("");
    r.status = job.exit_code;
    r.describe = proc_describe(&job);
    r.timed_out = job.timed_out;
    r.crashed = job.term_signal != 0 && !job.timed_out;
    if (r.timed_out) (*rn->timeouts)++;
    r.seconds = job.seconds;
    unlink(job.out_path);
    proc_job_free(&job);
    sandbox_free(&sb);
    free(prog);
    return r;
}

/* The last non-empty line of a program's output, for a message (malloc'd). */
static char *last_line(const char *text) {
    const char *end = text + strlen(text);
    while (end > text && (end[-1] == '\n' || end[-1] == ' ')) end--;
    const char *start = end;
    while (start > text && start[-1] != '\n') start--;
    return xstrndup(start, (size_t)(end - start));
}

static char *failed_run(const run_result *r, const char *what) {
    if (r->interrupted) return xasprintf("`tinyllm %s` stopped: interrupted", what);
    if (r->skipped)
        return xasprintf("`tinyllm %s` not run: %d runs before it timed out (a loop that never "
                         "ends? `ol tests` on each lesson finds where)", what, MAX_TIMEOUTS);
    if (r->timed_out)
        return xasprintf("`tinyllm %s` %s (a loop that never ends? `ol tests` on each lesson "
                         "finds where)", what, r->describe);
    char *line = last_line(r->output);
    char *d = xasprintf("`tinyllm %s` ended with %s%s%s%s", what, r->describe, *line ? ": " : "",
                        line, r->crashed ? " (`ol tests` on each lesson says where it crashes)"
                                         : "");
    free(line);
    return d;
}

static cJSON *read_json(const char *path) {
    char *text = read_file(path, NULL);
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    free(text);
    return o;
}

/* ---- safetensors (F32 and I64 only: the goldens and tinyllm logits --out) ---- */

typedef struct {
    char *data;
    size_t len;
    cJSON *header;
    size_t base;
} st_file;

static int st_open(st_file *f, const char *path) {
    memset(f, 0, sizeof *f);
    f->data = read_file(path, &f->len);
    uint64_t n = 0;
    if (!f->data || f->len < 8) return -1;
    memcpy(&n, f->data, 8);
    if (n > f->len - 8) return -1;
    char *json = xstrndup(f->data + 8, (size_t)n);
    f->header = cJSON_Parse(json);
    free(json);
    f->base = 8 + (size_t)n;
    return f->header ? 0 : -1;
}

static void st_close(st_file *f) {
    free(f->data);
    cJSON_Delete(f->header);
}

/* The tensor's bytes and element count, or NULL when absent or not dtype. */
static const void *st_tensor(const st_file *f, const char *name, const char *dtype,
                             int64_t *count, int64_t *shape, int *ndim) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(f->header, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape"), *d;
    if (!cJSON_IsString(dt) || strcmp(dt->valuestring, dtype) != 0 || cJSON_GetArraySize(off) != 2)
        return NULL;
    size_t a = (size_t)cJSON_GetArrayItem(off, 0)->valuedouble;
    size_t b = (size_t)cJSON_GetArrayItem(off, 1)->valuedouble;
    if (b < a || f->base + b > f->len) return NULL;
    *count = 1;
    *ndim = 0;
    cJSON_ArrayForEach(d, sh) {
        if (*ndim < 4) shape[(*ndim)++] = (int64_t)d->valuedouble;
        *count *= (int64_t)d->valuedouble;
    }
    return f->data + f->base + a;
}

/* ---- the checks ---------------------------------------------------------------- */

static const cJSON *golden_entry(const cJSON *golden, const char *ck) {
    return cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(golden, "checkpoints"), ck);
}

/* A JSON list of ids as "1,2,3" (malloc'd). */
static char *id_text(const cJSON *list) {
    strbuf b = {0};
    const cJSON *v;
    cJSON_ArrayForEach(v, list) sb_printf(&b, "%s%.0f", b.len ? "," : "", v->valuedouble);
    return sb_take(&b);
}

static bool same_ids(const cJSON *a, const cJSON *b, int *first_diff) {
    int n = cJSON_GetArraySize(a), m = cJSON_GetArraySize(b);
    for (int i = 0; i < n && i < m; i++)
        if (cJSON_GetArrayItem(a, i)->valuedouble != cJSON_GetArrayItem(b, i)->valuedouble) {
            *first_diff = i;
            return false;
        }
    *first_diff = n < m ? n : m;
    return n == m;
}

static void check_info(milestone_results *res, const runner *rn, const char *label,
                       const char *dir, long long want) {
    run_folder f = {0};
    run_folder_make(rn, &f);
    run_result r = run_tinyllm(rn, rn->bin, &f, dir, NULL,
                               (const char *[]){"info", dir, "--json", NULL});
    run_folder_free(rn, &f);
    char *name = xasprintf("info %s", label), *detail;
    bool ok = false;
    cJSON *o = r.status == 0 ? cJSON_Parse(r.output) : NULL;
    const cJSON *count = cJSON_GetObjectItemCaseSensitive(o, "param_count");
    if (r.status != 0) detail = failed_run(&r, "info");
    else if (!cJSON_IsNumber(count)) detail = xstrdup("`tinyllm info --json` has no param_count");
    else {
        ok = (long long)count->valuedouble == want;
        detail = xasprintf("%.0f parameters%s%lld", count->valuedouble,
                           ok ? ", as Hugging Face counts them: " : "; Hugging Face counts ", want);
    }
    report(res, name, ok, detail, r.seconds);
    cJSON_Delete(o);
    run_free(&r);
}

/* Logits against a golden [T, V] within atol + rtol * |golden|. */
static void compare_logits(milestone_results *res, char *name, const char *out, const float *want,
                           int64_t t, int64_t v, double atol, double rtol, double seconds) {
    st_file f;
    int64_t count, shape[4];
    int ndim;
    const float *got = st_open(&f, out) == 0
                       ? st_tensor(&f, "logits", "F32", &count, shape, &ndim) : NULL;
    char *detail;
    bool ok = false;
    if (!got) {
        detail = xstrdup("`tinyllm logits --out` wrote no F32 tensor \"logits\"");
    } else if (count != t * v) {
        detail = xasprintf("the logits hold %lld numbers; [1, %lld, %lld] has %lld",
                           (long long)count, (long long)t, (long long)v, (long long)(t * v));
    } else {
        double worst = 0, worst_abs = 0;
        int64_t at = 0;
        for (int64_t i = 0; i < t * v; i++) {
            double d = fabs((double)got[i] - (double)want[i]);
            double allowed = atol + rtol * fabs((double)want[i]);
            double x = isnan(d) ? INFINITY : d / allowed;
            if (x > worst) {
                worst = x;
                worst_abs = d;
                at = i;
            }
        }
        ok = worst <= 1.0;
        detail = xasprintf("[1, %lld, %lld]: largest deviation %.3g x the tolerance (%.3g at "
                           "position %lld, token %lld; atol %g, rtol %g)", (long long)t,
                           (long long)v, worst, worst_abs, (long long)(at / v),
                           (long long)(at % v), atol, rtol);
    }
    if (got || f.data) st_close(&f);
    report(res, name, ok, detail, seconds);
}

/* generate --ids PROMPT -n N --ignore-eos [--no-cache] against want (a JSON list). */
static void check_generate(milestone_results *res, const runner *rn, const char *label,
                           const char *dir, const cJSON *prompt, const cJSON *want, bool cached) {
    run_folder f = {0};
    run_folder_make(rn, &f);
    char *ids = id_text(prompt), *json = f.work ? work_file(&f, "generate.json") : xstrdup("");
    char *n = xasprintf("%d", cJSON_GetArraySize(want));
    const char *args[] = {"generate", dir, "--ids", ids, "-n", n, "--ignore-eos", "--quiet",
                          "--json", json, cached ? NULL : "--no-cache", NULL};
    run_result r = run_tinyllm(rn, rn->bin, &f, dir, NULL, args);
    char *name = xasprintf("generate %s (%s)", label, cached ? "KV cache" : "no cache"), *detail;
    cJSON *o = r.status == 0 ? read_json(json) : NULL;
    const cJSON *got = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(o, "generated"), "ids");
    int diff = 0;
    bool ok = false;
    if (r.status != 0) detail = failed_run(&r, "generate");
    else if (!cJSON_IsArray(got)) detail = xstrdup("--json has no generated.ids");
    else if (!(ok = same_ids(got, want, &diff))) {
        char *g = id_text(got), *w = id_text(want);
        detail = xasprintf("greedy ids differ from token %d on: %s; the golden %s", diff + 1, g, w);
        free(g);
        free(w);
    } else {
        detail = xasprintf("%d greedy tokens, every one the golden's", cJSON_GetArraySize(want));
    }
    report(res, name, ok, detail, r.seconds);
    cJSON_Delete(o);
    run_free(&r);
    run_folder_free(rn, &f);
    free(ids);
    free(json);
    free(n);
}

/* Makes every folder and file beneath dir readable by anyone: the runs
 * after a pull, each as a user of its own, load what it wrote. */
static void share_tree(const char *dir) {
    struct stat st;
    if (lstat(dir, &st) != 0 || S_ISLNK(st.st_mode)) return;
    chmod(dir, (st.st_mode & 07777) | (S_ISDIR(st.st_mode) ? 0555 : 0444));
    if (!S_ISDIR(st.st_mode)) return;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char *child = path_join(dir, e->d_name);
        share_tree(child);
        free(child);
    }
    if (d) closedir(d);
}

/* Serves the files of dir as repo on a fake Hub, pulls them with the
 * student's tinyllm into a fresh cache in its run folder `f` (kept: the
 * caller frees it after loading the pull), and returns the folder pull
 * printed (malloc'd), or NULL with a failed check reported. Jailed, the
 * Hub runs in the pull's own jail, on its private loopback (jail.h): the
 * program reaches nothing else, and no other program reaches the Hub. */
static char *check_pull(milestone_results *res, const runner *rn, run_folder *f, const char *dir,
                        const char *repo) {
    char *name = xasprintf("pull %s from a fake Hub", repo);
    char *hub_root = xasprintf("%s/hub", rn->tmp), *repo_dir = xasprintf("%s/%s", hub_root, repo);
    strlist files = {0};
    mkdir_p(repo_dir);
    list_files(dir, "", &files);
    for (int i = 0; i < files.n; i++) {
        char *src = realpath(files.v[i], NULL);
        char *dst = xasprintf("%s/%s", repo_dir, path_base(files.v[i]));
        if (src && symlink(src, dst) != 0) ol_warn("cannot link %s: %s", dst, strerror(errno));
        free(src);
        free(dst);
    }
    sl_free(&files);
    bool jailed = sandbox_jails();
    hub *h = hub_new();
    /* in a jail of its own the port is free: the endpoint is known before it starts */
    if (h && jailed) hub_set_ports(h, JAIL_HUB_PORT, JAIL_HUB_PORT + 1);
    const char *endpoint = NULL;
    char *folder = NULL, *detail = NULL;
    if (run_folder_make(rn, f) != 0 || !h || hub_add_dir(h, hub_root) != 0 ||
        (!jailed && hub_start(h, &endpoint) != 0)) {
        detail = xasprintf("the fake Hub did not start: %s", h ? hub_error(h) : "out of memory");
        report(res, name, false, detail, 0);
    } else {
        char *url = jailed ? xasprintf("http://127.0.0.1:%d", JAIL_HUB_PORT) : xstrdup(endpoint);
        char *cache = work_file(f, "cache");
        run_result r = run_tinyllm(rn, rn->bin, f, NULL, jailed ? h : NULL,
                                   (const char *[]){"pull", repo, "--endpoint", url, "--cache",
                                                    cache, NULL});
        char *line = last_line(r.output), *real = realpath(line, NULL);
        /* only what it pulled into its cache is loaded next (and made readable) */
        bool inside = real && path_beneath(real, f->work);
        bool ok = r.status == 0 && inside && is_dir(real);
        if (ok) {
            folder = xstrdup(real);
            share_tree(f->work);
        }
        detail = ok ? xasprintf("into %s", line) : r.status == 0
                 ? xasprintf("`tinyllm pull` printed no folder of its --cache as its last line "
                             "(got '%s')", line)
                 : failed_run(&r, "pull");
        report(res, name, ok, detail, r.seconds);
        free(line);
        free(real);
        free(url);
        free(cache);
        run_free(&r);
    }
    hub_free(h);
    free(hub_root);
    free(repo_dir);
    return folder;
}

int milestone_run_smoke(ol_ctx *ctx, const milestone *m, const char *bin, milestone_results *res) {
    char *golden_path = path_join(ctx->root, m->golden);
    char *tensors_path = path_join(ctx->root, m->golden_tensors);
    cJSON *golden = read_json(golden_path);
    st_file tensors;
    if (!golden || st_open(&tensors, tensors_path) != 0) {
        ol_error("the goldens %s and %s cannot be read: tell your instructor", golden_path,
                 tensors_path);
        free(golden_path);
        free(tensors_path);
        cJSON_Delete(golden);
        return OL_USAGE;
    }
    const cJSON *tol = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(golden, "tolerances"), m->logits_tolerance_key);
    double atol = json_number(tol, "atol", 1e-4), rtol = json_number(tol, "rtol", 1e-4);
    char *tmp_root = ctx_cache_dir(ctx, "tmp"), *tmp = make_temp_dir(tmp_root, "milestone");
    int timeouts = 0;
    runner rn = {bin, tmp, {0}, m->smoke_timeout, &timeouts};
    runner_keep_out(&rn, ctx);
    int rc = 0;
    for (int i = 0; i < m->checkpoints.n && !proc_interrupted(); i++) {
        const char *ck = m->checkpoints.v[i];
        char *dir = real_path_of(xasprintf("%s/%s/%s", ctx->root, m->checkpoints_dir, ck));
        const cJSON *e = golden_entry(golden, ck);
        check_info(res, &rn, ck, dir, (long long)json_number(e, "hf_param_count", -1));
        /* logits of the first row of the golden ids */
        char *ids_name = xasprintf("%s.ids", ck), *logits_name = xasprintf("%s.logits", ck);
        int64_t n_ids, n_logits, ids_shape[4], lg_shape[4];
        int nd1, nd2;
        const int64_t *ids = st_tensor(&tensors, ids_name, "I64", &n_ids, ids_shape, &nd1);
        const float *want = st_tensor(&tensors, logits_name, "F32", &n_logits, lg_shape, &nd2);
        char *name = xasprintf("logits %s", ck);
        if (!ids || !want || nd1 != 2 || nd2 != 3) {
            report(res, name, false, xasprintf("the goldens have no %s / %s: tell your "
                                               "instructor", ids_name, logits_name), 0);
        } else {
            int64_t t = ids_shape[1], v = lg_shape[2];
            strbuf b = {0};
            for (int64_t k = 0; k < t; k++)
                sb_printf(&b, "%s%lld", k ? "," : "", (long long)ids[k]);
            run_folder f = {0};
            run_folder_make(&rn, &f);
            char *list = sb_take(&b);
            char *out = f.work ? work_file(&f, "logits.safetensors") : xstrdup("");
            run_result r = run_tinyllm(&rn, bin, &f, dir, NULL,
                                       (const char *[]){"logits", dir, "--ids", list, "--out",
                                                        out, NULL});
            if (r.status != 0) report(res, name, false, failed_run(&r, "logits"), r.seconds);
            else compare_logits(res, name, out, want, t, v, atol, rtol, r.seconds);
            run_free(&r);
            run_folder_free(&rn, &f);
            free(list);
            free(out);
        }
        free(ids_name);
        free(logits_name);
        const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(e, "prompt_ids");
        check_generate(res, &rn, ck, dir, prompt,
                       cJSON_GetObjectItemCaseSensitive(e, "greedy_ids_cached"), true);
        check_generate(res, &rn, ck, dir, prompt,
                       cJSON_GetObjectItemCaseSensitive(e, "greedy_ids"), false);
        free(dir);
    }
    if (!proc_interrupted()) {   /* pull one checkpoint, then load what arrived */
        char *dir = xasprintf("%s/%s/%s", ctx->root, m->checkpoints_dir, m->pull_checkpoint);
        run_folder pulled = {0};
        char *folder = check_pull(res, &rn, &pulled, dir, m->pull_repo);
        const cJSON *e = golden_entry(golden, m->pull_checkpoint);
        if (folder) {
            char *label = xasprintf("%s (pulled)", m->pull_repo);
            check_info(res, &rn, label, folder, (long long)json_number(e, "hf_param_count", -1));
            check_generate(res, &rn, label, folder,
                           cJSON_GetObjectItemCaseSensitive(e, "prompt_ids"),
                           cJSON_GetObjectItemCaseSensitive(e, "greedy_ids_cached"), true);
            free(label);
        }
        run_folder_free(&rn, &pulled);
        free(folder);
        free(dir);
    }
    if (proc_interrupted()) rc = 130;
    remove_tree(tmp, tmp_root);
    sl_free(&rn.keep_out);
    st_close(&tensors);
    cJSON_Delete(golden);
    free(golden_path);
    free(tensors_path);
    free(tmp);
    free(tmp_root);
    return rc;
}

/* ---- the real checkpoint ---------------------------------------------------------- */

char *milestone_cached_checkpoint(const milestone *m) {
    const char *env = getenv("TINYLLM_CACHE"), *home = getenv("HOME");
    char *cache = env && *env ? xstrdup(env) : xasprintf("%s/.cache/tinyllm/hub",
                                                          home ? home : "");
    /* tinyllm pull's layout: CACHE/<org>--<name>/<revision>/ */
    char *slash = strchr(m->repo, '/');
    char *dir = slash ? xasprintf("%s/%.*s--%s/main", cache, (int)(slash - m->repo), m->repo,
                                  slash + 1)
                      : xasprintf("%s/%s/main", cache, m->repo);
    free(cache);
    char *config = path_join(dir, "config.json"), *weights = path_join(dir, "model.safetensors");
    char *tok = path_join(dir, "tokenizer.json");
    bool whole = is_file(config) && is_file(weights) && is_file(tok);
    free(config);
    free(weights);
    free(tok);
    if (whole) return dir;
    free(dir);
    return NULL;
}

/* The student's and the reference's reply to the same --chat prompt. */
static void check_generate_against(milestone_results *res, const runner *rn, const char *ref_bin,
                                   const milestone *m, const char *dir) {
    run_folder f = {0}, fr = {0};
    run_folder_make(rn, &f);
    run_folder_make(rn, &fr);
    char *json = f.work ? work_file(&f, "mine.json") : xstrdup("");
    char *ref_json = fr.work ? work_file(&fr, "ref.json") : xstrdup("");
    char *n = xasprintf("%d", m->new_tokens);
    const char *args[] = {"generate", dir, "--prompt", m->prompt, "--chat", "-n", n, "--quiet",
                          "--json", json, NULL};
    const char *ref_args[] = {"generate", dir, "--prompt", m->prompt, "--chat", "-n", n,
                              "--quiet", "--json", ref_json, NULL};
    run_result r = run_tinyllm(rn, rn->bin, &f, dir, NULL, args);
    run_result g = run_tinyllm(rn, ref_bin, &fr, dir, NULL, ref_args);
    char *name = xasprintf("generate --chat (%d tokens)", m->new_tokens), *detail;
    cJSON *mine = r.status == 0 ? read_json(json) : NULL, *ref = g.status == 0 ? read_json(ref_json)
                                                                              : NULL;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(mine, "generated"), "ids");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(ref, "generated"), "ids");
    const cJSON *rate = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(mine, "timings"), "decode_tok_s");
    const cJSON *ref_rate = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(ref, "timings"), "decode_tok_s");
    int diff = 0;
    bool ok = false;
    if (r.status != 0) detail = failed_run(&r, "generate");
    else if (g.status != 0) detail = failed_run(&g, "generate (the reference)");
    else if (!cJSON_IsArray(a) || !cJSON_IsArray(b)) detail = xstrdup("--json has no ids");
    else if (!(ok = same_ids(a, b, &diff)))
        detail = xasprintf("the reply differs from the reference's from token %d on", diff + 1);
    else
        detail = xasprintf("%d tokens, the reference's; decode %.1f tok/s (the reference's %.1f "
                           "in the same run)", cJSON_GetArraySize(a),
                           cJSON_IsNumber(rate) ? rate->valuedouble : 0,
                           cJSON_IsNumber(ref_rate) ? ref_rate->valuedouble : 0);
    report(res, name, ok, detail, r.seconds);
    cJSON_Delete(mine);
    cJSON_Delete(ref);
    run_free(&r);
    run_free(&g);
    run_folder_free(rn, &f);
    run_folder_free(rn, &fr);
    free(json);
    free(ref_json);
    free(n);
}

int milestone_run_full(ol_ctx *ctx, const milestone *m, const char *bin, const char *ref_bin,
                       const char *model, milestone_results *res) {
    /* by its real path: the jail holds what a link leads to, not the link */
    char *dir = realpath(model, NULL);
    if (!dir) dir = xstrdup(model);
    char *tmp_root = ctx_cache_dir(ctx, "tmp"), *tmp = make_temp_dir(tmp_root, "milestone");
    int timeouts = 0;
    runner rn = {bin, tmp, {0}, m->full_timeout, &timeouts};
    runner_keep_out(&rn, ctx);
    check_info(res, &rn, m->repo, dir, m->param_count);
    /* logits: the student's against the reference's, on the same ids */
    run_folder f = {0}, fr = {0};
    run_folder_make(&rn, &f);
    run_folder_make(&rn, &fr);
    char *ids = sl_join(&m->logits_ids, ",");
    char *out = f.work ? work_file(&f, "mine.safetensors") : xstrdup("");
    char *ref_out = fr.work ? work_file(&fr, "ref.safetensors") : xstrdup("");
    char *name = xasprintf("logits %s", m->repo);
    run_result r = run_tinyllm(&rn, bin, &f, dir, NULL,
                               (const char *[]){"logits", dir, "--ids", ids, "--out", out, NULL});
    run_result g = run_tinyllm(&rn, ref_bin, &fr, dir, NULL,
                               (const char *[]){"logits", dir, "--ids", ids, "--out", ref_out,
                                                NULL});
    st_file st;
    int64_t count, shape[4];
    int ndim;
    const float *want = g.status == 0 && st_open(&st, ref_out) == 0
                        ? st_tensor(&st, "logits", "F32", &count, shape, &ndim) : NULL;
    if (r.status != 0) report(res, name, false, failed_run(&r, "logits"), r.seconds);
    else if (!want || ndim != 3) report(res, name, false, failed_run(&g, "logits (reference)"), 0);
    else compare_logits(res, name, out, want, shape[1], shape[2], m->full_atol, m->full_rtol,
                        r.seconds);
    if (want) st_close(&st);
    run_free(&r);
    run_free(&g);
    run_folder_free(&rn, &f);
    run_folder_free(&rn, &fr);
    check_generate_against(res, &rn, ref_bin, m, dir);
    run_folder pulled = {0};
    char *folder = proc_interrupted() ? NULL : check_pull(res, &rn, &pulled, dir, m->repo);
    if (folder) {
        char *label = xasprintf("%s (pulled)", m->repo);
        check_info(res, &rn, label, folder, m->param_count);
        free(label);
    }
    run_folder_free(&rn, &pulled);
    int rc = proc_interrupted() ? 130 : 0;
    remove_tree(tmp, tmp_root);
    sl_free(&rn.keep_out);
    free(dir);
    free(folder);
    free(ids);
    free(out);
    free(ref_out);
    free(tmp);
    free(tmp_root);
    return rc;
}
