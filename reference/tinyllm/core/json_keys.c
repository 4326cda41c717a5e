/* json_keys.c: a key given twice in a JSON object, anywhere in a document
 * (json_keys.h). It calls nothing of the runtime (layer 0 of
 * tests/core/layers.sh), so any reader of a JSON file may use it. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinyllm/json_keys.h"

/* Steps a path records (cJSON nests at most 1000 deep); a deeper path keeps
 * its first ones and the key. */
enum { MAX_STEPS = 1024 };

/* A longer key is cut, so one long vocabulary entry cannot fill a message. */
#define KEY_SHOWN 60

/* One step down from the root: a member of an object or an element of an
 * array. The walk keeps these on its stack and writes the path only once a
 * repeat is found, so the path costs nothing on a document without one. */
typedef struct step {
    const struct step *up;
    const cJSON *item;
    int index;
    bool member;
} step;

/* A growing string; `failed` after an allocation failure. */
typedef struct {
    char *s;
    size_t len, cap;
    bool failed;
} text;

static void add(text *t, const char *p, size_t n) {
    if (t->failed) return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 64;
        while (t->len + n + 1 > cap) cap *= 2;
        char *s = realloc(t->s, cap);
        if (!s) {
            t->failed = true;
            return;
        }
        t->s = s;
        t->cap = cap;
    }
    memcpy(t->s + t->len, p, n);
    t->len += n;
    t->s[t->len] = '\0';
}

static void add_str(text *t, const char *p) { add(t, p, strlen(p)); }

static bool is_identifier(const char *k) {
    if (!(*k == '_' || (*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z'))) return false;
    for (k++; *k; k++)
        if (!(*k == '_' || (*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
              (*k >= '0' && *k <= '9')))
            return false;
    return true;
}

/* The length of the well-formed UTF-8 character at p (1 to 4), or 0. */
static int utf8_char(const unsigned char *p) {
    if (p[0] < 0x80) return 1;
    int n = p[0] >= 0xC2 && p[0] <= 0xDF ? 2 : p[0] >= 0xE0 && p[0] <= 0xEF ? 3
            : p[0] >= 0xF0 && p[0] <= 0xF4 ? 4 : 0;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    if ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] > 0x9F) ||   /* overlong, */
        (p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] > 0x8F))     /* surrogate */
        return 0;
    return n;
}

/* k as a JSON string: escapes for quotes, backslashes and control bytes, \xHH
 * for a byte that is not UTF-8 (the message stays UTF-8), and "..." in place
 * of the characters that start past KEY_SHOWN bytes. */
static void add_quoted(text *t, const char *k) {
    add_str(t, "\"");
    size_t shown = 0;
    for (const unsigned char *p = (const unsigned char *)k; *p;) {
        if (shown >= KEY_SHOWN) {
            add_str(t, "...");
            break;
        }
        char esc[8];
        int n = utf8_char(p);
        if (n == 0) {
            snprintf(esc, sizeof esc, "\\x%02X", *p);
            n = 1;
        } else if (*p == '"' || *p == '\\') {
            snprintf(esc, sizeof esc, "\\%c", *p);
        } else if (*p == '\n' || *p == '\r' || *p == '\t') {
            snprintf(esc, sizeof esc, "\\%c", *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't');
        } else if (*p < 0x20 || *p == 0x7f) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
        } else {
            memcpy(esc, p, (size_t)n);
            esc[n] = '\0';
        }
        add_str(t, esc);
        shown += strlen(esc);
        p += n;
    }
    add_str(t, "\"");
}

static void add_name(text *t, const char *k, bool quoted) {
    if (t->len) add_str(t, ".");
    if (quoted || !is_identifier(k)) add_quoted(t, k);
    else add_str(t, k);
}

/* The path down to s, its steps' ends recorded in ends (up to max). */
static void add_path(text *t, const step *s, size_t *ends, int *count, int max) {
    if (!s) return;
    add_path(t, s->up, ends, count, max);
    if (s->member) {
        add_name(t, s->item->string ? s->item->string : "", false);
    } else {
        char index[24];
        snprintf(index, sizeof index, "[%d]", s->index);
        add_str(t, index);
    }
    if (*count < max) ends[(*count)++] = t->len;
}

/* The path into out (size bytes): whole when it fits; else the key with as
 * many leading steps as fit before "...", cut only between steps, so the
 * message names the repeated key and stays well-formed. */
