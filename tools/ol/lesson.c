#include "lesson.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const LESSON_KEYS[] = {"id",
                                   "slug",
                                   "title",
                                   "rung",
                                   "draft",
                                   "needs",
                                   "sources",
                                   "contracts",
                                   "course_tests",
                                   "student_tests",
                                   "model_tests",
                                   "fixtures",
                                   "oracle",
                                   "required_pitfalls",
                                   "link",
                                   "test_timeout_seconds",
                                   "test_memory_mb",
                                   "example_test",
                                   "threshold",
                                   "hidden_tests",
                                   "release_files",
                                   NULL};

int rung_level(const char *rung) {
    if (!rung || rung[0] != 'R' || rung[1] < '1' || rung[1] > '5' || rung[2]) return 0;
    return rung[1] - '0';
}

double rung_threshold(int level) {
    switch (level) {
    case 3: return 0.50;
    case 4: return 0.70;
    case 5: return 0.80;
    default: return 0.0;
    }
}

static bool is_lower_or_digit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
static bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool lesson_id_valid(const char *id) {
    if (!id || !is_letter(id[0])) return false;
    for (const char *p = id; *p; p++)
        if (!(is_letter(*p) || is_digit(*p) || *p == '.' || *p == '-' || *p == '_')) return false;
    return true;
}

bool variant_id_valid(const char *id, bool wheat) {
    if (!id || id[0] != (wheat ? 'w' : 's')) return false;
    int digits = 0;
    for (const char *p = id + 1; *p; p++, digits++)
        if (!is_digit(*p)) return false;
    return digits >= 2;
}

static bool valid_slug(const char *s) {
    if (!s || !is_lower_or_digit(s[0])) return false;
    for (const char *p = s; *p; p++)
        if (!is_lower_or_digit(*p) && *p != '-') return false;
    return true;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* A relative path that stays inside its folder: no "..", not absolute. */
static bool safe_rel(const char *p) {
    return p && p[0] != '/' && strcmp(p, "..") != 0 && strncmp(p, "../", 3) != 0 &&
           !strstr(p, "/../") && !ends_with(p, "/..");
}

/* What is wrong with one lesson.json, one problem a line. */
typedef struct {
    const char *file; /* as shown: course/L7.x/lesson.json */
    strlist problems;
} findings;

static void problem(findings *f, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void problem(findings *f, const char *key, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *what = NULL;
    if (vasprintf(&what, fmt, ap) < 0) what = NULL;
    va_end(ap);
    sl_push_owned(&f->problems, key ? xasprintf("\"%s\": %s", key, what ? what : "?")
                                    : xstrdup(what ? what : "?"));
    free(what);
}

static char *get_string(const cJSON *obj, const char *key, bool required, findings *f) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required) problem(f, key, "is missing; it is required (course/FORMAT.md)");
        return NULL;
    }
    if (!cJSON_IsString(v) || !v->valuestring[0]) {
        problem(f, key, "must be a non-empty string");
        return NULL;
    }
    return xstrdup(v->valuestring);
}

static void get_list(const cJSON *obj, const char *key, bool required, strlist *out, findings *f) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required) problem(f, key, "is missing; it is required (course/FORMAT.md)");
        return;
    }
    if (!cJSON_IsArray(v)) {
        problem(f, key, "must be an array of strings, e.g. [\"...\"]");
        return;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, v) {
        if (!cJSON_IsString(item) || !item->valuestring[0]) {
            problem(f, key, "every item must be a non-empty string");
            return;
        }
        if (sl_contains(out, item->valuestring))
            problem(f, key, "lists \"%s\" twice", item->valuestring);
        else
            sl_push(out, item->valuestring);
    }
}

static void get_number(const cJSON *obj, const char *key, double *out, double lo, double hi,
                       bool lo_open, findings *f) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) return;
    bool ok = cJSON_IsNumber(v) && (lo_open ? v->valuedouble > lo : v->valuedouble >= lo) &&
              v->valuedouble <= hi;
    if (!ok) {
        if (lo_open)
            problem(f, key, "must be a positive number of seconds, at most %.10g", hi);
        else
            problem(f, key, "must be a number between %.10g and %.10g", lo, hi);
        return;
    }
    *out = v->valuedouble;
}

