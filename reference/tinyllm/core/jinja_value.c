/* jinja_value.c: Jinja values as Python sees them (chat_template.h): the
 * render's arena, truthiness, equality and order, str() and json.dumps(). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include <cjson/cJSON.h>

#include "jinja_internal.h"
#include "tinyllm/json_keys.h"

/* ---- the arena ------------------------------------------------------------- */

struct jarena_chunk {
    jarena_chunk *next;
    size_t used, size;
    max_align_t data[];
};

void *ja_alloc(jarena *a, size_t size) {
    size = (size + 15) & ~(size_t)15;
    jarena_chunk *c = a->head;
    if (!c || c->used + size > c->size) {
        size_t chunk = size > 65536 ? size : 65536;
        if (chunk > JINJA_ARENA_MAX - a->bytes || a->bytes > JINJA_ARENA_MAX) {
            a->failed = a->over_budget = true;
            return NULL;
        }
        c = malloc(sizeof *c + chunk);
        if (!c) {
            a->failed = true;
            return NULL;
        }
        a->bytes += chunk;
        c->next = a->head;
        c->used = 0;
        c->size = chunk;
        a->head = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += size;
    memset(p, 0, size);
    return p;
}

char *ja_strndup(jarena *a, const char *s, size_t n) {
    char *d = ja_alloc(a, n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

void ja_free(jarena *a) {
    while (a->head) {
        jarena_chunk *next = a->head->next;
        free(a->head);
        a->head = next;
    }
    a->bytes = 0;
}

void js_append(jstr *s, const char *data, size_t n) {
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        while (cap < s->len + n + 1) cap *= 2;
        char *d = ja_alloc(s->arena, cap);
        if (!d) return;
        if (s->len) memcpy(d, s->data, s->len);
        s->data = d;
        s->cap = cap;
    }
    if (n) memcpy(s->data + s->len, data, n);
    s->len += n;
    s->data[s->len] = '\0';
}

void js_puts(jstr *s, const char *text) { js_append(s, text, strlen(text)); }

/* ---- making values ----------------------------------------------------------- */

jv jv_undefined(const char *name) { return (jv){.kind = JV_UNDEFINED, .undefined_name = name}; }
jv jv_none(void) { return (jv){.kind = JV_NONE}; }
jv jv_bool(bool b) { return (jv){.kind = JV_BOOL, .u.b = b}; }
jv jv_int(int64_t i) { return (jv){.kind = JV_INT, .u.i = i}; }
jv jv_float(double f) { return (jv){.kind = JV_FLOAT, .u.f = f}; }
jv jv_string(const char *s, size_t len) {
    return (jv){.kind = JV_STRING, .u.str = {s ? s : "", len}};
}
jv jv_cstring(const char *s) { return jv_string(s, strlen(s)); }

jv jv_new_list(jarena *a) {
    return (jv){.kind = JV_LIST, .u.list = ja_alloc(a, sizeof(jlist))};
}

jv jv_new_dict(jarena *a) {
    return (jv){.kind = JV_DICT, .u.dict = ja_alloc(a, sizeof(jdict))};
}

/* How deep a value nests (0 for a scalar). Every walk over values (print,
 * tojson, ==, <) recurses this deep, so a container that would pass
 * JINJA_MAX_NESTING (a loop of ns.x = [ns.x]) fails the render instead. */
static int depth_of(jv v) {
    return v.kind == JV_LIST ? v.u.list->depth : v.kind == JV_DICT ? v.u.dict->depth : 0;
}

static bool deepen(jarena *a, int *depth, jv v) {
    int d = depth_of(v) + 1;
    if (d > *depth) *depth = d;
    if (d <= JINJA_MAX_NESTING) return true;
    a->failed = a->too_deep = true;
    return false;
}

void jl_push(jarena *a, jlist *l, jv v) {
    if (!l || !deepen(a, &l->depth, v)) return;
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        jv *items = ja_alloc(a, cap * sizeof *items);
        if (!items) return;
        if (l->count) memcpy(items, l->items, l->count * sizeof *items);
        l->items = items;
        l->cap = cap;
    }
    l->items[l->count++] = v;
}

jv *jd_get(const jdict *d, jv key) {
    if (!d) return NULL;
    for (size_t i = 0; i < d->count; i++)
        if (jv_equal(d->keys[i], key)) return &d->values[i];
    return NULL;
}

jv *jd_get_str(const jdict *d, const char *key) { return jd_get(d, jv_cstring(key)); }

void jd_set(jarena *a, jdict *d, jv key, jv value) {
    /* a namespace set as its own attribute is a cycle no walk follows (it
     * prints as <Namespace>, compares by identity, is not JSON) */
    bool itself = value.kind == JV_DICT && value.u.dict == d;
    if (!d || !deepen(a, &d->depth, key) || (!itself && !deepen(a, &d->depth, value))) return;
    jv *slot = jd_get(d, key);
    if (slot) {
        *slot = value;
        return;
    }
    if (d->count == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        jv *keys = ja_alloc(a, cap * sizeof *keys), *values = ja_alloc(a, cap * sizeof *values);
        if (!keys || !values) return;
        if (d->count) {
            memcpy(keys, d->keys, d->count * sizeof *keys);
            memcpy(values, d->values, d->count * sizeof *values);
        }
        d->keys = keys;
        d->values = values;
        d->cap = cap;
    }
    d->keys[d->count] = key;
    d->values[d->count++] = value;
}

/* ---- truth, equality, order ------------------------------------------------------ */

bool jv_truthy(jv v) {
    switch (v.kind) {
    case JV_UNDEFINED:
    case JV_NONE: return false;
    case JV_BOOL: return v.u.b;
    case JV_INT: return v.u.i != 0;
    case JV_FLOAT: return v.u.f != 0;
    case JV_STRING: return v.u.str.len > 0;
    case JV_LIST: return v.u.list->count > 0;
    case JV_DICT: return v.u.dict->is_namespace || v.u.dict->count > 0;
    default: return true;
    }
}

static bool is_number(jv v) { return v.kind == JV_INT || v.kind == JV_FLOAT || v.kind == JV_BOOL; }
static double as_double(jv v) {
    return v.kind == JV_FLOAT ? v.u.f : v.kind == JV_INT ? (double)v.u.i : (double)v.u.b;
}

bool jv_equal(jv a, jv b) {
    if (is_number(a) && is_number(b)) {
        if (a.kind != JV_FLOAT && b.kind != JV_FLOAT) {
            int64_t x = a.kind == JV_INT ? a.u.i : a.u.b, y = b.kind == JV_INT ? b.u.i : b.u.b;
            return x == y;
        }
        return as_double(a) == as_double(b);
    }
    if (a.kind != b.kind) return false;
    switch (a.kind) {
    case JV_UNDEFINED:
    case JV_NONE: return true;
    case JV_STRING:
        return a.u.str.len == b.u.str.len && !memcmp(a.u.str.s, b.u.str.s, a.u.str.len);
    case JV_LIST:
        if (a.u.list->count != b.u.list->count || a.u.list->is_tuple != b.u.list->is_tuple)
            return false;
        for (size_t i = 0; i < a.u.list->count; i++)
            if (!jv_equal(a.u.list->items[i], b.u.list->items[i])) return false;
        return true;
    case JV_DICT:   /* a namespace is equal to itself alone, as Python's objects */
        if (a.u.dict->is_namespace || b.u.dict->is_namespace) return a.u.dict == b.u.dict;
        if (a.u.dict->count != b.u.dict->count) return false;
        for (size_t i = 0; i < a.u.dict->count; i++) {
            jv *other = jd_get(b.u.dict, a.u.dict->keys[i]);
            if (!other || !jv_equal(a.u.dict->values[i], *other)) return false;
        }
        return true;
    case JV_MACRO: return a.u.macro.node == b.u.macro.node;
    default: return false;
    }
}

bool jv_compare(jv a, jv b, int *order) {
    if (is_number(a) && is_number(b)) {
        double x = as_double(a), y = as_double(b);
        if (a.kind == JV_INT && b.kind == JV_INT) *order = (a.u.i > b.u.i) - (a.u.i < b.u.i);
        else *order = (x > y) - (x < y);
        return true;
    }
    if (a.kind == JV_STRING && b.kind == JV_STRING) {
        size_t n = a.u.str.len < b.u.str.len ? a.u.str.len : b.u.str.len;
        int c = memcmp(a.u.str.s, b.u.str.s, n);   /* UTF-8 order is code point order */
        *order = c ? (c > 0 ? 1 : -1) : (a.u.str.len > b.u.str.len) - (a.u.str.len < b.u.str.len);
        return true;
    }
    if (a.kind == JV_LIST && b.kind == JV_LIST && a.u.list->is_tuple == b.u.list->is_tuple) {
        size_t n = a.u.list->count < b.u.list->count ? a.u.list->count : b.u.list->count;
        for (size_t i = 0; i < n; i++) {
            if (jv_equal(a.u.list->items[i], b.u.list->items[i])) continue;
            return jv_compare(a.u.list->items[i], b.u.list->items[i], order);
        }
        *order = (a.u.list->count > b.u.list->count) - (a.u.list->count < b.u.list->count);
        return true;
    }
    return false;
}

const char *jv_type_name(jv v) {
    static const char *names[] = {"undefined", "NoneType", "bool", "int", "float", "str",
                                  "list", "dict", "macro", "function", "method"};
    if (v.kind == JV_DICT && v.u.dict->is_namespace) return "namespace";
    return names[v.kind];
}

/* ---- str() ------------------------------------------------------------------------ */

/* Python's repr of a float: the shortest digits that read back the same,
 * fixed notation for exponents -4 to 15 (always with a ".0" or a fraction),
 * else d.ddde+XX. */
static void print_float(jstr *out, double f) {
    char buf[48], digits[24], text[400];
    if (isnan(f)) {
        js_puts(out, "nan");
        return;
    }
    if (isinf(f)) {
        js_puts(out, f > 0 ? "inf" : "-inf");
        return;
    }
    for (int n = 1; n <= 17; n++) {
        snprintf(buf, sizeof buf, "%.*e", n - 1, f);
        if (strtod(buf, NULL) == f) break;
    }
    const char *p = buf;
    bool negative = *p == '-';
    if (negative) p++;
    size_t nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = '\0';
    int exp = atoi(p + 1);
    size_t o = 0;
    if (negative) text[o++] = '-';
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            o += (size_t)snprintf(text + o, sizeof text - o, "0.");
            for (int i = 0; i < -exp - 1; i++) text[o++] = '0';
            o += (size_t)snprintf(text + o, sizeof text - o, "%s", digits);
        } else {
            for (int i = 0; i <= exp; i++) text[o++] = (size_t)i < nd ? digits[i] : '0';
            text[o++] = '.';
            if ((size_t)exp + 1 < nd) o += (size_t)snprintf(text + o, sizeof text - o, "%s",
                                                            digits + exp + 1);
            else text[o++] = '0';
        }
        text[o] = '\0';
    } else {
        snprintf(text + o, sizeof text - o, "%c%s%s%se%c%02d", digits[0], nd > 1 ? "." : "",
                 nd > 1 ? digits + 1 : "", "", exp < 0 ? '-' : '+', abs(exp));
    }
    js_puts(out, text);
}

