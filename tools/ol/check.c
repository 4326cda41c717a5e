#include "check.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen.h"
#include "harness.h"
#include "lessonlib.h"
#include "prebuilt.h"
#include "proc.h"
#include "sandbox.h"
#include "site.h"
#include "status.h"
#include "symbols.h"

static const char *const STAGE_TITLES[N_STAGES] = {
    "Your code builds",
    "The course tests pass on your code",
    "Your tests exist and include only contracts",
    "Your tests pass on the reference, every wheat and your code",
    "Canary: a mutant that aborts in every function is caught",
    "Mutation score",
};

static const char *const STATUS_NAMES[] = {"Killed",       "Survived",     "NoCoverage", "Timeout",
                                           "CompileError", "RuntimeError", "Ignored"};

const char *mutant_status_name(mutant_status s) { return STATUS_NAMES[s]; }

/* Everything the pipeline builds, freed in one place. */
typedef struct {
    lesson_lib mine;
    deps my_deps;
    suite course, tests;
    link_spec course_prog, own_prog;   /* the course's tests, and the student's, on their code */
    run_result course_run, own_run;
    deps ref_deps;
    lesson_lib *ref;           /* the canary's reference: control build 0 */
    lesson_lib refcov;         /* the reference's coverage build */
    lesson_lib *mutant_libs;   /* parallel to the report's mutants */
    bool *mutant_ready;        /* applied and prepared */
    char **wheat_dirs;         /* each wheat applied to a copy of the reference */
    lesson_lib
        *control_libs; /* the controls: the reference and each wheat, each built another way */
    int *control_of;           /* -1 the reference, else the wheat */
    int ncontrols;
    unit canary;
    strlist canary_symbols;
    link_spec baseline, canary_prog, canary_course;
    link_spec *control_progs, *mutant_progs;
    run_result baseline_run;   /* the reference with coverage, first and alone */
    coverage cov;
    char secret[HASH_HEX];     /* what the builds' code generation follows (codegen.h) */
    char suite_key[HASH_HEX];
    char data_key[HASH_HEX];
    strlist before;            /* without a sealed sandbox: the files tests must not change */
    bool watching;
    const check_options *opt;  /* whom to tell as stages end */
    long long memory_bytes;    /* the lesson's test_memory_mb */
    double run_limit;          /* the test runs' overall time limit */
} work;

/* A check's test runs together may take this many times the lesson's
 * per-test timeout (a suite of quick tests needs a tiny part of it). */
#define CHECK_TIME_FACTOR 60.0

static void tell(const work *w, const check_report *r, int stage) {
    if (w->opt->on_stage) w->opt->on_stage(r, stage, w->opt->data);
}

/* Records a stage's outcome and tells the caller at once. */
static void set_stage(const work *w, check_report *r, int i, stage_state s, char *summary) {
    free(r->stages[i].summary);
    r->stages[i].state = s;
    r->stages[i].summary = summary;
    tell(w, r, i);
}

static void copy_result(test_result *dst, const test_result *src) {
    *dst = *src;
    dst->name = xstrdup(src->name);
    dst->tcase = xstrdup(src->tcase ? src->tcase : "");
    dst->file = xstrdup(src->file ? src->file : "");
    dst->message = xstrdup(src->message ? src->message : "");
    dst->crash_in = src->crash_in ? xstrdup(src->crash_in) : NULL;
}

static void free_result(test_result *t) {
    free(t->name);
    free(t->tcase);
    free(t->file);
    free(t->message);
    free(t->crash_in);
}

static int harness(check_report *r, char *message) {
    r->harness_broken = true;
    free(r->harness_message);
    r->harness_message = message;
    return OL_USAGE;
}

/* What a failed run_tests means: Ctrl-C, or test programs that could not be
 * started (run_tests said why). */
static int not_run(check_report *r) {
    if (proc_interrupted()) return 130;
    return harness(r, xstrdup("test programs could not be started (see the message above)"));
}

static int count_warnings(const lesson_lib *lib) {
    int n = 0;
    for (int i = 0; i < lib->n; i++)
        for (const char *p = lib->units[i].log; p && (p = strstr(p, "warning:")) != NULL; p++) n++;
    return n;
}

/* Every run of the student's tests: one thread, the lesson's memory, the given timeout. */
static run_spec grading_spec(const work *w, const link_spec *prog, double timeout) {
    run_spec s = {.bin = prog->bin,
                  .bin_key = prog->key,
                  .tests = &w->tests.tests,
                  .timeout = timeout,
                  .data_key = w->data_key,
                  .threads = 1,
                  .memory_bytes = w->memory_bytes};
    return s;
}

/* The test runs used up the check's overall time: the stage that was
 * running fails, saying so (every run stopped there is "no result"). */
static int out_of_time(ol_ctx *ctx, const work *w, check_report *r, int stage) {
    if (!ctx->run_budget_spent) return OL_PASS;
    r->out_of_time = true;
    set_stage(
        w, r, stage, STAGE_FAIL,
        xasprintf(
            "stopped: the check's test runs reached its overall time limit of %.0f s (%.0f x the "
            "lesson's test_timeout_seconds), so it cannot say more: make your tests faster",
            w->run_limit, CHECK_TIME_FACTOR));
    return OL_FAIL;
}

/* ---- stages 1 and 2: the student's code and the course tests ---- */

static int stage_tests(ol_ctx *ctx, check_report *r, work *w);
static int build_variants(ol_ctx *ctx, check_report *r, work *w);

/* While the course tests run (they wait on servers, timeouts and one
 * another more than they compute), a helper, niced, builds what stages 3
 * and 4 need into the cache: the student's tests and every variant. It
 * says nothing and decides nothing: when stage 2 ends it is stopped, and
 * the stages build again whatever it did not finish, and judge it. */
static void start_prebuild(ol_ctx *ctx, check_report *r, work *w) {
    if (proc_fork_helper() != 0) return; /* ol itself, or no helper */
    int quiet = open("/dev/null", O_WRONLY);
    if (quiet < 0 || dup2(quiet, STDOUT_FILENO) < 0 || dup2(quiet, STDERR_FILENO) < 0) _exit(0);
    if (setpriority(PRIO_PROCESS, 0, 10) != 0) _exit(0);
    check_options silent = *w->opt;
    silent.on_stage = NULL;
    w->opt = &silent;
    ctx->verbose = false;
    if (stage_tests(ctx, r, w) == OL_PASS) build_variants(ctx, r, w);
    _exit(0); /* none of ol's exit handlers: they are ol's, not the helper's */
}

static int stage_build(ol_ctx *ctx, check_report *r, work *w, const check_options *opt) {
    int rc = build_student_code(ctx, r->l, opt->ref_deps, false, &w->mine, &w->my_deps);
    if (rc == OL_USAGE)
        return harness(r, xstrdup("the build could not start (see the message above)"));
    if (rc == OL_FAIL) {
        set_stage(
            w, r, ST_BUILD, STAGE_FAIL,
            xstrdup(
                "your code does not compile, or holds what it may not (the messages are above)"));
        return OL_FAIL;
    }
    int warnings = count_warnings(&w->mine);
    set_stage(w, r, ST_BUILD, STAGE_PASS,
              warnings ? xasprintf("compiles, with %d warning%s (above): worth reading", warnings,
                                   warnings == 1 ? "" : "s")
                       : xstrdup("compiles with -Wall -Wextra, no warnings"));
    return OL_PASS;
}