static void unknown_keys(const cJSON *obj, findings *f) {
    int nkeys = 0;
    while (LESSON_KEYS[nkeys]) nkeys++;
    const cJSON *e;
    cJSON_ArrayForEach(e, obj) {
        bool known = false;
        for (int k = 0; k < nkeys; k++) known = known || !strcmp(e->string, LESSON_KEYS[k]);
        if (known) continue;
        const char *near = closest_word(e->string, LESSON_KEYS, nkeys);
        if (near)
            problem(f, e->string, "is not a key of lesson.json: did you mean \"%s\"?", near);
        else
            problem(f, e->string, "is not a key of lesson.json (course/FORMAT.md lists the keys)");
    }
}

/* The path keys: relative, inside the course, of the right kind. */
static void check_path_forms(const lesson *l, findings *f) {
    const struct {
        const char *key, *value;
    } singles[] = {{"course_tests", l->course_tests},
                   {"student_tests", l->student_tests},
                   {"model_tests", l->model_tests},
                   {"fixtures", l->fixtures},
                   {"oracle", l->oracle},
                   {"example_test", l->example_test},
                   {"hidden_tests", l->hidden_tests}};
    for (size_t i = 0; i < sizeof singles / sizeof *singles; i++)
        if (singles[i].value && !safe_rel(singles[i].value))
            problem(f, singles[i].key,
                    "\"%s\" must be a relative path inside the course (no \"..\")",
                    singles[i].value);
    for (int i = 0; i < l->sources.n; i++) {
        const char *s = l->sources.v[i];
        if (!safe_rel(s))
            problem(f, "sources", "\"%s\" must be a relative path (no \"..\")", s);
        else if (!ends_with(s, ".c"))
            problem(f, "sources", "\"%s\" is not a .c file", s);
    }
    for (int i = 0; i < l->contracts.n; i++) {
        const char *c = l->contracts.v[i];
        if (!safe_rel(c))
            problem(f, "contracts", "\"%s\" must be a relative path (no \"..\")", c);
        else if (!ends_with(c, ".h"))
            problem(f, "contracts", "\"%s\" is not a .h file", c);
    }
    for (int i = 0; i < l->link.n; i++) {
        const char *e = l->link.v[i];
        if (e[0] != '-' && !safe_rel(e))
            problem(f, "link",
                    "\"%s\" must be a -flag or a file inside the course (relative to the root)", e);
    }
    if (l->example_test && !ends_with(l->example_test, ".c"))
        problem(f, "example_test", "\"%s\" is not a .c file", l->example_test);
    for (int i = 0; i < l->release_files.n; i++)
        if (!safe_rel(l->release_files.v[i]))
            problem(f, "release_files", "\"%s\" must be a relative path inside the course",
                    l->release_files.v[i]);
}

static void check_ids(const lesson *l, findings *f) {
    if (l->id && !lesson_id_valid(l->id))
        problem(f, "id",
                "\"%s\" is not a lesson id: a letter, then letters, digits, '.', '-' or '_' "
                "(like L7.2)",
                l->id);
    if (l->slug && !valid_slug(l->slug))
        problem(f, "slug",
                "\"%s\" must be lower-case letters, digits and '-' (like l7-2-gated-mlp)", l->slug);
    if (l->title && strpbrk(l->title, "\n\r\t")) problem(f, "title", "must be one line");
    if (l->rung && !rung_level(l->rung))
        problem(f, "rung", "\"%s\" is not one of R1 to R5", l->rung);
    if (l->slug && l->student_tests && valid_slug(l->slug)) {
        char *want = xasprintf("tests/%s", l->slug);
        if (strcmp(l->student_tests, want) != 0)
            problem(f, "student_tests",
                    "is \"%s\"; the student's test folder is \"%s\" (tests/ and the slug)",
                    l->student_tests, want);
        free(want);
    }
    for (int i = 0; i < l->needs.n; i++) {
        if (!lesson_id_valid(l->needs.v[i]))
            problem(f, "needs", "\"%s\" is not a lesson id", l->needs.v[i]);
        else if (l->id && !strcmp(l->needs.v[i], l->id))
            problem(f, "needs", "a lesson cannot need itself");
    }
    for (int i = 0; i < l->required_pitfalls.n; i++)
        if (!variant_id_valid(l->required_pitfalls.v[i], false))
            problem(f, "required_pitfalls",
                    "\"%s\" is not a mutant id: 's' and two or more digits (s01)",
                    l->required_pitfalls.v[i]);
}

long long lesson_memory_bytes(const lesson *l) {
    return (long long)(l->test_memory_mb * 1024 * 1024);
}

