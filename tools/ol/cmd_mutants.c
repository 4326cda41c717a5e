/* ol mutants: for instructors. List a lesson's mutants and wheats, verify
 * them against the current reference and the course tests, or author a new
 * one from an edited copy of the reference. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "harness.h"
#include "mutant.h"
#include "opts.h"
#include "proc.h"
#include "results.h"
#include "scaffold.h"

static const char HELP[] =
    "usage: ol mutants [list] L7.x                list the mutants and wheats\n"
    "       ol mutants verify L7.x [ID...]         verify them (all, or the IDs given)\n"
    "       ol mutants rebase L7.x [ID...]         re-anchor the stale ones on the reference\n"
    "       ol mutants new L7.x --from EDITED.c --id ID --title TEXT --caught-by TEST[,TEST]\n"
    "                          [--pitfall N] [--symptom TEXT] [--hint TEXT] [--source FILE]\n"
    "       ol mutants new L7.x --wheat --from EDITED.c --id ID --title TEXT [--symptom TEXT]\n"
    "                          [--source FILE]\n"
    "\n"
    "verify proves, for the current reference, what grading relies on (lesson.json\n"
    "is valid and every file it names is there: every ol command checks that):\n"
    "  - the stub and the reference compile (a skeleton without course tests\n"
    "    stops here);\n"
    "  - the reference and every wheat pass every course test;\n"
    "  - each mutant applies exactly (a stale one fails loudly), compiles, and is\n"
    "    killed by each course test its Caught-by names; those tests compare with\n"
    "    the golden fixtures at their tolerance, so a kill shows the mutant moves\n"
    "    the golden outputs by more than it. The failing assertion is printed.\n"
    "\n"
    "rebase: after the reference changed, each mutant and wheat that no longer\n"
    "applies exactly is placed with GNU patch's offsets and fuzz, its diff made\n"
    "again against the current reference, verified as above, and rewritten only\n"
    "when it verifies; one patch cannot place (or that no longer verifies) is left\n"
    "as it is, with the hunk that failed and why.\n"
    "\n"
    "new: copy reference/<source> somewhere (e.g. /tmp), make the mistake in the\n"
    "copy, and give it as --from. ol makes the header and the `diff -u` of the\n"
    "reference against EDITED.c, verifies it, and only then writes\n"
    "course/L7.x/mutants/ID-TITLE-WORDS.mutant (or wheats/...wheat). If it does not\n"
    "verify, nothing is written: fix the copy or the options and run it again.\n"
    "It never overwrites a file. --source is needed only when the lesson has\n"
    "several sources and EDITED.c's name matches none of them.\n"
    "\n"
    "Options: --workspace DIR (where build/ol/ goes; default: the current folder).\n"
    "Exit status: 0 all verified, 1 a check failed, 2 usage error.\n";

/* A lesson's mutants and wheats, as loaded from course/L7.x/. */
typedef struct {
    mutant *ms, *ws;
    int nm, nw;
} mutant_set;

static void set_free(mutant_set *set) {
    mutants_free(set->ms, set->nm);
    mutants_free(set->ws, set->nw);
    memset(set, 0, sizeof *set);
}

/* The mutant or wheat of set making m's change (blanks aside), or NULL. */
static const mutant *same_change(const mutant_set *set, const mutant *m) {
    const mutant *twin = mutant_twin(m, set->ms, set->nm);
    return twin ? twin : mutant_twin(m, set->ws, set->nw);
}

/* Loads both folders; prints the parse error (file:line) and returns -1. A
 * mutant making a wheat's change is refused too (within a folder, mutants_load
 * refuses it); a file either folder holds but never reads is warned of. */
static int set_load(const lesson *l, mutant_set *set) {
    memset(set, 0, sizeof *set);
    char *err = NULL;
    char *mdir = path_join(l->dir, "mutants"), *wdir = path_join(l->dir, "wheats");
    int rc = mutants_load(mdir, false, &set->ms, &set->nm, &err) != 0 ||
                     mutants_load(wdir, true, &set->ws, &set->nw, &err) != 0
                 ? -1 : 0;
    for (int i = 0; rc == 0 && i < set->nm; i++) {
        const mutant *twin = mutant_twin(&set->ms[i], set->ws, set->nw);
        if (twin) {
            err = mutant_twin_error(&set->ms[i], twin);
            rc = -1;
        }
    }
    for (int k = 0; k < 2; k++) {
        strlist stray = {0};
        mutants_stray_files(k ? wdir : mdir, k, &stray);
        for (int i = 0; i < stray.n; i++)
            fprintf(stderr,
                    "%swarning:%s %s is not read: only *.%s files in that folder are %ss "
                    "(a misspelt extension? rename it, or move it out)\n",
                    color(stderr, C_YELLOW), color(stderr, C_RESET), stray.v[i],
                    k ? "wheat" : "mutant", k ? "wheat" : "mutant");
        sl_free(&stray);
    }
    if (rc) {
        ol_error("%s", err);
        set_free(set);
    }
    free(err);
    free(mdir);
    free(wdir);
    return rc;
}

