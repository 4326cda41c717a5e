#include "dist.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cdecl.h"
#include "lesson.h"
#include "lessonlib.h"
#include "mutant.h"
#include "prebuilt.h"
#include "proc.h"
#include "report.h"

/* The coverage objects are compiled in a folder this deep and long, so the
 * path of their counts, written into each object, has room for the
 * student's own (prebuilt_units rewrites it in place). */
#define PLACEHOLDER_PARTS 5
#define PLACEHOLDER_PART_LEN 200

/* What one run of dist carries along. */
typedef struct {
    ol_ctx *ctx;  /* the course */
    ol_ctx build; /* a scratch workspace whose cache compiles the prebuilt objects */
    char *out;    /* the release being written (a temporary name until the end) */
    const dist_options *opt;
    int files; /* how many files were written */
} dist_run;

static void say(const dist_run *d, const char *fmt, const char *arg) {
    if (d->opt->quiet) return;
    fputs("ol dist: ", stdout);
    printf(fmt, arg);
    fputc('\n', stdout);
    fflush(stdout);
}

/* ---- copying ---- */

static int copy_one(dist_run *d, const char *from, const char *rel) {
    char *to = path_join(d->out, rel), *dir = path_dirname(to);
    int rc = mkdir_p(dir) == 0 && copy_file_atomic(from, to) == 0 ? 0 : -1;
    if (rc != 0)
        ol_error("cannot copy %s to %s: %s", from, to, strerror(errno));
    else
        d->files++;
    free(dir);
    free(to);
    return rc;
}

/* ROOT/rel into the release at the same place. */
static int copy_rel(dist_run *d, const char *rel) {
    char *from = path_join(d->ctx->root, rel);
    int rc = copy_one(d, from, rel);
    free(from);
    return rc;
}

static int write_rel(dist_run *d, const char *rel, const char *text) {
    char *to = path_join(d->out, rel), *dir = path_dirname(to);
    int rc = mkdir_p(dir) == 0 && write_file_atomic(to, text, strlen(text)) == 0 ? 0 : -1;
    if (rc != 0)
        ol_error("cannot write %s: %s", to, strerror(errno));
    else
        d->files++;
    free(dir);
    free(to);
    return rc;
}

/* Nothing of the reference's source, its variants or the oracle may go out. */
static bool secret(const char *rel) {
    return strncmp(rel, "reference/", 10) == 0 || strncmp(rel, "oracle/", 7) == 0 ||
           strstr(rel, "/mutants/") || strstr(rel, "/wheats/") || strstr(rel, ".mutant") ||
           strstr(rel, ".wheat");
}

static int copy_any_tree(dist_run *d, const char *rel);

/* ROOT/rel, a file or a folder (recursively, regular files only); never a secret. */
static int copy_tree(dist_run *d, const char *rel) {
    if (secret(rel)) {
        ol_error(
            "%s holds the reference, its mutants or the oracle: a student release never carries "
            "it (remove it from lesson.json's \"release_files\")",
            rel);
        return -1;
    }
    return copy_any_tree(d, rel);
}

/* The same, secrets included: what only a grader's copy holds. */
static int copy_any_tree(dist_run *d, const char *rel) {
    char *full = path_join(d->ctx->root, rel);
    struct stat st;
    int rc = 0;
    if (lstat(full, &st) != 0) {
        ol_error("%s is missing: lesson.json names it; restore it or fix lesson.json", rel);
        rc = -1;
    } else if (S_ISREG(st.st_mode)) {
        rc = copy_one(d, full, rel);
    } else if (S_ISDIR(st.st_mode)) {
        DIR *dir = opendir(full);
        strlist names = {0};
        struct dirent *e;
        while (dir && (e = readdir(dir)) != NULL)
            if (e->d_name[0] != '.') sl_push(&names, e->d_name);
        if (dir) closedir(dir);
        sl_sort(&names);
        for (int i = 0; i < names.n && rc == 0; i++) {
            char *child = path_join(rel, names.v[i]);
            rc = copy_any_tree(d, child);
            free(child);
        }
        sl_free(&names);
    } /* a link or a device is no part of a course */
    free(full);
    return rc;
}

/* Headers the contracts include from outside contracts/ ("../../../tools/
 * hub/hub.h"), and what those include in turn. */
