/* jinja_builtins.c: the filters, tests, methods and global functions chat
 * templates use, with Jinja2's and Python's semantics (jinja2/filters.py,
 * tests.py; str, list and dict methods; transformers' raise_exception,
 * strftime_now and tojson). A name outside these tables fails the render,
 * naming it: nothing is silently approximated.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <utf8proc.h>

#include "jinja_internal.h"
#include "tinyllm/tensor.h"

/* ---- helpers --------------------------------------------------------------------- */

static bool need_string(jctx *x, jv v, const char *what, int line) {
    if (v.kind == JV_STRING) return true;
    return jx_fail(x, line, "%s needs a string, not %s", what, jv_type_name(v));
}

/* Rounds the non-negative decimal number whole.frac half to even at 10^k
 * (k >= 1) and writes the integer it gives, in digits, to out (of at least
 * strlen(whole) + k + 2 bytes). */
static void round_decimal(const char *whole, const char *frac, int64_t k, char *out) {
    size_t n = strlen(whole);
    if ((uint64_t)k > n) {   /* all of it is below half of 10^k */
        strcpy(out, "0");
        return;
    }
    size_t keep = n - (size_t)k;
    const char *dropped = whole + keep;
    bool rest = false;   /* a nonzero digit after the first dropped one */
    for (const char *c = dropped + 1; *c && !rest; c++) rest = *c != '0';
    for (const char *c = frac; *c && !rest; c++) rest = *c != '0';
    bool odd = keep > 0 && (whole[keep - 1] - '0') % 2 == 1;
    bool up = *dropped > '5' || (*dropped == '5' && (rest || odd));
    memcpy(out + 1, whole, keep);   /* out[0]: room for a carry */
    out[0] = '0';
    for (size_t i = keep; up && i > 0; i--) {
        up = out[i] == '9';
        out[i] = up ? '0' : (char)(out[i] + 1);
    }
    if (up) out[0] = '1';
    memset(out + 1 + keep, '0', (size_t)k);
    out[1 + keep + (size_t)k] = '\0';
    size_t lead = strspn(out, "0");   /* no leading zeros, but one digit at least */
    if (!out[lead]) lead--;
    memmove(out, out + lead, strlen(out + lead) + 1);
}

/* Python's round(v, digits): half to even, on the value as stored (round(2.675, 2)
 * is 2.67: the double is below 2.675); an integer stays an integer. Both round
 * the exact decimal digits of the value (printf gives a double's), once. */
static bool python_round(jctx *x, jv v, int64_t digits, int line, jv *out) {
    char text[1700], rounded[1700];
    if (v.kind != JV_FLOAT) {   /* an int (or a bool, as Python's int) */
        int64_t i = v.kind == JV_BOOL ? v.u.b : v.u.i;
        if (digits >= 0) {
            *out = jv_int(i);
            return true;
        }
        snprintf(text, sizeof text, "%llu",
                 i < 0 ? 0ULL - (unsigned long long)i : (unsigned long long)i);
        round_decimal(text, "", digits < -40 ? 40 : -digits, rounded);
        errno = 0;
        unsigned long long m = strtoull(rounded, NULL, 10);   /* the magnitude */
        if (errno == ERANGE || m > (i < 0 ? 1ULL << 63 : (1ULL << 63) - 1))
            return jx_fail(x, line, "integer overflow in round: the result is past the 64-bit "
                           "integers a template may use here (Python's have no bound)");
        *out = jv_int(i < 0 ? (int64_t)(0ULL - m) : (int64_t)m);
        return true;
    }
    double d = v.u.f;
    if (!isfinite(d) || digits > 1100) {
        *out = jv_float(d);
        return true;
    }
    if (digits >= 0) {
        snprintf(text, sizeof text, "%.*f", (int)digits, d);
        *out = jv_float(strtod(text, NULL));
        return true;
    }
    snprintf(text, sizeof text, "%.1100f", fabs(d));   /* every digit of a double */
    char *point = strchr(text, '.');
    *point = '\0';
    round_decimal(text, point + 1, digits < -400 ? 400 : -digits, rounded + 1);
    rounded[0] = '-';
    *out = jv_float(strtod(signbit(d) ? rounded : rounded + 1, NULL));
    return true;
}

static jv str_of(jctx *x, jv v) {
    if (v.kind == JV_STRING) return v;
    jstr s = {.arena = jx_arena(x)};
    jv_print(&s, v);
    return jv_string(s.data ? s.data : "", s.len);
}

static jv from_jstr(jstr *s) { return jv_string(s->data ? s->data : "", s->len); }

static int decode(const char *s, size_t n, size_t i, int32_t *cp) {
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
                                          (utf8proc_ssize_t)(n - i), cp);
    if (k <= 0) {
        *cp = (unsigned char)s[i];
        return 1;
    }
    return (int)k;
}

/* Python's str.isspace for one code point. */
static bool py_space(int32_t c) {
    if (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F) || c == 0x85) return true;
    if (c < 0x80) return false;
    utf8proc_category_t k = utf8proc_category(c);
    return k == UTF8PROC_CATEGORY_ZS || k == UTF8PROC_CATEGORY_ZL || k == UTF8PROC_CATEGORY_ZP;
}

static bool in_chars(int32_t c, jv chars) {
    for (size_t i = 0; i < chars.u.str.len;) {
        int32_t d;
        i += (size_t)decode(chars.u.str.s, chars.u.str.len, i, &d);
        if (c == d) return true;
    }
    return false;
}

/* str.strip / lstrip / rstrip; chars NONE: whitespace. */
static jv strip(jv s, jv chars, bool left, bool right) {
    bool ws = chars.kind != JV_STRING;
    size_t a = 0, b = s.u.str.len;
    const char *p = s.u.str.s;
    if (left)
        while (a < b) {
            int32_t c;
            int k = decode(p, b, a, &c);
            if (!(ws ? py_space(c) : in_chars(c, chars))) break;
            a += (size_t)k;
        }
    if (right)
        while (b > a) {
            size_t q = b - 1;
            while (q > a && ((unsigned char)p[q] & 0xC0) == 0x80) q--;
            int32_t c;
            decode(p, b, q, &c);
            if (!(ws ? py_space(c) : in_chars(c, chars))) break;
            b = q;
        }
    return jv_string(p + a, b - a);
}

/* CASE_TITLE is Jinja's title filter, CASE_PY_TITLE Python's str.title(). */
typedef enum { CASE_LOWER, CASE_UPPER, CASE_CAPITALIZE, CASE_TITLE, CASE_PY_TITLE } case_kind;

