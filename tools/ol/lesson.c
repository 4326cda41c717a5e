#include "lesson.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

static bool isalnum_ascii(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* A lesson id names a folder of course/: letters, digits, '.', '-', '_'. */
static bool valid_id(const char *id) {
    if (!id || !*id || id[0] == '.') return false;
    for (const char *p = id; *p; p++)
        if (!(isalnum_ascii(*p) || *p == '.' || *p == '-' || *p == '_')) return false;
    return true;
}

static char *get_string(const cJSON *obj, const char *key, bool required, const char *file,
                        char **err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) {
        if (required) *err = xasprintf("%s: the key \"%s\" is missing (see course/FORMAT.md)", file, key);
        return NULL;
    }
    if (!cJSON_IsString(v) || !v->valuestring[0]) {
        *err = xasprintf("%s: \"%s\" must be a non-empty string", file, key);
        return NULL;
    }
    return xstrdup(v->valuestring);
}

static int get_list(const cJSON *obj, const char *key, bool required, strlist *out,
                    const char *file, char **err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required) {
            *err = xasprintf("%s: the key \"%s\" is missing (see course/FORMAT.md)", file, key);
            return -1;
        }
        return 0;
    }
    if (!cJSON_IsArray(v)) {
        *err = xasprintf("%s: \"%s\" must be an array of strings", file, key);
        return -1;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, v) {
        if (!cJSON_IsString(item) || !item->valuestring[0]) {
            *err = xasprintf("%s: every item of \"%s\" must be a non-empty string", file, key);
            return -1;
        }
        sl_push(out, item->valuestring);
    }
    return 0;
}

/* A relative path that stays inside its folder: no "..", not absolute. */
static bool safe_rel(const char *p) {
    return p && p[0] != '/' && strcmp(p, "..") != 0 && strncmp(p, "../", 3) != 0 &&
           !strstr(p, "/../") && !(strlen(p) >= 3 && strcmp(p + strlen(p) - 3, "/..") == 0);
}

static int check_paths(const lesson *l, const char *file, char **err) {
    const char *singles[] = {l->course_tests, l->student_tests, l->model_tests,
                             l->fixtures,     l->oracle,        l->example_test};
    for (size_t i = 0; i < sizeof singles / sizeof *singles; i++)
        if (singles[i] && !safe_rel(singles[i])) {
            *err = xasprintf("%s: \"%s\" must be a relative path inside the course", file, singles[i]);
            return -1;
        }
    const strlist *lists[] = {&l->sources, &l->contracts};
    for (size_t i = 0; i < 2; i++)
        for (int j = 0; j < lists[i]->n; j++)
            if (!safe_rel(lists[i]->v[j])) {
                *err = xasprintf("%s: \"%s\" must be a relative path", file, lists[i]->v[j]);
                return -1;
            }
    return 0;
}

static int parse_lesson(const cJSON *root_obj, const char *file, lesson *l, char **err) {
    if (!cJSON_IsObject(root_obj)) {
        *err = xasprintf("%s: the top level must be a JSON object", file);
        return -1;
    }
    if (!(l->id = get_string(root_obj, "id", true, file, err))) return -1;
    if (!(l->slug = get_string(root_obj, "slug", true, file, err))) return -1;
    if (!(l->title = get_string(root_obj, "title", true, file, err))) return -1;
    if (!(l->rung = get_string(root_obj, "rung", true, file, err))) return -1;
    if (!(l->course_tests = get_string(root_obj, "course_tests", true, file, err))) return -1;
    if (!(l->student_tests = get_string(root_obj, "student_tests", true, file, err))) return -1;
    l->model_tests = get_string(root_obj, "model_tests", false, file, err);
    l->fixtures = get_string(root_obj, "fixtures", false, file, err);
    l->oracle = get_string(root_obj, "oracle", false, file, err);
    l->example_test = get_string(root_obj, "example_test", false, file, err);
    if (*err) return -1;
    if (get_list(root_obj, "sources", true, &l->sources, file, err) ||
        get_list(root_obj, "contracts", true, &l->contracts, file, err) ||
        get_list(root_obj, "needs", false, &l->needs, file, err) ||
        get_list(root_obj, "required_pitfalls", false, &l->required_pitfalls, file, err) ||
        get_list(root_obj, "link", false, &l->link, file, err))
        return -1;
    if (l->sources.n == 0) {
        *err = xasprintf("%s: \"sources\" lists no file", file);
        return -1;
    }
    l->level = rung_level(l->rung);
    if (!l->level) {
        *err = xasprintf("%s: rung \"%s\" is not one of R1..R5", file, l->rung);
        return -1;
    }
    l->threshold = rung_threshold(l->level);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root_obj, "threshold");
    if (t) {
        if (!cJSON_IsNumber(t) || t->valuedouble < 0 || t->valuedouble > 1) {
            *err = xasprintf("%s: \"threshold\" must be a number between 0 and 1", file);
            return -1;
        }
        l->threshold = t->valuedouble;
    }
    l->test_timeout = 10;
    const cJSON *to = cJSON_GetObjectItemCaseSensitive(root_obj, "test_timeout_seconds");
    if (to) {
        if (!cJSON_IsNumber(to) || to->valuedouble <= 0) {
            *err = xasprintf("%s: \"test_timeout_seconds\" must be a positive number", file);
            return -1;
        }
        l->test_timeout = to->valuedouble;
    }
    l->test_memory_mb = 4096;
    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(root_obj, "test_memory_mb");
    if (mem) {
        if (!cJSON_IsNumber(mem) || mem->valuedouble < 16 || mem->valuedouble > 1 << 20) {
            *err = xasprintf("%s: \"test_memory_mb\" must be a number of MiB from 16 to 1048576", file);
            return -1;
        }
        l->test_memory_mb = mem->valuedouble;
    }
    return check_paths(l, file, err);
}

