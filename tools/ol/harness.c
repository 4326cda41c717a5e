#include "harness.h"

#include "crash.h"

#include <stdlib.h>
#include <string.h>

#include "symbols.h"

int require_link_files(ol_ctx *ctx, const lesson *l) {
    for (int i = 0; i < l->link.n; i++)
        if (l->link.v[i][0] == '/' && !is_file(l->link.v[i])) {
            ol_error(
                "%s links %s (lesson.json \"link\"), which is not built: run `make -C %s` first",
                l->id, path_rel(l->link.v[i], ctx->root), ctx->root);
            return -1;
        }
    return 0;
}

bool lesson_started(ol_ctx *ctx, const lesson *l) {
    for (int i = 0; i < l->sources.n; i++) {
        char *p = path_join(ctx->student, l->sources.v[i]);
        bool there = is_file(p);
        free(p);
        if (!there) return false;
    }
    return true;
}

int deps_prepare(ol_ctx *ctx, const lesson *l, bool reference, bool ref_deps, deps *d, char **err) {
    memset(d, 0, sizeof *d);
    *err = NULL;
    if (lesson_needs_closure(ctx->root, l, &d->lessons, &d->n, err) != 0) return -1;
    d->libs = xcalloc((size_t)d->n + 1, sizeof *d->libs);
    for (int i = 0; i < d->n; i++) {
        const lesson *dep = &d->lessons[i];
        bool mine = !reference && !ref_deps && lesson_started(ctx, dep);
        if (!reference && !ref_deps && !mine) {
            *err = xasprintf(
                "%s needs %s, which you have not started: run `ol start %s` and write it, "
                "or pass --ref-deps to use the reference for the lessons it needs",
                l->id, dep->id, dep->id);
            return -1;
        }
        char *label = xasprintf("%s %s", mine ? "your" : "the reference", dep->id);
        if (require_link_files(ctx, dep) != 0) {
            free(label);
            *err = xasprintf("%s needs %s, whose libraries are not built", l->id, dep->id);
            return -1;
        }
        int rc = lesson_lib_prepare(ctx, &d->libs[i], dep, mine ? LIB_STUDENT : LIB_REFERENCE, NULL,
                                    label, err);
        free(label);
        if (rc != 0) return -1;
    }
    return 0;
}

void deps_free(deps *d) {
    for (int i = 0; i < d->n; i++) lesson_lib_free(&d->libs[i]);
    free(d->libs);
    lessons_free(d->lessons, d->n);
    memset(d, 0, sizeof *d);
}

void program_spec(link_spec *spec, const suite *s, const lesson_lib *lib, const lesson *l,
                  const deps *d) {
    suite_link(s, spec);
    link_add(spec, &lib->archive);
    /* dependents before what they depend on, as a static link needs */
    for (int i = d ? d->n - 1 : -1; i >= 0; i--) link_add(spec, &d->libs[i].archive);
    for (int i = 0; i < l->link.n; i++)
        if (!sl_contains(&spec->ldflags, l->link.v[i])) sl_push(&spec->ldflags, l->link.v[i]);
    for (int k = 0; d && k < d->n; k++)
        for (int i = 0; i < d->lessons[k].link.n; i++)
            if (!sl_contains(&spec->ldflags, d->lessons[k].link.v[i]))
                sl_push(&spec->ldflags, d->lessons[k].link.v[i]);
}

/* "file:line: message" as a compiler says it, on stderr with the compiler's (names and lines
 * of the student's files in it, shown_text). */
void print_problems(const strlist *problems) {
    for (int i = 0; i < problems->n; i++) {
        char *problem = shown_text(problems->v[i]);
        const char *msg = strstr(problem, ": ");
        int head = msg ? (int)(msg - problem) : 0;
        fprintf(stderr, "%.*s: %serror:%s %s\n", head, problem, color(stderr, C_RED),
                color(stderr, C_RESET), msg ? msg + 2 : problem);
        free(problem);
    }
}

