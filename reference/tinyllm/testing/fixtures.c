/* fixtures.c: golden data for course tests (testing.h). A missing fixture or
 * key fails the test with the path and what to run, never a crash. */
#include <check.h>
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinyllm/testing.h"

const char *tl_fixture_dir(void) {
    const char *env = getenv("TINYLLM_FIXTURES");
    return env && *env ? env : TL_SOURCE_ROOT "/fixtures";
}

const char *tl_fixture_path(const char *rel) {
    static _Thread_local char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", tl_fixture_dir(), rel ? rel : "");
    return path;
}

tl_checkpoint *tl_fixture_load(const char *rel) {
    const char *path = tl_fixture_path(rel);
    tl_checkpoint *c = tl_checkpoint_load(path, TL_F32);
    if (!c)
        ck_abort_msg("fixture %s cannot be loaded: %s (regenerate fixtures with `make fixtures`, "
                     "or point TINYLLM_FIXTURES at them)", path, tl_error() ? tl_error() : "?");
    return c;
}

tl_tensor *tl_fixture_tensor(const tl_checkpoint *fx, const char *name) {
    tl_tensor *t = fx ? tl_checkpoint_get(fx, name) : NULL;
    if (!t) {
        char names[512] = "";
        for (int i = 0; fx && i < fx->dict.count && strlen(names) < sizeof names - 64; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                     fx->dict.items[i].name);
        ck_abort_msg("fixture has no tensor '%s' (it holds: %s)", name, names);
    }
    return t;
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *text = NULL;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (size >= 0 && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)size + 1))) {
        if (fread(text, 1, (size_t)size, f) != (size_t)size) {
            free(text);
            text = NULL;
        } else {
            text[size] = '\0';
        }
    }
    fclose(f);
    return text;
}

/* Follows "a.b.0.c" through objects (by key) and arrays (by index). */
static const cJSON *walk(const cJSON *node, const char *dotted) {
    char key[256];
    while (node && *dotted) {
        size_t len = strcspn(dotted, ".");
        if (len >= sizeof key) return NULL;
        memcpy(key, dotted, len);
        key[len] = '\0';
        dotted += len + (dotted[len] == '.');
        char *end;
        long index = strtol(key, &end, 10);
        node = cJSON_IsArray(node) && *end == '\0' && end != key
                   ? cJSON_GetArrayItem(node, (int)index)
                   : cJSON_GetObjectItemCaseSensitive(node, key);
    }
    return node;
}

double tl_fixture_number(const char *rel_json, const char *dotted_key) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", tl_fixture_path(rel_json));
    char *text = read_text(path);
    if (!text) ck_abort_msg("fixture %s cannot be read (regenerate with `make fixtures`)", path);
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root) ck_abort_msg("fixture %s is not valid JSON", path);
    const cJSON *item = walk(root, dotted_key);
    bool found = cJSON_IsNumber(item);
    double value = found ? item->valuedouble : 0.0;
    cJSON_Delete(root);
    if (!found) ck_abort_msg("fixture %s has no number at '%s'", path, dotted_key);
    return value;
}