/* Python's str.isprintable() of one code point: not a control, format,
 * surrogate, private-use, unassigned or separator character (but ' '). */
static bool printable(uint32_t c) {
    if (c == ' ') return true;
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO: case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP: case UTF8PROC_CATEGORY_ZS: return false;
    default: return true;
    }
}

static uint32_t next_code_point(const char *s, size_t n, size_t *i);

/* repr() of a string: Python picks single quotes unless the text holds ' and
 * no "; \n \r \t, and \xhh, \uhhhh or \Uhhhhhhhh for what is not printable. */
static void repr_string(jstr *out, const char *s, size_t n) {
    bool has_single = memchr(s, '\'', n) != NULL, has_double = memchr(s, '"', n) != NULL;
    char q = has_single && !has_double ? '"' : '\'';
    js_append(out, &q, 1);
    for (size_t i = 0; i < n;) {
        size_t at = i;
        uint32_t c = next_code_point(s, n, &i);
        char esc[16];
        if (c == (uint32_t)q || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            js_append(out, esc, 2);
        } else if (c == '\n') js_puts(out, "\\n");
        else if (c == '\r') js_puts(out, "\\r");
        else if (c == '\t') js_puts(out, "\\t");
        else if (!printable(c)) {
            snprintf(esc, sizeof esc, c < 0x100 ? "\\x%02x" : c < 0x10000 ? "\\u%04x" : "\\U%08x",
                     (unsigned)c);
            js_puts(out, esc);
        } else js_append(out, s + at, i - at);
    }
    js_append(out, &q, 1);
}

