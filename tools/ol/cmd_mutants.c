/* ol mutants: for instructors. List a lesson's mutants and wheats, verify
 * them against the current reference and the course tests, or author a new
 * one from an edited copy of the reference. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "mutant.h"
#include "proc.h"

static const char HELP[] =
    "usage: ol mutants L7.x                    list the mutants and wheats\n"
    "       ol mutants verify L7.x [ID...]     verify them (all, or the IDs given)\n"
    "       ol mutants new L7.x --from EDITED.c --id ID --title TEXT --caught-by TEST[,TEST]\n"
    "                          [--pitfall N] [--symptom TEXT] [--hint TEXT] [--source FILE]\n"
    "       ol mutants new L7.x --wheat --from EDITED.c --id ID --title TEXT [--source FILE]\n"
    "\n"
    "verify proves, for the current reference, what grading relies on:\n"
    "  - the reference and every wheat pass every course test;\n"
    "  - every required pitfall (lesson.json) has a mutant;\n"
    "  - each mutant applies exactly (a stale one fails loudly), compiles, and is\n"
    "    killed by each course test its Caught-by names; those tests compare with\n"
    "    the golden fixtures at their tolerance, so a kill shows the mutant moves\n"
    "    the golden outputs by more than it. The failing assertion is printed.\n"
    "new writes course/L7.x/mutants/ID-NAME.mutant (or wheats/ID-NAME.wheat): the\n"
    "header and `diff -u` of the reference against EDITED.c, then verifies it.\n"
    "It never overwrites a file.\n"
    "\n"
    "Options: --workspace DIR (where build/ol/ goes; default: the current folder).\n"
    "Exit status: 0 all verified, 1 a check failed, 2 usage error.\n";

/* ---- list ---- */

static int list(ol_ctx *ctx, const lesson *l) {
    char *err = NULL;
    mutant *ms = NULL, *ws = NULL;
    int nm = 0, nw = 0;
    char *mdir = path_join(l->dir, "mutants"), *wdir = path_join(l->dir, "wheats");
    int rc = OL_PASS;
    if (mutants_load(mdir, false, &ms, &nm, &err) != 0 || mutants_load(wdir, true, &ws, &nw, &err) != 0) {
        ol_error("%s", err);
        rc = OL_USAGE;
    } else {
        printf("%s: %d mutants, %d wheats (rung %s, threshold %.2f)\n\n", l->id, nm, nw, l->rung, l->threshold);
        printf("%-5s %-7s %-9s %-44s %s\n", "Id", "Pitfall", "Required", "Caught by", "Title");
        for (int i = 0; i < nm; i++) {
            char *by = sl_join(&ms[i].caught_by, ", ");
            const changed_line *c = mutant_first_change(&ms[i]);
            printf("%-5s %-7s %-9s %-44s %s\n", ms[i].id, ms[i].pitfall,
                   sl_contains(&l->required_pitfalls, ms[i].id) ? "yes" : "-", by, ms[i].title);
            printf("      %s%s:%d%s\n", color(stdout, C_DIM), shown_path(ctx, ms[i].path), c ? c->line : 0,
                   color(stdout, C_RESET));
            free(by);
        }
        for (int i = 0; i < nw; i++) printf("%-5s %-7s %-9s %-44s %s\n", ws[i].id, "wheat", "-", "-", ws[i].title);
        (void)ctx;
    }
    free(err);
    free(mdir);
    free(wdir);
    mutants_free(ms, nm);
    mutants_free(ws, nw);
    return rc;
}

/* ---- verify ---- */

