/* safetensors.c: open a .safetensors file and check every rule of the
 * format before handing out a single tensor (L0.6).
 *
 * Layout: 8 bytes little-endian N, then N bytes of JSON header, then the
 * data. The header maps each tensor name to {"dtype", "shape",
 * "data_offsets": [begin, end]} (offsets into the data, end exclusive), plus
 * an optional "__metadata__" of string pairs. The file is mapped read-only,
 * so a tensor stored in the dtype the caller wants is a view of the map: no
 * copy, no load time.
 *
 * The checks are those of the Rust library (safetensors/src/tensor.rs),
 * plus the ones serde does for it (UTF-8, strict JSON, duplicate keys), each
 * with its own message naming the file and the tensor.
 */
#include "internal.h"
#include "safetensors_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tinyllm/bf16.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this reader assumes a little-endian host"
#endif

static const struct {
    const char *name;
    size_t size;
} DTYPES[] = {
    [TL_ST_BOOL] = {"BOOL", 1},  [TL_ST_U8] = {"U8", 1},     [TL_ST_I8] = {"I8", 1},
    [TL_ST_I16] = {"I16", 2},    [TL_ST_U16] = {"U16", 2},   [TL_ST_F16] = {"F16", 2},
    [TL_ST_BF16] = {"BF16", 2},  [TL_ST_I32] = {"I32", 4},   [TL_ST_U32] = {"U32", 4},
    [TL_ST_F32] = {"F32", 4},    [TL_ST_F64] = {"F64", 8},   [TL_ST_I64] = {"I64", 8},
    [TL_ST_U64] = {"U64", 8},    [TL_ST_F8_E4M3] = {"F8_E4M3", 1},
    [TL_ST_F8_E5M2] = {"F8_E5M2", 1},
};
#define N_DTYPES (int)(sizeof DTYPES / sizeof DTYPES[0])
#define KNOWN_DTYPES \
    "BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64, F8_E4M3, F8_E5M2"

const char *tl_st_dtype_name(tl_st_dtype dt) {
    return (int)dt >= 0 && (int)dt < N_DTYPES ? DTYPES[dt].name : "?";
}

size_t tl_st_dtype_size(tl_st_dtype dt) {
    return (int)dt >= 0 && (int)dt < N_DTYPES ? DTYPES[dt].size : 0;
}

static bool dtype_from_name(const char *s, tl_st_dtype *out) {
    for (int i = 0; i < N_DTYPES; i++)
        if (strcmp(s, DTYPES[i].name) == 0) {
            *out = (tl_st_dtype)i;
            return true;
        }
    return false;
}

/* ---- helpers shared with the writer and the checkpoint layer ------------ */

const char *tl_st_shown(const char *name, char *buf, size_t size) {
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p && o + 8 < size; p++) {
        if (o >= 80) {
            o += (size_t)snprintf(buf + o, size - o, "...");
            break;
        }
        if (*p >= 0x20 && *p < 0x7F) buf[o++] = (char)*p;
        else o += (size_t)snprintf(buf + o, size - o, "\\x%02x", *p);
    }
    buf[o < size ? o : size - 1] = '\0';
    return buf;
}

/* Offset of the first byte that breaks UTF-8 (overlongs, surrogates and code
 * points above U+10FFFF included, as Rust's from_utf8), or n. */
static size_t utf8_invalid_at(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        unsigned char lo = 0x80, hi = 0xBF;   /* allowed range of the second byte */
        if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;         /* overlong */
            if (c == 0xED) hi = 0x9F;         /* surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;         /* overlong */
            if (c == 0xF4) hi = 0x8F;         /* above U+10FFFF */
        } else return i;
        if (n - i < len || s[i + 1] < lo || s[i + 1] > hi) return i;
        for (size_t k = 2; k < len; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
        i += len;
    }
    return n;
}