static jv change_case(jctx *x, jv s, case_kind kind) {
    jstr out = {.arena = jx_arena(x)};
    bool start = true;
    size_t from = 0;   /* Jinja's title lowers item[1:]: a final sigma sees no further back */
    for (size_t i = 0; i < s.u.str.len;) {
        int32_t c, m[3];
        size_t at = i;
        i += (size_t)decode(s.u.str.s, s.u.str.len, i, &c);
        if (kind == CASE_TITLE && start) from = i;
        /* Python's capitalize: the first title-cased; Python's title: title-cased
         * after a code point that is not cased; Jinja's title: each word's first
         * upper-cased (item[0].upper()); the rest lower-cased */
        jcase to = kind == CASE_UPPER ? JCASE_UPPER
                   : kind == CASE_LOWER || !start ? JCASE_LOWER
                   : kind == CASE_CAPITALIZE || kind == CASE_PY_TITLE ? JCASE_TITLE
                                                                      : JCASE_UPPER;
        int n = jcase_map(to, s.u.str.s + from, s.u.str.len - from, at - from, i - from, c, m);
        if (kind == CASE_CAPITALIZE) start = false;
        if (kind == CASE_PY_TITLE) start = !jcase_cased(c);   /* "they're" -> "They'Re" */
        /* Jinja's title: a word starts after '-', whitespace, '(', '{', '[' or '<' */
        if (kind == CASE_TITLE) start = py_space(c) || c == '-' || c == '(' || c == '{' ||
                                        c == '[' || c == '<';
        for (int k = 0; k < n; k++) {
            utf8proc_uint8_t buf[4];
            utf8proc_ssize_t b = utf8proc_encode_char(m[k], buf);
            js_append(&out, (const char *)buf, (size_t)b);
        }
    }
    return from_jstr(&out);
}

static int64_t length_of(jv v);

/* The byte where code point `index` of s begins (s's length past its end). */
static size_t byte_of(jv s, int64_t index) {
    size_t i = 0;
    for (int64_t k = 0; k < index && i < s.u.str.len; k++) {
        i++;
        while (i < s.u.str.len && ((unsigned char)s.u.str.s[i] & 0xC0) == 0x80) i++;
    }
    return i;
}

/* str.startswith(what[, start[, end]]) and endswith: what is a string or a
 * tuple of them; start and end are code point indices, read as a slice's. */
static bool starts_or_ends(jctx *x, jv s, jv what, jv start, jv end, bool ends, int line,
                           bool *out) {
    *out = false;
    const char *name = ends ? "endswith" : "startswith";
    if (what.kind == JV_LIST) {
        for (size_t i = 0; i < what.u.list->count && !*out; i++)
            if (!starts_or_ends(x, s, what.u.list->items[i], start, end, ends, line, out))
                return false;
        return true;
    }
    if (!need_string(x, what, name, line)) return false;
    if ((start.kind != JV_NONE && start.kind != JV_INT) ||
        (end.kind != JV_NONE && end.kind != JV_INT))
        return jx_fail(x, line, "%s: start and end must be integers or none", name);
    int64_t len = length_of(s);
    int64_t a = start.kind == JV_INT ? start.u.i : 0, b = end.kind == JV_INT ? end.u.i : len;
    if (b > len) b = len;   /* CPython's ADJUST_INDICES */
    if (b < 0) b = b + len < 0 ? 0 : b + len;
    if (a < 0) a = a + len < 0 ? 0 : a + len;
    if (b - a < length_of(what)) return true;
    size_t from = byte_of(s, a), to = byte_of(s, b), n = what.u.str.len;
    *out = to - from >= n && !memcmp(s.u.str.s + (ends ? to - n : from), what.u.str.s, n);
    return true;
}

static jv split(jctx *x, jv s, jv sep, int64_t maxsplit) {
    jarena *a = jx_arena(x);
    jv list = jv_new_list(a);
    const char *p = s.u.str.s;
    size_t n = s.u.str.len, i = 0;
    int64_t splits = 0;
    if (sep.kind != JV_STRING) {   /* runs of whitespace, no empty pieces */
        while (i < n) {
            int32_t c;
            while (i < n) {
                int k = decode(p, n, i, &c);
                if (!py_space(c)) break;
                i += (size_t)k;
            }
            if (i >= n) break;
            if (maxsplit >= 0 && splits >= maxsplit) {
                jv rest = strip(jv_string(p + i, n - i), jv_none(), false, true);
                jl_push(a, list.u.list, rest);
                break;
            }
            size_t b = i;
            while (i < n) {
                int k = decode(p, n, i, &c);
                if (py_space(c)) break;
                i += (size_t)k;
            }
            jl_push(a, list.u.list, jv_string(p + b, i - b));
            splits++;
        }
        return list;
    }
    size_t b = 0;
    while (sep.u.str.len && (maxsplit < 0 || splits < maxsplit)) {
        const char *hit = memmem(p + b, n - b, sep.u.str.s, sep.u.str.len);
        if (!hit) break;
        jl_push(a, list.u.list, jv_string(p + b, (size_t)(hit - (p + b))));
        b = (size_t)(hit - p) + sep.u.str.len;
        splits++;
    }
    jl_push(a, list.u.list, jv_string(p + b, n - b));
    return list;
}

static jv replace(jctx *x, jv s, jv old, jv rep, int64_t count) {
    jstr out = {.arena = jx_arena(x)};
    size_t i = 0, n = s.u.str.len;
    int64_t done = 0;
    if (old.u.str.len == 0) {   /* Python inserts rep between characters */
        for (; i <= n && (count < 0 || done < count); done++) {
            js_append(&out, rep.u.str.s, rep.u.str.len);
            if (i == n) {
                i++;
                break;
            }
            int32_t c;
            int k = decode(s.u.str.s, n, i, &c);
            js_append(&out, s.u.str.s + i, (size_t)k);
            i += (size_t)k;
        }
        if (i <= n) js_append(&out, s.u.str.s + i, n - i);
        return from_jstr(&out);
    }
    while (i < n && (count < 0 || done < count)) {
        const char *hit = memmem(s.u.str.s + i, n - i, old.u.str.s, old.u.str.len);
        if (!hit) break;
        size_t at = (size_t)(hit - s.u.str.s);
        js_append(&out, s.u.str.s + i, at - i);
        js_append(&out, rep.u.str.s, rep.u.str.len);
        i = at + old.u.str.len;
        done++;
    }
    js_append(&out, s.u.str.s + i, n - i);
    return from_jstr(&out);
}

static jv join(jctx *x, jv list, jv sep) {
    jstr out = {.arena = jx_arena(x)};
    for (size_t i = 0; i < list.u.list->count; i++) {
        if (i) js_append(&out, sep.u.str.s, sep.u.str.len);
        jv_print(&out, list.u.list->items[i]);
    }
    return from_jstr(&out);
}

/* The items of an iterable as a list (strings by character, dicts by key). */
static bool as_list(jctx *x, jv v, const char *what, int line, jlist **out) {
    jarena *a = jx_arena(x);
    if (v.kind == JV_LIST) {
        *out = v.u.list;
        return true;
    }
    jv list = jv_new_list(a);
    if (!list.u.list) return false;
    *out = list.u.list;
    if (v.kind == JV_UNDEFINED) return true;
    if (v.kind == JV_DICT && !v.u.dict->is_namespace) {
        for (size_t i = 0; i < v.u.dict->count; i++) jl_push(a, list.u.list, v.u.dict->keys[i]);
        return true;
    }
    if (v.kind == JV_STRING) {
        for (size_t i = 0; i < v.u.str.len;) {
            int32_t c;
            int k = decode(v.u.str.s, v.u.str.len, i, &c);
            jl_push(a, list.u.list, jv_string(v.u.str.s + i, (size_t)k));
            i += (size_t)k;
        }
        return true;
    }
    return jx_fail(x, line, "%s needs a list, not %s", what, jv_type_name(v));
}