static int copy_included(dist_run *d, const char *rel, strlist *seen) {
    if (sl_contains(seen, rel)) return 0;
    sl_push(seen, rel);
    char *full = path_join(d->ctx->root, rel);
    char *text = read_file(full, NULL);
    free(full);
    if (!text) return 0;
    int rc = 0;
    char *dir = path_dirname(rel);
    for (char *line = text; line && *line && rc == 0;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *p = line + strspn(line, " \t");
        if (*p++ != '#') continue;
        p += strspn(p, " \t");
        if (strncmp(p, "include", 7) != 0) continue;
        p += 7 + strspn(p + 7, " \t");
        if (*p != '"') continue;
        size_t n = strcspn(p + 1, "\"\n");
        char *inc = xstrndup(p + 1, n);
        char *joined = path_join(dir, inc);
        char *abs = path_join(d->ctx->root, joined), real[4096];
        const char *in_root = realpath(abs, real) ? path_rel(real, d->ctx->root) : NULL;
        if (in_root && in_root != real && strncmp(in_root, "contracts/", 10) != 0) {
            if (secret(in_root)) {
                ol_error("%s includes %s, a file of the reference: contracts must not", rel,
                         in_root);
                rc = -1;
            } else {
                char *target = path_join(d->out, in_root);
                if (!is_file(target)) rc = copy_rel(d, in_root);
                free(target);
                if (rc == 0) rc = copy_included(d, in_root, seen);
            }
        }
        free(abs);
        free(joined);
        free(inc);
    }
    free(dir);
    free(text);
    return rc;
}

static void list_headers(const char *root, const char *rel, strlist *out) {
    char *full = path_join(root, rel);
    DIR *dir = opendir(full);
    free(full);
    if (!dir) return;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char *child = path_join(rel, e->d_name), *abs = path_join(root, child);
        size_t n = strlen(e->d_name);
        if (is_dir(abs))
            list_headers(root, child, out);
        else if (n > 2 && strcmp(e->d_name + n - 2, ".h") == 0)
            sl_push(out, child);
        free(abs);
        free(child);
    }
    closedir(dir);
}

/* ---- the prebuilt reference ---- */

static int run_tool(const char *what, proc_job *job) {
    int rc = proc_run(job) == 0 && job->exit_code == 0 ? 0 : -1;
    if (rc != 0) {
        char *said = job->out_path ? read_file(job->out_path, NULL) : NULL;
        ol_error("%s failed: %s", what, said && *said ? said : "(no message)");
        free(said);
    }
    if (job->out_path) unlink(job->out_path);
    proc_job_free(job);
    return rc;
}

/* An object into the release without its debug information (the source's
 * file names, lines and local names) or the symbols no link needs. */
static int put_object(dist_run *d, const char *obj, const char *rel) {
    char *to = path_join(d->out, rel), *dir = path_dirname(to);
    int rc = mkdir_p(dir);
    if (rc == 0) {
        proc_job job = {0};
        proc_arg(&job, "objcopy");
        proc_arg(&job, "--strip-debug");
        proc_arg(&job, "--strip-unneeded");
        proc_arg(&job, obj);
        proc_arg(&job, to);
        job.out_path = xasprintf("%s.log", to);
        rc = run_tool("objcopy (binutils)", &job);
    }
    if (rc == 0) d->files++;
    free(dir);
    free(to);
    return rc;
}

/* Each change's place, and the reference's function holding it (reports
 * name it, site.h; the release cannot read it from the reference). */
static void put_changes(const char *root, cJSON *entry, const mutant *m) {
    cJSON *changes = cJSON_AddArrayToObject(entry, "changes");
    for (int i = 0; i < m->nchanges; i++) {
        const changed_line *c = &m->changes[i];
        cJSON *x = cJSON_CreateObject();
        char *ref = xasprintf("%s/reference/%s", root, c->file);
        char *text = read_file(ref, NULL);
        c_span *spans = NULL;
        int n = text ? cdecl_spans(text, &spans) : 0;
        const char *fn = cdecl_function_at(spans, n, c->line);
        if (fn) cJSON_AddStringToObject(x, "function", fn);
        cdecl_spans_free(spans, n);
        free(text);
        free(ref);
        cJSON_AddStringToObject(x, "file", c->file);
        cJSON_AddNumberToObject(x, "line", c->line);
        cJSON_AddNumberToObject(x, "column", c->column);
        cJSON_AddNumberToObject(x, "end_column", c->end_column);
        cJSON_AddBoolToObject(x, "inserted", c->inserted);
        cJSON_AddItemToArray(changes, x);
    }
}