static void print_repr(jstr *out, jv v) {
    if (v.kind == JV_STRING) repr_string(out, v.u.str.s, v.u.str.len);
    else if (v.kind == JV_UNDEFINED) js_puts(out, "Undefined");   /* repr(Undefined) */
    else jv_print(out, v);
}

void jv_print(jstr *out, jv v) {
    char buf[32];
    switch (v.kind) {
    case JV_UNDEFINED: return;
    case JV_NONE: js_puts(out, "None"); return;
    case JV_BOOL: js_puts(out, v.u.b ? "True" : "False"); return;
    case JV_INT:
        snprintf(buf, sizeof buf, "%lld", (long long)v.u.i);
        js_puts(out, buf);
        return;
    case JV_FLOAT: print_float(out, v.u.f); return;
    case JV_STRING: js_append(out, v.u.str.s, v.u.str.len); return;
    case JV_LIST: {
        bool tuple = v.u.list->is_tuple;
        js_puts(out, tuple ? "(" : "[");
        for (size_t i = 0; i < v.u.list->count; i++) {
            if (i) js_puts(out, ", ");
            print_repr(out, v.u.list->items[i]);
        }
        js_puts(out, tuple ? (v.u.list->count == 1 ? ",)" : ")") : "]");
        return;
    }
    case JV_DICT:
        if (v.u.dict->is_namespace) {
            js_puts(out, "<Namespace>");
            return;
        }
        js_puts(out, "{");
        for (size_t i = 0; i < v.u.dict->count; i++) {
            if (i) js_puts(out, ", ");
            print_repr(out, v.u.dict->keys[i]);
            js_puts(out, ": ");
            print_repr(out, v.u.dict->values[i]);
        }
        js_puts(out, "}");
        return;
    case JV_MACRO: js_puts(out, "<Macro>"); return;
    default: js_puts(out, "<function>"); return;
    }
}

