/* url.c: percent-encoding both ways, query strings and the Range header. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "hub_internal.h"

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

char *hub_url_decode(const char *s, size_t n) {
    char *out = malloc(n + 1), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            *o++ = s[i];
            continue;
        }
        int hi = i + 2 < n ? hex_value(s[i + 1]) : -1;
        int lo = i + 2 < n ? hex_value(s[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {   /* bad escape or %00 */
            free(out);
            return NULL;
        }
        *o++ = (char)(hi * 16 + lo);
        i += 2;
    }
    *o = '\0';
    return out;
}

char *hub_url_encode(const char *s, bool keep_slash) {
    static const char digits[] = "0123456789ABCDEF";
    char *out = malloc(3 * strlen(s) + 1), *o = out;
    if (!out) return NULL;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (isalnum(*c) || strchr("_.-~", *c) || (keep_slash && *c == '/')) {
            *o++ = (char)*c;
        } else {
            *o++ = '%';
            *o++ = digits[*c >> 4];
            *o++ = digits[*c & 15];
        }
    }
    *o = '\0';
    return out;
}

char *hub_query_value(const char *query, const char *key) {
    size_t klen = strlen(key);
    for (const char *p = query; p && *p;) {
        const char *end = strchr(p, '&');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > klen && !strncmp(p, key, klen) && p[klen] == '=')
            return hub_url_decode(p + klen + 1, n - klen - 1);
        p = end ? end + 1 : NULL;
    }
    return NULL;
}

/* A decimal number at *p (digits only); false when there is none or it
 * overflows. */
static bool read_number(const char **p, uint64_t *out) {
    if (!isdigit((unsigned char)**p)) return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(*p, &end, 10);
    if (errno == ERANGE) return false;
    *out = v;
    *p = end;
    return true;
}

hub_range_kind hub_parse_range(const char *header, uint64_t size, uint64_t *first,
                               uint64_t *last) {
    if (!header) return HUB_RANGE_NONE;
    const char *p = header;
    while (*p == ' ') p++;
    if (strncmp(p, "bytes=", 6)) return HUB_RANGE_NONE;
    p += 6;
    while (*p == ' ') p++;
    uint64_t a = 0, b = 0;
    bool has_a = read_number(&p, &a);
    if (*p++ != '-') return HUB_RANGE_NONE;
    bool has_b = read_number(&p, &b);
    while (*p == ' ') p++;
    if (*p != '\0' || (!has_a && !has_b)) return HUB_RANGE_NONE;   /* several, or junk */
    if (!has_a) {                                      /* "bytes=-K": the last K */
        if (b == 0 || size == 0) return HUB_RANGE_UNSATISFIABLE;
        *first = b >= size ? 0 : size - b;
        *last = size - 1;
        return HUB_RANGE_OK;
    }
    if (has_b && b < a) return HUB_RANGE_NONE;         /* invalid: ignored */
    if (a >= size) return HUB_RANGE_UNSATISFIABLE;
    *first = a;
    *last = has_b && b < size ? b : size - 1;
    return HUB_RANGE_OK;
}