/* What reports show of a variant, and nothing else: no diff, no Caught-by. */
static cJSON *variant_entry(const char *root, const mutant *m) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "id", m->id);
    if (!m->wheat) cJSON_AddStringToObject(e, "pitfall", m->pitfall);
    cJSON_AddStringToObject(e, "title", m->title);
    if (m->symptom && *m->symptom) cJSON_AddStringToObject(e, "symptom", m->symptom);
    if (m->hint && *m->hint) cJSON_AddStringToObject(e, "hint", m->hint);
    if (!m->wheat) put_changes(root, e, m);
    return e;
}

/* The reference file's line breaks and nothing else: what gcov reads the
 * prebuilt coverage build's line counts against (only the number of lines
 * is told). */
static int put_blank(dist_run *d, const lesson *l, const char *source) {
    char *from = xasprintf("%s/reference/%s", d->ctx->root, source);
    char *text = read_file(from, NULL);
    free(from);
    if (!text) {
        ol_error("reference/%s is missing (lesson.json \"sources\" of %s)", source, l->id);
        return -1;
    }
    char *q = text;
    for (const char *p = text; *p; p++)
        if (*p == '\n') *q++ = '\n';
    *q = 0;
    char *rel = xasprintf("prebuilt/%s/blank/reference/%s", l->id, source);
    int rc = write_rel(d, rel, text);
    free(rel);
    free(text);
    return rc;
}

typedef struct {
    lesson_lib lib;
    const char *folder; /* "reference", "coverage", "s01" */
} variant_build;

