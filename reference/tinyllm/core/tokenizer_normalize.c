/* tokenizer_normalize.c: the normalizers (tokenizers' src/normalizers/).
 *
 * Unicode forms come from utf8proc; Lowercase is Rust's char::to_lowercase,
 * whose only one-to-many mapping is U+0130 (I with dot) -> "i\u0307".
 */
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "tinyllm/tensor.h"
#include "tokenizer_internal.h"

static int unicode_form(tk_norm_kind kind, const char *s, size_t len, tk_buf *out) {
    if (len == 0) return 0;
    int options = UTF8PROC_STABLE;
    if (kind == TK_NORM_NFC) options |= UTF8PROC_COMPOSE;
    else if (kind == TK_NORM_NFD) options |= UTF8PROC_DECOMPOSE;
    else if (kind == TK_NORM_NFKC) options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
    else options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
    utf8proc_uint8_t *result = NULL;
    utf8proc_ssize_t n =
        utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)len, &result, options);
    if (n < 0) {
        tl_fail("tokenizer: Unicode normalisation failed (utf8proc: %s)", utf8proc_errmsg(n));
        return -1;
    }
    int r = tk_buf_append(out, result, (size_t)n);
    free(result);
    return r;
}

static int lowercase(const char *s, size_t len, tk_buf *out) {
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        i += (size_t)tk_utf8_decode(s + i, &cp);
        int r;
        if (cp == 0x130) r = tk_buf_append(out, "i\xCC\x87", 3);
        else r = tk_buf_put_cp(out, (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp));
        if (r < 0) return -1;
    }
    return 0;
}

static int strip(const tk_normalizer *n, const char *s, size_t len, tk_buf *out) {
    size_t start = 0, end = len;
    if (n->strip_left)
        while (start < end) {
            uint32_t cp;
            int k = tk_utf8_decode(s + start, &cp);
            if (!tk_is_whitespace(cp)) break;
            start += (size_t)k;
        }
    if (n->strip_right)
        while (end > start) {
            size_t b = end - 1;
            while (b > start && ((unsigned char)s[b] & 0xC0) == 0x80) b--;
            uint32_t cp;
            tk_utf8_decode(s + b, &cp);
            if (!tk_is_whitespace(cp)) break;
            end = b;
        }
    return tk_buf_append(out, s + start, end - start);
}

static int replace(const tk_normalizer *n, const char *s, size_t len, tk_buf *out) {
    tk_pieces pieces = {0};
    if (tk_find_matches(&n->pattern, s, len, &pieces) < 0) return -1;
    int r = 0;
    for (size_t i = 0; i < pieces.count && r == 0; i++) {
        const tk_piece *p = &pieces.items[i];
        if (p->match) r = tk_buf_append(out, n->text, n->text_len);
        else r = tk_buf_append(out, s + p->start, p->end - p->start);
    }
    tk_pieces_free(&pieces);
    return r;
}

int tk_normalize(const tk_normalizer *n, const char *s, size_t len, tk_buf *out) {
    out->len = 0;
    if (tk_buf_reserve(out, len) < 0) return -1;
    out->data[0] = '\0';
    switch (n->kind) {
    case TK_NORM_NFC:
    case TK_NORM_NFD:
    case TK_NORM_NFKC:
    case TK_NORM_NFKD:
        return unicode_form(n->kind, s, len, out);
    case TK_NORM_LOWERCASE:
        return lowercase(s, len, out);
    case TK_NORM_PREPEND:
        /* the library prepends to a non-empty string only */
        if (len > 0 && tk_buf_append(out, n->text, n->text_len) < 0) return -1;
        return tk_buf_append(out, s, len);
    case TK_NORM_REPLACE:
        return replace(n, s, len, out);
    case TK_NORM_STRIP:
        return strip(n, s, len, out);
    case TK_NORM_SEQUENCE: {
        tk_buf current = {0}, next = {0};
        if (tk_buf_append(&current, s, len) < 0) return -1;
        for (int i = 0; i < n->count; i++) {
            if (tk_normalize(&n->items[i], current.data, current.len, &next) < 0) {
                tk_buf_free(&current);
                tk_buf_free(&next);
                return -1;
            }
            tk_buf swap = current;
            current = next;
            next = swap;
        }
        int r = tk_buf_append(out, current.data, current.len);
        tk_buf_free(&current);
        tk_buf_free(&next);
        return r;
    }
    }
    return 0;
}