/* ---- json.dumps --------------------------------------------------------------------- */

/* One code point of UTF-8 text at s[*i] (advanced past it); a byte that
 * starts no valid sequence stands for itself. */
static uint32_t next_code_point(const char *s, size_t n, size_t *i) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t len = utf8proc_iterate((const utf8proc_uint8_t *)s + *i,
                                            (utf8proc_ssize_t)(n - *i), &cp);
    if (len < 1) {
        cp = (unsigned char)s[*i];
        len = 1;
    }
    *i += (size_t)len;
    return (uint32_t)cp;
}

/* A string as json.dumps writes it: ", \ and the C0 controls escaped; with
 * ensure_ascii, everything outside ' '..'~' as \uXXXX (UTF-16 pairs above
 * the BMP), DEL included. */
static void json_string(jstr *out, const char *s, size_t n, bool ensure_ascii) {
    js_puts(out, "\"");
    for (size_t i = 0; i < n;) {
        size_t at = i;
        uint32_t c = next_code_point(s, n, &i);
        char esc[16];
        if (c == '"') js_puts(out, "\\\"");
        else if (c == '\\') js_puts(out, "\\\\");
        else if (c == '\n') js_puts(out, "\\n");
        else if (c == '\r') js_puts(out, "\\r");
        else if (c == '\t') js_puts(out, "\\t");
        else if (c == '\b') js_puts(out, "\\b");
        else if (c == '\f') js_puts(out, "\\f");
        else if (c < 0x20 || (ensure_ascii && c == 0x7F)) {
            snprintf(esc, sizeof esc, "\\u%04x", (unsigned)c);
            js_puts(out, esc);
        } else if (ensure_ascii && c > 0x7F) {
            if (c > 0xFFFF) {
                uint32_t v = c - 0x10000;
                snprintf(esc, sizeof esc, "\\u%04x\\u%04x", (unsigned)(0xD800 + (v >> 10)),
                         (unsigned)(0xDC00 + (v & 0x3FF)));
            } else {
                snprintf(esc, sizeof esc, "\\u%04x", (unsigned)c);
            }
            js_puts(out, esc);
        } else {
            js_append(out, s + at, i - at);
        }
    }
    js_puts(out, "\"");
}