static int prebuild_lesson(dist_run *d, const lesson *l) {
    ol_ctx *bc = &d->build;
    char *err = NULL, *mdir = path_join(l->dir, "mutants"), *wdir = path_join(l->dir, "wheats");
    mutant *mutants = NULL, *wheats = NULL;
    int nm = 0, nw = 0, rc = 0;
    if (mutants_load(mdir, false, &mutants, &nm, &err) != 0 ||
        mutants_load(wdir, true, &wheats, &nw, &err) != 0) {
        ol_error("%s", err);
        rc = -1;
    }
    free(mdir);
    free(wdir);
    int nv = 2 + nw + nm;
    variant_build *v = xcalloc((size_t)nv, sizeof *v);
    int k = 0;
    if (rc == 0) {
        rc =
            lesson_lib_prepare(bc, &v[0].lib, l, LIB_REFERENCE, NULL, "the reference", &err) != 0 ||
                    lesson_lib_prepare(bc, &v[1].lib, l, LIB_COVERAGE, NULL, "the coverage build",
                                       &err) != 0
                ? -1
                : 0;
        v[0].folder = PREBUILT_REFERENCE;
        v[1].folder = PREBUILT_COVERAGE;
        k = 2;
        if (rc != 0) ol_error("%s", err);
    }
    for (int i = 0; rc == 0 && i < nw + nm; i++) {
        const mutant *m = i < nw ? &wheats[i] : &mutants[i - nw];
        char *dir = mutant_apply(bc, l, m, &err);
        char *label = xasprintf("%s %s", m->wheat ? "wheat" : "mutant", m->id);
        if (!dir || lesson_lib_prepare(bc, &v[k].lib, l, LIB_PATCHED, dir, label, &err) != 0) {
            ol_error("%s: %s", l->id, err);
            rc = -1;
        } else {
            v[k++].folder = m->id;
        }
        free(label);
        free(dir);
    }
    if (rc == 0) {
        lesson_lib **libs = xcalloc((size_t)k, sizeof *libs);
        for (int i = 0; i < k; i++) libs[i] = &v[i].lib;
        int failed = lesson_libs_build(bc, libs, k);
        free(libs);
        for (int i = 0; failed > 0 && i < k; i++)
            if (!v[i].lib.ok) {
                lesson_lib_print_log(bc, &v[i].lib);
                ol_error("%s: %s does not compile (above): fix the course before making a release",
                         l->id, v[i].lib.label);
            }
        if (failed != 0) rc = -1;
    }
    cJSON *manifest = cJSON_CreateObject();
    cJSON_AddNumberToObject(manifest, "format", PREBUILT_FORMAT);
    cJSON_AddStringToObject(manifest, "lesson", l->id);
    cJSON *sources = cJSON_AddArrayToObject(manifest, "sources");
    cJSON *gcda = cJSON_AddArrayToObject(manifest, "coverage_gcda");
    for (int s = 0; s < l->sources.n; s++) {
        cJSON_AddItemToArray(sources, cJSON_CreateString(l->sources.v[s]));
        if (rc == 0) rc = put_blank(d, l, l->sources.v[s]);
    }
    for (int i = 0; rc == 0 && i < k; i++)
        for (int s = 0; rc == 0 && s < v[i].lib.n; s++) {
            const unit *u = &v[i].lib.units[s];
            char *rel = xasprintf("prebuilt/%s/%s/%d.o", l->id, v[i].folder, s);
            rc = put_object(d, u->obj, rel);
            if (rc == 0 && u->coverage) {
                /* the notes beside it; the counts' path, to be moved at grading */
                size_t n = strlen(u->obj) - 2;
                char *notes = xasprintf("%.*s.gcno", (int)n, u->obj);
                char *notes_rel = xasprintf("prebuilt/%s/%s/%d.gcno", l->id, v[i].folder, s);
                rc = copy_one(d, notes, notes_rel);
                char *counts = xasprintf("%.*s.gcda", (int)n, u->obj);
                cJSON_AddItemToArray(gcda, cJSON_CreateString(counts));
                free(counts);
                free(notes);
                free(notes_rel);
            }
            free(rel);
        }
    cJSON *jw = cJSON_AddArrayToObject(manifest, "wheats");
    for (int i = 0; i < nw; i++) cJSON_AddItemToArray(jw, variant_entry(d->ctx->root, &wheats[i]));
    cJSON *jm = cJSON_AddArrayToObject(manifest, "mutants");
    for (int i = 0; i < nm; i++) cJSON_AddItemToArray(jm, variant_entry(d->ctx->root, &mutants[i]));
    if (rc == 0) {
        char *text = cJSON_Print(manifest);
        char *rel = xasprintf("prebuilt/%s/manifest.json", l->id);
        rc = write_rel(d, rel, text);
        free(rel);
        free(text);
    }
    cJSON_Delete(manifest);
    for (int i = 0; i < nv; i++) lesson_lib_free(&v[i].lib);
    free(v);
    mutants_free(mutants, nm);
    mutants_free(wheats, nw);
    free(err);
    return rc;
}

/* ---- a lesson's student files ---- */

/* lesson.json as students get it: without what the release does not hold
 * (model answers, the oracle; the hidden tests unless for a grader). */
static int put_lesson_json(dist_run *d, const lesson *l) {
    char *rel = xasprintf("course/%s/lesson.json", l->id);
    char *path = path_join(d->ctx->root, rel);
    char *text = read_file(path, NULL);
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    int rc = -1;
    if (!o)
        ol_error("cannot read %s", path);
    else {
        cJSON_DeleteItemFromObjectCaseSensitive(o, "model_tests");
        cJSON_DeleteItemFromObjectCaseSensitive(o, "oracle");
        if (!d->opt->grader) cJSON_DeleteItemFromObjectCaseSensitive(o, "hidden_tests");
        char *shown = cJSON_Print(o);
        char *with_nl = xasprintf("%s\n", shown);
        rc = write_rel(d, rel, with_nl);
        free(with_nl);
        free(shown);
    }
    cJSON_Delete(o);
    free(text);
    free(path);
    free(rel);
    return rc;
}

/* A grader's copy grades from the sources, as the course does: the
 * reference (shown after a pass), its private headers, the mutants and the
 * wheats. So its objects are compiled by the grader's own GCC, whose
 * coverage runtime must match the compiler that made them. */