/* The line of the nth (0-based) "key": in text, or 0. */
static int key_line(const char *text, const char *key, int nth) {
    char *quoted = xasprintf("\"%s\"", key);
    int line = 0;
    for (const char *p = text; (p = strstr(p, quoted)) != NULL; p += strlen(quoted)) {
        const char *after = p + strlen(quoted);
        while (*after == ' ' || *after == '\t' || *after == '\r' || *after == '\n') after++;
        if (*after != ':' || nth-- > 0) continue;
        line = 1;
        for (const char *q = text; q < p; q++) line += *q == '\n';
        break;
    }
    free(quoted);
    return line;
}

/* cJSON keeps both of {"rung": "R3", "rung": "R5"} and reads the first: a repeated
 * key would be ignored silently, so it is refused, with its lines. */
static void repeated_keys(const cJSON *json, const char *text, findings *f) {
    for (const cJSON *e = json->child; e; e = e->next) {
        int before = 0;
        for (const cJSON *o = json->child; o != e; o = o->next)
            before += o->string && e->string && !strcmp(o->string, e->string);
        if (before == 1) /* said once, at its second appearance */
            problem(f, e->string, "is given twice (lines %d and %d): JSON readers keep one of "
                    "them; keep the one you mean and delete the other",
                    key_line(text, e->string, 0), key_line(text, e->string, 1));
    }
}

int lesson_parse(const char *file, const char *text, lesson *l, char **err) {
    memset(l, 0, sizeof *l);
    *err = NULL;
    cJSON *json = cJSON_Parse(text ? text : "");
    if (!json) {
        /* cJSON points at the text where parsing stopped: give its line */
        const char *at = cJSON_GetErrorPtr();
        int line = 1, column = 1;
        for (const char *p = text; p && at && p < at && *p; p++) {
            column = *p == '\n' ? 1 : column + 1;
            line += *p == '\n';
        }
        /* cJSON stops at the first character it cannot take: show it, and what JSON
         * allows there (the usual slips: a missing comma, colon or quote) */
        size_t shown = at && *at ? strcspn(at, "\r\n") : 0;
        *err = xasprintf("%s:%d:%d: not valid JSON %s%.*s%s%s: after a value JSON expects ',' or "
                         "a closing bracket, after a key ':', and strings in double quotes "
                         "(course/FORMAT.md shows a lesson.json)",
                         file, line, column, shown ? "at '" : "at the end of the file",
                         (int)(shown > 20 ? 20 : shown), shown ? at : "",
                         shown > 20 ? "..." : "", shown ? "'" : "");
        return -1;
    }
    findings f = {.file = file};
    if (!cJSON_IsObject(json)) {
        problem(&f, NULL, "the top level must be a JSON object ({...})");
    } else {
        repeated_keys(json, text, &f);
        unknown_keys(json, &f);
        l->id = get_string(json, "id", true, &f);
        l->slug = get_string(json, "slug", true, &f);
        l->title = get_string(json, "title", true, &f);
        l->rung = get_string(json, "rung", true, &f);
        l->course_tests = get_string(json, "course_tests", true, &f);
        l->student_tests = get_string(json, "student_tests", true, &f);
        l->model_tests = get_string(json, "model_tests", false, &f);
        l->fixtures = get_string(json, "fixtures", false, &f);
        l->oracle = get_string(json, "oracle", false, &f);
        l->example_test = get_string(json, "example_test", false, &f);
        l->hidden_tests = get_string(json, "hidden_tests", false, &f);
        get_list(json, "sources", true, &l->sources, &f);
        get_list(json, "contracts", true, &l->contracts, &f);
        get_list(json, "needs", false, &l->needs, &f);
        get_list(json, "required_pitfalls", false, &l->required_pitfalls, &f);
        get_list(json, "link", false, &l->link, &f);
        get_list(json, "release_files", false, &l->release_files, &f);
        if (cJSON_GetObjectItemCaseSensitive(json, "sources") && l->sources.n == 0 &&
            f.problems.n == 0)
            problem(&f, "sources", "lists no file: name the lesson's .c files");
        const cJSON *draft = cJSON_GetObjectItemCaseSensitive(json, "draft");
        if (draft && !cJSON_IsBool(draft)) problem(&f, "draft", "must be true or false");
        l->draft = cJSON_IsTrue(draft);
        l->level = rung_level(l->rung);
        l->threshold = rung_threshold(l->level);
        get_number(json, "threshold", &l->threshold, 0, 1, false, &f);
        l->test_timeout = 10;
        get_number(json, "test_timeout_seconds", &l->test_timeout, 0, 86400, true, &f);
        l->test_memory_mb = 4096;
        get_number(json, "test_memory_mb", &l->test_memory_mb, 16, 1 << 20, false, &f);
        check_ids(l, &f);
        check_path_forms(l, &f);
    }
    cJSON_Delete(json);
    if (f.problems.n == 0) return 0;
    if (f.problems.n == 1) {
        *err = xasprintf("%s: %s", file, f.problems.v[0]);
    } else {
        char *all = sl_join(&f.problems, "\n  ");
        *err = xasprintf("%s: %d problems (course/FORMAT.md describes each key):\n  %s", file,
                         f.problems.n, all);
        free(all);
    }
    sl_free(&f.problems);
    lesson_free(l);
    return -1;
}