long long lesson_memory_bytes(const lesson *l) { return (long long)(l->test_memory_mb * 1024 * 1024); }

int lesson_load(const char *root, const char *id, lesson *out, char **err) {
    memset(out, 0, sizeof *out);
    *err = NULL;
    if (!valid_id(id)) {
        *err = xasprintf("\"%s\" is not a lesson id (ids look like L7.1; `ol list` shows them)", id);
        return -1;
    }
    char *dir = xasprintf("%s/course/%s", root, id);
    char *file = path_join(dir, "lesson.json");
    size_t len;
    char *text = read_file(file, &len);
    if (!text) {
        *err = is_dir(dir) ? xasprintf("%s: %s", file, strerror(errno))
                           : xasprintf("there is no lesson %s in %s/course (`ol list` shows the lessons)", id, root);
        free(dir);
        free(file);
        return -1;
    }
    cJSON *json = cJSON_ParseWithLength(text, len);
    int rc = -1;
    if (!json) {
        /* cJSON points at the text where parsing stopped: give its line */
        const char *at = cJSON_GetErrorPtr();
        int line = 1;
        for (const char *p = text; at && p < at && *p; p++) line += *p == '\n';
        *err = xasprintf("%s:%d: not valid JSON", file, line);
    } else if (parse_lesson(json, file, out, err) == 0) {
        if (strcmp(out->id, id) != 0)
            *err = xasprintf("%s: \"id\" is \"%s\" but the folder is %s: make them agree", file, out->id, id);
        else
            rc = 0;
        /* a "link" entry that is a file (not a -flag) is relative to the root */
        for (int i = 0; rc == 0 && i < out->link.n; i++) {
            char *e = out->link.v[i];
            if (e[0] != '-' && e[0] != '/') {
                if (!safe_rel(e)) {
                    *err = xasprintf("%s: the link entry \"%s\" must stay inside the course", file, e);
                    rc = -1;
                } else {
                    out->link.v[i] = path_join(root, e);
                    free(e);
                }
            }
        }
    }
    cJSON_Delete(json);
    free(text);
    free(file);
    if (rc == 0) out->dir = dir;
    else {
        free(dir);
        lesson_free(out);
    }
    return rc;
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
    free(l->dir);
    sl_free(&l->needs);
    sl_free(&l->sources);
    sl_free(&l->contracts);
    sl_free(&l->required_pitfalls);
    sl_free(&l->link);
    memset(l, 0, sizeof *l);
}

static int cmp_version(const void *a, const void *b) {
    return strverscmp(*(char *const *)a, *(char *const *)b);
}

int lesson_load_all(const char *root, lesson **out, int *n) {
    *out = NULL;
    *n = 0;
    char *course = path_join(root, "course");
    DIR *d = opendir(course);
    if (!d) {
        free(course);
        return -1;
    }
    strlist ids = {0};
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char *json = xasprintf("%s/%s/lesson.json", course, e->d_name);
        if (is_file(json)) sl_push(&ids, e->d_name);
        free(json);
    }
    closedir(d);
    free(course);
    if (ids.n > 1) qsort(ids.v, (size_t)ids.n, sizeof *ids.v, cmp_version);
    *out = xcalloc((size_t)ids.n + 1, sizeof **out);
    for (int i = 0; i < ids.n; i++) {
        char *err = NULL;
        if (lesson_load(root, ids.v[i], &(*out)[*n], &err) == 0) (*n)++;
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
        *err = xasprintf("course/%s/lesson.json: \"needs\" lists %s: %s", path->v[path->n - 1], id, why);
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