/* Length of the JSON number at s (n bytes left), or 0 when the text there
 * breaks the grammar serde_json enforces and cJSON does not (cJSON hands
 * its number characters to strtod, which takes "01", "1." and "-.5"):
 * -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, not followed by another
 * number character. */
static size_t json_number_length(const unsigned char *s, size_t n) {
    size_t i = 0;
#define DIGIT_AT(k) ((k) < n && s[k] >= '0' && s[k] <= '9')
    if (i < n && s[i] == '-') i++;
    if (!DIGIT_AT(i)) return 0;
    if (s[i++] != '0')
        while (DIGIT_AT(i)) i++;
    if (i < n && s[i] == '.') {
        if (!DIGIT_AT(i + 1)) return 0;
        for (i++; DIGIT_AT(i); i++) {}
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        if (!DIGIT_AT(i)) return 0;
        while (DIGIT_AT(i)) i++;
    }
    if (i < n && (DIGIT_AT(i) || (s[i] && strchr("+-.eE", s[i])))) return 0;
#undef DIGIT_AT
    return i;
}

const char *tl_json_text_problem(const unsigned char *text, size_t n, size_t *at) {
    size_t bad = utf8_invalid_at(text, n);
    if (bad < n) {
        *at = bad;
        return "is not valid UTF-8";
    }
    bool in_string = false;
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = text[i];
        *at = i;
        if (in_string) {
            if (c == '\\') {
                /* cJSON decodes \u0000 into a NUL that silently ends the C
                 * string: "a\u0000b" would become "a". */
                if (n - i >= 6 && memcmp(text + i + 1, "u0000", 5) == 0)
                    return "holds a \\u0000 escape (a NUL character), which names and metadata "
                           "cannot hold";
                i++;
            } else if (c == '"') {
                in_string = false;
            } else if (c < 0x20) {
                /* cJSON lets raw control bytes into strings; JSON does not. */
                return "is not valid JSON: a raw control byte inside a string";
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > TL_JSON_MAX_DEPTH)
                return "is not valid JSON: arrays and objects nest more than "
                       TL_JSON_MAX_DEPTH_TEXT " deep (serde_json's limit)";
        } else if (c == ']' || c == '}') {
            depth--;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t len = json_number_length(text + i, n - i);
            if (len == 0)
                return "is not valid JSON: a malformed number (a leading zero, or a '.' or "
                       "exponent without digits)";
            i += len - 1;
        } else if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
            /* cJSON treats every byte below 0x21 as whitespace. */
            return "is not valid JSON: a control byte outside any string";
        }
    }
    return NULL;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int tl_json_duplicate_key(const cJSON *obj, const char **dup) {
    int n = 0;
    for (const cJSON *c = obj->child; c; c = c->next) n++;
    if (n < 2) return 0;
    const char **names = malloc((size_t)n * sizeof *names);
    if (!names) return -1;
    int i = 0;
    for (const cJSON *c = obj->child; c; c = c->next) names[i++] = c->string ? c->string : "";
    qsort(names, (size_t)n, sizeof *names, compare_names);
    int found = 0;
    for (i = 1; i < n && !found; i++)
        if (strcmp(names[i - 1], names[i]) == 0) {
            *dup = names[i];
            found = 1;
        }
    free(names);
    return found;
}

cJSON *tl_json_parse(const char *text, size_t *at) {
    const char *end = NULL;
    /* require_null_terminated: trailing text after the value is an error. */
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (!root) *at = end ? (size_t)(end - text) : 0;
    return root;
}

/* ---- errors ------------------------------------------------------------- */

/* "safetensors: <path>: <what>". Returns -1 for `return st_error(...)`. */
__attribute__((format(printf, 2, 3)))
static int st_error(const tl_st_file *f, const char *fmt, ...) {
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return tl_fail_status("safetensors: %s: %s", f->path, what);
}