/* What the student's compiled code may hold: no symbol grading relies on. */
static int student_code_rules(ol_ctx *ctx, const lesson *l, lesson_lib **libs, int n) {
    strlist problems = {0}, allowed = {0};
    int rc = symbols_of_reference(ctx, l, &allowed) != 0 ? OL_USAGE : OL_PASS;
    for (int i = 0; i < n && rc == OL_PASS && !problems.n; i++) {
        if (libs[i]->kind != LIB_STUDENT) continue;
        const char **shown = xcalloc((size_t)libs[i]->n + 1, sizeof *shown);
        for (int k = 0; k < libs[i]->n; k++) shown[k] = libs[i]->units[k].src;
        if (symbols_check(ctx, l, libs[i]->units, shown, libs[i]->n, &allowed, false, &problems) <
            0)
            rc = OL_USAGE;
        free(shown);
    }
    if (rc == OL_PASS && problems.n) {
        print_problems(&problems);
        rc = OL_FAIL;
    }
    sl_free(&problems);
    sl_free(&allowed);
    return rc;
}

static void sanitize_lib(lesson_lib *lib) {
    for (int i = 0; i < lib->n; i++) lib->units[i].sanitize = true;
}

int build_student_code(ol_ctx *ctx, const lesson *l, bool ref_deps, bool sanitize, lesson_lib *mine,
                       deps *d) {
    char *err = NULL;
    memset(mine, 0, sizeof *mine);
    memset(d, 0, sizeof *d);
    if (build_prepare(ctx) != 0 || require_link_files(ctx, l) != 0) return OL_USAGE;
    if (lesson_lib_prepare(ctx, mine, l, LIB_STUDENT, NULL, "your code", &err) != 0 ||
        deps_prepare(ctx, l, false, ref_deps, d, &err) != 0) {
        ol_error("%s", err);
        free(err);
        return OL_USAGE;
    }
    /* only regular files: a link could reach the reference, a pipe would hang the compiler */
    strlist problems = {0};
    char *code_dir = path_join(ctx->student, "tinyllm");
    student_files_check(ctx, code_dir, &problems);
    free(code_dir);
    if (problems.n) {
        print_problems(&problems);
        sl_free(&problems);
        return OL_FAIL;
    }
    if (sanitize) {
        sanitize_lib(mine);
        for (int i = 0; i < d->n; i++) sanitize_lib(&d->libs[i]);
    }
    lesson_lib **libs = xcalloc((size_t)d->n + 1, sizeof *libs);
    libs[0] = mine;
    for (int i = 0; i < d->n; i++) libs[i + 1] = &d->libs[i];
    /* the include rule first, on the preprocessor alone: a file it refuses is never
     * compiled, so no compiler message shows a line of it */
    int rc = OL_PASS;
    for (int i = 0; i <= d->n && rc == OL_PASS; i++)
        if (libs[i]->kind == LIB_STUDENT &&
            code_check_includes(ctx, libs[i]->units, libs[i]->n, &problems) < 0)
            rc = OL_USAGE;
    if (rc == OL_PASS && problems.n) {
        print_problems(&problems);
        rc = OL_FAIL;
    }
    int failed = rc == OL_PASS ? lesson_libs_build(ctx, libs, d->n + 1) : 0;
    for (int i = 0; i <= d->n && failed >= 0 && rc == OL_PASS; i++)
        lesson_lib_print_log(ctx, libs[i]);
    if (failed < 0)
        rc = OL_USAGE;
    else if (failed > 0) {
        for (int i = 0; i <= d->n; i++)
            if (!libs[i]->ok)
                ol_error("%s does not compile (the compiler's messages are above)", libs[i]->label);
        rc = OL_FAIL;
        /* the reference not compiling is the course's fault, not the student's */
        for (int i = 1; i <= d->n; i++)
            if (!libs[i]->ok && libs[i]->kind != LIB_STUDENT) rc = OL_USAGE;
    }
    if (rc == OL_PASS) rc = student_code_rules(ctx, l, libs, d->n + 1);
    free(libs);
    sl_free(&problems);
    return rc;
}