static void say(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(bool ok, const char *fmt, ...) {
    printf("  %s%s%s ", color(stdout, ok ? C_GREEN : C_RED), ok ? "ok  " : "FAIL", color(stdout, C_RESET));
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

/* Verifies the mutants (every one when ids is empty) and the wheats. */
static int verify(ol_ctx *ctx, const lesson *l, const strlist *ids) {
    char *err = NULL;
    mutant *ms = NULL, *ws = NULL;
    int nm = 0, nw = 0, problems = 0;
    char *mdir = path_join(l->dir, "mutants"), *wdir = path_join(l->dir, "wheats");
    int rc = mutants_load(mdir, false, &ms, &nm, &err) != 0 || mutants_load(wdir, true, &ws, &nw, &err) != 0;
    free(mdir);
    free(wdir);
    if (rc) {
        ol_error("%s", err);
        free(err);
        mutants_free(ms, nm);
        return OL_FAIL;
    }
    for (int i = 0; i < ids->n; i++) {
        bool found = false;
        for (int k = 0; k < nm; k++) found = found || !strcmp(ms[k].id, ids->v[i]);
        if (!found) {
            ol_error("%s has no mutant %s (`ol mutants %s` lists them)", l->id, ids->v[i], l->id);
            mutants_free(ms, nm);
            mutants_free(ws, nw);
            return OL_USAGE;
        }
    }
    printf("ol mutants verify %s: %d mutant%s, %d wheat%s against the current reference\n", l->id,
           ids->n ? ids->n : nm, (ids->n ? ids->n : nm) == 1 ? "" : "s", nw, nw == 1 ? "" : "s");
    if (!ids->n)
        for (int p = 0; p < l->required_pitfalls.n; p++) {
            bool found = false;
            for (int k = 0; k < nm; k++) found = found || !strcmp(ms[k].id, l->required_pitfalls.v[p]);
            if (!found) {
                say(false, "required pitfall %s has no mutant in course/%s/mutants/", l->required_pitfalls.v[p], l->id);
                problems++;
            }
        }
    suite course = {0};
    deps d = {0};
    lesson_lib ref = {0};
    int nlibs = 1 + nw + nm;
    lesson_lib *libs = xcalloc((size_t)nlibs, sizeof *libs);   /* 0 the reference, wheats, mutants */
    bool *ready = xcalloc((size_t)nlibs, sizeof *ready);
    link_spec *progs = xcalloc((size_t)nlibs, sizeof *progs);
    run_result *runs = xcalloc((size_t)nlibs, sizeof *runs);
    run_spec *specs = xcalloc((size_t)nlibs, sizeof *specs);
    const mutant **which = xcalloc((size_t)nlibs, sizeof *which);
    rc = build_prepare(ctx) != 0 || require_link_files(ctx, l) != 0 ? OL_USAGE : build_course_suite(ctx, l, &course);
    if (rc == OL_PASS && (deps_prepare(ctx, l, true, true, &d, &err) != 0 ||
                          lesson_lib_prepare(ctx, &libs[0], l, LIB_REFERENCE, NULL, "the reference", &err) != 0)) {
        ol_error("%s", err);
        rc = OL_USAGE;
    }
    (void)ref;
    ready[0] = rc == OL_PASS;
    for (int i = 0; rc == OL_PASS && i < nw + nm; i++) {
        const mutant *m = i < nw ? &ws[i] : &ms[i - nw];
        which[1 + i] = m;
        if (!m->wheat && ids->n && !sl_contains(ids, m->id)) continue;
        char *dir = mutant_apply(ctx, l, m, &err);
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
        specs[nruns] = (run_spec){.bin = progs[i].bin, .bin_key = progs[i].key, .tests = &course.tests,
                                  .timeout = l->test_timeout, .data_key = data_key, .threads = 1};
        run_of[nruns++] = i;
    }
    if (rc != OL_PASS)
        for (int k = 0; k < nprogs; k++) link_free(&batch[k]);
    free(batch);
    run_result *results = xcalloc((size_t)nruns + 1, sizeof *results);
    if (rc == OL_PASS && run_tests(ctx, specs, results, nruns) != 0) rc = 130;
    for (int k = 0; rc == OL_PASS && k < nruns; k++) runs[run_of[k]] = results[k];
    free(results);

    for (int i = 0; rc == OL_PASS && i < nlibs; i++) {
        if (!ready[i]) continue;
        const run_result *r = &runs[i];
        int failed = run_failures(r);
        if (i == 0 || which[i]->wheat) {
            const char *what = i == 0 ? "the reference" : libs[i].label;
            if (failed) {
                say(false, "%s fails %d course test%s:", what, failed, failed == 1 ? "" : "s");
                for (int t = 0; t < r->n; t++)
                    if (r->t[t].status != TEST_PASS) print_test_failure(ctx, stdout, &r->t[t], false);
                problems++;
            } else {
                say(true, "%s passes all %d course tests", what, r->n);
            }
            continue;
        }
        const mutant *m = which[i];
        bool ok = true;
        strbuf lines = {0};
        for (int c = 0; c < m->caught_by.n; c++) {
            const test_result *t = run_find(r, m->caught_by.v[c]);
            if (!t) {
                sb_printf(&lines, "      Caught-by names %s, which is not a course test of %s\n", m->caught_by.v[c], l->id);
                ok = false;
            } else if (t->status == TEST_PASS) {
                sb_printf(&lines, "      %s passes on it: the mutant does not move what that test checks beyond "
                                  "its tolerance\n", t->name);
                ok = false;
            } else {
                char *what = test_describe(t);
                sb_printf(&lines, "      %s: %s at %s:%d: %s\n", t->name, what, shown_path(ctx, t->file), t->line,
                          t->message);
                free(what);
            }
        }
        strlist others = {0};
        for (int t = 0; t < r->n; t++)
            if (r->t[t].status != TEST_PASS && !sl_contains(&m->caught_by, r->t[t].name)) sl_push(&others, r->t[t].name);
        say(ok, "mutant %s (%s) %s", m->id, m->title, ok ? "is killed by its Caught-by tests:" : "is not verified:");
        fputs(lines.s ? lines.s : "", stdout);
        if (others.n) {
            char *names = sl_join(&others, ", ");
            printf("      also killed by: %s\n", names);
            free(names);
        }
        sl_free(&others);
        sb_free(&lines);
        problems += !ok;
    }
    if (rc == OL_PASS) {
        if (problems) printf("%s: %d problem%s (above)\n", l->id, problems, problems == 1 ? "" : "s");
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
    mutants_free(ms, nm);
    mutants_free(ws, nw);
    return rc;
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

static int author(ol_ctx *ctx, const lesson *l, int argc, char **argv) {
    static const struct option opts[] = {
        {"from", required_argument, 0, 'f'},   {"id", required_argument, 0, 'i'},
        {"title", required_argument, 0, 't'},  {"caught-by", required_argument, 0, 'c'},
        {"pitfall", required_argument, 0, 'p'}, {"symptom", required_argument, 0, 's'},
        {"hint", required_argument, 0, 'H'},   {"source", required_argument, 0, 'S'},
        {"wheat", no_argument, 0, 'W'},        {"workspace", required_argument, 0, 'w'},
        {0, 0, 0, 0}};
    const char *from = NULL, *id = NULL, *title = NULL, *caught = NULL, *pitfall = NULL, *symptom = NULL,
               *hint = NULL, *source = NULL;
    bool wheat = false;
    int c;
    optind = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'f': from = optarg; break;
        case 'i': id = optarg; break;
        case 't': title = optarg; break;
        case 'c': caught = optarg; break;
        case 'p': pitfall = optarg; break;
        case 's': symptom = optarg; break;
        case 'H': hint = optarg; break;
        case 'S': source = optarg; break;
        case 'W': wheat = true; break;
        case 'w': break;
        default: return usage_error("mutants new", "unknown option");
        }
    }
    if (!from || !id || !title || (!wheat && !caught))
        return usage_error("mutants new", "--from, --id and --title are required, and --caught-by for a mutant");
    const char *fields[] = {id, title, caught, pitfall, symptom, hint};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        if (fields[i] && (!one_line(fields[i]) || !*fields[i]))
            return usage_error("mutants new", "header values are single non-empty lines");
    for (const char *p = id; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
            return usage_error("mutants new", "an id is letters, digits, '-' or '_' (like s13): \"%s\"", id);
    if (!source) {
        if (l->sources.n == 1) source = l->sources.v[0];
        for (int i = 0; !source && i < l->sources.n; i++)
            if (!strcmp(path_base(l->sources.v[i]), path_base(from))) source = l->sources.v[i];
        if (!source) return usage_error("mutants new", "which source does %s edit? pass --source FILE", from);
    } else if (!sl_contains(&l->sources, source)) {
        return usage_error("mutants new", "%s is not a source of %s", source, l->id);
    }
    if (!is_file(from)) return usage_error("mutants new", "%s does not exist", from);
    /* the id must be new in the lesson, across mutants and wheats */
    char *err = NULL;
    mutant *existing = NULL;
    int n = 0;
    for (int kind = 0; kind < 2; kind++) {
        char *dir = path_join(l->dir, kind ? "wheats" : "mutants");
        if (mutants_load(dir, kind == 1, &existing, &n, &err) == 0) {
            for (int i = 0; i < n; i++)
                if (!strcmp(existing[i].id, id)) {
                    ol_error("%s already has %s (%s): choose another id", l->id, id, shown_path(ctx, existing[i].path));
                    mutants_free(existing, n);
                    free(dir);
                    return OL_USAGE;
                }
            mutants_free(existing, n);
        }
        free(err);
        err = NULL;
        free(dir);
    }
    char *ref = xasprintf("%s/reference/%s", ctx->root, source);
    char *tmp = ctx_cache_dir(ctx, "tmp");
    if (!tmp) {
        free(ref);
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
    if (rc != OL_PASS) return rc;
    strbuf text = {0};
    sb_printf(&text, "%s: %s\n", wheat ? "Wheat" : "Mutant", id);
    if (!wheat) sb_printf(&text, "Pitfall: %s\n", pitfall ? pitfall : "-");
    sb_printf(&text, "Title: %s\n", title);
    if (symptom) sb_printf(&text, "Symptom: %s\n", symptom);
    if (!wheat) sb_printf(&text, "Caught-by: %s\n", caught);
    if (hint && !wheat) sb_printf(&text, "Hint: %s\n", hint);
    sb_printf(&text, "---\n%s", diff);
    free(diff);
    char *name = slug(title);
    char *dir = path_join(l->dir, wheat ? "wheats" : "mutants");
    char *path = xasprintf("%s/%s-%s.%s", dir, id, name, wheat ? "wheat" : "mutant");
    mutant check;
    if (mutant_parse(path, text.s, wheat, &check, &err) != 0) {
        ol_error("the new file would not parse: %s", err);
        rc = OL_USAGE;
    } else if (mkdir_p(dir) != 0 || write_file_new(path, text.s, text.len) != 0) {
        ol_error("cannot write %s: %s", shown_path(ctx, path), strerror(errno));
        rc = OL_USAGE;
    } else {
        printf("wrote %s\n", shown_path(ctx, path));
        strlist only = {0};
        if (!wheat) sl_push(&only, id);
        rc = verify(ctx, l, &only);
        sl_free(&only);
        if (rc == OL_FAIL)
            printf("%s is written but does not verify: edit it, or delete it and try again\n", shown_path(ctx, path));
    }
    mutant_free(&check);
    free(err);
    free(name);
    free(dir);
    free(path);
    sb_free(&text);
    return rc;
}

int cmd_mutants(int argc, char **argv) {
    const char *workspace = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return print_help(HELP);
        if (!strcmp(argv[i], "--workspace") && i + 1 < argc) workspace = argv[i + 1];
        else if (!strncmp(argv[i], "--workspace=", 12)) workspace = argv[i] + 12;
    }
    const char *sub = argc > 1 && (!strcmp(argv[1], "verify") || !strcmp(argv[1], "new")) ? argv[1] : NULL;
    int first = sub ? 2 : 1;
    if (argc <= first || argv[first][0] == '-')
        return usage_error("mutants", "give a lesson, e.g. `ol mutants %sL7.1`", sub ? (sub[0] == 'v' ? "verify " : "new ") : "");
    ol_ctx ctx;
    lesson l;
    if (open_lesson(&ctx, &l, workspace, argv[first]) != 0) return OL_USAGE;
    int rc;
    if (!sub) {
        rc = argc > first + 1 && strcmp(argv[first + 1], "--workspace") != 0 && strncmp(argv[first + 1], "--workspace=", 12) != 0
                 ? usage_error("mutants", "to verify, say `ol mutants verify %s`", l.id)
                 : list(&ctx, &l);
    } else if (sub[0] == 'v') {
        strlist ids = {0};
        for (int i = first + 1; i < argc; i++) {
            if (!strcmp(argv[i], "--workspace")) i++;
            else if (strncmp(argv[i], "--workspace=", 12) != 0) sl_push(&ids, argv[i]);
        }
        rc = verify(&ctx, &l, &ids);
        sl_free(&ids);
    } else {
        rc = author(&ctx, &l, argc - first, argv + first);
    }
    lesson_free(&l);
    ctx_free(&ctx);
    return rc;
}