static int stage_course(ol_ctx *ctx, check_report *r, work *w) {
    if (build_course_suite(ctx, r->l, false, &w->course) != OL_PASS)
        return harness(r, xasprintf("the course tests of %s do not build", r->l->id));
    program_spec(&w->course_prog, &w->course, &w->mine, r->l, &w->my_deps);
    int failed = build_links(ctx, &w->course_prog, 1);
    if (failed < 0) return 130;
    if (failed > 0) {
        print_compiler_log(ctx, w->course_prog.log);
        set_stage(
            w, r, ST_COURSE, STAGE_FAIL,
            xstrdup(
                "your code does not link with the course tests (the linker's messages are above)"));
        return OL_FAIL;
    }
    run_spec spec = {.bin = w->course_prog.bin,
                     .bin_key = w->course_prog.key,
                     .tests = &w->course.tests,
                     .fill_idle = true,
                     .retry_timeouts = true,
                     .timeout = r->l->test_timeout,
                     .data_key = w->data_key,
                     .memory_bytes = w->memory_bytes};
    start_prebuild(ctx, r, w);
    int ran = run_suite_by_file(ctx, &w->course, &spec, &w->course_run);
    proc_stop_helper();
    if (ran != 0) return not_run(r);
    if (out_of_time(ctx, w, r, ST_COURSE) != OL_PASS) return OL_FAIL;
    int bad = run_failures(&w->course_run);
    if (bad) {
        r->course_failed = xcalloc((size_t)bad, sizeof *r->course_failed);
        for (int i = 0; i < w->course_run.n; i++)
            if (w->course_run.t[i].status != TEST_PASS)
                copy_result(&r->course_failed[r->ncourse_failed++], &w->course_run.t[i]);
        set_stage(
            w, r, ST_COURSE, STAGE_FAIL,
            xasprintf("%d of %d course tests fail on your code (above)", bad, w->course_run.n));
        return OL_FAIL;
    }
    set_stage(w, r, ST_COURSE, STAGE_PASS,
              w->course_run.n == 1 ? xstrdup("the 1 course test passes")
                                   : xasprintf("all %d pass", w->course_run.n));
    return OL_PASS;
}

/* ---- stage 3: the student's tests ---- */

static void no_tests(const work *w, check_report *r, const char *why) {
    r->score = 0;
    set_stage(w, r, ST_TESTS, STAGE_FAIL,
              xasprintf("no tests: %s, so the mutation score is 0", why));
}

static int stage_tests(ol_ctx *ctx, check_report *r, work *w) {
    const lesson *l = r->l;
    char *dir = path_join(ctx->student, l->student_tests);
    char *err = NULL, *why = NULL;
    int rc = OL_FAIL;
    strlist *problems = &r->problems;
    if (!is_dir(dir)) {
        why = xasprintf("c/%s/ does not exist (`ol start %s` makes it)", l->student_tests, l->id);
        no_tests(w, r, why);
    } else if (student_files_check(ctx, dir, problems) > 0) {
        set_stage(
            w, r, ST_TESTS, STAGE_FAIL,
            xasprintf(
                "%d file%s in your test folder %s not regular (above): ol reads only regular files",
                problems->n, problems->n == 1 ? "" : "s", problems->n == 1 ? "is" : "are"));
    } else if (suite_scan(&w->tests, l->slug, dir, &err) != 0) {
        set_stage(w, r, ST_TESTS, STAGE_FAIL, err);
        err = NULL;
    } else if (w->tests.files.n == 0) {
        why = xasprintf("c/%s/ holds no .c file", l->student_tests);
        no_tests(w, r, why);
    } else if (suite_generate(ctx, &w->tests, &err) != 0) {
        rc = harness(r, err);
        err = NULL;
    } else if (suite_check_includes(ctx, &w->tests, problems) < 0) {
        rc = 130;
    } else if (problems->n) {
        /* what the compiler sees first: a test hidden by #if 0 or named in UTF-8 is
         * not "no tests" */
        set_stage(
            w, r, ST_TESTS, STAGE_FAIL,
            xasprintf(
                "%d problem%s in your test files (above): tests may include only contract headers, "
                "<check.h>, standard C headers and their own folder's files, and every START_TEST "
                "must be compiled",
                problems->n, problems->n == 1 ? "" : "s"));
    } else if (w->tests.tests.n == 0) {
        why = xasprintf("c/%s/ holds no START_TEST(name) ... END_TEST block", l->student_tests);
        no_tests(w, r, why);
    } else {
        for (int i = 0; i < w->tests.tests.n; i++) {
            sl_push(&r->student_tests, w->tests.tests.v[i]);
            sl_push(&r->student_files, path_rel(w->tests.test_file.v[i], ctx->ws));
        }
        int failed = suite_compile(ctx, &w->tests, "your tests");
        strlist allowed = {0};
        int refused = 0;
        if (failed == 0) {
            /* nothing a test defines may stand in for grading's machinery or the lesson */
            const char **shown = xcalloc((size_t)w->tests.files.n + 1, sizeof *shown);
            for (int i = 0; i < w->tests.files.n; i++)
                shown[i] = shown_path(ctx, w->tests.files.v[i]);
            refused = symbols_of_reference(ctx, l, &allowed) != 0
                          ? -1
                          : symbols_check(ctx, l, w->tests.units, shown, w->tests.files.n, &allowed,
                                          true, problems);
            free(shown);
        }
        sl_free(&allowed);
        if (failed < 0) rc = 130;
        else if (failed > 0)
            set_stage(w, r, ST_TESTS, STAGE_FAIL,
                      xstrdup("your tests do not compile (the compiler's messages are above)"));
        else if (refused < 0)
            rc = harness(r, xstrdup("nm could not list what your tests define (above)"));
        else if (refused > 0)
            set_stage(
                w, r, ST_TESTS, STAGE_FAIL,
                xasprintf(
                    "%d symbol%s your tests define belong%s to grading, a library or the lesson "
                    "(above)",
                    refused, refused == 1 ? "" : "s", refused == 1 ? "s" : ""));
        else {
            set_stage(w, r, ST_TESTS, STAGE_PASS,
                      xasprintf("%d test%s in %d file%s", w->tests.tests.n,
                                w->tests.tests.n == 1 ? "" : "s", w->tests.files.n,
                                w->tests.files.n == 1 ? "" : "s"));
            rc = OL_PASS;
        }
    }
    free(why);
    free(err);
    free(dir);
    return rc;
}

/* ---- building every reference variant at once ---- */

/* Required pitfalls first, in lesson.json's order, then the rest. */
static void order_mutants(check_report *r) {
    mutant *sorted = xcalloc((size_t)r->nmutants + 1, sizeof *sorted);
    bool *used = xcalloc((size_t)r->nmutants + 1, sizeof *used);
    int k = 0;
    for (int p = 0; p < r->l->required_pitfalls.n; p++)
        for (int i = 0; i < r->nmutants; i++)
            if (!used[i] && strcmp(r->mutants[i].id, r->l->required_pitfalls.v[p]) == 0) {
                sorted[k++] = r->mutants[i];
                used[i] = true;
            }
    for (int i = 0; i < r->nmutants; i++)
        if (!used[i]) sorted[k++] = r->mutants[i];
    free(r->mutants);
    free(used);
    r->mutants = sorted;
}

static char *first_line(const char *text) {
    const char *p = text ? text : "";
    while (*p == '\n') p++;
    return xstrndup(p, strcspn(p, "\n"));
}

/* The canary: each function the reference defines becomes __wrap_NAME, which aborts. */
static int prepare_canary(ol_ctx *ctx, check_report *r, work *w) {
    for (int i = 0; i < w->ref->n; i++)
        if (defined_functions(ctx, w->ref->units[i].obj, &w->canary_symbols) != 0)
            return harness(r, xstrdup("nm could not list the reference's functions"));
    if (w->canary_symbols.n == 0)
        return harness(
            r,
            xasprintf("the reference of %s defines no function: no canary can be made", r->l->id));
    strbuf src = {0};
    sb_add(&src, "/* Generated by ol: the canary. Every function of the lesson aborts. */\n"
                 "#include <stdio.h>\n#include <stdlib.h>\n\n");
    for (int i = 0; i < w->canary_symbols.n; i++) {
        const char *s = w->canary_symbols.v[i];
        sb_printf(&src,
                  "void __wrap_%s(void);\nvoid __wrap_%s(void) {\n"
                  "    fputs(\"ol canary: %s was called\\n\", stderr);\n    abort();\n}\n\n",
                  s, s, s);
    }
    hasher *h = hash_new();
    hash_str(h, src.s);
    char key[HASH_HEX];
    hash_done(h, key);
    char *dir = ctx_cache_dir(ctx, "gen");
    char *path = dir ? xasprintf("%s/canary-%s.c", dir, key) : NULL;
    int rc = OL_PASS;
    /* the file is named by its content: a file there with anything else is made again */
    char *was = path ? read_file(path, NULL) : NULL;
    bool whole = was && strcmp(was, src.s) == 0;
    free(was);
    if (!path || (!whole && write_file_atomic(path, src.s, src.len) != 0))
        rc = harness(r, xstrdup("cannot write the canary's source under build/ol/gen"));
    else {
        w->canary.src = xstrdup(path);
        w->canary.cwd = xstrdup(ctx->root);
    }
    sb_free(&src);
    free(path);
    free(dir);
    return rc;
}