int build_course_suite(ol_ctx *ctx, const lesson *l, bool sanitize, suite *s) {
    char *err = NULL;
    char *dir = path_join(ctx->root, l->course_tests);
    char *name = xasprintf("%s course tests", l->id);
    int rc = OL_PASS;
    /* the hidden tests, where this copy of the course has them, run as course tests */
    char *hidden = l->hidden_tests ? path_join(ctx->root, l->hidden_tests) : NULL;
    if (suite_scan(s, name, dir, &err) != 0 ||
        (hidden && is_dir(hidden) && suite_add_dir(s, hidden, &err) != 0) ||
        suite_generate(ctx, s, &err) != 0) {
        ol_error("%s (lesson.json \"course_tests\"): tell your instructor", err);
        rc = OL_USAGE;
    } else if (s->tests.n == 0) {
        ol_error("%s holds no START_TEST: the course tests are missing", shown_path(ctx, dir));
        rc = OL_USAGE;
    } else {
        for (int i = 0; sanitize && i < s->nunits; i++) s->units[i].sanitize = true;
        int failed = suite_compile(ctx, s, "the course tests");
        if (failed > 0)
            ol_error(
                "the course tests of %s do not compile against the contracts: tell your instructor",
                l->id);
        if (failed != 0) rc = OL_USAGE; /* < 0: interrupted, and ol says so */
        /* a main() of a course test file would clash with the runner's at the link, in
         * ld's words: name the file and the rule instead */
        for (int i = 0; rc == OL_PASS && i < s->files.n && i < s->nunits; i++) {
            strlist fns = {0};
            if (defined_functions(ctx, s->units[i].obj, &fns) == 0 && sl_contains(&fns, "main")) {
                ol_error("%s defines main(): a course test file holds START_TEST blocks only "
                         "(course/FORMAT.md); ol writes the runner and its main: delete this one",
                         shown_path(ctx, s->files.v[i]));
                rc = OL_USAGE;
            }
            sl_free(&fns);
        }
    }
    free(err);
    free(hidden);
    free(dir);
    free(name);
    return rc;
}

/* What the student's compiled tests may hold: nothing that stands in for
 * grading's machinery, a library or the lesson (check.c's stage 3 says the
 * same in its report). */
static int student_suite_rules(ol_ctx *ctx, const lesson *l, const suite *s) {
    strlist problems = {0}, allowed = {0};
    const char **shown = xcalloc((size_t)s->files.n + 1, sizeof *shown);
    for (int i = 0; i < s->files.n; i++) shown[i] = shown_path(ctx, s->files.v[i]);
    int refused =
        symbols_of_reference(ctx, l, &allowed) != 0
            ? -1
            : symbols_check(ctx, l, s->units, shown, s->files.n, &allowed, true, &problems);
    free(shown);
    int rc = OL_PASS;
    if (refused < 0) {
        ol_error("nm could not list what your tests define (above)");
        rc = OL_USAGE;
    } else if (refused > 0) {
        print_problems(&problems);
        ol_error(
            "%d symbol%s your tests define belong%s to grading, a library or the lesson (above)",
            refused, refused == 1 ? "" : "s", refused == 1 ? "s" : "");
        rc = OL_FAIL;
    }
    sl_free(&problems);
    sl_free(&allowed);
    return rc;
}

