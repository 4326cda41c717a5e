/* json_keys.c: a key given twice in a JSON object, anywhere in a document
 * (json_keys.h). It calls nothing of the runtime (layer 0 of
 * tests/core/layers.sh), so any reader of a JSON file may use it. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinyllm/json_keys.h"

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

typedef struct {
    char *s;
    size_t size, len;
} out;

/* Appends to o; what does not fit is dropped. */
__attribute__((format(printf, 2, 3))) static void put(out *o, const char *fmt, ...) {
    if (o->len + 1 >= o->size) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->s + o->len, o->size - o->len, fmt, ap);
    va_end(ap);
    size_t room = o->size - o->len - 1;
    if (n > 0) o->len += (size_t)n < room ? (size_t)n : room;
}

static bool is_identifier(const char *k) {
    if (!(*k == '_' || (*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z'))) return false;
    for (k++; *k; k++)
        if (!(*k == '_' || (*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
              (*k >= '0' && *k <= '9')))
            return false;
    return true;
}

/* k as a JSON string, cut at a character's start once KEY_SHOWN bytes are out. */
static void put_quoted(out *o, const char *k) {
    put(o, "\"");
    size_t shown = 0;
    for (const unsigned char *p = (const unsigned char *)k; *p; p++) {
        if (shown >= KEY_SHOWN && (*p & 0xC0) != 0x80) {
            put(o, "...");
            break;
        }
        char esc[8] = {(char)*p, '\0'};
        switch (*p) {
        case '"': strcpy(esc, "\\\""); break;
        case '\\': strcpy(esc, "\\\\"); break;
        case '\n': strcpy(esc, "\\n"); break;
        case '\r': strcpy(esc, "\\r"); break;
        case '\t': strcpy(esc, "\\t"); break;
        default:
            if (*p < 0x20 || *p == 0x7f) snprintf(esc, sizeof esc, "\\u%04x", *p);
        }
        put(o, "%s", esc);
        shown += strlen(esc);
    }
    put(o, "\"");
}

static void put_name(out *o, const char *k, bool quoted) {
    if (o->len) put(o, ".");
    if (quoted || !is_identifier(k)) put_quoted(o, k);
    else put(o, "%s", k);
}

static void put_path(out *o, const step *s) {
    if (!s) return;
    put_path(o, s->up);
    if (s->member) put_name(o, s->item->string ? s->item->string : "", false);
    else put(o, "[%d]", s->index);
}

/* The first member of object v whose key an earlier member gave (*dup): 1;
 * 0 none; -1 out of memory. A hash set of the keys (FNV-1a, linear probing)
 * keeps a vocabulary of 100k entries linear: a sort took 3-5x longer. */
static int repeat_in(const cJSON *v, const char **dup) {
    size_t n = 0, cap = 4;
    for (const cJSON *c = v->child; c; c = c->next) n++;
    if (n < 2) return 0;
    while (cap < 2 * n) cap *= 2;
    const char **set = calloc(cap, sizeof *set);
    if (!set) return -1;
    int found = 0;
    for (const cJSON *c = v->child; c && !found; c = c->next) {
        const char *k = c->string ? c->string : "";
        uint32_t h = 2166136261u;
        for (const unsigned char *p = (const unsigned char *)k; *p; p++) h = (h ^ *p) * 16777619u;
        size_t i = h & (cap - 1);
        while (set[i] && strcmp(set[i], k) != 0) i = (i + 1) & (cap - 1);
        if (set[i]) {
            *dup = k;
            found = 1;
        }
        set[i] = k;
    }
    free(set);
    return found;
}

/* Depth first, so a document's first repeat is the one named. cJSON's
 * nesting limit bounds the recursion. */
static int walk(const cJSON *v, const step *up, out *o) {
    if (cJSON_IsObject(v)) {
        const char *dup = NULL;
        int r = repeat_in(v, &dup);
        if (r != 0) {
            if (r > 0) {
                put_path(o, up);
                put_name(o, dup, true);
            }
            return r;
        }
    }
    int i = 0;
    for (const cJSON *c = v->child; c; c = c->next, i++) {
        if (!cJSON_IsObject(c) && !cJSON_IsArray(c)) continue;
        step s = {up, c, i, cJSON_IsObject(v)};
        int r = walk(c, &s, o);
        if (r != 0) return r;
    }
    return 0;
}

int tl_json_repeated_key(const cJSON *v, char *path, size_t size) {
    out o = {path, size, 0};
    path[0] = '\0';
    int r = v ? walk(v, NULL, &o) : 0;
    if (r <= 0) path[0] = '\0';
    return r;
}