static void init_outcomes(check_report *r) {
    r->outcomes = xcalloc((size_t)r->nmutants + 1, sizeof *r->outcomes);
    for (int i = 0; i < r->nmutants; i++) {
        r->outcomes[i].m = &r->mutants[i];
        r->outcomes[i].required = sl_contains(&r->l->required_pitfalls, r->mutants[i].id);
        r->outcomes[i].status = MS_IGNORED;
        r->outcomes[i].reason = xstrdup("not run: an earlier stage failed");
    }
}

static void set_outcome(mutant_outcome *o, mutant_status s, char *reason) {
    o->status = s;
    free(o->reason);
    o->reason = reason;
}

/* Each control build's variant: the reference (0), then each wheat. */
static int control_variant(int k, int nwheats) { return k % (1 + nwheats) - 1; }

/* A build of the lesson's code with its own code generation (codegen.h). */
static void vary(const work *w, lesson_lib *lib, const char *build) {
    char seed[HASH_HEX];
    codegen_seed(w->secret, w->suite_key, build, seed);
    for (int i = 0; i < lib->n; i++) codegen_flags(seed, &lib->units[i].flags);
}

/* The suite's key: the student's test objects (a changed test means new builds). */
static void suite_key(const work *w, char out[HASH_HEX]) {
    hasher *h = hash_new();
    hash_str(h, "suite");
    for (int i = 0; i < w->tests.nunits; i++) hash_str(h, w->tests.units[i].key);
    hash_done(h, out);
}

/* Loads the wheats and mutants, applies them, and builds every library and
 * test program the remaining stages need, in two parallel batches: the
 * coverage baseline, the canary, the controls (the reference and each wheat,
 * as many as there are mutants) and every mutant, each grading build with
 * code generation of its own. */
static int build_variants(ol_ctx *ctx, check_report *r, work *w) {
    const lesson *l = r->l;
    char *err = NULL;
    char *mdir = path_join(l->dir, "mutants"), *wdir = path_join(l->dir, "wheats");
    int rc = OL_PASS;
    /* a student release has no mutant files, only their compiled objects (prebuilt.h) */
    bool release = prebuilt_release(ctx);
    if (release ? mutants_load_prebuilt(ctx, l, false, &r->mutants, &r->nmutants, &err) != 0 ||
                      mutants_load_prebuilt(ctx, l, true, &r->wheats, &r->nwheats, &err) != 0
                : mutants_load(mdir, false, &r->mutants, &r->nmutants, &err) != 0 ||
                      mutants_load(wdir, true, &r->wheats, &r->nwheats, &err) != 0)
        rc = harness(r, err);
    free(mdir);
    free(wdir);
    if (rc != OL_PASS) return rc;
    order_mutants(r);
    init_outcomes(r);
    for (int p = 0; p < l->required_pitfalls.n; p++) {
        bool found = false;
        for (int i = 0; i < r->nmutants; i++)
            found = found || !strcmp(r->mutants[i].id, l->required_pitfalls.v[p]);
        if (!found)
            return harness(
                r,
                xasprintf(
                    "lesson.json requires the pitfall %s, but course/%s/mutants/ has no mutant %s",
                    l->required_pitfalls.v[p], l->id, l->required_pitfalls.v[p]));
    }
    if (r->nmutants == 0 && l->level >= 3)
        return harness(
            r, xasprintf("course/%s/mutants/ holds no mutant: nothing to grade %s's rung with",
                         l->id, l->rung));
    if (codegen_secret(ctx, w->secret) != 0)
        return harness(r, xstrdup("ol's cache has no secret (above)"));
    suite_key(w, w->suite_key);

    if (deps_prepare(ctx, l, true, true, &w->ref_deps, &err) != 0 ||
        lesson_lib_prepare(ctx, &w->refcov, l, LIB_COVERAGE, NULL, "the reference (coverage)",
                           &err) != 0)
        return harness(r, err);
    w->wheat_dirs = xcalloc((size_t)r->nwheats + 1, sizeof *w->wheat_dirs);
    w->mutant_libs = xcalloc((size_t)r->nmutants + 1, sizeof *w->mutant_libs);
    w->mutant_ready = xcalloc((size_t)r->nmutants + 1, sizeof *w->mutant_ready);
    for (int i = 0; i < r->nwheats; i++)
        if (!(w->wheat_dirs[i] = mutant_apply(ctx, l, &r->wheats[i], &err))) return harness(r, err);
    /* one build of each: the reference and every wheat, each with code generation of its own;
     * the runs among the mutants repeat them (stage_grading) */
    w->ncontrols = 1 + r->nwheats;
    w->control_libs = xcalloc((size_t)w->ncontrols, sizeof *w->control_libs);
    w->control_of = xcalloc((size_t)w->ncontrols, sizeof *w->control_of);
    for (int k = 0; k < w->ncontrols; k++) {
        int v = w->control_of[k] = control_variant(k, r->nwheats);
        char *label = v < 0 ? xasprintf("the reference (control %d)", k + 1)
                            : xasprintf("wheat %s (control %d)", r->wheats[v].id, k + 1);
        int prc =
            lesson_lib_prepare(ctx, &w->control_libs[k], l, v < 0 ? LIB_REFERENCE : LIB_PATCHED,
                               v < 0 ? NULL : w->wheat_dirs[v], label, &err);
        free(label);
        if (prc != 0) return harness(r, err);
        char build[32];
        snprintf(build, sizeof build, "control %d", k);
        vary(w, &w->control_libs[k], build);
    }
    for (int i = 0; i < r->nmutants; i++) {
        char *dir = mutant_apply(ctx, l, &r->mutants[i], &err);
        if (!dir) {
            set_outcome(&r->outcomes[i], MS_COMPILE_ERROR, err);
            err = NULL;
            continue;
        }
        char *label = xasprintf("mutant %s", r->mutants[i].id);
        w->mutant_ready[i] =
            lesson_lib_prepare(ctx, &w->mutant_libs[i], l, LIB_PATCHED, dir, label, &err) == 0;
        free(label);
        free(dir);
        if (!w->mutant_ready[i]) {
            set_outcome(&r->outcomes[i], MS_COMPILE_ERROR, err);
            err = NULL;
            continue;
        }
        char *build = xasprintf("mutant %s", r->mutants[i].id);
        vary(w, &w->mutant_libs[i], build);
        free(build);
    }

    /* batch 1: every library */
    int nlibs = 1 + w->ref_deps.n + w->ncontrols + r->nmutants;
    lesson_lib **libs = xcalloc((size_t)nlibs, sizeof *libs);
    int k = 0;
    libs[k++] = &w->refcov;
    for (int i = 0; i < w->ref_deps.n; i++) libs[k++] = &w->ref_deps.libs[i];
    for (int i = 0; i < w->ncontrols; i++) libs[k++] = &w->control_libs[i];
    int trusted = k; /* these must build */
    for (int i = 0; i < r->nmutants; i++)
        if (w->mutant_ready[i]) libs[k++] = &w->mutant_libs[i];
    int failed = lesson_libs_build(ctx, libs, k);
    if (failed < 0) {
        free(libs);
        return 130;
    }
    for (int i = 0; i < trusted; i++)
        if (!libs[i]->ok) {
            lesson_lib_print_log(ctx, libs[i]);
            rc = harness(r, xasprintf("%s does not compile (above)", libs[i]->label));
            free(libs);
            return rc;
        }
    free(libs);
    w->ref = &w->control_libs[0]; /* the canary's: the reference, built its own way */
    for (int i = 0; i < r->nmutants; i++)
        if (w->mutant_ready[i] && !w->mutant_libs[i].ok) {
            w->mutant_ready[i] = false;
            char *why = NULL;
            for (int u = 0; u < w->mutant_libs[i].n && !why; u++)
                if (!w->mutant_libs[i].units[u].ok)
                    why = first_line(strstr(w->mutant_libs[i].units[u].log, "error:"));
            set_outcome(&r->outcomes[i], MS_COMPILE_ERROR,
                        xasprintf("does not compile: %s", why ? why : "?"));
            free(why);
        }
    if ((rc = prepare_canary(ctx, r, w)) != OL_PASS) return rc;
    failed = build_units(ctx, &w->canary, 1);
    if (failed != 0) {
        print_compiler_log(ctx, w->canary.log);
        return failed < 0 ? 130 : harness(r, xstrdup("the canary does not compile (above)"));
    }

    /* batch 2: every test program */
    w->control_progs = xcalloc((size_t)w->ncontrols, sizeof *w->control_progs);
    w->mutant_progs = xcalloc((size_t)r->nmutants + 1, sizeof *w->mutant_progs);
    int nprogs = 2 + w->ncontrols + r->nmutants;
    link_spec *progs = xcalloc((size_t)nprogs, sizeof *progs);
    int *origin = xcalloc((size_t)nprogs,
                          sizeof *origin); /* -1 baseline, -2 canary, control k, 1000+mutant i */
    k = 0;
    program_spec(&progs[k], &w->tests, &w->refcov, l, &w->ref_deps);
    progs[k].coverage = true;
    origin[k++] = -1;
    suite_link(&w->tests, &progs[k]);
    link_add_unit(&progs[k], &w->canary);
    suite no_tests = {0}; /* the student's objects are in already, before the canary */
    program_spec(&progs[k], &no_tests, w->ref, l, &w->ref_deps);
    /* a test hook: OL_TEST_BREAK_CANARY links the plain reference, as a broken harness would */
    const char *broken = getenv("OL_TEST_BREAK_CANARY");
    if (!(broken && *broken && strcmp(broken, "0") != 0))
        for (int i = 0; i < w->canary_symbols.n; i++)
            sl_push(&progs[k].wraps, w->canary_symbols.v[i]);
    origin[k++] = -2;
    for (int i = 0; i < w->ncontrols; i++) {
        program_spec(&progs[k], &w->tests, &w->control_libs[i], l, &w->ref_deps);
        origin[k++] = i;
    }
    for (int i = 0; i < r->nmutants; i++)
        if (w->mutant_ready[i]) {
            program_spec(&progs[k], &w->tests, &w->mutant_libs[i], l, &w->ref_deps);
            origin[k++] = 1000 + i;
        }
    failed = build_links(ctx, progs, k);
    if (failed < 0) {
        for (int i = 0; i < k; i++) link_free(&progs[i]);
        free(progs);
        free(origin);
        return 130;
    }
    for (int i = 0; i < k; i++) {
        if (origin[i] == -1) w->baseline = progs[i];
        else if (origin[i] == -2) w->canary_prog = progs[i];
        else if (origin[i] < 1000) w->control_progs[origin[i]] = progs[i];
        else w->mutant_progs[origin[i] - 1000] = progs[i];
    }
    free(progs);
    free(origin);
    if (!w->baseline.ok) {
        print_compiler_log(ctx, w->baseline.log);
        set_stage(
            w, r, ST_VALID, STAGE_FAIL,
            xstrdup(
                "your tests do not link with the reference (above): call only the contracts' "
                "functions"));
        return OL_FAIL;
    }
    for (int i = 0; i < w->ncontrols; i++)
        if (!w->control_progs[i].ok) {
            print_compiler_log(ctx, w->control_progs[i].log);
            return harness(
                r, xasprintf("%s does not link with your tests (above)", w->control_libs[i].label));
        }
    if (!w->canary_prog.ok) {
        print_compiler_log(ctx, w->canary_prog.log);
        return harness(r, xstrdup("the canary does not link (above)"));
    }
    for (int i = 0; i < r->nmutants; i++)
        if (w->mutant_ready[i] && !w->mutant_progs[i].ok) {
            w->mutant_ready[i] = false;
            char *why = first_line(w->mutant_progs[i].log);
            set_outcome(&r->outcomes[i], MS_COMPILE_ERROR, xasprintf("does not link: %s", why));
            free(why);
        }
    return OL_PASS;
}