/* ---- what the paths name must be there ---- */

static bool exists(const char *root, const char *rel, bool dir) {
    char *p = path_join(root, rel);
    bool there = dir ? is_dir(p) : is_file(p);
    free(p);
    return there;
}

/* Does course/ID/mutants/ hold a file for mutant `id` ("s01-....mutant")? */
static bool mutant_file_exists(const char *root, const lesson *l, const char *id) {
    char *dir = xasprintf("%s/course/%s/mutants", root, l->id);
    strlist files = {0};
    bool found = false;
    if (is_dir(dir)) list_files(dir, ".mutant", &files);
    size_t n = strlen(id);
    for (int i = 0; i < files.n && !found; i++) {
        const char *base = path_base(files.v[i]);
        found = strncmp(base, id, n) == 0 && (base[n] == '-' || base[n] == '.');
    }
    sl_free(&files);
    free(dir);
    return found;
}

release_kind lesson_release_kind(const char *root) {
    char *marker = path_join(root, LESSON_RELEASE_MARKER);
    char *text = read_file(marker, NULL);
    free(marker);
    if (!text) return RELEASE_NONE;
    cJSON *o = cJSON_Parse(text);
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(o, "kind");
    bool grader = cJSON_IsString(kind) && strcmp(kind->valuestring, "grader") == 0;
    cJSON_Delete(o);
    free(text);
    return grader ? RELEASE_GRADER : RELEASE_STUDENT;
}

/* A release holds no oracle; a student's release no reference source and no
 * mutant files either (they are prebuilt/ objects there), so what only the
 * course repository holds is looked for only in it. */