static void fit(const text *t, const size_t *ends, int count, char *out, size_t size) {
    if (t->len < size) {
        memcpy(out, t->s, t->len + 1);
        return;
    }
    size_t key_start = count > 1 ? ends[count - 2] : 0, key_len = t->len - key_start;
    size_t head = 0;
    for (int i = 0; i < count - 1 && ends[i] + 3 + key_len < size; i++) head = ends[i];
    if (3 + key_len >= size) {   /* a buffer too small for the key: nothing rather than half */
        out[0] = '\0';
        return;
    }
    memcpy(out, t->s, head);
    memcpy(out + head, "...", 3);
    memcpy(out + head + 3, t->s + key_start, key_len + 1);
}

/* A key's hash and the key, in the set of one object's keys. */
typedef struct {
    uint32_t hash;
    const char *key;
} entry;

static int compare_keys(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The repeat in v's n keys by sorting them: O(n log n) whatever the keys. */
static int repeat_by_sorting(const cJSON *v, size_t n, const char **dup) {
    const char **keys = malloc(n * sizeof *keys);
    if (!keys) return -1;
    size_t k = 0;
    for (const cJSON *c = v->child; c; c = c->next) keys[k++] = c->string ? c->string : "";
    qsort(keys, n, sizeof *keys, compare_keys);
    int found = 0;
    for (k = 1; k < n && !found; k++)
        if (strcmp(keys[k - 1], keys[k]) == 0) {
            *dup = keys[k];
            found = 1;
        }
    free(keys);
    return found;
}

/* The first member of object v whose key an earlier member gave (*dup): 1;
 * 0 none; -1 out of memory. A hash set (FNV-1a, linear probing) keeps a
 * vocabulary of 100k entries linear (a sort took 3-5x longer). Keys crafted
 * to collide would make its probes quadratic, so past a budget of probes the
 * object is sorted instead (the repeat it names may then be another one). */
static int repeat_in(const cJSON *v, const char **dup) {
    size_t n = 0, cap = 4;
    for (const cJSON *c = v->child; c; c = c->next) n++;
    if (n < 2) return 0;
    while (cap < 2 * n) cap *= 2;
    entry *set = calloc(cap, sizeof *set);
    if (!set) return -1;
    size_t probes = 0, budget = 8 * n + 1024;
    int found = 0;
    for (const cJSON *c = v->child; c && !found && probes <= budget; c = c->next) {
        const char *k = c->string ? c->string : "";
        uint32_t h = 2166136261u;
        for (const unsigned char *p = (const unsigned char *)k; *p; p++) h = (h ^ *p) * 16777619u;
        size_t i = h & (cap - 1);
        while (set[i].key && (set[i].hash != h || strcmp(set[i].key, k) != 0)) {
            i = (i + 1) & (cap - 1);
            probes++;
        }
        if (set[i].key) {
            *dup = k;
            found = 1;
        }
        set[i] = (entry){h, k};
    }
    free(set);
    return found || probes <= budget ? found : repeat_by_sorting(v, n, dup);
}

/* Depth first, so a document's first repeat is the one named. cJSON's
 * nesting limit bounds the recursion. */
static int walk(const cJSON *v, const step *up, text *t, size_t *ends, int *count) {
    if (cJSON_IsObject(v)) {
        const char *dup = NULL;
        int r = repeat_in(v, &dup);
        if (r != 0) {
            if (r > 0) {
                add_path(t, up, ends, count, MAX_STEPS - 1);
                add_name(t, dup, true);
                ends[(*count)++] = t->len;
            }
            return r;
        }
    }
    int i = 0;
    for (const cJSON *c = v->child; c; c = c->next, i++) {
        if (!cJSON_IsObject(c) && !cJSON_IsArray(c)) continue;
        step s = {up, c, i, cJSON_IsObject(v)};
        int r = walk(c, &s, t, ends, count);
        if (r != 0) return r;
    }
    return 0;
}

int tl_json_repeated_key(const cJSON *v, char *path, size_t size) {
    text t = {0};
    size_t ends[MAX_STEPS];
    int count = 0;
    path[0] = '\0';
    int r = v ? walk(v, NULL, &t, ends, &count) : 0;
    if (r > 0 && t.failed) r = -1;
    if (r > 0) fit(&t, ends, count, path, size);
    free(t.s);
    return r;
}

long tl_json_nul_escape(const char *text) {
    bool in_string = false;
    for (const char *p = text; *p; p++) {
        if (*p == '"') {
            in_string = !in_string;
        } else if (*p == '\\' && in_string) {
            if (p[1] == 'u' && strncmp(p + 2, "0000", 4) == 0) return (long)(p - text);
            if (p[1]) p++;   /* the escaped character, a quote included */
        }
    }
    return -1;
}
