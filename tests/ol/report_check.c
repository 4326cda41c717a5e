/* report-check stryker|gradescope FILE: parses an `ol check` report back
 * with cJSON and checks its structure: Stryker's mutation-testing-report-
 * schema (version 2: required keys, the status enum, killedBy naming known
 * tests) or Gradescope's results.json, in UTF-8. Exit 0 valid, 1 not, 2 usage. */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int problems;

static void bad(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "report-check: ");
    fprintf(stderr, fmt, a ? a : "", b ? b : "");
    fputc('\n', stderr);
    problems++;
}

static const cJSON *need(const cJSON *o, const char *key, const char *where) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) bad("%s: the required key \"%s\" is missing", where, key);
    return v;
}

static bool is_int_in(const cJSON *v, double lo, double hi) {
    return cJSON_IsNumber(v) && v->valuedouble == (double)(long)v->valuedouble &&
           v->valuedouble >= lo && v->valuedouble <= hi;
}

static void check_position(const cJSON *p, const char *where) {
    if (!cJSON_IsObject(p)) {
        bad("%s: a position must be an object%s", where, NULL);
        return;
    }
    if (!is_int_in(need(p, "line", where), 1, 1e9))
        bad("%s: line must be an integer >= 1%s", where, NULL);
    if (!is_int_in(need(p, "column", where), 1, 1e9))
        bad("%s: column must be an integer >= 1%s", where, NULL);
}

static const char *const STATUSES[] = {"Killed", "Survived", "NoCoverage", "CompileError",
                                       "RuntimeError", "Timeout", "Ignored", "Pending"};

static void check_stryker(const cJSON *o) {
    const cJSON *v = need(o, "schemaVersion", "report");
    if (v && (!cJSON_IsString(v) || v->valuestring[0] != '2'))
        bad("schemaVersion must be \"2\"%s%s", NULL, NULL);
    const cJSON *th = need(o, "thresholds", "report");
    if (th) {
        if (!is_int_in(need(th, "high", "thresholds"), 0, 100))
            bad("thresholds.high must be an integer in 0..100%s%s", NULL, NULL);
        if (!is_int_in(need(th, "low", "thresholds"), 0, 100))
            bad("thresholds.low must be an integer in 0..100%s%s", NULL, NULL);
    }
    /* the ids of the tests, from testFiles (optional in the schema, present in ol's) */
    cJSON *ids = cJSON_CreateArray();
    const cJSON *tf = cJSON_GetObjectItemCaseSensitive(o, "testFiles"), *file;
    cJSON_ArrayForEach(file, tf) {
        const cJSON *tests = need(file, "tests", file->string), *t;
        cJSON_ArrayForEach(t, tests) {
            const cJSON *id = need(t, "id", file->string);
            need(t, "name", file->string);
            if (cJSON_IsString(id)) cJSON_AddItemToArray(ids, cJSON_CreateString(id->valuestring));
        }
    }
    const cJSON *files = need(o, "files", "report");
    if (files && !cJSON_IsObject(files)) bad("files must be an object%s%s", NULL, NULL);
    int mutants = 0;
    cJSON_ArrayForEach(file, files) {
        const char *name = file->string;
        if (!cJSON_IsString(need(file, "language", name)))
            bad("%s: language must be a string%s", name, NULL);
        if (!cJSON_IsString(need(file, "source", name)))
            bad("%s: source must be a string%s", name, NULL);
        const cJSON *ms = need(file, "mutants", name), *m;
        if (!cJSON_IsArray(ms)) continue;
        cJSON_ArrayForEach(m, ms) {
            mutants++;
            const cJSON *id = need(m, "id", name);
            const char *mid = cJSON_IsString(id) ? id->valuestring : "?";
            if (!cJSON_IsString(need(m, "mutatorName", mid)))
                bad("%s: mutatorName must be a string%s", mid, NULL);
            const cJSON *loc = need(m, "location", mid);
            if (loc) {
                check_position(need(loc, "start", mid), mid);
                check_position(need(loc, "end", mid), mid);
            }
            const cJSON *st = need(m, "status", mid);
            bool known = false;
            for (size_t i = 0; cJSON_IsString(st) && i < sizeof STATUSES / sizeof *STATUSES; i++)
                known = known || !strcmp(st->valuestring, STATUSES[i]);
            if (!known)
                bad("%s: status \"%s\" is not in the schema's enum", mid,
                    cJSON_IsString(st) ? st->valuestring : "?");
            const cJSON *killed = cJSON_GetObjectItemCaseSensitive(m, "killedBy"), *k;
            cJSON_ArrayForEach(k, killed) {
                bool found = false;
                const cJSON *x;
                cJSON_ArrayForEach(x, ids) found =
                    found || (cJSON_IsString(k) && !strcmp(x->valuestring, k->valuestring));
                if (!found)
                    bad("%s: killedBy names \"%s\", which no testFiles entry defines", mid,
                        cJSON_IsString(k) ? k->valuestring : "?");
            }
            if (cJSON_IsString(st) && !strcmp(st->valuestring, "Killed") &&
                cJSON_GetArraySize(killed) == 0)
                bad("%s: Killed, but killedBy is empty%s", mid, NULL);
        }
    }
    if (mutants == 0) bad("the report lists no mutant%s%s", NULL, NULL);
    cJSON_Delete(ids);
}