static int64_t length_of(jv v) {
    if (v.kind == JV_STRING) {
        int64_t c = 0;
        for (size_t i = 0; i < v.u.str.len; i++) c += ((unsigned char)v.u.str.s[i] & 0xC0) != 0x80;
        return c;
    }
    if (v.kind == JV_LIST) return (int64_t)v.u.list->count;
    if (v.kind == JV_DICT) return (int64_t)v.u.dict->count;
    return v.kind == JV_UNDEFINED ? 0 : -1;
}

/* A keyword argument's value, or NULL. */
static const jv *kwarg(const jv *names, const jv *values, size_t nkw, const char *name) {
    for (size_t i = 0; i < nkw; i++)
        if (!strcmp(names[i].u.str.s, name)) return &values[i];
    return NULL;
}

/* Argument i (positional) or the keyword name, else fallback. */
static jv arg(const jv *args, size_t n, size_t i, const jv *names, const jv *values, size_t nkw,
              const char *name, jv fallback) {
    if (i < n) return args[i];
    const jv *k = name ? kwarg(names, values, nkw, name) : NULL;
    return k ? *k : fallback;
}

/* obj.attribute, with dotted paths ("function.name") and integer parts. */
static jv get_attribute(jv obj, jv path) {
    if (path.kind == JV_INT) {
        if (obj.kind == JV_LIST && path.u.i >= 0 && (size_t)path.u.i < obj.u.list->count)
            return obj.u.list->items[path.u.i];
        return jv_undefined("attribute");
    }
    const char *p = path.u.str.s, *end = p + path.u.str.len;
    while (p < end) {
        const char *dot = memchr(p, '.', (size_t)(end - p));
        size_t n = dot ? (size_t)(dot - p) : (size_t)(end - p);
        if (obj.kind != JV_DICT) return jv_undefined("attribute");
        jv *v = jd_get(obj.u.dict, jv_string(p, n));
        if (!v) return jv_undefined("attribute");
        obj = *v;
        p += n + (dot ? 1 : 0);
    }
    return obj;
}

/* ---- tests ----------------------------------------------------------------------------- */

bool jb_test(jctx *x, const char *name, jv v, const jv *args, size_t n, int line, bool *out) {
    jv a = n ? args[0] : jv_undefined("the test's argument");
    int order;
    if (!strcmp(name, "defined")) *out = v.kind != JV_UNDEFINED;
    else if (!strcmp(name, "undefined")) *out = v.kind == JV_UNDEFINED;
    else if (!strcmp(name, "none")) *out = v.kind == JV_NONE;
    else if (!strcmp(name, "boolean")) *out = v.kind == JV_BOOL;
    else if (!strcmp(name, "true")) *out = v.kind == JV_BOOL && v.u.b;
    else if (!strcmp(name, "false")) *out = v.kind == JV_BOOL && !v.u.b;
    else if (!strcmp(name, "integer")) *out = v.kind == JV_INT;
    else if (!strcmp(name, "float")) *out = v.kind == JV_FLOAT;
    else if (!strcmp(name, "number"))
        *out = v.kind == JV_INT || v.kind == JV_FLOAT || v.kind == JV_BOOL;
    else if (!strcmp(name, "string")) *out = v.kind == JV_STRING;
    else if (!strcmp(name, "mapping")) *out = v.kind == JV_DICT;
    /* jinja2's Undefined iterates as empty, has a length and can be called
     * (Gemma 3's template asks `content is iterable` of an absent content) */
    else if (!strcmp(name, "iterable") || !strcmp(name, "sequence"))
        *out = v.kind == JV_LIST || v.kind == JV_DICT || v.kind == JV_STRING ||
               v.kind == JV_UNDEFINED;
    else if (!strcmp(name, "callable"))
        *out = v.kind == JV_MACRO || v.kind == JV_BUILTIN || v.kind == JV_METHOD ||
               v.kind == JV_UNDEFINED;
    else if (!strcmp(name, "odd") || !strcmp(name, "even")) {
        if (v.kind != JV_INT) return jx_fail(x, line, "'%s' needs an integer", name);
        *out = (v.u.i % 2 != 0) == (name[0] == 'o');
    } else if (!strcmp(name, "divisibleby")) {
        if (v.kind != JV_INT || a.kind != JV_INT || a.u.i == 0)
            return jx_fail(x, line, "'divisibleby' needs two integers, the second not 0");
        *out = v.u.i % a.u.i == 0;
    } else if (!strcmp(name, "eq") || !strcmp(name, "equalto") || !strcmp(name, "==") ||
               !strcmp(name, "sameas")) {
        *out = jv_equal(v, a) && (strcmp(name, "sameas") || v.kind == a.kind);
    } else if (!strcmp(name, "ne") || !strcmp(name, "!=")) {
        *out = !jv_equal(v, a);
    } else if (!strcmp(name, "lt") || !strcmp(name, "lessthan") || !strcmp(name, "gt") ||
               !strcmp(name, "greaterthan") || !strcmp(name, "le") || !strcmp(name, "ge")) {
        if (!jv_compare(v, a, &order))
            return jx_fail(x, line, "'%s' cannot compare %s and %s", name, jv_type_name(v),
                           jv_type_name(a));
        *out = name[0] == 'l' ? (name[1] == 'e' ? order <= 0 : order < 0)
                              : (name[1] == 'e' ? order >= 0 : order > 0);
    } else if (!strcmp(name, "in")) {
        if (a.kind == JV_STRING && v.kind == JV_STRING)
            *out = memmem(a.u.str.s, a.u.str.len, v.u.str.s, v.u.str.len) != NULL || !v.u.str.len;
        else if (a.kind == JV_LIST) {
            *out = false;
            for (size_t i = 0; i < a.u.list->count && !*out; i++)
                *out = jv_equal(v, a.u.list->items[i]);
        } else if (a.kind == JV_DICT) *out = jd_get(a.u.dict, v) != NULL;
        else return jx_fail(x, line, "'in' needs a string, list or dict");
    } else if (!strcmp(name, "lower") || !strcmp(name, "upper")) {
        /* Python's islower()/isupper(): no cased character of the other case,
         * and at least one cased character ('123' is neither) */
        if (!need_string(x, v, name, line)) return false;
        jv lowered = change_case(x, v, CASE_LOWER), raised = change_case(x, v, CASE_UPPER);
        bool is_lower = jv_equal(lowered, v), is_upper = jv_equal(raised, v);
        *out = name[0] == 'l' ? is_lower && !is_upper : is_upper && !is_lower;
    } else {
        return jx_fail(x, line,
                       "unsupported construct: the test 'is %s' (tinyllm's Jinja has defined, "
                       "undefined, none, boolean, true, false, integer, float, number, string, "
                       "mapping, iterable, sequence, callable, odd, even, divisibleby, eq, ne, "
                       "lt, le, gt, ge, in, sameas, lower, upper)",
                       name);
    }
    return true;
}