static void newline(jstr *out, const jv_json_style *st, int depth) {
    js_puts(out, "\n");
    for (int i = 0; i < depth; i++) js_append(out, st->indent, st->indent_len);
}

static int key_order(const void *a, const void *b) {
    const jv *x = *(const jv *const *)a, *y = *(const jv *const *)b;
    int o = 0;
    jv_compare(*x, *y, &o);
    return o;
}

static bool tojson_at(jstr *out, jv v, const jv_json_style *st, int depth) {
    char buf[32];
    switch (v.kind) {
    case JV_UNDEFINED: return false;   /* json.dumps raises on Jinja2's Undefined */
    case JV_NONE: js_puts(out, "null"); return true;
    case JV_BOOL: js_puts(out, v.u.b ? "true" : "false"); return true;
    case JV_INT:
        snprintf(buf, sizeof buf, "%lld", (long long)v.u.i);
        js_puts(out, buf);
        return true;
    case JV_FLOAT:
        if (isnan(v.u.f)) js_puts(out, "NaN");
        else if (isinf(v.u.f)) js_puts(out, v.u.f > 0 ? "Infinity" : "-Infinity");
        else print_float(out, v.u.f);
        return true;
    case JV_STRING: json_string(out, v.u.str.s, v.u.str.len, st->ensure_ascii); return true;
    case JV_LIST: {
        jlist *l = v.u.list;
        if (!l->count) {
            js_puts(out, "[]");
            return true;
        }
        js_puts(out, "[");
        for (size_t i = 0; i < l->count; i++) {
            if (i) js_append(out, st->item_sep, st->item_sep_len);
            if (st->indent) newline(out, st, depth + 1);
            if (!tojson_at(out, l->items[i], st, depth + 1)) return false;
        }
        if (st->indent) newline(out, st, depth);
        js_puts(out, "]");
        return true;
    }
    case JV_DICT: {
        jdict *d = v.u.dict;
        if (d->is_namespace) return false;   /* json.dumps raises on a Namespace */
        if (!d->count) {
            js_puts(out, "{}");
            return true;
        }
        const jv **keys = ja_alloc(out->arena, d->count * sizeof *keys);
        if (!keys) return false;
        for (size_t i = 0; i < d->count; i++) keys[i] = &d->keys[i];
        if (st->sort_keys) qsort(keys, d->count, sizeof *keys, key_order);
        js_puts(out, "{");
        for (size_t i = 0; i < d->count; i++) {
            if (i) js_append(out, st->item_sep, st->item_sep_len);
            if (st->indent) newline(out, st, depth + 1);
            jv k = *keys[i];
            if (k.kind == JV_STRING) {
                json_string(out, k.u.str.s, k.u.str.len, st->ensure_ascii);
            } else {   /* json.dumps turns int, float, bool and None keys into strings */
                jstr key = {.arena = out->arena};
                jv_json_style plain = {.item_sep = ", ", .item_sep_len = 2};
                if (!tojson_at(&key, k, &plain, 0)) return false;
                json_string(out, key.data ? key.data : "", key.len, st->ensure_ascii);
            }
            js_append(out, st->key_sep, st->key_sep_len);
            if (!tojson_at(out, *jd_get(d, k), st, depth + 1)) return false;
        }
        if (st->indent) newline(out, st, depth);
        js_puts(out, "}");
        return true;
    }
    default: return false;
    }
}

bool jv_tojson(jstr *out, jv v, const jv_json_style *style) {
    jv_json_style st = *style;
    if (!st.item_sep) {   /* json.dumps' default separators */
        st.item_sep = st.indent ? "," : ", ";
        st.item_sep_len = strlen(st.item_sep);
    }
    if (!st.key_sep) {
        st.key_sep = ": ";
        st.key_sep_len = 2;
    }
    return tojson_at(out, v, &st, 0);
}