static void check_paths(const char *root, const lesson *l, unsigned flags, findings *f) {
    release_kind release = lesson_release_kind(root);
    for (int i = 0; i < l->sources.n; i++) {
        char *stub = xasprintf("stubs/%s", l->sources.v[i]),
             *ref = xasprintf("reference/%s", l->sources.v[i]);
        if (!(flags & LESSON_STUBS_MAY_BE_MISSING) && !exists(root, stub, false))
            problem(f, "sources",
                    "%s does not exist: write the stub there (`ol lesson stub %s` makes it "
                    "from the contract)",
                    stub, l->id);
        if (release != RELEASE_STUDENT && !exists(root, ref, false))
            problem(f, "sources", "%s does not exist: write the reference there", ref);
        free(stub);
        free(ref);
    }
    for (int i = 0; i < l->contracts.n; i++) {
        char *c = xasprintf("contracts/%s", l->contracts.v[i]);
        if (!exists(root, c, false))
            problem(f, "contracts", "%s does not exist: write the contract there", c);
        free(c);
    }
    if (!exists(root, l->course_tests, true))
        problem(f, "course_tests", "the folder %s does not exist: the course tests go there",
                l->course_tests);
    if (l->model_tests && !exists(root, l->model_tests, true))
        problem(f, "model_tests",
                "the folder %s does not exist: the model-answer student tests go there",
                l->model_tests);
    if (l->fixtures && !(flags & LESSON_FIXTURES_MAY_BE_MISSING) &&
        !exists(root, l->fixtures, true))
        problem(f, "fixtures",
                "the folder %s does not exist: `ol fixtures %s` makes it with the oracle",
                l->fixtures, l->id);
    if (l->oracle) {
        char *script = path_join(l->oracle, "make_fixtures.py");
        if (!exists(root, script, false))
            problem(f, "oracle", "%s does not exist: the oracle `ol fixtures` runs", script);
        free(script);
    }
    if (l->hidden_tests && !exists(root, l->hidden_tests, true))
        problem(f, "hidden_tests", "the folder %s does not exist: the hidden course tests go there",
                l->hidden_tests);
    for (int i = 0; i < l->release_files.n; i++)
        if (!exists(root, l->release_files.v[i], false) &&
            !exists(root, l->release_files.v[i], true))
            problem(f, "release_files", "%s does not exist", l->release_files.v[i]);
    if (l->fixtures && !l->oracle && release == RELEASE_NONE)
        problem(f, "fixtures", "is given without \"oracle\", the script that makes them");
    if (l->oracle && !l->fixtures)
        problem(f, "oracle", "is given without \"fixtures\", the folder it writes");
    if (l->example_test && !exists(root, l->example_test, false))
        problem(f, "example_test", "%s does not exist", l->example_test);
    /* each source builds into its lesson's library: one listed twice would define its
     * functions in two libraries of one link */
    for (int i = 0; i < l->sources.n; i++) {
        char *owner = lesson_owner(root, "sources", l->sources.v[i], l->id);
        if (owner)
            problem(f, "sources",
                    "%s is a source of %s too (course/%s/lesson.json): a source belongs to one "
                    "lesson; to use %s's code, list it in \"needs\"",
                    l->sources.v[i], owner, owner, owner);
        free(owner);
    }
    for (int i = 0; i < l->needs.n; i++) {
        char *json = xasprintf("course/%s/lesson.json", l->needs.v[i]);
        if (lesson_id_valid(l->needs.v[i]) && !exists(root, json, false))
            problem(f, "needs", "there is no lesson %s (no %s)", l->needs.v[i], json);
        free(json);
    }
    for (int i = 0; i < l->required_pitfalls.n; i++) {
        const char *id = l->required_pitfalls.v[i];
        if (release != RELEASE_STUDENT && variant_id_valid(id, false) &&
            !mutant_file_exists(root, l, id))
            problem(f, "required_pitfalls",
                    "%s has no mutant in course/%s/mutants/: add it with `ol mutants new "
                    "%s --id %s ...`",
                    id, l->id, l->id, id);
    }
}

int lesson_load_flags(const char *root, const char *id, unsigned flags, lesson *out, char **err) {
    memset(out, 0, sizeof *out);
    *err = NULL;
    if (!lesson_id_valid(id)) {
        *err =
            xasprintf("\"%s\" is not a lesson id (ids look like L7.1; `ol list` shows them)", id);
        return -1;
    }
    char *dir = xasprintf("%s/course/%s", root, id);
    char *file = path_join(dir, "lesson.json");
    char *shown = xasprintf("course/%s/lesson.json", id);
    size_t len;
    char *text = read_file(file, &len);
    int rc = -1;
    if (!text) {
        *err = is_dir(dir)
                   ? xasprintf("%s: %s", shown, strerror(errno))
                   : xasprintf("there is no lesson %s in %s/course (`ol list` shows the lessons)",
                               id, root);
    } else if (lesson_parse(shown, text, out, err) == 0) {
        findings f = {.file = shown};
        if (strcmp(out->id, id) != 0)
            problem(&f, "id", "is \"%s\" but the folder is course/%s: make them agree", out->id,
                    id);
        else
            check_paths(root, out, flags, &f);
        if (f.problems.n == 1) {
            *err = xasprintf("%s: %s", shown, f.problems.v[0]);
        } else if (f.problems.n > 1) {
            char *all = sl_join(&f.problems, "\n  ");
            *err = xasprintf("%s: %d problems (course/FORMAT.md describes each key):\n  %s", shown,
                             f.problems.n, all);
            free(all);
        } else {
            rc = 0;
        }
        sl_free(&f.problems);
        /* a "link" entry that is a file (not a -flag) is relative to the root */
        for (int i = 0; rc == 0 && i < out->link.n; i++) {
            char *e = out->link.v[i];
            if (e[0] != '-') {
                out->link.v[i] = path_join(root, e);
                free(e);
            }
        }
    }
    free(text);
    free(file);
    free(shown);
    if (rc == 0)
        out->dir = dir;
    else {
        free(dir);
        lesson_free(out);
    }
    return rc;
}

int lesson_load(const char *root, const char *id, lesson *out, char **err) {
    return lesson_load_flags(root, id, 0, out, err);
}