/* ---- filters -------------------------------------------------------------------------------- */

static int sort_key_case_insensitive;
static bool sort_reverse;   /* Python's reverse=True: ties keep their order */
static jv sort_attribute;
static bool sort_failed;
static jctx *sort_ctx;   /* the render, for the lowered keys' memory */

static jv sort_key(jv v) {
    if (sort_attribute.kind != JV_UNDEFINED) v = get_attribute(v, sort_attribute);
    return v;
}

static int sort_cmp(const void *pa, const void *pb) {
    jv a = sort_key(*(const jv *)pa), b = sort_key(*(const jv *)pb);
    int order = 0;
    /* Jinja2's ignore_case: str.lower() of both, not ASCII folding ('ß' < 'Ö') */
    if (sort_key_case_insensitive && a.kind == JV_STRING && b.kind == JV_STRING) {
        a = change_case(sort_ctx, a, CASE_LOWER);
        b = change_case(sort_ctx, b, CASE_LOWER);
    }
    if (!jv_compare(a, b, &order)) sort_failed = true;
    return sort_reverse ? -order : order;
}

/* A stable sort (merge sort over qsort's comparator), as Python's sorted(). */
static void stable_sort(jv *items, size_t n, jv *tmp) {
    if (n < 2) return;
    size_t h = n / 2;
    stable_sort(items, h, tmp);
    stable_sort(items + h, n - h, tmp);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = sort_cmp(&items[j], &items[i]) < 0 ? items[j++] : items[i++];
    while (i < h) tmp[k++] = items[i++];
    while (j < n) tmp[k++] = items[j++];
    memcpy(items, tmp, n * sizeof *items);
}

static bool sorted(jctx *x, jlist *in, bool reverse, bool case_sensitive, jv attribute, int line,
                   jv *out) {
    jarena *a = jx_arena(x);
    *out = jv_new_list(a);
    for (size_t i = 0; i < in->count; i++) jl_push(a, out->u.list, in->items[i]);
    jv *tmp = ja_alloc(a, (in->count + 1) * sizeof *tmp);
    if (!tmp || !out->u.list) return false;
    sort_key_case_insensitive = !case_sensitive;
    sort_attribute = attribute;
    sort_ctx = x;
    sort_failed = false;
    sort_reverse = reverse;
    stable_sort(out->u.list->items, out->u.list->count, tmp);
    if (sort_failed) return jx_fail(x, line, "sort: the items cannot be ordered");
    return true;
}

static bool select_items(jctx *x, jv value, const jv *args, size_t n, bool by_attr, bool keep,
                         int line, jv *out) {
    jlist *items;
    if (!as_list(x, value, by_attr ? "selectattr" : "select", line, &items)) return false;
    size_t first = by_attr ? 1 : 0;
    if (by_attr && (n < 1 || (args[0].kind != JV_STRING && args[0].kind != JV_INT)))
        return jx_fail(x, line, "selectattr / rejectattr need an attribute name");
    *out = jv_new_list(jx_arena(x));
    for (size_t i = 0; i < items->count; i++) {
        jv v = by_attr ? get_attribute(items->items[i], args[0]) : items->items[i];
        bool r;
        if (n > first) {
            if (args[first].kind != JV_STRING)
                return jx_fail(x, line, "a test name must be a string");
            if (!jb_test(x, args[first].u.str.s, v, args + first + 1, n - first - 1, line, &r))
                return false;
        } else {
            r = jv_truthy(v);
        }
        if (r == keep) jl_push(jx_arena(x), out->u.list, items->items[i]);
    }
    return true;
}

static jv escape_html(jctx *x, jv s) {
    jstr out = {.arena = jx_arena(x)};
    for (size_t i = 0; i < s.u.str.len; i++) {
        char c = s.u.str.s[i];
        if (c == '&') js_puts(&out, "&amp;");
        else if (c == '<') js_puts(&out, "&lt;");
        else if (c == '>') js_puts(&out, "&gt;");
        else if (c == '"') js_puts(&out, "&#34;");
        else if (c == '\'') js_puts(&out, "&#39;");
        else js_append(&out, &c, 1);
    }
    return from_jstr(&out);
}

/* The length of a line break of Python's str.splitlines() at p[0..n), or 0:
 * \n, \r\n, \r, \v, \f, \x1c-\x1e, U+0085, U+2028, U+2029. */
static size_t line_break_at(const char *p, size_t n) {
    unsigned char c = (unsigned char)p[0];
    if (c == '\r') return n > 1 && p[1] == '\n' ? 2 : 1;
    if (c == '\n' || c == '\v' || c == '\f' || (c >= 0x1C && c <= 0x1E)) return 1;
    if (c == 0xC2 && n > 1 && (unsigned char)p[1] == 0x85) return 2;
    if (c == 0xE2 && n > 2 && (unsigned char)p[1] == 0x80 &&
        ((unsigned char)p[2] == 0xA8 || (unsigned char)p[2] == 0xA9))
        return 3;
    return 0;
}

/* Jinja2's indent: the lines of s + "\n" (splitlines), joined by "\n", each
 * after the first indented unless empty (every one when blank), the first
 * too when first. */
static jv indent(jctx *x, jv s, jv width, bool first, bool blank) {
    jstr pad = {.arena = jx_arena(x)}, out = {.arena = jx_arena(x)};
    if (width.kind == JV_STRING) js_append(&pad, width.u.str.s, width.u.str.len);
    else for (int64_t i = 0; i < (width.kind == JV_INT ? width.u.i : 4); i++) js_puts(&pad, " ");
    if (first) js_append(&out, pad.data, pad.len);
    jstr text = {.arena = jx_arena(x)};   /* the quirk: a newline added before splitting */
    js_append(&text, s.u.str.s, s.u.str.len);
    js_puts(&text, "\n");
    const char *p = text.data;
    size_t n = text.len;
    bool first_line = true;
    for (size_t start = 0; start < n;) {
        size_t end = start, brk = 0;
        while (end < n && (brk = line_break_at(p + end, n - end)) == 0) end++;
        if (!first_line) {
            js_puts(&out, "\n");
            if (blank || end > start) js_append(&out, pad.data, pad.len);
        }
        js_append(&out, p + start, end - start);
        first_line = false;
        start = end + brk;
    }
    return from_jstr(&out);
}

/* int(d) as Python's, truncated toward zero: NaN has no integer (the filter's
 * default, as Jinja's do_int gives on a ValueError); past 64 bits, an error. */
static bool int_of_double(jctx *x, double d, jv fallback, int line, jv *out) {
    if (isnan(d)) *out = fallback;
    else if (!(fabs(d) < 9223372036854775808.0))
        return jx_fail(x, line, "int of %g: past the 64-bit integers a template may use here "
                       "(Python's have no bound)", d);
    else *out = jv_int((int64_t)d);
    return true;
}

