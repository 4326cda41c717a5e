/* tokenizer_normalize.c: the normalizers (tokenizers' src/normalizers/).
 *
 * Unicode forms come from utf8proc, on the characters of Unicode 9.0 only
 * (the library's tables); Lowercase is Rust's char::to_lowercase,
 * whose only one-to-many mapping is U+0130 (I with dot) -> "i\u0307".
 */
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "tinyllm/tensor.h"
#include "tokenizer_internal.h"

/* The library normalizes with the unicode-normalization-alignments crate,
 * whose tables are Unicode 9.0: a character assigned later has, for it, no
 * decomposition and combining class 0, so it stays as it is and nothing
 * reorders or composes across it. These are the later characters that have
 * either in utf8proc's tables (DerivedAge.txt against utf8proc 15). */
static const uint32_t AFTER_UNICODE_9[][2] = {
    {0x07FD, 0x07FD}, {0x0898, 0x089F}, {0x08CA, 0x08D3}, {0x09FE, 0x09FE},
    {0x0C3C, 0x0C3C}, {0x0D3B, 0x0D3C}, {0x0EBA, 0x0EBA}, {0x1715, 0x1715},
    {0x1ABF, 0x1ACE}, {0x1DF6, 0x1DFA}, {0x32FF, 0x32FF}, {0xA7F2, 0xA7F4},
    {0xA82C, 0xA82C}, {0xAB69, 0xAB69}, {0x10781, 0x10785}, {0x10787, 0x107B0},
    {0x107B2, 0x107BA}, {0x10D24, 0x10D27}, {0x10EAB, 0x10EAC}, {0x10EFD, 0x10EFF},
    {0x10F46, 0x10F50}, {0x10F82, 0x10F85}, {0x11070, 0x11070}, {0x1133B, 0x1133B},
    {0x1145E, 0x1145E}, {0x11839, 0x1183A}, {0x11930, 0x11930}, {0x11935, 0x11935},
    {0x11938, 0x11938}, {0x1193D, 0x1193E}, {0x11943, 0x11943}, {0x119E0, 0x119E0},
    {0x11A34, 0x11A34}, {0x11A47, 0x11A47}, {0x11A99, 0x11A99}, {0x11D42, 0x11D42},
    {0x11D44, 0x11D45}, {0x11D97, 0x11D97}, {0x11F41, 0x11F42}, {0x16FF0, 0x16FF1},
    {0x1E030, 0x1E06D}, {0x1E08F, 0x1E08F}, {0x1E130, 0x1E136}, {0x1E2AE, 0x1E2AE},
    {0x1E2EC, 0x1E2EF}, {0x1E4EC, 0x1E4EF}, {0x1F16C, 0x1F16C}, {0x1FBF0, 0x1FBF9},
};

static bool after_unicode_9(uint32_t cp) {
    size_t lo = 0, hi = sizeof AFTER_UNICODE_9 / sizeof AFTER_UNICODE_9[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < AFTER_UNICODE_9[mid][0]) hi = mid;
        else if (cp > AFTER_UNICODE_9[mid][1]) lo = mid + 1;
        else return true;
    }
    return false;
}

static int unicode_run(int options, const char *s, size_t len, tk_buf *out) {
    if (len == 0) return 0;
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

/* The form of each run between characters after Unicode 9.0, which are
 * copied as they are (to the library they are starters without mappings). */
static int unicode_form(tk_norm_kind kind, const char *s, size_t len, tk_buf *out) {
    int options = UTF8PROC_STABLE;
    if (kind == TK_NORM_NFC) options |= UTF8PROC_COMPOSE;
    else if (kind == TK_NORM_NFD) options |= UTF8PROC_DECOMPOSE;
    else if (kind == TK_NORM_NFKC) options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
    else options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
    size_t run = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = (size_t)tk_utf8_decode(s + i, &cp);
        if (after_unicode_9(cp)) {
            if (unicode_run(options, s + run, i - run, out) < 0 ||
                tk_buf_append(out, s + i, n) < 0)
                return -1;
            run = i + n;
        }
        i += n;
    }
    return unicode_run(options, s + run, len - run, out);
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