static int put_grader_sources(dist_run *d, const lesson *l) {
    say(d, "%s: the reference's source, its mutants and wheats (a grader's copy)", l->id);
    int rc = 0;
    for (int i = 0; rc == 0 && i < l->sources.n; i++) {
        char *ref = xasprintf("reference/%s", l->sources.v[i]);
        rc = copy_rel(d, ref);
        free(ref);
    }
    strlist headers = {0};
    list_headers(d->ctx->root, "reference", &headers);
    sl_sort(&headers);
    for (int i = 0; rc == 0 && i < headers.n; i++) {
        char *there = path_join(d->out, headers.v[i]);
        if (!is_file(there)) rc = copy_rel(d, headers.v[i]);
        free(there);
    }
    sl_free(&headers);
    const char *kinds[] = {"mutants", "wheats"};
    for (int k = 0; rc == 0 && k < 2; k++) {
        char *rel = xasprintf("course/%s/%s", l->id, kinds[k]);
        char *full = path_join(d->ctx->root, rel);
        if (is_dir(full)) rc = copy_any_tree(d, rel);
        free(full);
        free(rel);
    }
    return rc;
}

static int put_lesson(dist_run *d, const lesson *l) {
    say(d, "%s: chapter, contracts, stubs, course tests, fixtures", l->id);
    char *chapter = xasprintf("course/%s/README.md", l->id);
    int rc = copy_rel(d, chapter);
    free(chapter);
    if (rc == 0) rc = put_lesson_json(d, l);
    for (int i = 0; rc == 0 && i < l->sources.n; i++) {
        char *stub = xasprintf("stubs/%s", l->sources.v[i]);
        rc = copy_rel(d, stub);
        free(stub);
    }
    if (rc == 0) rc = copy_tree(d, l->course_tests);
    if (rc == 0 && l->fixtures) rc = copy_tree(d, l->fixtures);
    if (rc == 0 && l->example_test) rc = copy_tree(d, l->example_test);
    /* the libraries "link" names (made absolute by lesson_load) */
    for (int i = 0; rc == 0 && i < l->link.n; i++)
        if (l->link.v[i][0] == '/') {
            const char *rel = path_rel(l->link.v[i], d->ctx->root);
            if (rel == l->link.v[i]) continue; /* a system file */
            rc = copy_tree(d, rel);
        }
    for (int i = 0; rc == 0 && i < l->release_files.n; i++)
        rc = copy_tree(d, l->release_files.v[i]);
    if (rc == 0 && l->hidden_tests && d->opt->grader) rc = copy_tree(d, l->hidden_tests);
    if (d->opt->grader) return rc == 0 ? put_grader_sources(d, l) : rc;
    if (rc == 0) {
        say(d, "%s: the reference, its coverage build, wheats and mutants, compiled", l->id);
        rc = prebuild_lesson(d, l);
    }
    return rc;
}

/* ---- the release as a whole ---- */

static int put_readme(dist_run *d, const strlist *ids) {
    strbuf b = {0};
    sb_add(&b,
           "# tinyllm, Part 7 in C: the student release\n\n"
           "You write a modern LLM decoder from scratch in C, one lesson at a time. Each lesson's\n"
           "chapter is `course/L7.x/README.md`; `course/README.md` is the map of the course.\n\n"
           "## Start\n\n"
           "```sh\n"
           "export PATH=$PWD/bin:$PATH     # this folder's bin/ (ol finds the course beside it)\n"
           "mkdir ~/tinyllm && cd ~/tinyllm # your workspace, outside this folder\n"
           "ol list                        # the lessons, their rungs, and where you are\n"
           "ol start L7.1                  # the starting code in c/, your test folder\n"
           "ol tests L7.1                  # build your code, run the course tests\n"
           "ol check L7.1                  # the course tests, then your own tests by mutation\n"
           "ol check L7.1 --html report.html   # the same, with a report to open in a browser\n"
           "```\n\n"
           "`ol help COMMAND` explains each command. Your tests include only the headers under\n"
           "`contracts/`, `<check.h>` and the standard C headers.\n\n"
           "## What is here\n\n"
           "- `course/`: the chapters and each lesson's `lesson.json`;\n"
           "- `contracts/`: the headers you implement and call (the runtime's and each lesson's);\n"
           "- `stubs/`: the starting code `ol start` copies; `tests/`: the course tests;\n"
           "- `fixtures/`: golden values made with PyTorch;\n"
           "- `build/lib/`: the runtime, compiled; `bin/`: `ol` and `tinyllm`;\n"
           "- `prebuilt/`: the reference and its variants (the mutants your tests must catch),\n"
           "  compiled only. `ol check` grades with them as the course does, with one\n"
           "  difference: here each is one fixed build, where the grader builds the reference\n"
           "  and every wheat anew, its own way, for every run. So `ol check` here is feedback:\n"
           "  the grade that counts is the grader's.\n\n"
           "The reference is not here as source. Once `ol check` passes on the grader's side\n"
           "(Gradescope, or your instructor's `ol grade`), the grader's report shows it.\n\n"
           "## Lessons in this release\n\n");
    for (int i = 0; i < ids->n; i++) {
        lesson l;
        char *err = NULL;
        if (lesson_load(d->ctx->root, ids->v[i], &l, &err) == 0) {
            sb_printf(&b, "- %s: %s (rung %s)\n", l.id, l.title, l.rung);
            lesson_free(&l);
        }
        free(err);
    }
    char *text = sb_take(&b);
    int rc = write_rel(d, "README.md", text);
    free(text);
    return rc;
}