/* A JSON value as an error shows it: the number, or its kind. */
const char *tl_json_shown(const cJSON *v, char *buf, size_t size) {
    if (!v) snprintf(buf, size, "missing");
    else if (cJSON_IsNumber(v)) snprintf(buf, size, "%.17g", v->valuedouble);
    else if (cJSON_IsString(v)) snprintf(buf, size, "a string");
    else if (cJSON_IsBool(v)) snprintf(buf, size, "a boolean");
    else if (cJSON_IsNull(v)) snprintf(buf, size, "null");
    else if (cJSON_IsArray(v)) snprintf(buf, size, "an array");
    else snprintf(buf, size, "an object");
    return buf;
}

/* A JSON number that is a whole number in [0, 2^53] (cJSON keeps numbers as
 * doubles, exact up to 2^53: far beyond any real tensor). */
static bool json_count(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return false;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0) || d != floor(d)) return false;
    *out = (uint64_t)d;
    return true;
}

/* ---- the header --------------------------------------------------------- */

static int parse_metadata(tl_st_file *f, const cJSON *meta) {
    if (cJSON_IsNull(meta)) return 0;   /* serde reads null as "no metadata" */
    if (!cJSON_IsObject(meta))
        return st_error(f, "\"__metadata__\" is not an object of string pairs");
    const char *dup;
    int d = tl_json_duplicate_key(meta, &dup);
    char nb[128];
    if (d < 0) return st_error(f, "out of memory checking \"__metadata__\"");
    if (d > 0)
        return st_error(f, "duplicate key \"%s\" in \"__metadata__\"",
                        tl_st_shown(dup, nb, sizeof nb));
    int n = cJSON_GetArraySize(meta);
    f->meta_keys = calloc((size_t)n + 1, sizeof *f->meta_keys);
    f->meta_values = calloc((size_t)n + 1, sizeof *f->meta_values);
    if (!f->meta_keys || !f->meta_values)
        return st_error(f, "out of memory reading \"__metadata__\"");
    for (const cJSON *c = meta->child; c; c = c->next) {
        char vb[64];
        if (!cJSON_IsString(c))
            return st_error(f, "\"__metadata__\" value of \"%s\" is %s, not a string "
                            "(metadata maps strings to strings)",
                            tl_st_shown(c->string, nb, sizeof nb), tl_json_shown(c, vb, sizeof vb));
        f->meta_keys[f->meta_count] = strdup(c->string);
        f->meta_values[f->meta_count] = strdup(c->valuestring);
        f->meta_count++;
        if (!f->meta_keys[f->meta_count - 1] || !f->meta_values[f->meta_count - 1])
            return st_error(f, "out of memory reading \"__metadata__\"");
    }
    return 0;
}

/* One tensor's entry: its own fields, its dtype and its byte count. How the
 * entries fit together is checked afterwards, in offset order. */