/* The text of a number as Python's int() and float() read it, in place:
 * surrounding whitespace dropped, an underscore between two digits dropped;
 * false for what Python refuses and C would take (hex, "0x10", or an
 * underscore elsewhere). */
static bool python_number_text(char *buf) {
    char *start = buf;
    while (*start && isspace((unsigned char)*start)) start++;
    size_t n = strlen(start);
    while (n && isspace((unsigned char)start[n - 1])) n--;
    char *w = buf;
    for (size_t i = 0; i < n; i++) {
        char c = start[i];
        if (c == 'x' || c == 'X' || c == 'p' || c == 'P') return false;
        if (c == '_') {
            if (i == 0 || i + 1 >= n || !isdigit((unsigned char)start[i - 1]) ||
                !isdigit((unsigned char)start[i + 1]))
                return false;
            continue;
        }
        *w++ = c;
    }
    *w = '\0';
    return true;
}

static bool number_of(jctx *x, jv v, bool want_float, jv fallback, int line, jv *out) {
    if (v.kind == JV_INT || v.kind == JV_BOOL) {
        int64_t i = v.kind == JV_INT ? v.u.i : v.u.b;
        *out = want_float ? jv_float((double)i) : jv_int(i);
    } else if (v.kind == JV_FLOAT) {
        if (want_float) *out = v;
        else return int_of_double(x, v.u.f, fallback, line, out);
    } else if (v.kind == JV_STRING) {
        char buf[64];
        size_t n = v.u.str.len < 63 ? v.u.str.len : 63;
        memcpy(buf, v.u.str.s, n);
        buf[n] = '\0';
        char *end;
        if (v.u.str.len > 63 || !python_number_text(buf)) {
            *out = fallback;
            return true;
        }
        if (!want_float) {   /* int("9007199254740993") is exact: digits first, as Python's */
            errno = 0;
            long long i = strtoll(buf, &end, 10);
            while (*end == ' ') end++;
            if (end != buf && !*end && errno == ERANGE)
                return jx_fail(x, line, "int of '%s': past the 64-bit integers a template may "
                               "use here (Python's have no bound)", buf);
            if (end != buf && !*end) {
                *out = jv_int(i);
                return true;
            }
        }
        double d = strtod(buf, &end);
        while (*end == ' ') end++;
        if (end == buf || *end) *out = fallback;
        else if (want_float) *out = jv_float(d);
        else return int_of_double(x, d, fallback, line, out);
    } else {
        *out = fallback;
    }
    return true;
}

static const char *FILTERS =
    "abs, attr, capitalize, count, default (d), dictsort, escape (e), first, float, indent, "
    "int, items, join, last, length, list, lower, map, max, min, reject, rejectattr, replace, "
    "reverse, round, safe, select, selectattr, sort, string, sum, title, tojson, trim, unique, "
    "upper, wordcount";

