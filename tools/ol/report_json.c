/* report_json: `ol check --json` writes Stryker's mutation-testing-report-schema
 * (version 2), so the existing HTML viewers show it; `--gradescope` writes
 * Gradescope's results.json. Both are written atomically. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prebuilt.h"
#include "report.h"
#include "site.h"

char *report_json_text(const cJSON *o, bool formatted) {
    char *raw = formatted ? cJSON_Print(o) : cJSON_PrintUnformatted(o);
    char *text = raw ? utf8_repaired(raw) : NULL;
    free(raw);
    return text;
}

static int write_json(cJSON *o, const char *path) {
    char *text = report_json_text(o, true);
    int rc = text ? write_file_atomic(path, text, strlen(text)) : -1;
    if (rc != 0) ol_error("cannot write %s", path);
    free(text);
    return rc;
}

static cJSON *position(int line, int column) {
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "line", line > 0 ? line : 1);
    cJSON_AddNumberToObject(p, "column", column > 0 ? column : 1);
    return p;
}

static cJSON *string_array(const strlist *l) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < l->n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(l->v[i]));
    return a;
}

/* A mutant as Stryker's MutantResult. Mutants that did not run (an earlier
 * stage failed) are "Ignored", with the reason. Until the lesson passes, a
 * mutant is placed at the start of the lesson's function it changes, in the
 * student's own file (site.h): the reference's text and lines stay hidden. */
static cJSON *mutant_json(ol_ctx *ctx, const mutant_outcome *o, bool reveal) {
    const mutant *m = o->m;
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "id", m->id);
    cJSON_AddStringToObject(x, "mutatorName", m->title);
    if (reveal && m->replacement && *m->replacement)
        cJSON_AddStringToObject(x, "replacement", m->replacement);
    if (m->symptom && *m->symptom) cJSON_AddStringToObject(x, "description", m->symptom);
    const changed_line *first = mutant_first_change(m);
    const changed_line *last = m->nchanges ? &m->changes[m->nchanges - 1] : NULL;
    /* a mutant's changes stay in its first file; the end is that file's last change */
    for (int i = m->nchanges - 1; i >= 0; i--)
        if (first && !strcmp(m->changes[i].file, first->file)) {
            last = &m->changes[i];
            break;
        }
    cJSON *loc = cJSON_AddObjectToObject(x, "location");
    if (reveal) {
        cJSON_AddItemToObject(loc, "start",
                              position(first ? first->line : 1, first ? first->column : 1));
        cJSON_AddItemToObject(loc, "end",
                              position(last ? last->line : 1, last ? last->end_column : 2));
    } else {
        mutant_site site;
        mutant_site_of(ctx, m, 0, &site);
        int line = site.line > 0 ? site.line : 1;
        cJSON_AddItemToObject(loc, "start", position(line, 1));
        cJSON_AddItemToObject(loc, "end", position(line, 2));
        mutant_site_free(&site);
    }
    cJSON_AddStringToObject(x, "status", mutant_status_name(o->status));
    if (o->reason) cJSON_AddStringToObject(x, "statusReason", o->reason);
    cJSON_AddItemToObject(x, "killedBy", string_array(&o->killed_by));
    /* coverage is measured for the suite as a whole, so per test it is known
     * only for the killers (they ran the mutant) and when nothing covered it */
    if (o->status == MS_KILLED) cJSON_AddItemToObject(x, "coveredBy", string_array(&o->killed_by));
    else if (o->status == MS_NOCOVERAGE) cJSON_AddItemToObject(x, "coveredBy", cJSON_CreateArray());
    if (o->seconds > 0) cJSON_AddNumberToObject(x, "duration", round(o->seconds * 1000));
    return x;
}