static int parse_entry(tl_st_file *f, const cJSON *item, tl_st_entry *e) {
    char nb[128], vb[64];
    const char *name = tl_st_shown(item->string, nb, sizeof nb);
    if (!cJSON_IsObject(item))
        return st_error(f, "tensor \"%s\": entry is %s, not an object with dtype, shape "
                        "and data_offsets", name, tl_json_shown(item, vb, sizeof vb));
    const char *dup;
    int d = tl_json_duplicate_key(item, &dup);
    if (d < 0) return st_error(f, "out of memory checking tensor \"%s\"", name);
    if (d > 0) {
        char db[128];
        return st_error(f, "tensor \"%s\": duplicate key \"%s\" in its entry", name,
                        tl_st_shown(dup, db, sizeof db));
    }

    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!dtype) return st_error(f, "tensor \"%s\": entry has no \"dtype\"", name);
    if (!cJSON_IsString(dtype))
        return st_error(f, "tensor \"%s\": \"dtype\" is %s, not a string", name,
                        tl_json_shown(dtype, vb, sizeof vb));
    if (!shape) return st_error(f, "tensor \"%s\": entry has no \"shape\"", name);
    if (!cJSON_IsArray(shape))
        return st_error(f, "tensor \"%s\": \"shape\" is %s, not an array", name,
                        tl_json_shown(shape, vb, sizeof vb));
    if (!offsets) return st_error(f, "tensor \"%s\": entry has no \"data_offsets\"", name);
    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2)
        return st_error(f, "tensor \"%s\": \"data_offsets\" must be an array [begin, end]", name);

    if (!dtype_from_name(dtype->valuestring, &e->dtype)) {
        char tb[128];
        return st_error(f, "tensor \"%s\": unknown dtype \"%s\" (known: " KNOWN_DTYPES ")", name,
                        tl_st_shown(dtype->valuestring, tb, sizeof tb));
    }

    int rank = cJSON_GetArraySize(shape);
    if (rank > TL_MAX_DIMS)
        return st_error(f, "tensor \"%s\": shape has %d dimensions; tinyllm tensors have at "
                        "most %d", name, rank, TL_MAX_DIMS);
    e->ndim = rank;
    /* numel is the product of the dimensions; span leaves out the zeros. A
     * tensor's strides are products of its dimensions too, so the runtime
     * needs span, not just numel, to fit: [0, 2^40, 2^40] holds no bytes
     * but has strides past int64. TL_ST_MAX_SPAN is also what the runtime
     * allocates at most (8-byte elements), so numel x size cannot overflow. */
    uint64_t numel = 1, span = 1;
    for (int k = 0; k < rank; k++) {
        const cJSON *dim = cJSON_GetArrayItem(shape, k);
        uint64_t n;
        if (!json_count(dim, &n))
            return st_error(f, "tensor \"%s\": shape[%d] is %s, not a whole number from 0 to "
                            "2^53", name, k, tl_json_shown(dim, vb, sizeof vb));
        e->shape[k] = (int64_t)n;
        numel *= n;   /* no overflow: numel <= span, or 0 */
        if (n > 0 && (__builtin_mul_overflow(span, n, &span) || span > TL_ST_MAX_SPAN))
            return st_error(f, "tensor \"%s\": shape[%d] = %llu makes the shape too large: its "
                            "nonzero dimensions multiply past 2^60, more than a tensor can index "
                            "(a damaged header?)", name, k, (unsigned long long)n);
    }

    uint64_t begin, end, nbytes = numel * tl_st_dtype_size(e->dtype);
    const cJSON *b = cJSON_GetArrayItem(offsets, 0), *en = cJSON_GetArrayItem(offsets, 1);
    if (!json_count(b, &begin) || !json_count(en, &end)) {
        char eb[64];
        return st_error(f, "tensor \"%s\": \"data_offsets\" [%s, %s] must be two integers from "
                        "0 to 2^53", name, tl_json_shown(b, vb, sizeof vb),
                        tl_json_shown(en, eb, sizeof eb));
    }
    if (end < begin)
        return st_error(f, "tensor \"%s\": data_offsets [%llu, %llu] end before they begin", name,
                        (unsigned long long)begin, (unsigned long long)end);
    if (end - begin != nbytes)
        return st_error(f, "tensor \"%s\": data_offsets [%llu, %llu] hold %llu bytes but %s of "
                        "this shape needs %llu (numel %llu x %zu bytes)", name,
                        (unsigned long long)begin, (unsigned long long)end,
                        (unsigned long long)(end - begin), DTYPES[e->dtype].name,
                        (unsigned long long)nbytes, (unsigned long long)numel,
                        tl_st_dtype_size(e->dtype));
    e->begin = (size_t)begin;
    e->end = (size_t)end;
    e->name = strdup(item->string);
    if (!e->name) return st_error(f, "out of memory");
    return 0;
}

/* File order is offset order; zero-sized tensors share an offset and keep
 * their header order (the sort key's last part). */
typedef struct {
    tl_st_entry entry;
    int index;
} indexed_entry;