int build_student_suite(ol_ctx *ctx, const lesson *l, bool sanitize, suite *s) {
    char *dir = path_join(ctx->student, l->student_tests);
    char *err = NULL;
    strlist problems = {0};
    int rc = OL_PASS;
    if (!is_dir(dir)) {
        ol_error("c/%s/ does not exist: `ol start %s` makes it, with an example test",
                 l->student_tests, l->id);
        rc = OL_FAIL;
    } else if (student_files_check(ctx, dir, &problems) > 0) {
        /* only regular files: a link could reach the reference, a pipe would hang the compiler */
        print_problems(&problems);
        ol_error("ol reads only regular files in your test folder (above)");
        rc = OL_FAIL;
    } else if (suite_scan(s, l->slug, dir, &err) != 0) {
        ol_error("%s", err);
        rc = OL_FAIL;
    } else if (suite_generate(ctx, s, &err) != 0) {
        ol_error("%s", err);
        rc = OL_USAGE;
    } else if (suite_check_includes(ctx, s, &problems) < 0) {
        rc = OL_USAGE;
    } else if (problems.n) {
        print_problems(&problems);
        ol_error("%d problem%s in your test files (above): tests may include only contract "
                 "headers, <check.h>, "
                 "standard C headers and their own folder's files",
                 problems.n, problems.n == 1 ? "" : "s");
        rc = OL_FAIL;
    } else if (s->tests.n == 0) {
        ol_error("c/%s/ holds no START_TEST(name) ... END_TEST block yet", l->student_tests);
        rc = OL_FAIL;
    } else {
        for (int i = 0; sanitize && i < s->nunits; i++) s->units[i].sanitize = true;
        int failed = suite_compile(ctx, s, "your tests");
        if (failed > 0) ol_error("your tests do not compile (the compiler's messages are above)");
        rc = failed < 0 ? OL_USAGE : failed > 0 ? OL_FAIL : OL_PASS;
        if (rc == OL_PASS) rc = student_suite_rules(ctx, l, s);
    }
    sl_free(&problems);
    free(err);
    free(dir);
    return rc;
}

void fixtures_key(ol_ctx *ctx, const lesson *l, char out[HASH_HEX]) {
    hasher *h = hash_new();
    hash_str(h, "fixtures");
    if (l->fixtures) {
        char *dir = path_join(ctx->root, l->fixtures);
        hash_tree(h, dir);
        free(dir);
    }
    hash_done(h, out);
}

int run_suite_by_file(ol_ctx *ctx, const suite *s, const run_spec *base, run_result *out) {
    memset(out, 0, sizeof *out);
    /* one program run per test: its file (CK_RUN_CASE) and its name (-k) */
    run_spec *specs = xcalloc((size_t)s->tests.n + 1, sizeof *specs);
    strlist *names = xcalloc((size_t)s->tests.n + 1, sizeof *names);
    int n = 0;
    for (int t = 0; t < s->tests.n; t++) {
        if (base->filter && !strstr(s->tests.v[t], base->filter)) continue;
        sl_push(&names[n], s->tests.v[t]);
        specs[n] = *base;
        specs[n].tests = &names[n];
        specs[n].filter = s->tests.v[t];
        specs[n].tcase = path_base(s->test_file.v[t]); /* testgen names each TCase after its file */
        n++;
    }
    run_result *parts = xcalloc((size_t)n + 1, sizeof *parts);
    int rc = run_tests(ctx, specs, parts, n);
    out->cached = n > 0;
    strbuf output = {0};
    for (int k = 0; k < n; k++) {
        run_result *p = &parts[k];
        /* a crash is said where it happened, when the program's backtrace tells */
        if (rc == 0) crash_locate(ctx, p, base->bin);
        /* -k matches substrings: keep the one test asked for (settle puts it first) */
        if (rc == 0 && p->n > 0) {
            out->t = xrealloc(out->t, (size_t)(out->n + 1) * sizeof *out->t);
            out->t[out->n++] = p->t[0];
            memmove(p->t, p->t + 1, (size_t)(p->n - 1) * sizeof *p->t);
            p->n--;
            if (p->exit_code && !out->exit_code) out->exit_code = p->exit_code;
            if (p->term_signal && !out->term_signal) out->term_signal = p->term_signal;
            out->watchdog = out->watchdog || p->watchdog;
            out->seconds += p->seconds;
            out->cached = out->cached && p->cached;
            if (p->output && *p->output) sb_add(&output, p->output);
        }
        run_result_free(p);
        sl_free(&names[k]);
    }
    out->output = sb_take(&output);
    free(parts);
    free(specs);
    free(names);
    return rc;
}