static int put_marker(dist_run *d, const strlist *ids) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "format", PREBUILT_FORMAT);
    cJSON_AddStringToObject(o, "kind", d->opt->grader ? "grader" : "student");
    cJSON *ls = cJSON_AddArrayToObject(o, "lessons");
    for (int i = 0; i < ids->n; i++) cJSON_AddItemToArray(ls, cJSON_CreateString(ids->v[i]));
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    cJSON_AddStringToObject(o, "made", date);
    char *text = cJSON_Print(o);
    int rc = write_rel(d, PREBUILT_MARKER, text);
    free(text);
    cJSON_Delete(o);
    return rc;
}

static int put_programs(dist_run *d) {
    const char *need[][2] = {{"build/bin/ol", "bin/ol"},
                             {"build/lib/libtinyllm_core.a", "build/lib/libtinyllm_core.a"},
                             {"build/lib/libtinyllm_testing.a", "build/lib/libtinyllm_testing.a"}};
    for (size_t i = 0; i < sizeof need / sizeof *need; i++) {
        char *from = path_join(d->ctx->root, need[i][0]);
        bool there = is_file(from);
        int rc = there ? copy_one(d, from, need[i][1]) : -1;
        if (!there) ol_error("%s is not built: run `make -C %s` first", need[i][0], d->ctx->root);
        free(from);
        if (rc != 0) return -1;
    }
    /* Stryker's viewer, for `ol check --html`, with its licence */
    char *viewer = report_viewer_path(d->ctx);
    if (!viewer) {
        ol_error("the HTML report's viewer is not installed: run `make -C %s report-viewer` first",
                 d->ctx->root);
        return -1;
    }
    char *dir = path_dirname(viewer), *up = path_dirname(dir), *license = path_join(up, "LICENSE");
    int vrc = copy_one(d, viewer, "share/mutation-testing-elements/mutation-test-elements.js");
    if (vrc == 0 && is_file(license))
        vrc = copy_one(d, license, "share/mutation-testing-elements/LICENSE");
    free(license);
    free(up);
    free(dir);
    free(viewer);
    if (vrc != 0) return -1;
    /* the milestone's command line, where it is built */
    char *tinyllm = path_join(d->ctx->root, "build/bin/tinyllm");
    int rc = is_file(tinyllm) ? copy_one(d, tinyllm, "bin/tinyllm") : 0;
    free(tinyllm);
    return rc;
}

/* tools/tinyllm, which `ol tinyllm` links with the student's code and the
 * prebuilt reference of the lessons not started: compiled, as its source
 * shares code with the answers (the downloader's HTTP), and only in a
 * release of every lesson, as it links them all. */