static void check_gradescope(const cJSON *o) {
    if (!cJSON_IsNumber(need(o, "score", "results"))) bad("score must be a number%s%s", NULL, NULL);
    if (!cJSON_IsNumber(need(o, "execution_time", "results")))
        bad("execution_time must be a number%s%s", NULL, NULL);
    if (!cJSON_IsString(need(o, "output", "results")))
        bad("output must be a string%s%s", NULL, NULL);
    const cJSON *tests = need(o, "tests", "results"), *t;
    if (!cJSON_IsArray(tests) || cJSON_GetArraySize(tests) == 0)
        bad("tests must be a non-empty array%s%s", NULL, NULL);
    cJSON_ArrayForEach(t, tests) {
        const cJSON *name = need(t, "name", "a test");
        const char *n = cJSON_IsString(name) ? name->valuestring : "?";
        const cJSON *score = need(t, "score", n), *max = need(t, "max_score", n),
                    *st = need(t, "status", n);
        if (!cJSON_IsNumber(score) || !cJSON_IsNumber(max) || score->valuedouble > max->valuedouble)
            bad("%s: score and max_score must be numbers, score <= max_score%s", n, NULL);
        if (!cJSON_IsString(st) ||
            (strcmp(st->valuestring, "passed") && strcmp(st->valuestring, "failed")))
            bad("%s: status must be \"passed\" or \"failed\"%s", n, NULL);
        if (!cJSON_IsString(need(t, "output", n))) bad("%s: output must be a string%s", n, NULL);
        const cJSON *vis = need(t, "visibility", n);
        if (!cJSON_IsString(vis) ||
            (strcmp(vis->valuestring, "visible") && strcmp(vis->valuestring, "hidden") &&
             strcmp(vis->valuestring, "after_due_date") &&
             strcmp(vis->valuestring, "after_published")))
            bad("%s: visibility is not one of Gradescope's%s", n, NULL);
    }
}

/* JSON text is UTF-8 (RFC 8259, 8.1), and cJSON reads any bytes: the offset of the first byte
 * that starts no well-formed sequence (overlong, a surrogate, past U+10FFFF), else -1. */
static long not_utf8(const unsigned char *s, size_t n) {
    static const unsigned long least[] = {0, 0, 0x80, 0x800, 0x10000};
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
                     : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (!len || i + len > n) return (long)i;
        unsigned long cp = len == 1 ? c : c & (0x7fu >> len);
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return (long)i;
            cp = cp << 6 | (s[i + k] & 0x3fu);
        }
        if (cp < least[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return (long)i;
        i += len;
    }
    return -1;
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "stryker") && strcmp(argv[1], "gradescope"))) {
        fprintf(stderr, "usage: %s stryker|gradescope FILE\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[2], "rb");
    if (!f) {
        fprintf(stderr, "report-check: cannot read %s\n", argv[2]);
        return 1;
    }
    static char buf[1 << 22];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    long at = not_utf8((const unsigned char *)buf, n);
    if (at >= 0) {
        fprintf(stderr, "report-check: %s is not UTF-8: byte %ld (0x%02x) starts no character\n",
                argv[2], at, (unsigned char)buf[at]);
        return 1;
    }
    cJSON *o = cJSON_Parse(buf);
    if (!cJSON_IsObject(o)) {
        fprintf(stderr, "report-check: %s is not a JSON object\n", argv[2]);
        cJSON_Delete(o);
        return 1;
    }
    if (!strcmp(argv[1], "stryker")) check_stryker(o);
    else check_gradescope(o);
    cJSON_Delete(o);
    if (!problems) printf("report-check: %s is a valid %s report\n", argv[2], argv[1]);
    return problems ? 1 : 0;
}