/* ---- what tests must not change ---- */

/* "path size mtime" of every file beneath path (at most 6 folders deep). */
static void stat_tree(const char *path, strlist *out, int depth) {
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = depth < 6 ? opendir(path) : NULL;
        if (!d) return;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char *child = path_join(path, e->d_name);
            stat_tree(child, out, depth + 1);
            free(child);
        }
        closedir(d);
        return;
    }
    sl_push_owned(out, xasprintf("%s\t%lld\t%lld.%09ld", path, (long long)st.st_size,
                                 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec));
}

/* The student's code and tests, and what grades the lesson: its course
 * folder (lesson.json, mutants, wheats), reference sources and fixtures. */
static void snapshot(ol_ctx *ctx, const lesson *l, strlist *out) {
    stat_tree(ctx->student, out, 0);
    char *paths[] = {xasprintf("%s/course/%s", ctx->root, l->id),
                     l->fixtures ? path_join(ctx->root, l->fixtures) : NULL};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        if (paths[i]) stat_tree(paths[i], out, 0);
        free(paths[i]);
    }
    for (int i = 0; i < l->sources.n; i++) {
        char *src = xasprintf("%s/reference/%s", ctx->root, l->sources.v[i]);
        stat_tree(src, out, 0);
        free(src);
    }
    sl_sort(out);
}

/* Where the sandbox cannot keep tests out (no Landlock, or a workspace
 * under /tmp), notice at least a test that changed the student's code or
 * the course: the files that differ since the tests started, else "". */
static char *changed_files(ol_ctx *ctx, const check_report *r, work *w) {
    if (!w->watching) return xstrdup("");
    strlist now = {0}, changed = {0};
    snapshot(ctx, r->l, &now);
    for (int k = 0; k < 2; k++) {
        const strlist *a = k == 0 ? &w->before : &now, *b = k == 0 ? &now : &w->before;
        for (int i = 0; i < a->n; i++) {
            if (sl_contains(b, a->v[i])) continue;
            char *path = xstrndup(a->v[i], strcspn(a->v[i], "\t"));
            const char *shown = shown_path(ctx, path);
            if (!sl_contains(&changed, shown)) sl_push(&changed, shown);
            free(path);
        }
    }
    char *list = sl_join(&changed, ", ");
    sl_free(&now);
    sl_free(&changed);
    return list;
}

static void watch_files(ol_ctx *ctx, const check_report *r, work *w) {
    strlist keep_out = {0};
    sl_push(&keep_out, ctx->root);
    sl_push(&keep_out, ctx->ws);
    w->watching = !sandbox_sealed(&keep_out);
    sl_free(&keep_out);
    if (w->watching) snapshot(ctx, r->l, &w->before);
}

/* Stage 4 fails when tests changed what they must not. */
static int judge_changes(ol_ctx *ctx, check_report *r, work *w) {
    char *changed = changed_files(ctx, r, w);
    if (!*changed) {
        free(changed);
        return OL_PASS;
    }
    set_stage(
        w, r, ST_VALID, STAGE_FAIL,
        xasprintf(
            "INVALID: files changed while your tests ran (%s): a test may write only its working "
            "folder and /tmp, so the mutation score is unknown; put those files back (git diff "
            "shows what changed)",
            changed));
    free(changed);
    return OL_FAIL;
}

/* ---- stage 4: validity ---- */