static int compare_offsets(const void *pa, const void *pb) {
    const indexed_entry *a = pa, *b = pb;
    if (a->entry.begin != b->entry.begin) return a->entry.begin < b->entry.begin ? -1 : 1;
    if (a->entry.end != b->entry.end) return a->entry.end < b->entry.end ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* The data section must be tiled exactly: first begin 0, each begin the
 * previous end, the last end the file's end. */
static int check_layout(tl_st_file *f) {
    char nb[128], pb[128];
    size_t expect = 0;
    const char *prev = NULL;
    for (int i = 0; i < f->count; i++) {
        const tl_st_entry *e = &f->entries[i];
        if (e->begin != expect) {
            const char *name = tl_st_shown(e->name, nb, sizeof nb);
            if (!prev)
                return st_error(f, "tensor \"%s\": the first tensor's data begins at byte %zu "
                                "of the data section, not 0", name, e->begin);
            if (e->begin > expect)
                return st_error(f, "tensor \"%s\": data begins at byte %zu but \"%s\" ends at "
                                "%zu: a gap (offsets must be contiguous)", name, e->begin,
                                tl_st_shown(prev, pb, sizeof pb), expect);
            return st_error(f, "tensor \"%s\": data begins at byte %zu, inside \"%s\" which ends "
                            "at %zu: the tensors overlap", name, e->begin,
                            tl_st_shown(prev, pb, sizeof pb), expect);
        }
        expect = e->end;
        prev = e->name;
    }
    size_t data_bytes = f->map_size - f->data_start;
    if (expect != data_bytes)
        return st_error(f, "the tensors' data ends at byte %zu but the file holds %zu data bytes "
                        "after the header (%s)", expect, data_bytes,
                        expect > data_bytes ? "the file is truncated"
                                            : "trailing bytes no tensor accounts for");
    return 0;
}

static int parse_header(tl_st_file *f) {
    const unsigned char *m = f->map;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | m[i];
    if (n > TL_ST_MAX_HEADER)
        return st_error(f, "header length %llu is over the 100000000-byte limit: not a "
                        "safetensors file, or its first 8 bytes are damaged",
                        (unsigned long long)n);
    if (n > f->map_size - 8)
        return st_error(f, "header length %llu runs past the end of the file (%zu bytes): the "
                        "file is truncated", (unsigned long long)n, f->map_size);
    f->data_start = 8 + (size_t)n;

    size_t at;
    const char *problem = tl_json_text_problem(m + 8, (size_t)n, &at);
    if (problem)
        return st_error(f, "header %s (byte 0x%02x at header offset %zu)", problem, m[8 + at], at);

    /* cJSON wants a NUL-terminated string; the map has none. */
    char *text = malloc((size_t)n + 1);
    if (!text) return st_error(f, "out of memory for a %llu-byte header", (unsigned long long)n);
    memcpy(text, m + 8, (size_t)n);
    text[n] = '\0';
    cJSON *root = tl_json_parse(text, &at);
    if (!root) {
        char near[32];
        tl_st_shown(text + (at < n ? at : n), near, sizeof near);
        free(text);
        return st_error(f, "header is not valid JSON (error at header offset %zu, near \"%s\")",
                        at, near);
    }
    free(text);

    int rc = -1;
    indexed_entry *sorted = NULL;
    const char *dup;
    int d;
    if (!cJSON_IsObject(root)) {
        char vb[64];
        st_error(f, "header is %s, not a JSON object", tl_json_shown(root, vb, sizeof vb));
        goto done;
    }
    if ((d = tl_json_duplicate_key(root, &dup)) != 0) {
        char nb[128];
        if (d < 0) st_error(f, "out of memory checking the header");
        else st_error(f, "tensor \"%s\": duplicate key in the header (each name may appear once)",
                      tl_st_shown(dup, nb, sizeof nb));
        goto done;
    }

    int n_items = cJSON_GetArraySize(root);
    sorted = calloc((size_t)n_items + 1, sizeof *sorted);
    if (!sorted) {
        st_error(f, "out of memory reading the header");
        goto done;
    }
    int count = 0;
    for (const cJSON *c = root->child; c; c = c->next) {
        if (strcmp(c->string, "__metadata__") == 0) {
            if (parse_metadata(f, c) != 0) goto done;
            continue;
        }
        sorted[count].index = count;
        int bad = parse_entry(f, c, &sorted[count].entry);
        count++;   /* counted even when bad, so its name is freed below */
        if (bad) goto done;
    }
    qsort(sorted, (size_t)count, sizeof *sorted, compare_offsets);
    f->entries = calloc((size_t)count + 1, sizeof *f->entries);
    if (!f->entries) {
        st_error(f, "out of memory reading the header");
        goto done;
    }
    for (int i = 0; i < count; i++) {
        f->entries[i] = sorted[i].entry;
        sorted[i].entry.name = NULL;   /* moved */
    }
    f->count = count;
    rc = check_layout(f);

done:
    if (sorted)
        for (int i = 0; i < n_items; i++) free(sorted[i].entry.name);
    free(sorted);
    cJSON_Delete(root);
    return rc;
}

/* ---- the public calls --------------------------------------------------- */

tl_st_file *tl_st_open(const char *path) {
    if (!path) return tl_fail("tl_st_open: path is NULL");
    tl_st_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return tl_fail("safetensors: %s: out of memory", path);
    }
    struct stat st;
    char why[256];
    int fd = tl_open_regular(path, &st, why, sizeof why);
    if (fd < 0) {
        if (S_ISDIR(st.st_mode))
            st_error(f, "is a folder, not a file (tl_checkpoint_load reads a model folder)");
        else
            st_error(f, "%s", why);
        goto fail;
    }
    if (st.st_size < 8) {
        st_error(f, "file is %lld bytes, shorter than the 8-byte header length: %s",
                 (long long)st.st_size,
                 st.st_size == 0 ? "an empty file (an interrupted download?)"
                                 : "truncated, or not a safetensors file");
        goto fail;
    }
    f->map_size = (size_t)st.st_size;
    void *map = mmap(NULL, f->map_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        st_error(f, "cannot map %zu bytes: %s", f->map_size, strerror(errno));
        goto fail;
    }
    f->map = map;
    close(fd);
    fd = -1;
    if (parse_header(f) != 0) goto fail;
    return f;

fail:
    if (fd >= 0) close(fd);
    tl_st_close(f);
    return NULL;
}