bool jb_filter(jctx *x, const char *name, jv v, const jv *args, size_t n, const jv *kw_names,
               const jv *kw_values, size_t nkw, int line, jv *out) {
    jarena *a = jx_arena(x);
#define ARG(i, kw, fallback) arg(args, n, (i), kw_names, kw_values, nkw, (kw), (fallback))
    if (!strcmp(name, "default") || !strcmp(name, "d")) {
        jv fallback = ARG(0, "default_value", jv_cstring(""));
        bool boolean = jv_truthy(ARG(1, "boolean", jv_bool(false)));
        *out = v.kind == JV_UNDEFINED || (boolean && !jv_truthy(v)) ? fallback : v;
        return true;
    }
    if (!strcmp(name, "length") || !strcmp(name, "count")) {
        int64_t len = length_of(v);
        if (len < 0) return jx_fail(x, line, "'%s' of a %s", name, jv_type_name(v));
        *out = jv_int(len);
        return true;
    }
    if (!strcmp(name, "tojson")) {   /* transformers' tojson: json.dumps with its options */
        jv_json_style st = {.ensure_ascii = jv_truthy(ARG(0, "ensure_ascii", jv_bool(false))),
                            .sort_keys = jv_truthy(ARG(3, "sort_keys", jv_bool(false)))};
        jv ind = ARG(1, "indent", jv_none()), seps = ARG(2, "separators", jv_none());
        if (ind.kind == JV_STRING) {
            st.indent = ind.u.str.s;
            st.indent_len = ind.u.str.len;
        } else if (ind.kind == JV_INT || ind.kind == JV_BOOL) {
            int64_t width = ind.kind == JV_INT ? ind.u.i : ind.u.b;
            if (width > 1024) return jx_fail(x, line, "tojson: indent %lld is past 1024",
                                             (long long)width);
            st.indent_len = width > 0 ? (size_t)width : 0;
            char *spaces = ja_alloc(a, st.indent_len + 1);
            if (!spaces) return false;
            memset(spaces, ' ', st.indent_len);
            st.indent = spaces;
        } else if (ind.kind != JV_NONE) {
            return jx_fail(x, line, "tojson: indent is a %s; it must be a number of spaces or "
                           "a string", jv_type_name(ind));
        }
        if (seps.kind == JV_LIST && seps.u.list->count == 2 &&
            seps.u.list->items[0].kind == JV_STRING && seps.u.list->items[1].kind == JV_STRING) {
            st.item_sep = seps.u.list->items[0].u.str.s;
            st.item_sep_len = seps.u.list->items[0].u.str.len;
            st.key_sep = seps.u.list->items[1].u.str.s;
            st.key_sep_len = seps.u.list->items[1].u.str.len;
        } else if (seps.kind != JV_NONE) {
            return jx_fail(x, line, "tojson: separators must be two strings, (item, key), as "
                           "(',', ':')");
        }
        jstr s = {.arena = a};
        if (!jv_tojson(&s, v, &st))
            return jx_fail(x, line, "tojson: a %s is not JSON or holds what is not (an "
                           "undefined value, a macro)", jv_type_name(v));
        *out = from_jstr(&s);
        return true;
    }
    if (!strcmp(name, "safe")) {
        *out = v;
        return true;
    }
    if (!strcmp(name, "string")) {
        *out = str_of(x, v);
        return true;
    }
    if (!strcmp(name, "trim") || !strcmp(name, "upper") || !strcmp(name, "lower") ||
        !strcmp(name, "capitalize") || !strcmp(name, "title") || !strcmp(name, "escape") ||
        !strcmp(name, "e") || !strcmp(name, "replace") || !strcmp(name, "indent") ||
        !strcmp(name, "wordcount")) {
        jv s = str_of(x, v);
        if (!strcmp(name, "trim")) *out = strip(s, ARG(0, "chars", jv_none()), true, true);
        else if (!strcmp(name, "upper")) *out = change_case(x, s, CASE_UPPER);
        else if (!strcmp(name, "lower")) *out = change_case(x, s, CASE_LOWER);
        else if (!strcmp(name, "capitalize")) *out = change_case(x, s, CASE_CAPITALIZE);
        else if (!strcmp(name, "title")) *out = change_case(x, s, CASE_TITLE);
        else if (!strcmp(name, "replace")) {
            jv old = ARG(0, "old", jv_none()), rep = ARG(1, "new", jv_none());
            jv count = ARG(2, "count", jv_none());
            if (old.kind != JV_STRING || rep.kind != JV_STRING)
                return jx_fail(x, line, "replace needs two strings");
            *out = replace(x, s, old, rep, count.kind == JV_INT ? count.u.i : -1);
        } else if (!strcmp(name, "indent")) {
            *out = indent(x, s, ARG(0, "width", jv_int(4)),
                          jv_truthy(ARG(1, "first", jv_bool(false))),
                          jv_truthy(ARG(2, "blank", jv_bool(false))));
        } else if (!strcmp(name, "wordcount")) {   /* runs of Python's \w */
            int64_t words = 0;
            bool in_word = false;
            for (size_t i = 0; i < s.u.str.len;) {
                int32_t c;
                i += (size_t)decode(s.u.str.s, s.u.str.len, i, &c);
                utf8proc_category_t k = utf8proc_category(c);
                bool word = c == '_' || (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO) ||
                            (k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO);
                words += word && !in_word;
                in_word = word;
            }
            *out = jv_int(words);
        } else {
            *out = escape_html(x, s);
        }
        return true;
    }
    if (!strcmp(name, "int") || !strcmp(name, "float"))
        return number_of(x, v, name[0] == 'f',
                         ARG(0, "default", name[0] == 'f' ? jv_float(0) : jv_int(0)), line, out);
    if (!strcmp(name, "abs")) {
        if (v.kind == JV_INT && v.u.i == INT64_MIN)
            return jx_fail(x, line, "integer overflow in abs: the result is past the 64-bit "
                           "integers a template may use here (Python's have no bound)");
        if (v.kind == JV_INT) *out = jv_int(v.u.i < 0 ? -v.u.i : v.u.i);
        else if (v.kind == JV_FLOAT) *out = jv_float(fabs(v.u.f));
        else return jx_fail(x, line, "abs of a %s", jv_type_name(v));
        return true;
    }
    if (!strcmp(name, "round")) {
        jv prec = ARG(0, "precision", jv_int(0)), method = ARG(1, "method", jv_cstring("common"));
        if (v.kind != JV_INT && v.kind != JV_FLOAT)
            return jx_fail(x, line, "round of a %s", jv_type_name(v));
        int64_t digits = prec.kind == JV_INT ? prec.u.i : 0;
        const char *m = method.kind == JV_STRING ? method.u.str.s : "common";
        if (strcmp(m, "ceil") != 0 && strcmp(m, "floor") != 0)   /* "common": Python's round */
            return python_round(x, v, digits, line, out);
        double d = v.kind == JV_INT ? (double)v.u.i : v.u.f;
        double scale = pow(10, (double)digits);
        *out = jv_float(!strcmp(m, "ceil") ? ceil(d * scale) / scale : floor(d * scale) / scale);
        return true;
    }
    if (!strcmp(name, "attr")) {
        jv key = ARG(0, "name", jv_none());
        if (key.kind != JV_STRING) return jx_fail(x, line, "attr needs a name");
        *out = get_attribute(v, key);
        return true;
    }
    if (!strcmp(name, "items")) {
        if (v.kind == JV_UNDEFINED) {
            *out = jv_new_list(a);
            return true;
        }
        if (v.kind != JV_DICT) return jx_fail(x, line, "items of a %s", jv_type_name(v));
        *out = jv_new_list(a);
        for (size_t i = 0; i < v.u.dict->count; i++) {
            jv pair = jv_new_list(a);   /* (key, value), a tuple as dict.items() gives */
            if (!pair.u.list) return false;
            pair.u.list->is_tuple = true;
            jl_push(a, pair.u.list, v.u.dict->keys[i]);
            jl_push(a, pair.u.list, v.u.dict->values[i]);
            jl_push(a, out->u.list, pair);
        }
        return true;
    }
    if (!strcmp(name, "dictsort")) {
        if (v.kind != JV_DICT) return jx_fail(x, line, "dictsort of a %s", jv_type_name(v));
        jv pairs;
        if (!jb_filter(x, "items", v, NULL, 0, NULL, NULL, 0, line, &pairs)) return false;
        jv by = ARG(1, "by", jv_cstring("key"));
        int index = by.kind == JV_STRING && !strcmp(by.u.str.s, "value") ? 1 : 0;
        return sorted(x, pairs.u.list, jv_truthy(ARG(2, "reverse", jv_bool(false))),
                      jv_truthy(ARG(0, "case_sensitive", jv_bool(false))), jv_int(index), line,
                      out);
    }
    jlist *items;
    if (!strcmp(name, "first") || !strcmp(name, "last")) {
        if (!as_list(x, v, name, line, &items)) return false;
        *out = items->count ? items->items[name[0] == 'f' ? 0 : items->count - 1]
                            : jv_undefined(name);
        return true;
    }
    if (!strcmp(name, "list")) {
        if (!as_list(x, v, name, line, &items)) return false;
        *out = jv_new_list(a);
        for (size_t i = 0; i < items->count; i++) jl_push(a, out->u.list, items->items[i]);
        return true;
    }
    if (!strcmp(name, "reverse")) {
        if (v.kind == JV_STRING) {
            jstr s = {.arena = a};
            if (!as_list(x, v, name, line, &items)) return false;
            for (size_t i = items->count; i-- > 0;) jv_print(&s, items->items[i]);
            *out = from_jstr(&s);
            return true;
        }
        if (!as_list(x, v, name, line, &items)) return false;
        *out = jv_new_list(a);
        for (size_t i = items->count; i-- > 0;) jl_push(a, out->u.list, items->items[i]);
        return true;
    }
    if (!strcmp(name, "join")) {
        if (!as_list(x, v, name, line, &items)) return false;
        jv sep = ARG(0, "d", jv_cstring("")), attribute = ARG(1, "attribute", jv_undefined(NULL));
        if (sep.kind != JV_STRING) sep = str_of(x, sep);
        jv list = jv_new_list(a);
        for (size_t i = 0; i < items->count; i++)
            jl_push(a, list.u.list,
                    attribute.kind == JV_UNDEFINED ? items->items[i]
                                                   : get_attribute(items->items[i], attribute));
        *out = join(x, list, sep);
        return true;
    }
    if (!strcmp(name, "map")) {
        if (!as_list(x, v, name, line, &items)) return false;
        const jv *attribute = kwarg(kw_names, kw_values, nkw, "attribute");
        *out = jv_new_list(a);
        for (size_t i = 0; i < items->count; i++) {
            jv r;
            if (attribute) {
                r = get_attribute(items->items[i], *attribute);
                const jv *fallback = kwarg(kw_names, kw_values, nkw, "default");
                if (r.kind == JV_UNDEFINED && fallback) r = *fallback;
            } else if (n >= 1 && args[0].kind == JV_STRING) {
                if (!jb_filter(x, args[0].u.str.s, items->items[i], args + 1, n - 1, NULL, NULL, 0,
                               line, &r))
                    return false;
            } else {
                return jx_fail(x, line, "map needs a filter name or attribute=...");
            }
            jl_push(a, out->u.list, r);
        }
        return true;
    }
    if (!strcmp(name, "select") || !strcmp(name, "reject"))
        return select_items(x, v, args, n, false, name[0] == 's', line, out);
    if (!strcmp(name, "selectattr") || !strcmp(name, "rejectattr"))
        return select_items(x, v, args, n, true, name[0] == 's', line, out);
    if (!strcmp(name, "sort")) {
        if (!as_list(x, v, name, line, &items)) return false;
        return sorted(x, items, jv_truthy(ARG(0, "reverse", jv_bool(false))),
                      jv_truthy(ARG(1, "case_sensitive", jv_bool(false))),
                      ARG(2, "attribute", jv_undefined(NULL)), line, out);
    }
    if (!strcmp(name, "unique")) {
        /* Jinja2's do_unique: an item's key is its attribute if one is named,
         * lowered (str.lower) unless case_sensitive; the first of each key stays */
        if (!as_list(x, v, name, line, &items)) return false;
        bool case_sensitive = jv_truthy(ARG(0, "case_sensitive", jv_bool(false)));
        jv attribute = ARG(1, "attribute", jv_undefined(NULL)), keys = jv_new_list(a);
        *out = jv_new_list(a);
        if (!keys.u.list || !out->u.list) return false;
        for (size_t i = 0; i < items->count; i++) {
            jv key = attribute.kind == JV_UNDEFINED ? items->items[i]
                                                    : get_attribute(items->items[i], attribute);
            if (!case_sensitive && key.kind == JV_STRING) key = change_case(x, key, CASE_LOWER);
            bool seen = false;
            for (size_t k = 0; k < keys.u.list->count && !seen; k++)
                seen = jv_equal(keys.u.list->items[k], key);
            if (seen) continue;
            jl_push(a, keys.u.list, key);
            jl_push(a, out->u.list, items->items[i]);
        }
        return true;
    }
    if (!strcmp(name, "sum")) {
        if (!as_list(x, v, name, line, &items)) return false;
        jv attribute = ARG(0, "attribute", jv_undefined(NULL)), total = ARG(1, "start", jv_int(0));
        for (size_t i = 0; i < items->count; i++) {
            jv item = attribute.kind == JV_UNDEFINED ? items->items[i]
                                                     : get_attribute(items->items[i], attribute);
            bool numbers = (item.kind == JV_INT || item.kind == JV_FLOAT) &&
                           (total.kind == JV_INT || total.kind == JV_FLOAT);
            if (!numbers)
                return jx_fail(x, line, "sum of a %s", jv_type_name(item));
            total = total.kind == JV_INT && item.kind == JV_INT
                        ? jv_int(total.u.i + item.u.i)
                        : jv_float((total.kind == JV_INT ? (double)total.u.i : total.u.f) +
                                   (item.kind == JV_INT ? (double)item.u.i : item.u.f));
        }
        *out = total;
        return true;
    }
    if (!strcmp(name, "max") || !strcmp(name, "min")) {
        if (!as_list(x, v, name, line, &items)) return false;
        jv s;
        if (!sorted(x, items, false, jv_truthy(ARG(0, "case_sensitive", jv_bool(false))),
                    ARG(1, "attribute", jv_undefined(NULL)), line, &s))
            return false;
        *out = s.u.list->count ? s.u.list->items[name[1] == 'a' ? s.u.list->count - 1 : 0]
                               : jv_undefined(name);
        /* Python's max returns the first of equal maxima ('a' of ['a', 'A']) */
        for (size_t i = 0; name[1] == 'a' && i < items->count; i++)
            if (!sort_cmp(&items->items[i], out)) {
                *out = items->items[i];
                break;
            }
        return true;
    }
#undef ARG
    return jx_fail(x, line, "unsupported construct: the filter '%s' (tinyllm's Jinja has %s)",
                   name, FILTERS);
}