cJSON *report_stryker_json(ol_ctx *ctx, const check_report *r) {
    const lesson *l = r->l;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "schemaVersion", "2");
    cJSON *th = cJSON_AddObjectToObject(o, "thresholds");
    int low = (int)lround(l->threshold * 100);
    cJSON_AddNumberToObject(th, "high", low + (100 - low) / 2);
    cJSON_AddNumberToObject(th, "low", low);
    cJSON_AddStringToObject(o, "projectRoot", ctx->root);
    cJSON *files = cJSON_AddObjectToObject(o, "files");
    for (int s = 0; s < l->sources.n; s++) {
        /* after a pass, the reference; before, the student's own file (and
         * always in a student release, which has no reference to show) */
        bool show_reference = r->passed && !prebuilt_release(ctx);
        char *rel = xasprintf("%s/%s", show_reference ? "reference" : "c", l->sources.v[s]);
        char *abs = path_join(show_reference ? ctx->root : ctx->ws, rel);
        char *source = read_file(abs, NULL);
        free(abs);
        cJSON *f = cJSON_AddObjectToObject(files, rel);
        cJSON_AddStringToObject(f, "language", "c");
        cJSON_AddStringToObject(f, "source", source ? source : "");
        cJSON *ms = cJSON_AddArrayToObject(f, "mutants");
        for (int i = 0; i < r->nmutants; i++) {
            const changed_line *c = mutant_first_change(r->outcomes[i].m);
            if (c && !strcmp(c->file, l->sources.v[s]))
                cJSON_AddItemToArray(ms, mutant_json(ctx, &r->outcomes[i], r->passed));
        }
        free(source);
        free(rel);
    }
    /* the student's tests, by file, with the test names as ids (killedBy uses them) */
    cJSON *tests = cJSON_AddObjectToObject(o, "testFiles");
    for (int i = 0; i < r->student_tests.n; i++) {
        const char *file = r->student_files.v[i];
        cJSON *tf = cJSON_GetObjectItemCaseSensitive(tests, file);
        if (!tf) {
            tf = cJSON_AddObjectToObject(tests, file);
            char *abs = path_join(ctx->ws, file);
            char *source = read_file(abs, NULL);
            if (source) cJSON_AddStringToObject(tf, "source", source);
            free(source);
            free(abs);
            cJSON_AddArrayToObject(tf, "tests");
        }
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "id", r->student_tests.v[i]);
        cJSON_AddStringToObject(t, "name", r->student_tests.v[i]);
        cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(tf, "tests"), t);
    }
    cJSON *fw = cJSON_AddObjectToObject(o, "framework");
    cJSON_AddStringToObject(fw, "name", "ol");
    cJSON_AddStringToObject(fw, "version", "1");
    cJSON *config = cJSON_AddObjectToObject(o, "config");
    cJSON_AddStringToObject(config, "lesson", l->id);
    cJSON_AddStringToObject(config, "rung", l->rung);
    cJSON_AddNumberToObject(config, "threshold", l->threshold);
    cJSON_AddItemToObject(config, "requiredPitfalls", string_array(&l->required_pitfalls));
    cJSON_AddNumberToObject(config, "timeoutSeconds", r->timeout);
    cJSON_AddStringToObject(
        config, "timeoutFormula",
        "1.5 x the slowest test on the reference + 2 s, at most the lesson's test_timeout_seconds");
    if (r->score >= 0) cJSON_AddNumberToObject(config, "score", r->score);
    else cJSON_AddNullToObject(config, "score");
    cJSON_AddBoolToObject(config, "passed", r->passed);
    /* the tests that fail where they must pass (stage 4), each once */
    cJSON *invalid = cJSON_AddArrayToObject(config, "invalidTests");
    strlist names = {0};
    for (int i = 0; i < r->ninvalid; i++)
        if (!sl_contains(&names, r->invalid[i].t.name)) sl_push(&names, r->invalid[i].t.name);
    for (int i = 0; i < names.n; i++) cJSON_AddItemToArray(invalid, cJSON_CreateString(names.v[i]));
    sl_free(&names);
    if (r->harness_broken) cJSON_AddStringToObject(config, "harnessBroken", r->harness_message);
    cJSON_AddBoolToObject(config, "testsOnly", r->tests_only);
    if (r->tests_only) cJSON_AddBoolToObject(config, "testsPass", r->tests_pass);
    /* check50's convention: a stage skipped because an earlier one failed is null */
    cJSON *stages = cJSON_AddArrayToObject(config, "stages");
    for (int i = 0; i < N_STAGES; i++) {
        cJSON *st = cJSON_CreateObject();
        cJSON_AddStringToObject(st, "name", r->stages[i].title);
        if (r->stages[i].state == STAGE_SKIPPED) cJSON_AddNullToObject(st, "passed");
        else cJSON_AddBoolToObject(st, "passed", r->stages[i].state == STAGE_PASS);
        cJSON_AddBoolToObject(st, "required", r->stages[i].required);
        if (r->stages[i].summary) cJSON_AddStringToObject(st, "summary", r->stages[i].summary);
        cJSON_AddItemToArray(stages, st);
    }
    return o;
}