void tl_st_close(tl_st_file *f) {
    if (!f) return;
    if (f->map) munmap((void *)f->map, f->map_size);
    for (int i = 0; i < f->count; i++) free(f->entries[i].name);
    free(f->entries);
    for (int i = 0; i < f->meta_count; i++) {
        free(f->meta_keys[i]);
        free(f->meta_values[i]);
    }
    free(f->meta_keys);
    free(f->meta_values);
    free(f->path);
    free(f);
}

const tl_st_entry *tl_st_find(const tl_st_file *f, const char *name) {
    if (!f) return tl_propagate("tl_st_find: file is NULL");
    if (!name) return tl_fail("tl_st_find: name is NULL");
    for (int i = 0; i < f->count; i++)
        if (strcmp(f->entries[i].name, name) == 0) return &f->entries[i];
    char nb[128];
    return tl_fail("safetensors: %s: no tensor named \"%s\" (the file holds %d)", f->path,
                   tl_st_shown(name, nb, sizeof nb), f->count);
}

/* The runtime dtype a stored one is, when the runtime has it. */
static bool runtime_dtype(tl_st_dtype st, tl_dtype *out) {
    switch (st) {
    case TL_ST_F32: *out = TL_F32; return true;
    case TL_ST_BF16: *out = TL_BF16; return true;
    case TL_ST_I32: *out = TL_I32; return true;
    case TL_ST_I64: *out = TL_I64; return true;
    case TL_ST_BOOL: *out = TL_BOOL; return true;
    default: return false;
    }
}