void lesson_free(lesson *l) {
    free(l->id);
    free(l->slug);
    free(l->title);
    free(l->rung);
    free(l->course_tests);
    free(l->student_tests);
    free(l->model_tests);
    free(l->fixtures);
    free(l->oracle);
    free(l->example_test);
    free(l->hidden_tests);
    free(l->dir);
    sl_free(&l->needs);
    sl_free(&l->sources);
    sl_free(&l->contracts);
    sl_free(&l->required_pitfalls);
    sl_free(&l->link);
    sl_free(&l->release_files);
    memset(l, 0, sizeof *l);
}

static int cmp_version(const void *a, const void *b) {
    return strverscmp(*(char *const *)a, *(char *const *)b);
}

char *lesson_owner(const char *root, const char *key, const char *entry, const char *except) {
    strlist ids = {0};
    char *owner = NULL;
    if (lesson_ids(root, &ids) != 0) return NULL;
    for (int i = 0; i < ids.n && !owner; i++) {
        if (except && !strcmp(ids.v[i], except)) continue;
        char *path = xasprintf("%s/course/%s/lesson.json", root, ids.v[i]);
        char *text = read_file(path, NULL);
        cJSON *json = text ? cJSON_Parse(text) : NULL; /* one that does not parse says so itself */
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(json, key)) {
            if (!owner && cJSON_IsString(e) && !strcmp(e->valuestring, entry))
                owner = xstrdup(ids.v[i]);
        }
        cJSON_Delete(json);
        free(text);
        free(path);
    }
    sl_free(&ids);
    return owner;
}

int lesson_ids(const char *root, strlist *ids) {
    char *course = path_join(root, "course");
    DIR *d = opendir(course);
    if (!d) {
        free(course);
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char *json = xasprintf("%s/%s/lesson.json", course, e->d_name);
        if (is_file(json)) sl_push(ids, e->d_name);
        free(json);
    }
    closedir(d);
    free(course);
    if (ids->n > 1) qsort(ids->v, (size_t)ids->n, sizeof *ids->v, cmp_version);
    return 0;
}

int lesson_load_all(const char *root, lesson **out, int *n) {
    *out = NULL;
    *n = 0;
    strlist ids = {0};
    if (lesson_ids(root, &ids) != 0) return -1;
    *out = xcalloc((size_t)ids.n + 1, sizeof **out);
    for (int i = 0; i < ids.n; i++) {
        char *err = NULL;
        if (lesson_load(root, ids.v[i], &(*out)[*n], &err) == 0)
            (*n)++;
        else {
            ol_error("%s", err);
            free(err);
        }
    }
    sl_free(&ids);
    return 0;
}

void lessons_free(lesson *ls, int n) {
    for (int i = 0; i < n; i++) lesson_free(&ls[i]);
    free(ls);
}

/* Depth-first, dependencies first; `path` holds the ids being visited. */
static int visit(const char *root, const char *id, strlist *path, strlist *done, lesson **out,
                 int *n, char **err) {
    if (sl_contains(done, id)) return 0;
    if (sl_contains(path, id)) {
        char *chain = sl_join(path, " -> ");
        *err = xasprintf("the lessons' \"needs\" form a cycle: %s -> %s", chain, id);
        free(chain);
        return -1;
    }
    lesson l;
    if (lesson_load(root, id, &l, err) != 0) {
        /* say which lesson.json asked for it: that is the file to fix */
        char *why = *err;
        *err = xasprintf("course/%s/lesson.json: \"needs\" lists %s: %s", path->v[path->n - 1], id,
                         why);
        free(why);
        return -1;
    }
    sl_push(path, id);
    for (int i = 0; i < l.needs.n; i++)
        if (visit(root, l.needs.v[i], path, done, out, n, err) != 0) {
            lesson_free(&l);
            return -1;
        }
    free(path->v[--path->n]);
    sl_push(done, id);
    *out = xrealloc(*out, (size_t)(*n + 1) * sizeof **out);
    (*out)[(*n)++] = l;
    return 0;
}

int lesson_needs_closure(const char *root, const lesson *l, lesson **out, int *n, char **err) {
    *out = NULL;
    *n = 0;
    *err = NULL;
    strlist path = {0}, done = {0};
    sl_push(&path, l->id);
    int rc = 0;
    for (int i = 0; i < l->needs.n && rc == 0; i++)
        rc = visit(root, l->needs.v[i], &path, &done, out, n, err);
    sl_free(&path);
    sl_free(&done);
    if (rc != 0) {
        lessons_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}