static const char *s_if(int n) { return n == 1 ? "" : "s"; }

/* ---- list ---- */

static int list(ol_ctx *ctx, const lesson *l) {
    mutant_set set;
    if (set_load(l, &set) != 0) return OL_USAGE;
    printf("%s: %d mutant%s, %d wheat%s (rung %s, threshold %.2f)\n\n", l->id, set.nm, s_if(set.nm),
           set.nw, s_if(set.nw), l->rung, l->threshold);
    printf("%-5s %-7s %-8s %s\n", "Id", "Pitfall", "Required", "Title");
    for (int i = 0; i < set.nm; i++) {
        const mutant *m = &set.ms[i];
        char *by = sl_join(&m->caught_by, ", ");
        const changed_line *c = mutant_first_change(m);
        printf("%-5s %-7s %-8s %s\n", m->id, m->pitfall,
               sl_contains(&l->required_pitfalls, m->id) ? "yes" : "-", m->title);
        printf("      caught by %s\n", by);
        printf("      %s%s", color(stdout, C_DIM), shown_path(ctx, m->path));
        if (c) printf(", changes reference/%s:%d", c->file, c->line);
        printf("%s\n", color(stdout, C_RESET));
        free(by);
    }
    for (int i = 0; i < set.nw; i++) {
        printf("%-5s %-7s %-8s %s\n", set.ws[i].id, "wheat", "-", set.ws[i].title);
        printf("      %s%s%s\n", color(stdout, C_DIM), shown_path(ctx, set.ws[i].path),
               color(stdout, C_RESET));
    }
    printf("\n`ol mutants verify %s` checks them; `ol mutants new %s --help` adds one.\n", l->id,
           l->id);
    set_free(&set);
    return OL_PASS;
}

/* ---- verify ---- */