/* Conversions that keep every value: float widening, integer widening. */
static bool converts_exactly(tl_st_dtype from, tl_dtype to) {
    switch (to) {
    case TL_F32: return from == TL_ST_F32 || from == TL_ST_BF16 || from == TL_ST_F16;
    case TL_BF16: return from == TL_ST_BF16;
    case TL_I64:
        return from == TL_ST_I64 || from == TL_ST_I32 || from == TL_ST_U32 || from == TL_ST_I16 ||
               from == TL_ST_U16 || from == TL_ST_I8 || from == TL_ST_U8;
    case TL_I32:
        return from == TL_ST_I32 || from == TL_ST_I16 || from == TL_ST_U16 || from == TL_ST_I8 ||
               from == TL_ST_U8;
    case TL_BOOL: return from == TL_ST_BOOL;
    }
    return false;
}

/* Element i of little-endian data as an integer (memcpy: the map gives no
 * alignment guarantee). */
static int64_t load_int(const unsigned char *p, tl_st_dtype dt, size_t i) {
    switch (dt) {
    case TL_ST_U8: return p[i];
    case TL_ST_I8: return (int8_t)p[i];
    case TL_ST_I16: { int16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    case TL_ST_U16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    case TL_ST_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case TL_ST_U32: { uint32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case TL_ST_I64: { int64_t v; memcpy(&v, p + 8 * i, 8); return v; }
    default: return 0;
    }
}

static void convert(const unsigned char *src, tl_st_dtype from, void *dst, tl_dtype to, size_t n) {
    tl_dtype same;
    if (runtime_dtype(from, &same) && same == to) {
        memcpy(dst, src, n * tl_dtype_size(to));   /* same dtype, unaligned source */
    } else if (to == TL_F32) {
        float *out = dst;
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            out[i] = from == TL_ST_BF16 ? tl_bf16_to_f32(h) : tl_f16_to_f32(h);
        }
    } else if (to == TL_I64) {
        int64_t *out = dst;
        for (size_t i = 0; i < n; i++) out[i] = load_int(src, from, i);
    } else {   /* TL_I32 from a narrower integer */
        int32_t *out = dst;
        for (size_t i = 0; i < n; i++) out[i] = (int32_t)load_int(src, from, i);
    }
}

tl_tensor *tl_st_tensor(const tl_st_file *f, const tl_st_entry *e, tl_dtype want) {
    if (!f || !e) return tl_propagate("tl_st_tensor: file or entry is NULL");
    if ((int)want < TL_F32 || (int)want > TL_BOOL)
        return tl_fail("tl_st_tensor: want is %d, not a tl_dtype", (int)want);
    const unsigned char *bytes = f->map + f->data_start + e->begin;
    tl_dtype stored;
    size_t elem = tl_dtype_size(want);
    if (runtime_dtype(e->dtype, &stored) && stored == want && (uintptr_t)bytes % elem == 0)
        return tl_tensor_wrap_mapped(bytes, want, e->ndim, e->shape);

    if (!converts_exactly(e->dtype, want)) {
        char nb[128];
        return tl_fail("safetensors: %s: tensor \"%s\" is stored as %s, which cannot become "
                       "%s without losing information (floats load as F32, integers as I64)",
                       f->path, tl_st_shown(e->name, nb, sizeof nb), DTYPES[e->dtype].name,
                       tl_dtype_name(want));
    }
    /* A converted copy; also the fallback when the stored data is misaligned
     * for a view (files not written by HF may leave it so). */
    tl_tensor *t = tl_tensor_new_owned(want, e->ndim, e->shape);
    if (!t) return NULL;
    convert(bytes, e->dtype, tl_data(t), want, (e->end - e->begin) / tl_st_dtype_size(e->dtype));
    return t;
}