static int put_command_line(dist_run *d, const strlist *ids) {
    strlist all = {0}, files = {0};
    lesson_ids(d->ctx->root, &all);
    bool every = true;
    for (int i = 0; i < all.n; i++) every = every && sl_contains(ids, all.v[i]);
    sl_free(&all);
    char *dir = path_join(d->ctx->root, "tools/tinyllm");
    if (every && is_dir(dir)) list_files(dir, ".c", &files);
    free(dir);
    if (files.n == 0) return 0;
    say(d, "%s: the command line `ol tinyllm` links, compiled", "tools/tinyllm");
    /* a unit's key hashes only its deps' text beside its own: every header
     * it may include is one, so a changed header (verbs.h) is recompiled */
    strlist headers = {0};
    list_headers(d->ctx->root, "tools/tinyllm", &headers);
    list_headers(d->ctx->root, "contracts", &headers);
    sl_sort(&headers);
    unit *units = xcalloc((size_t)files.n, sizeof *units);
    for (int i = 0; i < files.n; i++) {
        units[i].src = xasprintf("tools/tinyllm/%s", path_base(files.v[i]));
        units[i].cwd = xstrdup(d->ctx->root);
        for (int h = 0; h < headers.n; h++)
            sl_push_owned(&units[i].deps, path_join(d->ctx->root, headers.v[h]));
    }
    sl_free(&headers);
    int rc = build_units(&d->build, units, files.n) == 0 ? 0 : -1;
    for (int i = 0; i < files.n; i++) {
        if (rc != 0 && units[i].log && *units[i].log) fputs(units[i].log, stderr);
        if (rc == 0) {
            const char *base = path_base(files.v[i]);
            char *rel = xasprintf("%s/%.*s.o", PREBUILT_TINYLLM, (int)strlen(base) - 2, base);
            rc = put_object(d, units[i].obj, rel);
            free(rel);
        }
    }
    if (rc != 0) ol_error("tools/tinyllm does not compile: fix the course before making a release");
    for (int i = 0; i < files.n; i++) unit_free(&units[i]);
    free(units);
    sl_free(&files);
    return rc;
}

/* Each milestone (course/<ID>/milestone.json) whose "needs" the release
 * holds: its chapter and milestone.json; what they name (fixtures, the
 * command line) comes with the lessons. */
static int put_milestones(dist_run *d, const strlist *ids) {
    char *course = path_join(d->ctx->root, "course");
    DIR *dir = opendir(course);
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && dir && (e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char *rel = xasprintf("course/%s/milestone.json", e->d_name);
        char *full = path_join(d->ctx->root, rel);
        char *text = read_file(full, NULL);
        cJSON *o = text ? cJSON_Parse(text) : NULL;
        bool all = o != NULL;
        const cJSON *need;
        cJSON_ArrayForEach(need, cJSON_GetObjectItemCaseSensitive(o, "needs"))
            all = all && cJSON_IsString(need) && sl_contains(ids, need->valuestring);
        if (all) {
            say(d, "%s: the milestone's chapter and milestone.json", e->d_name);
            char *readme = xasprintf("course/%s/README.md", e->d_name);
            char *readme_full = path_join(d->ctx->root, readme);
            rc = copy_rel(d, rel);
            if (rc == 0 && is_file(readme_full)) rc = copy_rel(d, readme);
            free(readme_full);
            free(readme);
        }
        cJSON_Delete(o);
        free(text);
        free(full);
        free(rel);
    }
    if (dir) closedir(dir);
    free(course);
    return rc;
}

int dist_lessons(ol_ctx *ctx, const strlist *ids, strlist *out) {
    if (ids->n == 0) {
        lesson *all;
        int n;
        if (lesson_load_all(ctx->root, &all, &n) != 0) {
            ol_error("%s has no course/ folder", ctx->root);
            return -1;
        }
        for (int i = 0; i < n; i++) sl_push(out, all[i].id);
        lessons_free(all, n);
        return 0;
    }
    for (int i = 0; i < ids->n; i++) {
        lesson l, *needs;
        int n;
        char *err = NULL;
        if (lesson_load(ctx->root, ids->v[i], &l, &err) != 0 ||
            lesson_needs_closure(ctx->root, &l, &needs, &n, &err) != 0) {
            ol_error("%s", err);
            free(err);
            if (l.id) lesson_free(&l);
            return -1;
        }
        for (int k = 0; k < n; k++)
            if (!sl_contains(out, needs[k].id)) sl_push(out, needs[k].id);
        if (!sl_contains(out, l.id)) sl_push(out, l.id);
        lessons_free(needs, n);
        lesson_free(&l);
    }
    return 0;
}

/* The workspace whose cache compiles the prebuilt objects: under the
 * course's build/, kept between runs (a second release compiles only what
 * changed), its path long enough for prebuilt.h's rewrite of the path the
 * coverage objects write their counts to, which must not be shorter. */