/* ---- methods and global functions ------------------------------------------------------------ */

static const char *STRING_METHODS[] = {"strip", "lstrip", "rstrip", "split", "startswith",
                                       "endswith", "lower", "upper", "title", "capitalize",
                                       "replace", "find", "count", "join", "isdigit", "isalpha",
                                       "isspace", NULL};
static const char *DICT_METHODS[] = {"items", "keys", "values", "get", NULL};
static const char *LIST_METHODS[] = {"index", "count", "append", "pop", "insert", "extend", NULL};

static bool listed(const char *const *names, const char *name) {
    for (size_t i = 0; names[i]; i++)
        if (!strcmp(names[i], name)) return true;
    return false;
}

bool jb_has_method(jv obj, const char *name) {
    if (obj.kind == JV_STRING) return listed(STRING_METHODS, name);
    if (obj.kind == JV_DICT && !obj.u.dict->is_namespace) return listed(DICT_METHODS, name);
    if (obj.kind == JV_LIST) return listed(LIST_METHODS, name);
    return false;
}

static bool string_method(jctx *x, const char *name, jv s, const jv *args, size_t n, int line,
                          jv *out) {
    jv a0 = n > 0 ? args[0] : jv_none(), a1 = n > 1 ? args[1] : jv_none();
    if (!strcmp(name, "strip") || !strcmp(name, "lstrip") || !strcmp(name, "rstrip")) {
        if (a0.kind != JV_NONE && !need_string(x, a0, name, line)) return false;
        *out = strip(s, a0, name[0] != 'r', name[0] != 'l');
    } else if (!strcmp(name, "split")) {
        if (a0.kind != JV_NONE && !need_string(x, a0, "split", line)) return false;
        if (a0.kind == JV_STRING && !a0.u.str.len)
            return jx_fail(x, line, "split: empty separator");
        *out = split(x, s, a0, a1.kind == JV_INT ? a1.u.i : -1);
    } else if (!strcmp(name, "startswith") || !strcmp(name, "endswith")) {
        bool r;
        jv a2 = n > 2 ? args[2] : jv_none();
        if (!starts_or_ends(x, s, a0, a1, a2, name[0] == 'e', line, &r)) return false;
        *out = jv_bool(r);
    } else if (!strcmp(name, "lower")) *out = change_case(x, s, CASE_LOWER);
    else if (!strcmp(name, "upper")) *out = change_case(x, s, CASE_UPPER);
    else if (!strcmp(name, "capitalize")) *out = change_case(x, s, CASE_CAPITALIZE);
    else if (!strcmp(name, "title")) *out = change_case(x, s, CASE_PY_TITLE);
    else if (!strcmp(name, "replace")) {
        jv count = n > 2 ? args[2] : jv_none();
        if (!need_string(x, a0, "replace", line) || !need_string(x, a1, "replace", line))
            return false;
        *out = replace(x, s, a0, a1, count.kind == JV_INT ? count.u.i : -1);
    } else if (!strcmp(name, "find") || !strcmp(name, "count")) {
        if (!need_string(x, a0, name, line)) return false;
        const char *hit = memmem(s.u.str.s, s.u.str.len, a0.u.str.s, a0.u.str.len);
        if (name[0] == 'f') {
            size_t before = hit ? (size_t)(hit - s.u.str.s) : 0;
            *out = jv_int(hit ? length_of(jv_string(s.u.str.s, before)) : -1);
        } else {
            int64_t c = 0;
            size_t i = 0;
            if (!a0.u.str.len) c = length_of(s) + 1;
            else
                while ((hit = memmem(s.u.str.s + i, s.u.str.len - i, a0.u.str.s, a0.u.str.len))) {
                    c++;
                    i = (size_t)(hit - s.u.str.s) + a0.u.str.len;
                }
            *out = jv_int(c);
        }
    } else if (!strcmp(name, "join")) {
        jlist *items;
        if (!as_list(x, a0, "join", line, &items)) return false;
        jv list = {.kind = JV_LIST, .u.list = items};
        *out = join(x, list, s);
    } else {   /* isdigit, isalpha, isspace */
        bool r = s.u.str.len > 0;
        for (size_t i = 0; i < s.u.str.len && r;) {
            int32_t c;
            i += (size_t)decode(s.u.str.s, s.u.str.len, i, &c);
            utf8proc_category_t k = utf8proc_category(c);
            if (name[2] == 'd') r = k == UTF8PROC_CATEGORY_ND;
            else if (name[2] == 'a') r = k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO;
            else r = py_space(c);
        }
        *out = jv_bool(r);
    }
    return true;
}