/* The number tokens of a JSON text in document order, which cJSON drops
 * (it keeps one double): its tree is in that order, so the k-th number node
 * is the k-th token. */
typedef struct {
    const char **nums;
    size_t count, next;
    char *why;   /* the reason a value cannot be held; why[0] stays 0 on bad syntax */
    size_t why_size;
} json_scan;

static bool scan_numbers(jarena *a, const char *json, json_scan *sc) {
    size_t cap = 0;
    for (const char *p = json; *p;) {
        if (*p == '"') {   /* skip the string, its escaped quotes too */
            for (p++; *p && *p != '"'; p++)
                if (*p == '\\' && !*++p) break;
            if (*p) p++;
        } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
            if (sc->count == cap) {
                cap = cap ? 2 * cap : 64;
                const char **grown = ja_alloc(a, cap * sizeof *grown);
                if (!grown) return false;
                if (sc->count) memcpy(grown, sc->nums, sc->count * sizeof *grown);
                sc->nums = grown;
            }
            sc->nums[sc->count++] = p;
            while (*p && strchr("0123456789+-.eE", *p)) p++;
        } else {
            p++;
        }
    }
    return true;
}

/* Python's json reads 3 as an int and 3.0, 3e0 or -0.0 as a float; an int
 * has no bound there, and past int64 here it is refused, not rounded. */
static jv json_number(const cJSON *j, json_scan *sc, bool *ok) {
    const char *t = sc->next < sc->count ? sc->nums[sc->next++] : NULL;
    size_t n = t ? strspn(t, "0123456789+-.eE") : 0;
    if (!t || memchr(t, '.', n) || memchr(t, 'e', n) || memchr(t, 'E', n))
        return jv_float(j->valuedouble);
    errno = 0;
    long long i = strtoll(t, NULL, 10);
    if (errno == ERANGE) {
        snprintf(sc->why, sc->why_size, "the integer %.*s is past the 64-bit integers a "
                 "template may use: write it as a string or a float", (int)(n > 40 ? 40 : n), t);
        *ok = false;
    }
    return jv_int((int64_t)i);
}

static jv from_cjson(jarena *a, const cJSON *j, json_scan *sc, bool *ok) {
    if (cJSON_IsNull(j)) return jv_none();
    if (cJSON_IsBool(j)) return jv_bool(cJSON_IsTrue(j));
    if (cJSON_IsNumber(j)) return json_number(j, sc, ok);
    if (cJSON_IsString(j)) {
        const char *s = ja_strndup(a, j->valuestring, strlen(j->valuestring));
        return jv_string(s, s ? strlen(s) : 0);
    }
    if (cJSON_IsArray(j)) {
        jv l = jv_new_list(a);
        const cJSON *e;
        cJSON_ArrayForEach(e, j) jl_push(a, l.u.list, from_cjson(a, e, sc, ok));
        return l;
    }
    jv d = jv_new_dict(a);
    const cJSON *e;
    cJSON_ArrayForEach(e, j) {
        const char *k = ja_strndup(a, e->string, strlen(e->string));
        jd_set(a, d.u.dict, jv_string(k, k ? strlen(k) : 0), from_cjson(a, e, sc, ok));
    }
    return d;
}

bool jv_from_json(jarena *a, const char *json, jv *out, char *why, size_t why_size) {
    json_scan sc = {.why = why, .why_size = why_size};
    why[0] = '\0';
    cJSON *j = cJSON_Parse(json);
    if (!j) return false;
    long nul = tl_json_nul_escape(json);   /* cJSON cuts a string there */
    if (nul >= 0)
        snprintf(why, why_size, "a string holds \\u0000 (byte %ld), which tinyllm's JSON reader "
                 "would cut the string at: remove it", nul);
    bool ok = nul < 0 && scan_numbers(a, json, &sc);
    if (ok) *out = from_cjson(a, j, &sc, &ok);
    cJSON_Delete(j);
    return ok && !a->failed;
}