static void add_invalid(check_report *r, const char *where, const test_result *t) {
    r->invalid = xrealloc(r->invalid, (size_t)(r->ninvalid + 1) * sizeof *r->invalid);
    invalid_test *v = &r->invalid[r->ninvalid++];
    v->where = xstrdup(where);
    copy_result(&v->t, t);
}


static bool uncovered(const coverage *cov, const mutant *m, int *line);

/* The lines one test runs on the reference: the coverage build, that test
 * alone, its counts written into the run's own folder. 0, or -1 when they
 * cannot be measured. */
static int coverage_of_test(ol_ctx *ctx, check_report *r, work *w, const test_result *t,
                            coverage *out) {
    memset(out, 0, sizeof *out);
    strlist one = {0};
    sl_push(&one, t->name);
    run_spec spec = grading_spec(w, &w->baseline, r->l->test_timeout);
    spec.tests = &one;
    spec.no_cache = true;
    spec.filter = t->name;
    spec.exact = true;
    spec.no_fork = true; /* the test fails here: in a forked child its counts would be lost */
    spec.tcase = t->tcase && *t->tcase ? t->tcase : NULL;
    char *tmp = ctx_cache_dir(ctx, "tmp");
    char *counts = tmp ? make_temp_dir(tmp, "gcov") : NULL;
    if (counts) rmdir(counts); /* run_tests moves the run's counts to this name */
    spec.gcov_dir = counts;
    run_result run = {0};
    int rc = counts && run_tests(ctx, &spec, &run, 1) == 0 && !run.past_deadline ? 0 : -1;
    if (rc == 0) rc = coverage_collect(ctx, &w->refcov, counts, out);
    if (counts) remove_tree(counts, ctx->cache);
    free(counts);
    free(tmp);
    run_result_free(&run);
    sl_free(&one);
    return rc;
}

/* Examplar's misconception hints: an invalid test that passes on a mutant
 * carrying a Hint agrees with that mutant's misconception, but only if the
 * test ran the lines that mutant changes (its own coverage on the
 * reference): else the mutant passes it for another reason, and its hint
 * would mislead. */
static int find_hints(ol_ctx *ctx, check_report *r, work *w) {
    int n = 0;
    bool wrong = false; /* only a failed assertion can agree with a misconception */
    for (int i = 0; i < r->ninvalid; i++) wrong = wrong || r->invalid[i].t.status == TEST_FAIL;
    int *which = xcalloc((size_t)r->nmutants + 1, sizeof *which);
    for (int i = 0; wrong && i < r->nmutants; i++)
        if (w->mutant_ready[i] && r->mutants[i].hint) which[n++] = i;
    if (n == 0) {
        free(which);
        return OL_PASS;
    }
    run_spec *specs = xcalloc((size_t)n, sizeof *specs);
    run_result *runs = xcalloc((size_t)n, sizeof *runs);
    for (int k = 0; k < n; k++)
        specs[k] = grading_spec(w, &w->mutant_progs[which[k]], r->timeout);
    int rc = run_tests(ctx, specs, runs, n) == 0 ? OL_PASS : not_run(r);
    /* each invalid test once, where it first failed, with its coverage when needed */
    coverage *covs = xcalloc((size_t)r->ninvalid + 1, sizeof *covs);
    bool *measured = xcalloc((size_t)r->ninvalid + 1, sizeof *measured);
    for (int i = 0; i < r->ninvalid && rc == OL_PASS; i++) {
        bool first = true;
        for (int j = 0; j < i; j++)
            first = first && strcmp(r->invalid[j].t.name, r->invalid[i].t.name) != 0;
        if (!first) continue;
        for (int k = 0; k < n && rc == OL_PASS; k++) {
            if (runs[k].past_deadline) continue;
            const mutant *m = &r->mutants[which[k]];
            const test_result *t = run_find(&runs[k], r->invalid[i].t.name);
            if (!t || t->status != TEST_PASS) continue;
            if (!measured[i]) {
                measured[i] = true;
                if (coverage_of_test(ctx, r, w, &r->invalid[i].t, &covs[i]) != 0 &&
                    proc_interrupted())
                    rc = 130;
            }
            int line = 0;
            if (rc != OL_PASS || uncovered(&covs[i], m, &line)) continue;
            char *hint = xasprintf(
                "%s fails on %s but passes on %s (%s), a known bug: it expects what that bug "
                "computes. %s",
                r->invalid[i].t.name, r->invalid[i].where, m->id, m->title, m->hint);
            if (!sl_contains(&r->hints, hint)) sl_push_owned(&r->hints, hint);
            else free(hint);
        }
    }
    for (int i = 0; i < r->ninvalid; i++) coverage_free(&covs[i]);
    free(covs);
    free(measured);
    for (int k = 0; k < n; k++) run_result_free(&runs[k]);
    free(runs);
    free(specs);
    free(which);
    return rc;
}

double mutant_timeout(double slowest, double limit) {
    double t = 1.5 * slowest + 2.0;
    return t < limit ? t : limit;
}

/* The baseline's coverage, kept beside its cached result; collected from
 * the run's own folder (run.h's gcov_dir). Spoiled coverage notes in the
 * cache are made again, once, with the baseline program. */
static int run_baseline(ol_ctx *ctx, check_report *r, work *w) {
    for (int attempt = 0;; attempt++) {
        run_spec spec = grading_spec(w, &w->baseline, r->l->test_timeout);
        char key[HASH_HEX];
        run_spec_key(ctx, &spec, key);
        char *cov_path = xasprintf("%s/run/%s.cov-3.json", ctx->cache, key);
        char *tmp = ctx_cache_dir(ctx, "tmp");
        char *counts = NULL;
        if (coverage_load(&w->cov, cov_path) != 0) {
            coverage_free(&w->cov);
            spec.no_cache = true;
            counts = tmp ? make_temp_dir(tmp, "gcov") : NULL;
            if (counts) rmdir(counts); /* run_tests moves the run's counts to this name */
            spec.gcov_dir = counts;
        }
        int rc = run_tests(ctx, &spec, &w->baseline_run, 1) == 0 ? OL_PASS : not_run(r);
        bool spoiled = false;
        if (rc == OL_PASS && counts && !w->baseline_run.past_deadline) {
            if (coverage_collect(ctx, &w->refcov, counts, &w->cov) == 0)
                coverage_save(&w->cov, cov_path);
            else spoiled = true;
        }
        if (counts) remove_tree(counts, ctx->cache);
        free(counts);
        free(tmp);
        free(cov_path);
        if (rc != OL_PASS || !spoiled) return rc;
        if (attempt > 0)
            return harness(r, xstrdup("gcov cannot read the baseline's coverage, even made again"));
        /* the notes (or the objects) in the cache do not match: make them, and the
         * program, again */
        coverage_free(&w->cov);
        run_result_free(&w->baseline_run);
        for (int i = 0; i < w->refcov.n; i++) {
            char *dir = path_dirname(w->refcov.units[i].obj);
            remove_tree(dir, ctx->cache);
            free(dir);
        }
        unlink(w->refcov.archive.path);
        unlink(w->baseline.bin);
        link_input_free(&w->refcov.archive);
        lesson_lib *libs[] = {&w->refcov};
        if (lesson_libs_build(ctx, libs, 1) != 0 || !w->refcov.ok)
            return harness(r, xstrdup("the reference's coverage build cannot be made again"));
        link_spec again = {0};
        program_spec(&again, &w->tests, &w->refcov, r->l, &w->ref_deps);
        again.coverage = true;
        if (build_links(ctx, &again, 1) != 0 || !again.ok) {
            link_free(&again);
            return harness(r, xstrdup("the baseline program cannot be made again"));
        }
        link_free(&w->baseline);
        w->baseline = again;
    }
}

/* Stage 4 begins: the student's tests on the reference built with
 * coverage, first and alone, with the lesson's timeout. A test failing here
 * is INVALID. The mutants' timeout follows from the slowest test here. This
 * run can be told from the rest (it is instrumented), but passing it proves
 * nothing: the wheats and the reference run again among the mutants, as
 * controls, and a test must pass on every one of those too. */