static void say(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(bool ok, const char *fmt, ...) {
    printf("  %s%s%s ", color(stdout, ok ? C_GREEN : C_RED), ok ? "ok  " : "FAIL",
           color(stdout, C_RESET));
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

/* What verify adds to lesson.json's validation (lesson_load has checked
 * its keys and every path it names): notes, never failures. */
static void notes_on_lesson(ol_ctx *ctx, const lesson *l) {
    /* a lesson may be tried before its chapter is written */
    char *chapter = path_join(l->dir, "README.md");
    char *text = read_file(chapter, NULL);
    if (!text) {
        printf(
            "  %snote%s %s is not written yet: the chapter students read (`ol list` points to "
            "it)\n",
            color(stdout, C_YELLOW), color(stdout, C_RESET), shown_path(ctx, chapter));
    } else {
        strlist missing = {0};
        chapter_missing_sections(text, &missing);
        char *names = sl_join(&missing, "; ");
        if (missing.n)
            printf(
                "  %snote%s %s has no section %s (the lesson checklist's sections: `ol lesson new` "
                "writes them all)\n",
                color(stdout, C_YELLOW), color(stdout, C_RESET), shown_path(ctx, chapter), names);
        free(names);
        sl_free(&missing);
    }
    free(text);
    free(chapter);
    if (l->draft)
        printf(
            "  %snote%s %s is a draft (lesson.json \"draft\": true): `ol list` and `ol start` hide "
            "it from students\n",
            color(stdout, C_YELLOW), color(stdout, C_RESET), l->id);
}

/* ---- authoring checks ---- */

/* Does the chapter's pitfall table (section 5) name the id? */
static bool chapter_mentions(const lesson *l, const char *id) {
    char *path = path_join(l->dir, "README.md");
    char *text = read_file(path, NULL);
    free(path);
    const char *pitfalls = text ? strstr(text, "## 5. Pitfalls") : NULL;
    const char *next = pitfalls ? strstr(pitfalls + 3, "\n## ") : NULL;
    bool found = false;
    size_t n = strlen(id);
    for (const char *p = pitfalls;
         p && (!next || p < next) && (p = strstr(p, id)) != NULL && (!next || p < next); p += n)
        found = found ||
                ((p == text || !isalnum((unsigned char)p[-1])) && !isalnum((unsigned char)p[n]));
    free(text);
    return found;
}

/* What verify adds to the files' own checks (set_load has refused ids off the
 * pattern and changes made twice): a note for a mutant the pitfall table omits. */
static void notes_on_set(const lesson *l, const mutant_set *set) {
    for (int i = 0; i < set->nm; i++)
        if (!chapter_mentions(l, set->ms[i].id))
            printf(
                "  %snote%s mutant %s is not in the chapter's pitfall table (course/%s/README.md, "
                "section 5)\n",
                color(stdout, C_YELLOW), color(stdout, C_RESET), set->ms[i].id, l->id);
}

/* What a mutant's run says about its Caught-by tests; returns whether each
 * one kills it, and prints the evidence either way. */
static bool judge_mutant(ol_ctx *ctx, const lesson *l, const suite *course, const mutant *m,
                         const run_result *r, const char *rerun) {
    bool ok = true;
    strbuf lines = {0};
    for (int c = 0; c < m->caught_by.n; c++) {
        const test_result *t = run_find(r, m->caught_by.v[c]);
        if (!t) {
            char *all = sl_join(&course->tests, ", ");
            sb_printf(&lines,
                      "      Caught-by names %s, which is not a course test of %s (%s holds: %s)\n",
                      m->caught_by.v[c], l->id, l->course_tests, all);
            free(all);
            ok = false;
        } else if (t->status == TEST_PASS) {
            sb_printf(
                &lines,
                "      %s passes on it: the mutant does not move what that test checks beyond "
                "its tolerance\n",
                t->name);
            ok = false;
        } else {
            char *what = test_describe(t);
            sb_printf(&lines, "      %s: %s at %s:%d: %s\n", t->name, what,
                      shown_path(ctx, t->file), t->line, t->message);
            free(what);
        }
    }
    strlist others = {0};
    for (int t = 0; t < r->n; t++)
        if (r->t[t].status != TEST_PASS && !sl_contains(&m->caught_by, r->t[t].name))
            sl_push(&others, r->t[t].name);
    say(ok, "mutant %s (%s) %s", m->id, m->title,
        ok ? "is killed by its Caught-by tests:" : "is not verified:");
    fputs(lines.s ? lines.s : "", stdout);
    char *names = others.n ? sl_join(&others, ", ") : NULL;
    if (ok && names)
        printf("      also killed by: %s\n", names);
    else if (!ok && names)
        printf("      the course tests that do fail on it: %s (name one in Caught-by)\n", names);
    else if (!ok && run_failures(r) == 0)
        printf(
            "      no course test fails on it: either the change computes the same thing (an "
            "equivalent\n      mutant: make a real fault), or the course tests miss this pitfall "
            "(write a course\n      test in %s/ that catches it, then name it in Caught-by)\n",
            l->course_tests);
    if (!ok && rerun) printf("      rerun it: %s\n", rerun);
    else if (!ok) printf("      rerun it: ol mutants verify %s %s\n", l->id, m->id);
    free(names);
    sl_free(&others);
    sb_free(&lines);
    return ok;
}

/* Verifies the reference, the wheats and the mutants of set against the
 * course tests: every mutant when `only` is NULL, else those whose ids it
 * lists (none when it is empty). verified (NULL, or one per wheat then per
 * mutant) says which ones did, on a reference that passes. rerun: how to try
 * a mutant that fails again, when it is not a file on disk yet (NULL: verify). */
static int verify(ol_ctx *ctx, const lesson *l, const mutant_set *set, const strlist *only,
                  bool *verified, const char *rerun) {
    int nm = set->nm, nw = set->nw, problems = 0;
    int running = 0;
    for (int k = 0; k < nm; k++) running += !only || sl_contains(only, set->ms[k].id);
    printf("ol mutants verify %s: %d mutant%s, %d wheat%s against the current reference\n", l->id,
           running, s_if(running), nw, s_if(nw));
    if (!only) {
        notes_on_lesson(ctx, l);
        notes_on_set(l, set);
    }
    char *err = NULL;
    suite course = {0};
    deps d = {0};
    int nlibs = 2 + nw + nm, stub = nlibs - 1;
    strlist stale = {0}; /* the ids that no longer apply exactly */
    lesson_lib *libs =
        xcalloc((size_t)nlibs, sizeof *libs); /* 0 the reference, wheats, mutants, the stub */
    bool *ready = xcalloc((size_t)nlibs, sizeof *ready);
    link_spec *progs = xcalloc((size_t)nlibs, sizeof *progs);
    run_result *runs = xcalloc((size_t)nlibs, sizeof *runs);
    run_spec *specs = xcalloc((size_t)nlibs, sizeof *specs);
    const mutant **which = xcalloc((size_t)nlibs, sizeof *which);
    /* a skeleton (`ol lesson new`) has no course test yet: its files are checked, nothing runs */
    char *course_dir = path_join(ctx->root, l->course_tests);
    suite probe;
    bool empty = suite_scan(&probe, "probe", course_dir, &err) == 0 && probe.tests.n == 0;
    suite_free(&probe);
    free(course_dir);
    free(err);
    err = NULL;
    int rc = build_prepare(ctx) != 0 || require_link_files(ctx, l) != 0 ? OL_USAGE
             : empty                                                    ? OL_PASS
                     : build_course_suite(ctx, l, false, &course);
    if (rc == OL_PASS &&
        (deps_prepare(ctx, l, true, true, &d, &err) != 0 ||
         lesson_lib_prepare(ctx, &libs[0], l, LIB_REFERENCE, NULL, "the reference", &err) != 0 ||
         lesson_lib_prepare(ctx, &libs[stub], l, LIB_STUB, NULL, "the stub", &err) != 0)) {
        ol_error("%s", err);
        rc = OL_USAGE;
    }
    ready[0] = ready[stub] = rc == OL_PASS;
    for (int i = 0; rc == OL_PASS && i < nw + nm; i++) {
        const mutant *m = i < nw ? &set->ws[i] : &set->ms[i - nw];
        which[1 + i] = m;
        if (!m->wheat && only && !sl_contains(only, m->id)) continue;
        if (empty) {
            say(false, "%s %s cannot be verified: %s/ holds no course test yet",
                m->wheat ? "wheat" : "mutant", m->id, l->course_tests);
            problems++;
            continue;
        }
        char *dir = mutant_apply(ctx, l, m, &err);
        /* a stale one's advice is said once below, not once per mutant */
        char *advice = dir ? NULL : strstr(err, "run `ol mutants rebase ");
        if (advice && strstr(err, "(a stale mutant)")) {
            *advice = 0;
            sl_push(&stale, m->id);
        }
        if (!dir) {
            say(false, "%s %s: %s", m->wheat ? "wheat" : "mutant", m->id, err);
            free(err);
            err = NULL;
            problems++;
            continue;
        }
        char *label = xasprintf("%s %s", m->wheat ? "wheat" : "mutant", m->id);
        ready[1 + i] = lesson_lib_prepare(ctx, &libs[1 + i], l, LIB_PATCHED, dir, label, &err) == 0;
        free(label);
        free(dir);
    }
    if (rc == OL_PASS) {
        lesson_lib **all = xcalloc((size_t)nlibs + d.n, sizeof *all);
        int k = 0;
        for (int i = 0; i < d.n; i++) all[k++] = &d.libs[i];
        for (int i = 0; i < nlibs; i++)
            if (ready[i]) all[k++] = &libs[i];
        if (lesson_libs_build(ctx, all, k) < 0) rc = 130;
        free(all);
    }
    int nprogs = 0;
    int *prog_of = xcalloc((size_t)nlibs, sizeof *prog_of);
    link_spec *batch = xcalloc((size_t)nlibs, sizeof *batch);
    for (int i = 0; rc == OL_PASS && i < nlibs; i++) {
        if (!ready[i]) continue;
        if (!libs[i].ok) {
            lesson_lib_print_log(ctx, &libs[i]);
            say(false, "%s does not compile (above)", libs[i].label);
            problems++;
            ready[i] = false;
            continue;
        }
        if (i == stub ||
            empty) { /* compiled is all that is asked here (make test-lessons runs the stub) */
            say(true, "%s compiles", libs[i].label);
            ready[i] = false;
            continue;
        }
        program_spec(&batch[nprogs], &course, &libs[i], l, &d);
        prog_of[nprogs++] = i;
    }
    if (rc == OL_PASS && build_links(ctx, batch, nprogs) < 0) rc = 130;
    char data_key[HASH_HEX];
    fixtures_key(ctx, l, data_key);
    int nruns = 0;
    int *run_of = xcalloc((size_t)nlibs, sizeof *run_of);
    for (int k = 0; rc == OL_PASS && k < nprogs; k++) {
        int i = prog_of[k];
        progs[i] = batch[k];
        if (!progs[i].ok) {
            print_compiler_log(ctx, progs[i].log);
            say(false, "%s does not link with the course tests (above)", libs[i].label);
            problems++;
            ready[i] = false;
            continue;
        }
        specs[nruns] = (run_spec){.bin = progs[i].bin,
                                  .bin_key = progs[i].key,
                                  .tests = &course.tests,
                                  .timeout = l->test_timeout,
                                  .data_key = data_key,
                                  .threads = 1,
                                  .fill_idle = true}; /* course tests: they mostly wait */
        run_of[nruns++] = i;
    }
    if (rc != OL_PASS)
        for (int k = 0; k < nprogs; k++) link_free(&batch[k]);
    free(batch);
    run_result *results = xcalloc((size_t)nruns + 1, sizeof *results);
    if (rc == OL_PASS && run_tests(ctx, specs, results, nruns) != 0) rc = 130;
    for (int k = 0; rc == OL_PASS && k < nruns; k++) runs[run_of[k]] = results[k];
    free(results);

    bool reference_ok = false;
    for (int i = 0; rc == OL_PASS && i < nlibs; i++) {
        if (!ready[i]) continue;
        const run_result *r = &runs[i];
        int failed = run_failures(r);
        bool ok;
        if (i == 0 || which[i]->wheat) {
            const char *what = i == 0 ? "the reference" : libs[i].label;
            ok = !failed;
            if (failed) {
                say(false, "%s fails %d course test%s:", what, failed, s_if(failed));
                for (int t = 0; t < r->n; t++)
                    if (r->t[t].status != TEST_PASS)
                        print_test_failure(ctx, stdout, &r->t[t], false);
                problems++;
            } else {
                say(true, "%s passes %s %d course test%s", what, r->n == 1 ? "its" : "all", r->n,
                    s_if(r->n));
            }
        } else {
            ok = judge_mutant(ctx, l, &course, which[i], r, rerun);
            problems += !ok;
        }
        if (i == 0) reference_ok = ok;
        else if (verified && i < stub) verified[i - 1] = ok && reference_ok;
    }
    if (stale.n == 1)
        printf("run `ol mutants rebase %s %s`: it re-anchors the diff on the current reference "
               "and verifies it again\n",
               l->id, stale.v[0]);
    else if (stale.n > 1)
        printf("%d mutants and wheats no longer apply exactly (the reference changed): run `ol "
               "mutants rebase %s` to re-anchor them all on the current reference and verify "
               "them again\n",
               stale.n, l->id);
    sl_free(&stale);
    if (rc == OL_PASS) {
        if (problems) printf("%s: %d problem%s (above)\n", l->id, problems, s_if(problems));
        else if (empty)
            printf(
                "%s: a skeleton: its files are there and compile; %s/ holds no course test yet, so "
                "nothing ran\n",
                l->id, l->course_tests);
        else printf("%s: every mutant and wheat verified\n", l->id);
        rc = problems ? OL_FAIL : OL_PASS;
    }
    for (int i = 0; i < nlibs; i++) {
        lesson_lib_free(&libs[i]);
        link_free(&progs[i]);
        run_result_free(&runs[i]);
    }
    free(libs);
    free(ready);
    free(progs);
    free(runs);
    free(specs);
    free(which);
    free(prog_of);
    free(run_of);
    suite_free(&course);
    deps_free(&d);
    return rc;
}

/* ---- rebase ---- */

/* Re-anchors every mutant and wheat of set (or those ids lists) that no
 * longer applies exactly: each is placed with offsets and fuzz, diffed again
 * against the current reference, verified, and written only when it
 * verifies. The others are left as they are, with the reason. */
static int rebase(ol_ctx *ctx, const lesson *l, mutant_set *set, const strlist *ids) {
    int n = set->nw + set->nm, problems = 0, moved = 0;
    printf("ol mutants rebase %s: re-anchoring what no longer applies to the current reference\n",
           l->id);
    char **texts = xcalloc((size_t)n + 1, sizeof *texts); /* the new file of each re-anchored one */
    strlist only = {0};                                   /* the re-anchored mutants, to verify */
    for (int k = 0; k < n; k++) {
        mutant *m = k < set->nw ? &set->ws[k] : &set->ms[k - set->nw];
        const char *kind = m->wheat ? "wheat" : "mutant";
        if (ids && !sl_contains(ids, m->id)) continue;
        char *err = NULL, *dir = mutant_apply(ctx, l, m, &err);
        free(err);
        err = NULL;
        if (dir) {
            say(true, "%s %s applies exactly: left as it is", kind, m->id);
            free(dir);
            continue;
        }
        char *diff = mutant_rebase_diff(ctx, l, m, &err);
        char *old = diff ? read_file(m->path, NULL) : NULL;
        char *header = old ? mutant_header(old) : NULL;
        mutant fresh;
        if (!diff) {
            const changed_line *c = mutant_first_change(m);
            say(false, "%s %s is left as it is: %s", kind, m->id, err);
            printf("      next: make it again on the current reference: copy reference/%s, "
                   "make the change there, delete %s and run `ol mutants new %s%s --from "
                   "EDITED.c --id %s ...` (its header's values)\n",
                   c ? c->file : "...", shown_path(ctx, m->path), l->id,
                   m->wheat ? " --wheat" : "", m->id);
            problems++;
        } else if (!header) {
            say(false, "%s %s: cannot read its header again (%s)", kind, m->id,
                shown_path(ctx, m->path));
            problems++;
        } else {
            char *text = xasprintf("%s%s", header, diff);
            if (mutant_parse(m->path, text, m->wheat, &fresh, &err) != 0) {
                say(false, "%s %s: the re-anchored diff does not parse: %s", kind, m->id, err);
                mutant_free(&fresh);
                free(text);
                problems++;
            } else {
                printf("  ...  %s %s placed on the current reference; verifying it\n", kind, m->id);
                mutant_free(m);
                *m = fresh;
                texts[k] = text;
                if (!m->wheat) sl_push(&only, m->id);
                moved++;
            }
        }
        free(err);
        free(diff);
        free(old);
        free(header);
    }
    int rc = OL_PASS;
    if (moved) {
        bool *verified = xcalloc((size_t)n + 1, sizeof *verified);
        rc = verify(ctx, l, set, &only, verified,
                    "`ol mutants rebase` again, once the course tests kill it");
        if (rc == OL_FAIL) rc = OL_PASS; /* judged one by one below */
        for (int k = 0; rc == OL_PASS && k < n; k++) {
            if (!texts[k]) continue;
            const mutant *m = k < set->nw ? &set->ws[k] : &set->ms[k - set->nw];
            if (!verified[k]) {
                say(false, "%s is not rewritten: re-anchored, it does not verify (above)",
                    shown_path(ctx, m->path));
                problems++;
            } else if (write_file_atomic(m->path, texts[k], strlen(texts[k])) != 0) {
                ol_error("cannot write %s: %s", shown_path(ctx, m->path), strerror(errno));
                rc = OL_USAGE;
            } else {
                say(true, "rewrote %s: re-anchored on the current reference and verified",
                    shown_path(ctx, m->path));
            }
        }
        free(verified);
    }
    for (int k = 0; k < n; k++) free(texts[k]);
    free(texts);
    sl_free(&only);
    if (rc != OL_PASS) return rc;
    if (problems)
        printf("%s: %d problem%s (above); nothing else changed\n", l->id, problems, s_if(problems));
    else printf("%s: every mutant and wheat applies to the current reference\n", l->id);
    return problems ? OL_FAIL : OL_PASS;
}

/* ---- new ---- */

/* "eps added outside the square root" -> "eps-added-outside-the" */
static char *slug(const char *title) {
    strbuf b = {0};
    int words = 0;
    bool in_word = false;
    for (const char *p = title; *p && words < 5; p++) {
        if (isalnum((unsigned char)*p)) {
            if (!in_word && b.len) sb_add(&b, "-");
            char c = (char)tolower((unsigned char)*p);
            sb_addn(&b, &c, 1);
            in_word = true;
        } else if (in_word) {
            in_word = false;
            words++;
        }
    }
    char *s = sb_take(&b);
    if (!*s) {
        free(s);
        s = xstrdup("change");
    }
    return s;
}

static bool one_line(const char *s) { return s && !strchr(s, '\n') && !strchr(s, '\r'); }

/* What `ol mutants new` is given. */
typedef struct {
    const char *from, *id, *title, *caught, *pitfall, *symptom, *hint, *source;
    bool wheat;
} new_args;

static int author(ol_ctx *ctx, const lesson *l, const new_args *a) {
    const char *from = a->from, *id = a->id, *title = a->title, *caught = a->caught,
               *pitfall = a->pitfall, *symptom = a->symptom, *hint = a->hint, *source = a->source;
    bool wheat = a->wheat;
    if (!from || !id || !title || (!wheat && !caught))
        return usage_error("mutants new",
                           "--from, --id and --title are required, and --caught-by for a mutant");
    if (wheat && (caught || pitfall || hint))
        return usage_error("mutants new",
                           "a wheat is correct: it has no --caught-by, --pitfall or --hint");
    const char *fields[] = {id, title, caught, pitfall, symptom, hint};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        if (fields[i] && (!one_line(fields[i]) || !*fields[i]))
            return usage_error("mutants new", "header values are single non-empty lines");
    if (!variant_id_valid(id, wheat))
        return usage_error(
            "mutants new", "a %s's id is '%c' and two or more digits (like %s): \"%s\"",
            wheat ? "wheat" : "mutant", wheat ? 'w' : 's', wheat ? "w03" : "s13", id);
    if (!source) {
        if (l->sources.n == 1) source = l->sources.v[0];
        for (int i = 0; !source && i < l->sources.n; i++)
            if (!strcmp(path_base(l->sources.v[i]), path_base(from))) source = l->sources.v[i];
        if (!source) {
            char *all = sl_join(&l->sources, ", ");
            int rc = usage_error("mutants new",
                                 "which source of %s does %s edit? pass --source FILE (one of: %s)",
                                 l->id, from, all);
            free(all);
            return rc;
        }
    } else if (!sl_contains(&l->sources, source)) {
        char *all = sl_join(&l->sources, ", ");
        int rc = usage_error("mutants new", "%s is not a source of %s (its sources: %s)", source,
                             l->id, all);
        free(all);
        return rc;
    }
    if (!is_file(from))
        return usage_error("mutants new", "%s does not exist: copy reference/%s there and edit it",
                           from, source);
    /* the id must be new in the lesson, across mutants and wheats */
    mutant_set set;
    if (set_load(l, &set) != 0) return OL_USAGE;
    for (int i = 0; i < set.nm + set.nw; i++) {
        const mutant *m = i < set.nm ? &set.ms[i] : &set.ws[i - set.nm];
        if (!strcmp(m->id, id)) {
            ol_error("%s already has %s (%s): choose another id, or delete that file to replace it",
                     l->id, id, shown_path(ctx, m->path));
            set_free(&set);
            return OL_USAGE;
        }
    }
    char *ref = xasprintf("%s/reference/%s", ctx->root, source);
    char *tmp = ctx_cache_dir(ctx, "tmp");
    if (!tmp) {
        free(ref);
        set_free(&set);
        return OL_USAGE;
    }
    proc_job job = {0};
    proc_arg(&job, "diff");
    proc_arg(&job, "-u");
    proc_argf(&job, "--label=a/reference/%s", source);
    proc_argf(&job, "--label=b/reference/%s", source);
    proc_arg(&job, ref);
    proc_arg(&job, from);
    job.out_path = xasprintf("%s/new.%ld.diff", tmp, (long)getpid());
    int rc = OL_PASS;
    char *diff = NULL;
    if (proc_run(&job) != 0) rc = 130;
    else if (job.exit_code == 0) {
        ol_error("%s is the same as reference/%s: edit it to make the fault first", from, source);
        rc = OL_USAGE;
    } else if (job.exit_code != 1) {
        ol_error("diff could not compare reference/%s with %s", source, from);
        rc = OL_USAGE;
    } else {
        diff = read_file(job.out_path, NULL);
    }
    unlink(job.out_path);
    proc_job_free(&job);
    free(tmp);
    free(ref);
    if (rc != OL_PASS) {
        set_free(&set);
        return rc;
    }
    strbuf text = {0};
    sb_printf(&text, "%s: %s\n", wheat ? "Wheat" : "Mutant", id);
    if (!wheat) sb_printf(&text, "Pitfall: %s\n", pitfall ? pitfall : "-");
    sb_printf(&text, "Title: %s\n", title);
    if (symptom) sb_printf(&text, "Symptom: %s\n", symptom);
    if (!wheat) sb_printf(&text, "Caught-by: %s\n", caught);
    if (hint) sb_printf(&text, "Hint: %s\n", hint);
    sb_printf(&text, "---\n%s", diff);
    free(diff);
    char *name = slug(title);
    char *dir = path_join(l->dir, wheat ? "wheats" : "mutants");
    char *path = xasprintf("%s/%s-%s.%s", dir, id, name, wheat ? "wheat" : "mutant");
    char *err = NULL;
    mutant fresh;
    const mutant *twin = NULL;
    if (mutant_parse(path, text.s, wheat, &fresh, &err) != 0) {
        ol_error("the new file would not parse: %s", err);
        mutant_free(&fresh);
        rc = OL_USAGE;
    } else if ((twin = same_change(&set, &fresh)) != NULL) {
        /* a second copy of one change would count twice in every score */
        ol_error(
            "this change is the one %s %s already makes (%s), spaces aside: nothing is written",
            twin->wheat ? "wheat" : "mutant", twin->id, shown_path(ctx, twin->path));
        mutant_free(&fresh);
        rc = OL_USAGE;
    } else {
        /* verify it before it exists: a file under course/ is one that works */
        mutant **arr = wheat ? &set.ws : &set.ms;
        int *n = wheat ? &set.nw : &set.nm;
        *arr = xrealloc(*arr, (size_t)(*n + 1) * sizeof **arr);
        (*arr)[(*n)++] = fresh;
        strlist only = {0};
        if (!wheat) sl_push(&only, id);
        rc = verify(ctx, l, &set, &only, NULL,
                    "the same `ol mutants new` command (the file is written once it verifies)");
        sl_free(&only);
        if (rc == OL_PASS) {
            if (mkdir_p(dir) != 0 || write_file_new(path, text.s, text.len) != 0) {
                ol_error("cannot write %s: %s", shown_path(ctx, path), strerror(errno));
                rc = OL_USAGE;
            } else {
                printf("wrote %s\n", shown_path(ctx, path));
                if (!wheat && !chapter_mentions(l, id))
                    printf(
                        "%swarning:%s course/%s/README.md's pitfall table (section 5) does not "
                        "mention %s yet: add its row (pitfall, symptom, caught by, mutant %s)\n",
                        color(stdout, C_YELLOW), color(stdout, C_RESET), l->id, id, id);
            }
        } else if (rc == OL_FAIL) {
            printf(
                "%s is not written (nothing changed): fix %s or the options, and run the same "
                "command again\n",
                shown_path(ctx, path), from);
        }
    }
    free(err);
    free(name);
    free(dir);
    free(path);
    sb_free(&text);
    set_free(&set);
    return rc;
}

int cmd_mutants(int argc, char **argv) {
    /* ol mutants [list|verify|new] L7.x ..., options anywhere after the verb */
    const char *sub = "list";
    if (argc > 1 && (!strcmp(argv[1], "list") || !strcmp(argv[1], "verify") ||
                     !strcmp(argv[1], "new") || !strcmp(argv[1], "rebase"))) {
        sub = argv[1];
        argc--;
        argv++;
    }
    bool is_new = !strcmp(sub, "new");
    const char *workspace = NULL;
    new_args na = {0};
    const ol_option list_opts[] = {{"workspace", 'w', "DIR", &workspace, NULL}, {0}};
    const ol_option new_opts[] = {{"from", 0, "EDITED.c", &na.from, NULL},
                                  {"id", 0, "ID", &na.id, NULL},
                                  {"title", 0, "TEXT", &na.title, NULL},
                                  {"caught-by", 0, "TEST", &na.caught, NULL},
                                  {"pitfall", 0, "N", &na.pitfall, NULL},
                                  {"symptom", 0, "TEXT", &na.symptom, NULL},
                                  {"hint", 0, "TEXT", &na.hint, NULL},
                                  {"source", 0, "FILE", &na.source, NULL},
                                  {"wheat", 0, NULL, NULL, &na.wheat},
                                  {"workspace", 'w', "DIR", &workspace, NULL},
                                  {0}};
    const char *cmd = is_new ? "mutants new" : "mutants";
    strlist args = {0};
    opts_result parsed = opts_parse(cmd, argc, argv, is_new ? new_opts : list_opts, 0, &args);
    if (parsed != OPTS_RUN) {
        sl_free(&args);
        return parsed == OPTS_HELP ? print_help(HELP) : OL_USAGE;
    }
    if (args.n == 0) {
        sl_free(&args);
        return usage_error("mutants", "give a lesson, e.g. `ol mutants %s L7.1`", sub);
    }
    /* the lesson, then ids (verify, rebase): anything else is a mistake */
    bool takes_ids = !strcmp(sub, "verify") || !strcmp(sub, "rebase");
    if (args.n > 1 && !takes_ids) {
        int rc =
            is_new
                ? usage_error(cmd, "unexpected \"%s\" (one lesson, then options)", args.v[1])
                : usage_error(cmd,
                              "unexpected \"%s\" (to verify some mutants: `ol mutants verify L7.x "
                              "ID...`)",
                              args.v[1]);
        sl_free(&args);
        return rc;
    }
    strlist ids = {0};
    for (int i = 1; i < args.n; i++) sl_push(&ids, args.v[i]);
    ol_ctx ctx;
    lesson l;
    int opened = open_lesson(&ctx, &l, workspace, args.v[0]);
    sl_free(&args);
    if (opened != 0) {
        sl_free(&ids);
        return OL_USAGE;
    }
    int rc;
    if (!strcmp(sub, "list")) {
        rc = list(&ctx, &l);
    } else if (!strcmp(sub, "verify")) {
        mutant_set set;
        rc = set_load(&l, &set) != 0 ? OL_FAIL : OL_PASS;
        for (int i = 0; rc == OL_PASS && i < ids.n; i++) {
            bool found = false;
            for (int k = 0; k < set.nm; k++) found = found || !strcmp(set.ms[k].id, ids.v[i]);
            if (!found) {
                ol_error("%s has no mutant %s (`ol mutants %s` lists them)", l.id, ids.v[i], l.id);
                rc = OL_USAGE;
            }
        }
        if (rc == OL_PASS) rc = verify(&ctx, &l, &set, ids.n ? &ids : NULL, NULL, NULL);
        set_free(&set);
    } else if (!strcmp(sub, "rebase")) {
        mutant_set set;
        rc = set_load(&l, &set) != 0 ? OL_FAIL : OL_PASS;
        for (int i = 0; rc == OL_PASS && i < ids.n; i++) {
            bool found = false;
            for (int k = 0; k < set.nm + set.nw; k++)
                found =
                    found || !strcmp((k < set.nm ? set.ms[k] : set.ws[k - set.nm]).id, ids.v[i]);
            if (!found) {
                ol_error("%s has no mutant or wheat %s (`ol mutants %s` lists them)", l.id,
                         ids.v[i], l.id);
                rc = OL_USAGE;
            }
        }
        if (rc == OL_PASS) rc = rebase(&ctx, &l, &set, ids.n ? &ids : NULL);
        set_free(&set);
    } else {
        rc = author(&ctx, &l, &na);
    }
    sl_free(&ids);
    lesson_free(&l);
    ctx_free(&ctx);
    return rc;
}