int report_write_stryker(ol_ctx *ctx, const check_report *r, const char *path) {
    cJSON *o = report_stryker_json(ctx, r);
    int rc = write_json(o, path);
    cJSON_Delete(o);
    return rc;
}

/* ---- Gradescope ---- */

static void add_test(cJSON *tests, const char *name, double score, double max, bool passed,
                     const char *output) {
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "name", name);
    cJSON_AddNumberToObject(t, "score", score);
    cJSON_AddNumberToObject(t, "max_score", max);
    cJSON_AddStringToObject(t, "status", passed ? "passed" : "failed");
    cJSON_AddStringToObject(t, "output", output ? output : "");
    cJSON_AddStringToObject(t, "visibility", "visible");
    cJSON_AddItemToArray(tests, t);
}

/* Each stage the rung requires is worth one point; stages it does not
 * require and each mutant are shown with max_score 0. A skipped stage is
 * failed with "skipped" (check50's null: Gradescope has no such status). */
int report_write_gradescope(ol_ctx *ctx, const check_report *r, const char *path) {
    (void)ctx;
    cJSON *o = cJSON_CreateObject();
    cJSON *tests = cJSON_CreateArray();
    double score = 0;
    for (int i = 0; i < N_STAGES; i++) {
        const stage *s = &r->stages[i];
        bool passed = s->state == STAGE_PASS;
        double max = s->required ? 1 : 0;
        char *out = s->state != STAGE_SKIPPED ? xstrdup(s->summary ? s->summary : "")
                    : xasprintf("skipped: %s", s->summary ? s->summary : "an earlier stage failed");
        char *name = xasprintf("%d. %s", i + 1, s->title);
        add_test(tests, name, passed ? max : 0, max, passed, out);
        score += passed ? max : 0;
        free(name);
        free(out);
    }
    for (int i = 0; i < r->nmutants; i++) {
        const mutant_outcome *m = &r->outcomes[i];
        bool caught = m->status == MS_KILLED || m->status == MS_TIMEOUT;
        char *name =
            xasprintf("Mutant %s%s: %s", m->m->id, m->required ? " (required)" : "", m->m->title);
        char *out = xasprintf("%s: %s", mutant_status_name(m->status), m->reason ? m->reason : "");
        add_test(tests, name, 0, 0, caught, out);
        free(name);
        free(out);
    }
    cJSON_AddNumberToObject(o, "score", score);
    /* the wall time of the grading, in seconds (to the millisecond) */
    cJSON_AddNumberToObject(o, "execution_time", round(r->seconds * 1000) / 1000);
    char *output;
    if (r->harness_broken)
        output = xasprintf("The grading harness is broken (%s): this is not a grade.",
                           r->harness_message);
    else if (r->tests_only) {
        char score[64] = "";
        if (r->score >= 0)
            snprintf(score, sizeof score, " (mutation score %.2f, needs %.2f)", r->score,
                     r->l->threshold);
        output = xasprintf(
            "%s: your tests alone were graded (--tests-only): they %s %s%s; the lesson is not "
            "passed until the course tests pass on your code too",
            r->l->id, r->tests_pass ? "reach" : "do not reach", r->l->rung, score);
    }
    else if (r->score >= 0)
        output = xasprintf("%s %s at %s: mutation score %.2f (needs %.2f)", r->l->id,
                           r->passed ? "passes" : "does not pass", r->l->rung, r->score,
                           r->l->threshold);
    else
        output =
            xasprintf("%s %s at %s", r->l->id, r->passed ? "passes" : "does not pass", r->l->rung);
    cJSON_AddStringToObject(o, "output", output);
    free(output);
    cJSON_AddStringToObject(o, "visibility", "visible");
    cJSON_AddItemToObject(o, "tests", tests);
    int rc = write_json(o, path);
    cJSON_Delete(o);
    return rc;
}