static int stage_baseline(ol_ctx *ctx, check_report *r, work *w) {
    watch_files(ctx, r, w);
    int rc = run_baseline(ctx, r, w);
    if (rc != OL_PASS) return rc;
    if ((rc = out_of_time(ctx, w, r, ST_VALID)) != OL_PASS) return rc;
    const run_result *run = &w->baseline_run;
    for (int i = 0; i < run->n; i++)
        if (run->t[i].status != TEST_PASS) add_invalid(r, "the reference", &run->t[i]);
    /* the timeout for everything that follows, from the slowest test here */
    double slowest = -1;
    for (int i = 0; i < run->n; i++)
        if (run->t[i].seconds > slowest) slowest = run->t[i].seconds;
    r->baseline_seconds = slowest >= 0 ? slowest : run->seconds;
    /* in tenths of a second, up: a test's time on the reference (which it could make depend on what
     * the reference computes) shows in the report only as coarsely as that */
    r->baseline_seconds = ceil(r->baseline_seconds * 10 - 1e-9) / 10;
    r->timeout = mutant_timeout(r->baseline_seconds, r->l->test_timeout);
    if (judge_changes(ctx, r, w) != OL_PASS) return OL_FAIL;
    if (r->ninvalid) {
        if ((rc = find_hints(ctx, r, w)) != OL_PASS) return rc;
        if ((rc = out_of_time(ctx, w, r, ST_VALID)) != OL_PASS) return rc;
        strlist names = {0};
        for (int i = 0; i < r->ninvalid; i++)
            if (!sl_contains(&names, r->invalid[i].t.name)) sl_push(&names, r->invalid[i].t.name);
        char *list = sl_join(&names, ", ");
        set_stage(
            w, r, ST_VALID, STAGE_FAIL,
            xasprintf(
                "INVALID: %d test%s fail%s on a correct implementation (%s), so the mutation score "
                "is unknown",
                names.n, names.n == 1 ? "" : "s", names.n == 1 ? "s" : "", list));
        free(list);
        sl_free(&names);
        return OL_FAIL;
    }
    return OL_PASS;
}

/* Stage 4 goes on: the student's tests on their own code, once it passes the
 * course tests (so not with --tests-only). A test failing there found a bug
 * the course tests let through, or checks what the contract does not promise:
 * either way the lesson is not done. It also holds a suite to the code its
 * author wrote, so that tests recognising only the reference's builds (its
 * machine code, its ops, its memory) fail, however well they tell mutants. */
static int stage_own_code(ol_ctx *ctx, check_report *r, work *w) {
    if (w->opt->tests_only || r->stages[ST_COURSE].state != STAGE_PASS) return OL_PASS;
    program_spec(&w->own_prog, &w->tests, &w->mine, r->l, &w->my_deps);
    int failed = build_links(ctx, &w->own_prog, 1);
    if (failed < 0) return 130;
    if (failed > 0) {
        print_compiler_log(ctx, w->own_prog.log);
        set_stage(w, r, ST_VALID, STAGE_FAIL,
                  xstrdup("your tests do not link with your code (the linker's messages are "
                          "above)"));
        return OL_FAIL;
    }
    run_spec spec = grading_spec(w, &w->own_prog, r->l->test_timeout);
    spec.retry_timeouts = true;
    if (run_tests(ctx, &spec, &w->own_run, 1) != 0) return not_run(r);
    if (out_of_time(ctx, w, r, ST_VALID) != OL_PASS) return OL_FAIL;
    int bad = run_failures(&w->own_run);
    if (!bad) return OL_PASS;
    r->own_failed = xcalloc((size_t)bad, sizeof *r->own_failed);
    strlist names = {0};
    for (int i = 0; i < w->own_run.n; i++)
        if (w->own_run.t[i].status != TEST_PASS) {
            copy_result(&r->own_failed[r->nown_failed++], &w->own_run.t[i]);
            sl_push(&names, w->own_run.t[i].name);
        }
    char *list = sl_join(&names, ", ");
    set_stage(w, r, ST_VALID, STAGE_FAIL,
              xasprintf("%d of your tests fail%s on your own code (%s), which passes the course "
                        "tests, so the mutation score is unknown",
                        bad, bad == 1 ? "s" : "", list));
    free(list);
    sl_free(&names);
    return OL_FAIL;
}

/* ---- stages 5 and 6: the canary and the mutants, with the controls ---- */

/* A mutant none of whose changed lines ran in the baseline cannot be caught:
 * NoCoverage. Lines gcov does not count as code say nothing either way. */
static bool uncovered(const coverage *cov, const mutant *m, int *line) {
    bool seen_code = false;
    for (int i = 0; i < m->nchanges; i++) {
        const changed_line *c = &m->changes[i];
        int lines[2] = {c->line, c->inserted ? c->line - 1 : 0};
        for (int k = 0; k < 2; k++) {
            if (lines[k] <= 0) continue;
            int count = coverage_count(cov, c->file, lines[k]);
            if (count > 0) return false;
            if (count == 0 && !seen_code) {
                seen_code = true;
                *line = lines[k];
            }
        }
    }
    return seen_code;
}

static void classify(mutant_outcome *o, const run_result *run) {
    strbuf reason = {0};
    bool timeout = false;
    int missing = 0;
    for (int i = 0; i < run->n; i++) {
        const test_result *t = &run->t[i];
        if (t->status == TEST_PASS) continue;
        if (t->status == TEST_TIMEOUT) {
            timeout = true;
            continue;
        }
        if (t->status == TEST_MISSING) {
            missing++;
            continue;
        }
        sl_push(&o->killed_by, t->name);
        if (o->killed_by.n <= 3) {
            char *what = test_describe(t);
            sb_printf(&reason, "%s%s: %s", reason.len ? "; " : "", t->name, what);
            free(what);
        }
    }
    o->seconds = run->seconds;
    if (o->killed_by.n) set_outcome(o, MS_KILLED, sb_take(&reason));
    else if (timeout || run->watchdog) {
        sb_free(&reason);
        set_outcome(o, MS_TIMEOUT,
                    xstrdup(run->watchdog ? "the test program ran past ol's time limit"
                                          : "a test ran past the per-test timeout"));
    } else if (missing || run->term_signal) {
        sb_free(&reason);
        set_outcome(o, MS_RUNTIME_ERROR,
                    xstrdup("the test program died before reporting every test"));
    } else {
        sb_free(&reason);
        set_outcome(o, MS_SURVIVED, xstrdup("every test passed"));
    }
}