static bool global(jctx *x, const char *name, const jv *args, size_t n, const jv *kw_names,
                   const jv *kw_values, size_t nkw, int line, jv *out) {
    jarena *a = jx_arena(x);
    if (!strcmp(name, "raise_exception")) {
        jv msg = n ? str_of(x, args[0]) : jv_cstring("raise_exception() was called");
        return jx_fail(x, line, "the template raised an exception: %.*s", (int)msg.u.str.len,
                       msg.u.str.s);
    }
    if (!strcmp(name, "strftime_now")) {
        if (!n || args[0].kind != JV_STRING) return jx_fail(x, line, "strftime_now needs a format");
        char buf[256];
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        size_t len = strftime(buf, sizeof buf, args[0].u.str.s, &tm);
        *out = jv_string(ja_strndup(a, buf, len), len);
        return true;
    }
    if (!strcmp(name, "namespace") || !strcmp(name, "dict")) {
        *out = jv_new_dict(a);
        if (!out->u.dict) return false;
        out->u.dict->is_namespace = name[0] == 'n';
        if (n == 1 && args[0].kind == JV_DICT)
            for (size_t i = 0; i < args[0].u.dict->count; i++)
                jd_set(a, out->u.dict, args[0].u.dict->keys[i], args[0].u.dict->values[i]);
        else if (n) return jx_fail(x, line, "%s() takes keyword arguments (or one dict)", name);
        for (size_t i = 0; i < nkw; i++) jd_set(a, out->u.dict, kw_names[i], kw_values[i]);
        return true;
    }
    if (!strcmp(name, "range")) {
        int64_t start = 0, stop, step = 1;
        for (size_t i = 0; i < n; i++)
            if (args[i].kind != JV_INT) return jx_fail(x, line, "range() needs integers");
        if (n == 1) stop = args[0].u.i;
        else if (n == 2 || n == 3) {
            start = args[0].u.i;
            stop = args[1].u.i;
            if (n == 3) step = args[2].u.i;
        } else {
            return jx_fail(x, line, "range() takes 1 to 3 arguments");
        }
        if (step == 0) return jx_fail(x, line, "range() step must not be zero");
        __int128 wide = step > 0 ? ((__int128)stop - start + step - 1) / step   /* no overflow */
                                 : ((__int128)start - stop - step - 1) / -(__int128)step;
        if (wide > 1000000)
            return jx_fail(x, line, "range() of %.0f items is too long", (double)wide);
        int64_t count = (int64_t)wide;
        *out = jv_new_list(a);
        for (int64_t i = 0, at = start; i < count; i++) {
            jl_push(a, out->u.list, jv_int(at));
            if (i + 1 < count) at += step;   /* never a step past the last item: no overflow */
        }
        return true;
    }
    return jx_fail(x, line, "'%s' is not callable", name);
}

bool jb_call(jctx *x, jv fn, const jv *args, size_t n, const jv *kw_names, const jv *kw_values,
             size_t nkw, int line, jv *out) {
    const char *name = fn.u.fn.name;
    if (fn.kind == JV_BUILTIN) return global(x, name, args, n, kw_names, kw_values, nkw, line, out);
    jv self = fn.u.fn.self ? *fn.u.fn.self : jv_none();
    if (!strcmp(name, "cycle") && self.kind == JV_DICT) {   /* loop.cycle(a, b, ...) */
        if (!n) return jx_fail(x, line, "loop.cycle needs at least one value");
        jv *i = jd_get_str(self.u.dict, "index0");
        *out = args[(size_t)(i ? i->u.i : 0) % n];
        return true;
    }
    if (self.kind == JV_STRING) return string_method(x, name, self, args, n, line, out);
    if (self.kind == JV_DICT) {
        jarena *a = jx_arena(x);
        if (!strcmp(name, "get")) {
            if (!n) return jx_fail(x, line, "get() needs a key");
            jv *v = jd_get(self.u.dict, args[0]);
            *out = v ? *v : n > 1 ? args[1] : jv_none();
            return true;
        }
        if (!strcmp(name, "items"))
            return jb_filter(x, "items", self, NULL, 0, NULL, NULL, 0, line, out);
        *out = jv_new_list(a);
        for (size_t i = 0; i < self.u.dict->count; i++)
            jl_push(a, out->u.list, name[0] == 'k' ? self.u.dict->keys[i] : self.u.dict->values[i]);
        return true;
    }
    if (self.kind == JV_LIST) {
        if (!strcmp(name, "index") || !strcmp(name, "count")) {
            if (!n) return jx_fail(x, line, "%s() needs a value", name);
            int64_t c = 0;
            for (size_t i = 0; i < self.u.list->count; i++)
                if (jv_equal(self.u.list->items[i], args[0])) {
                    if (name[0] == 'i') {
                        *out = jv_int((int64_t)i);
                        return true;
                    }
                    c++;
                }
            if (name[0] == 'i') return jx_fail(x, line, "index(): the value is not in the list");
            *out = jv_int(c);
            return true;
        }
        /* transformers renders in an ImmutableSandboxedEnvironment */
        return jx_fail(x, line, "unsafe operation: list.%s() would modify a list, which "
                                "transformers' sandboxed environment refuses", name);
    }
    return jx_fail(x, line, "a %s has no method '%s'", jv_type_name(self), name);
}