static char *long_scratch(ol_ctx *ctx) {
    char part[PLACEHOLDER_PART_LEN + 1];
    memset(part, 'p', PLACEHOLDER_PART_LEN);
    part[PLACEHOLDER_PART_LEN] = 0;
    char *dir = path_join(ctx->root, "build/ol-dist");
    for (int i = 0; i < PLACEHOLDER_PARTS; i++) {
        char *deeper = path_join(dir, part);
        free(dir);
        dir = deeper;
    }
    if (mkdir_p(dir) != 0) {
        free(dir);
        return NULL;
    }
    return dir;
}

int dist_write(ol_ctx *ctx, const dist_options *opt, const char *out) {
    if (prebuilt_release(ctx)) {
        ol_error("%s is itself a release: run `ol dist` in the course repository", ctx->root);
        return OL_USAGE;
    }
    if (is_dir(out)) {
        DIR *dir = opendir(out);
        int entries = 0;
        struct dirent *e;
        while (dir && (e = readdir(dir)) != NULL)
            entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
        if (dir) closedir(dir);
        if (entries) {
            ol_error("%s exists and is not empty: give a new folder (ol dist never overwrites)",
                     out);
            return OL_USAGE;
        }
        rmdir(out);
    } else if (access(out, F_OK) == 0) {
        ol_error("%s exists and is not a folder: give a new folder", out);
        return OL_USAGE;
    }
    strlist ids = {0};
    if (dist_lessons(ctx, &opt->lessons, &ids) != 0) return OL_USAGE;
    if (build_prepare(ctx) != 0) {
        sl_free(&ids);
        return OL_USAGE;
    }
    dist_run d = {.ctx = ctx, .opt = opt};
    char *parent = path_dirname(out);
    char *scratch_ws = long_scratch(ctx);
    d.out = make_temp_dir(parent, ".ol-dist");
    int rc = d.out && scratch_ws ? 0 : -1;
    if (rc != 0)
        ol_error("cannot create a scratch folder in %s or %s/build: %s", parent, ctx->root,
                 strerror(errno));
    if (rc == 0) {
        /* the compiler runs in the course, ol's own cache layout in a long scratch path */
        setenv("OL_ROOT", ctx->root, 1);
        rc = ctx_init(&d.build, scratch_ws);
        d.build.jobs = ctx->jobs;
        d.build.verbose = ctx->verbose;
    }
    if (rc == 0) rc = put_programs(&d);
    strlist seen = {0}, headers = {0};
    list_headers(ctx->root, "contracts", &headers);
    sl_sort(&headers);
    if (rc == 0) rc = copy_tree(&d, "contracts");
    for (int i = 0; rc == 0 && i < headers.n; i++) rc = copy_included(&d, headers.v[i], &seen);
    sl_free(&seen);
    sl_free(&headers);
    const char *course_docs[] = {"course/README.md"};
    for (size_t i = 0; rc == 0 && i < sizeof course_docs / sizeof *course_docs; i++) {
        char *p = path_join(ctx->root, course_docs[i]);
        if (is_file(p)) rc = copy_rel(&d, course_docs[i]);
        free(p);
    }
    for (int i = 0; rc == 0 && i < ids.n; i++) {
        lesson l;
        char *err = NULL;
        if (lesson_load(ctx->root, ids.v[i], &l, &err) != 0) {
            ol_error("%s", err);
            free(err);
            rc = -1;
            break;
        }
        rc = put_lesson(&d, &l);
        lesson_free(&l);
    }
    if (rc == 0) rc = put_command_line(&d, &ids);
    if (rc == 0) rc = put_milestones(&d, &ids);
    if (rc == 0) rc = put_readme(&d, &ids);
    if (rc == 0) rc = put_marker(&d, &ids);
    if (rc == 0 && rename(d.out, out) != 0) {
        ol_error("cannot rename %s to %s: %s", d.out, out, strerror(errno));
        rc = -1;
    }
    if (rc == 0) {
        char *n = xasprintf("%d", d.files);
        say(&d, "%s files written", n);
        free(n);
        if (!opt->quiet)
            printf("ol dist: the release is %s (%d lesson%s)\n", out, ids.n, ids.n == 1 ? "" : "s");
    }
    if (rc != 0 && d.out && is_dir(d.out)) remove_tree(d.out, parent);
    if (d.build.root) ctx_free(&d.build);
    free(scratch_ws);
    free(d.out);
    free(parent);
    sl_free(&ids);
    return rc == 0 ? OL_PASS : OL_FAIL;
}