/* A random order (Fisher-Yates on getrandom's bytes, else the clock). */
static void shuffle(int *v, int n) {
    unsigned seed = (unsigned)(now_seconds() * 1e6);
    for (int i = n - 1; i > 0; i--) {
        unsigned x;
        if (getrandom(&x, sizeof x, 0) != (ssize_t)sizeof x) x = seed = seed * 1103515245u + 12345u;
        int j = (int)(x % (unsigned)(i + 1));
        int t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* The controls: the reference again, run as mutants are (in the same
 * batch, at random places, with the mutants' timeout), as many times as
 * there are mutants to run. A test that tells the validity runs from the
 * mutants' by anything but behaviour (their order or time, files left by
 * earlier runs, the timeout it is given) fails on one, and is INVALID like
 * any test that fails on the reference. So does a test that fails at
 * random to kill mutants by chance: failing on a fraction p of the runs,
 * it kills m given mutants and passes k controls with chance p^m (1-p)^k,
 * at most 3e-6 for L7.1's 7 required pitfalls among 13 mutants. */
static int judge_controls(ol_ctx *ctx, check_report *r, work *w, run_result *const *runs,
                          const int *which, int n) {
    if (judge_changes(ctx, r, w) != OL_PASS) return OL_FAIL;
    int before = r->ninvalid;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < runs[k]->n; i++) {
            const test_result *t = &runs[k]->t[i];
            bool seen = false; /* each test once, where it first failed */
            for (int j = before; j < r->ninvalid; j++)
                seen = seen || !strcmp(r->invalid[j].t.name, t->name);
            if (t->status == TEST_PASS || seen) continue;
            int v = w->control_of[which[k]];
            char *where =
                v < 0 ? xstrdup("the reference, built another way and run among the mutants")
                      : xasprintf("wheat %s (%s), built another way and run among the mutants",
                                  r->wheats[v].id, r->wheats[v].title);
            add_invalid(r, where, t);
            free(where);
        }
    if (r->ninvalid == before) {
        /* a student release has one build of each (prebuilt.h): the grader's vary */
        bool release = prebuilt_release(ctx);
        set_stage(
            w, r, ST_VALID, STAGE_PASS,
            xasprintf(
                "%s on the reference and on %d wheat%s, %s and run among the mutants (%d run%s), "
                "on the reference with coverage%s",
                w->tests.tests.n == 1 ? "your test passes" : "all your tests pass", r->nwheats,
                r->nwheats == 1 ? "" : "s",
                release ? "each the release's one build (the grader builds each its own way)"
                        : "each built its own way",
                n, n == 1 ? "" : "s", w->opt->tests_only ? "" : " and on your code"));
        return OL_PASS;
    }
    r->invalid_on_rerun = true;
    strlist names = {0};
    for (int i = before; i < r->ninvalid; i++)
        if (!sl_contains(&names, r->invalid[i].t.name)) sl_push(&names, r->invalid[i].t.name);
    char *list = sl_join(&names, ", ");
    set_stage(
        w, r, ST_VALID, STAGE_FAIL,
        xasprintf(
            "INVALID: %d test%s fail%s on a correct implementation run among the mutants (%s): a "
            "test must pass on every correct implementation, however it is built and whatever ran "
            "before it, so the mutation score is unknown",
            names.n, names.n == 1 ? "" : "s", names.n == 1 ? "s" : "", list));
    free(list);
    sl_free(&names);
    return OL_FAIL;
}

/* The canary must be caught. If it is not, do the student's tests call
 * nothing, or is the harness broken? The course tests call every function:
 * they must catch it. */
static int judge_canary(ol_ctx *ctx, check_report *r, work *w, const run_result *run) {
    int killers = run_failures(run);
    if (killers > 0) {
        set_stage(w, r, ST_CANARY, STAGE_PASS,
                  xasprintf("caught by %d of your %d test%s", killers, w->tests.tests.n,
                            w->tests.tests.n == 1 ? "" : "s"));
        return OL_PASS;
    }
    w->canary_course = (link_spec){0};
    suite_link(&w->course, &w->canary_course);
    link_add_unit(&w->canary_course, &w->canary);
    suite none = {0};
    program_spec(&w->canary_course, &none, w->ref, r->l, &w->ref_deps);
    for (int i = 0; i < w->canary_prog.wraps.n; i++)
        sl_push(&w->canary_course.wraps, w->canary_prog.wraps.v[i]);
    int failed = build_links(ctx, &w->canary_course, 1);
    if (failed < 0) return 130;
    if (failed > 0) {
        print_compiler_log(ctx, w->canary_course.log);
        return harness(r, xstrdup("the canary does not link with the course tests (above)"));
    }
    run_spec spec = grading_spec(w, &w->canary_course, r->timeout);
    spec.tests = &w->course.tests;
    run_result course = {0};
    if (run_tests(ctx, &spec, &course, 1) != 0) return not_run(r);
    int course_killers = run_failures(&course);
    run_result_free(&course);
    if (course_killers == 0)
        return harness(
            r,
            xstrdup(
                "the canary, which aborts in every function of the lesson, survived even the "
                "course tests: the mutants are not reaching the test programs"));
    set_stage(
        w, r, ST_CANARY, STAGE_FAIL,
        xasprintf(
            "none of your tests calls a function of %s (a variant that aborts in every one of them "
            "passed them all), so no mutant can be caught",
            r->l->id));
    return OL_FAIL;
}

static int score_mutants(check_report *r, work *w) {
    strlist killers = {0};
    for (int i = 0; i < r->nmutants; i++) {
        const mutant_outcome *o = &r->outcomes[i];
        switch (o->status) {
        case MS_KILLED: r->killed++; break;
        case MS_TIMEOUT: r->timed_out++; break;
        case MS_SURVIVED: r->survived++; break;
        case MS_NOCOVERAGE: r->no_coverage++; break;
        default: r->errors++; break;
        }
        for (int k = 0; k < o->killed_by.n; k++)
            if (!sl_contains(&killers, o->killed_by.v[k])) sl_push(&killers, o->killed_by.v[k]);
        bool caught = o->status == MS_KILLED || o->status == MS_TIMEOUT;
        if (o->required && !caught) sl_push(&r->required_missed, o->m->id);
        if (o->required && (o->status == MS_COMPILE_ERROR || o->status == MS_RUNTIME_ERROR)) {
            sl_free(&killers);
            return harness(r, xasprintf("the required pitfall mutant %s cannot be graded: %s",
                                        o->m->id, o->reason));
        }
    }
    for (int i = 0; i < w->tests.tests.n; i++)
        if (!sl_contains(&killers, w->tests.tests.v[i]))
            sl_push(&r->kill_nothing, w->tests.tests.v[i]);
    sl_free(&killers);
    r->valid = r->killed + r->timed_out + r->survived + r->no_coverage;
    if (r->valid == 0)
        return harness(r, xstrdup("no mutant could be built and run: nothing to grade with"));
    r->score = (double)(r->killed + r->timed_out) / r->valid;
    bool ok = r->score + 1e-12 >= r->l->threshold && r->required_missed.n == 0;
    char *summary =
        xasprintf("%.2f = (%d killed + %d timed out) / %d valid mutant%s; %s %.2f (%s)%s", r->score,
                  r->killed, r->timed_out, r->valid, r->valid == 1 ? "" : "s",
                  r->score + 1e-12 >= r->l->threshold ? ">=" : "<", r->l->threshold, r->l->rung,
                  r->required_missed.n ? "; a required pitfall survived" : "");
    set_stage(w, r, ST_MUTATION, ok ? STAGE_PASS : STAGE_FAIL, summary);
    return ok ? OL_PASS : OL_FAIL;
}

/* One batch, in a random order: the controls (each wheat and the reference,
 * each built its own way), the canary and every covered mutant, with one
 * environment, one set of limits and one timeout. Then stages 4 (the
 * controls), 5 and 6 are said, in that order. */
static int stage_grading(ol_ctx *ctx, check_report *r, work *w) {
    int covered = 0;
    for (int i = 0; i < r->nmutants; i++) {
        mutant_outcome *o = &r->outcomes[i];
        int line = 0;
        if (!w->mutant_ready[i]) continue;
        if (uncovered(&w->cov, &r->mutants[i], &line)) {
            o->uncovered_line = line;
            /* said by the lesson's function: the reference's lines stay hidden */
            mutant_site site;
            mutant_site_of(ctx, &r->mutants[i], line, &site);
            set_outcome(o, MS_NOCOVERAGE,
                        xasprintf("no test runs the part of %s that it changes",
                                  site.function ? site.function : "the lesson's code"));
            mutant_site_free(&site);
        } else {
            covered++;
        }
    }
    /* as many control runs as mutants run (a test failing at random cannot buy kills), every
     * wheat and the reference among them, in turn */
    int ncontrols = covered > w->ncontrols ? covered : w->ncontrols;
    int cap = ncontrols + 1 + covered, n = 0;
    run_spec *specs = xcalloc((size_t)cap, sizeof *specs);
    int *which =
        xcalloc((size_t)cap, sizeof *which); /* -1 - b a run of control build b, -1000 the canary */
    for (int k = 0; k < ncontrols; k++) {
        int b = k % w->ncontrols;
        specs[n] = grading_spec(w, &w->control_progs[b], r->timeout);
        specs[n].replica = k / w->ncontrols; /* each run its own result, in the cache too */
        which[n++] = -1 - b;
    }
    specs[n] = grading_spec(w, &w->canary_prog, r->timeout);
    which[n++] = -1000;
    for (int i = 0; i < r->nmutants; i++)
        if (w->mutant_ready[i] && r->outcomes[i].status != MS_NOCOVERAGE) {
            specs[n] = grading_spec(w, &w->mutant_progs[i], r->timeout);
            which[n++] = i;
        }
    int *order = xcalloc((size_t)n, sizeof *order);
    for (int k = 0; k < n; k++) order[k] = k;
    shuffle(order, n);
    run_spec *shuffled = xcalloc((size_t)n, sizeof *shuffled);
    for (int k = 0; k < n; k++) shuffled[k] = specs[order[k]];
    run_result *runs = xcalloc((size_t)n, sizeof *runs);
    run_result **controls = xcalloc((size_t)n, sizeof *controls);
    int *control_ids = xcalloc((size_t)n, sizeof *control_ids);
    int rc = run_tests(ctx, shuffled, runs, n) == 0 ? OL_PASS : not_run(r), nc = 0;
    if (rc == OL_PASS) rc = out_of_time(ctx, w, r, ST_VALID);
    const run_result *canary = NULL;
    for (int k = 0; k < n && rc == OL_PASS; k++) {
        int what = which[order[k]];
        if (what == -1000) canary = &runs[k];
        else if (what < 0) {
            control_ids[nc] = -1 - what;
            controls[nc++] = &runs[k];
        } else
            classify(&r->outcomes[what], &runs[k]);
    }
    if (rc == OL_PASS) rc = judge_controls(ctx, r, w, controls, control_ids, nc);
    if (rc == OL_PASS) rc = judge_canary(ctx, r, w, canary);
    if (rc == OL_PASS) {
        if (r->nmutants == 0) /* an R1 or R2 lesson may have none: nothing to score */
            set_stage(
                w, r, ST_MUTATION, STAGE_SKIPPED,
                xasprintf("the lesson has no mutants (%s does not ask for a score)", r->l->rung));
        else rc = score_mutants(r, w);
    }
    for (int k = 0; k < n; k++) run_result_free(&runs[k]);
    free(runs);
    free(controls);
    free(control_ids);
    free(shuffled);
    free(order);
    free(specs);
    free(which);
    return rc;
}

/* ---- the pipeline ---- */

static void work_free(check_report *r, work *w) {
    lesson_lib_free(&w->mine);
    deps_free(&w->my_deps);
    suite_free(&w->course);
    suite_free(&w->tests);
    link_free(&w->course_prog);
    link_free(&w->own_prog);
    run_result_free(&w->course_run);
    run_result_free(&w->own_run);
    deps_free(&w->ref_deps);
    lesson_lib_free(&w->refcov);
    for (int i = 0; w->mutant_libs && i < r->nmutants; i++) lesson_lib_free(&w->mutant_libs[i]);
    free(w->mutant_libs);
    free(w->mutant_ready);
    for (int i = 0; w->wheat_dirs && i < r->nwheats; i++) free(w->wheat_dirs[i]);
    free(w->wheat_dirs);
    for (int i = 0; w->control_libs && i < w->ncontrols; i++) lesson_lib_free(&w->control_libs[i]);
    free(w->control_libs);
    free(w->control_of);
    unit_free(&w->canary);
    sl_free(&w->canary_symbols);
    link_free(&w->baseline);
    link_free(&w->canary_prog);
    link_free(&w->canary_course);
    for (int i = 0; w->control_progs && i < w->ncontrols; i++) link_free(&w->control_progs[i]);
    for (int i = 0; w->mutant_progs && i < r->nmutants; i++) link_free(&w->mutant_progs[i]);
    free(w->control_progs);
    free(w->mutant_progs);
    run_result_free(&w->baseline_run);
    coverage_free(&w->cov);
    sl_free(&w->before);
}

int check_run(ol_ctx *ctx, const lesson *l, const check_options *opt, check_report *r) {
    memset(r, 0, sizeof *r);
    r->l = l;
    r->score = -1;
    for (int i = 0; i < N_STAGES; i++) {
        r->stages[i].title = STAGE_TITLES[i];
        r->stages[i].state = STAGE_SKIPPED;
    }
    r->stages[ST_BUILD].required = r->stages[ST_COURSE].required = true;
    r->stages[ST_TESTS].required = r->stages[ST_VALID].required = r->stages[ST_CANARY].required =
        l->level >= 2;
    r->stages[ST_MUTATION].required = l->level >= 3;
    double started = now_seconds();
    work w;
    memset(&w, 0, sizeof w);
    w.opt = opt;
    w.memory_bytes = lesson_memory_bytes(l);
    /* the test runs' overall limit, from the lesson: runaway tests cost that much, no more */
    w.run_limit = CHECK_TIME_FACTOR * l->test_timeout;
    ctx->run_budget = w.run_limit;
    ctx->run_budget_spent = false;
    r->time_limit = w.run_limit;
    fixtures_key(ctx, l, w.data_key);
    r->tests_only = opt->tests_only;
    int rc = OL_PASS;
    if (opt->tests_only) {
        /* the student's tests alone: their code is neither built nor run, but the
         * course tests are built (the canary's harness check links them) */
        for (int i = ST_BUILD; i <= ST_COURSE; i++)
            set_stage(&w, r, i, STAGE_SKIPPED,
                      xstrdup("not run: --tests-only grades your tests alone"));
        if (build_course_suite(ctx, l, false, &w.course) != OL_PASS)
            rc = harness(r, xasprintf("the course tests of %s do not build", l->id));
    } else {
        rc = stage_build(ctx, r, &w, opt);
        if (rc == OL_PASS) rc = stage_course(ctx, r, &w);
    }
    if (rc == OL_PASS) rc = stage_tests(ctx, r, &w);
    if (rc == OL_PASS) rc = build_variants(ctx, r, &w);
    if (rc == OL_PASS) rc = stage_baseline(ctx, r, &w);
    if (rc == OL_PASS) rc = stage_own_code(ctx, r, &w);
    if (rc == OL_PASS) rc = stage_grading(ctx, r, &w);
    r->seconds = now_seconds() - started;
    ctx->run_budget = 0;
    if (proc_interrupted()) rc = 130; /* whatever a stage made of its stopped children */
    if (rc == 130 || r->harness_broken) {
        work_free(r, &w);
        return rc == 130 ? 130 : OL_USAGE;
    }
    /* a stage the rung does not ask for cannot fail the lesson */
    r->passed = true;
    r->tests_pass = true;
    for (int i = 0; i < N_STAGES; i++) {
        bool failed = r->stages[i].required && r->stages[i].state != STAGE_PASS;
        if (failed) r->passed = false;
        if (failed && i >= ST_TESTS) r->tests_pass = false;
    }
    work_free(r, &w);
    if (opt->tests_only) {
        /* never a pass of the lesson, and the last full check's result stays */
        r->passed = false;
        return r->tests_pass ? OL_PASS : OL_FAIL;
    }
    check_status st = {.passed = r->passed, .score = r->score};
    status_save(ctx, l->id, &st);
    return r->passed ? OL_PASS : OL_FAIL;
}

void check_report_free(check_report *r) {
    for (int i = 0; i < N_STAGES; i++) free(r->stages[i].summary);
    sl_free(&r->student_tests);
    sl_free(&r->student_files);
    for (int i = 0; i < r->ncourse_failed; i++) free_result(&r->course_failed[i]);
    free(r->course_failed);
    for (int i = 0; i < r->nown_failed; i++) free_result(&r->own_failed[i]);
    free(r->own_failed);
    sl_free(&r->problems);
    for (int i = 0; i < r->ninvalid; i++) {
        free(r->invalid[i].where);
        free_result(&r->invalid[i].t);
    }
    free(r->invalid);
    sl_free(&r->hints);
    for (int i = 0; r->outcomes && i < r->nmutants; i++) {
        sl_free(&r->outcomes[i].killed_by);
        free(r->outcomes[i].reason);
    }
    free(r->outcomes);
    mutants_free(r->mutants, r->nmutants);
    mutants_free(r->wheats, r->nwheats);
    sl_free(&r->required_missed);
    sl_free(&r->kill_nothing);
    free(r->harness_message);
    memset(r, 0, sizeof *r);
}
