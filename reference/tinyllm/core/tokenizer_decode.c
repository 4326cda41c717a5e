/* tokenizer_decode.c: decoding (tokenizers' Tokenizer::decode and
 * src/decoders/).
 *
 * The ids become token strings (added tokens first, then the vocabulary; an
 * unknown id is skipped; specials dropped when asked), every decoder of the
 * chain maps the list of strings to a new list, and the result is their
 * concatenation. Without a decoder the tokens are joined with spaces.
 */
#include <stdlib.h>
#include <string.h>

#include "tinyllm/tensor.h"
#include "tokenizer_internal.h"

typedef struct {
    tk_buf text;
    size_t *start, *len;
    size_t count, cap;
} toklist;

static int toklist_push(toklist *l, const char *s, size_t n) {
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        size_t *a = realloc(l->start, cap * sizeof *a);
        if (!a) goto oom;
        l->start = a;
        size_t *b = realloc(l->len, cap * sizeof *b);
        if (!b) goto oom;
        l->len = b;
        l->cap = cap;
    }
    l->start[l->count] = l->text.len;
    l->len[l->count] = n;
    if (tk_buf_append(&l->text, s, n) < 0) return -1;
    l->count++;
    return 0;
oom:
    tl_fail("tl_tokenizer_decode: out of memory");
    return -1;
}

static void toklist_clear(toklist *l) {
    l->count = 0;
    l->text.len = 0;
}

static void toklist_free(toklist *l) {
    tk_buf_free(&l->text);
    free(l->start);
    free(l->len);
    memset(l, 0, sizeof *l);
}

#define TOK(l, i) ((l)->text.data + (l)->start[i])

/* ByteLevel: every character back to its byte; a token holding a character
 * outside the table is taken as its own UTF-8 bytes; then the bytes as
 * lossy UTF-8, all tokens joined into one. */
static int byte_level(const toklist *in, toklist *out, tk_buf *tmp) {
    tmp->len = 0;
    for (size_t i = 0; i < in->count; i++) {
        const char *s = TOK(in, i);
        size_t n = in->len[i], mark = tmp->len;
        bool all = true;
        for (size_t k = 0; k < n && all;) {
            uint32_t cp;
            k += (size_t)tk_utf8_decode(s + k, &cp);
            int b = tk_char_byte(cp);
            if (b < 0) all = false;
            else if (tk_buf_putc(tmp, (char)b) < 0) return -1;
        }
        if (!all) {
            tmp->len = mark;
            if (tk_buf_append(tmp, s, n) < 0) return -1;
        }
    }
    tk_buf fixed = {0};
    int r = tk_buf_append_lossy(&fixed, tmp->data ? tmp->data : "", tmp->len);
    if (r == 0) r = toklist_push(out, fixed.data, fixed.len);
    tk_buf_free(&fixed);
    return r;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* "<0xXX>" -> the byte, or -1 (u8::from_str_radix also takes "+X"). */
static int fallback_byte(const char *s, size_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    if (s[3] == '+') return hex_digit(s[4]);
    int hi = hex_digit(s[3]), lo = hex_digit(s[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/* A run of byte tokens: its UTF-8 text, or one U+FFFD per byte when invalid. */
static int flush_bytes(toklist *out, tk_buf *bytes) {
    if (!bytes->len) return 0;
    int r = 0;
    if (tk_utf8_valid_prefix(bytes->data, bytes->len) == bytes->len)
        r = toklist_push(out, bytes->data, bytes->len);
    else
        for (size_t k = 0; k < bytes->len && r == 0; k++)
            r = toklist_push(out, "\xEF\xBF\xBD", 3);
    bytes->len = 0;
    return r;
}

static int byte_fallback(const toklist *in, toklist *out, tk_buf *bytes) {
    bytes->len = 0;
    for (size_t i = 0; i < in->count; i++) {
        int b = fallback_byte(TOK(in, i), in->len[i]);
        if (b >= 0) {
            if (tk_buf_putc(bytes, (char)b) < 0) return -1;
            continue;
        }
        if (flush_bytes(out, bytes) < 0 || toklist_push(out, TOK(in, i), in->len[i]) < 0)
            return -1;
    }
    return flush_bytes(out, bytes);
}

static int strip(const tk_decoder *d, const toklist *in, toklist *out) {
    for (size_t i = 0; i < in->count; i++) {
        const char *s = TOK(in, i);
        size_t n = in->len[i], begin = 0, end = n;
        for (int k = 0; k < d->strip_start && begin < n; k++) {
            uint32_t cp;
            int w = tk_utf8_decode(s + begin, &cp);
            if (cp != d->strip_char) break;
            begin += (size_t)w;
        }
        for (int k = 0; k < d->strip_stop && end > begin; k++) {
            size_t b = end - 1;
            while (b > begin && ((unsigned char)s[b] & 0xC0) == 0x80) b--;
            uint32_t cp;
            tk_utf8_decode(s + b, &cp);
            if (cp != d->strip_char) break;
            end = b;
        }
        if (toklist_push(out, s + begin, end - begin) < 0) return -1;
    }
    return 0;
}

static int replace(const tk_decoder *d, const toklist *in, toklist *out, tk_buf *tmp) {
    tk_pieces pieces = {0};
    int r = 0;
    for (size_t i = 0; i < in->count && r == 0; i++) {
        const char *s = TOK(in, i);
        r = tk_find_matches(&d->pattern, s, in->len[i], &pieces);
        tmp->len = 0;
        for (size_t k = 0; k < pieces.count && r == 0; k++) {
            const tk_piece *p = &pieces.items[k];
            r = p->match ? tk_buf_append(tmp, d->text, d->text_len)
                         : tk_buf_append(tmp, s + p->start, p->end - p->start);
        }
        if (r == 0) r = toklist_push(out, tmp->data ? tmp->data : "", tmp->len);
    }
    tk_pieces_free(&pieces);
    return r;
}

/* Metaspace: the replacement becomes a space, and in the first token it is
 * dropped (unless prepend_scheme is "never"). */
static int metaspace(const tk_decoder *d, const toklist *in, toklist *out, tk_buf *tmp) {
    for (size_t i = 0; i < in->count; i++) {
        const char *s = TOK(in, i);
        tmp->len = 0;
        for (size_t k = 0; k < in->len[i];) {
            uint32_t cp;
            int w = tk_utf8_decode(s + k, &cp);
            int r = 0;
            if (cp != d->replacement) r = tk_buf_append(tmp, s + k, (size_t)w);
            else if (i != 0 || d->prepend_scheme == TK_PREPEND_NEVER) r = tk_buf_putc(tmp, ' ');
            if (r < 0) return -1;
            k += (size_t)w;
        }
        if (toklist_push(out, tmp->data ? tmp->data : "", tmp->len) < 0) return -1;
    }
    return 0;
}

/* BPEDecoder: the suffix becomes a space, except at the last token. */
static int bpe_suffix(const tk_decoder *d, const toklist *in, toklist *out, tk_buf *tmp) {
    tk_pattern literal = {.kind = TK_PAT_LITERAL, .literal = d->text, .literal_len = d->text_len};
    tk_pieces pieces = {0};
    int r = 0;
    for (size_t i = 0; i < in->count && r == 0; i++) {
        const char *s = TOK(in, i);
        r = tk_find_matches(&literal, s, in->len[i], &pieces);
        tmp->len = 0;
        const char *with = i + 1 == in->count ? "" : " ";
        for (size_t k = 0; k < pieces.count && r == 0; k++) {
            const tk_piece *p = &pieces.items[k];
            r = p->match ? tk_buf_append(tmp, with, strlen(with))
                         : tk_buf_append(tmp, s + p->start, p->end - p->start);
        }
        if (r == 0) r = toklist_push(out, tmp->data ? tmp->data : "", tmp->len);
    }
    tk_pieces_free(&pieces);
    return r;
}

static int decode_chain(const tk_decoder *d, toklist *in, toklist *out, tk_buf *tmp) {
    toklist_clear(out);
    switch (d->kind) {
    case TK_DEC_BYTELEVEL:
        return byte_level(in, out, tmp);
    case TK_DEC_BYTE_FALLBACK:
        return byte_fallback(in, out, tmp);
    case TK_DEC_FUSE:
        return toklist_push(out, in->text.data ? in->text.data : "", in->text.len);
    case TK_DEC_STRIP:
        return strip(d, in, out);
    case TK_DEC_REPLACE:
        return replace(d, in, out, tmp);
    case TK_DEC_METASPACE:
        return metaspace(d, in, out, tmp);
    case TK_DEC_BPE:
        return bpe_suffix(d, in, out, tmp);
    case TK_DEC_SEQUENCE:
        for (int i = 0; i < d->count; i++) {
            if (decode_chain(&d->items[i], in, out, tmp) < 0) return -1;
            toklist swap = *in;
            *in = *out;
            *out = swap;
        }
        /* the result is in `in` after the last swap: move it back */
        {
            toklist swap = *in;
            *in = *out;
            *out = swap;
        }
        return 0;
    }
    return 0;
}

/* transformers' clean_up_tokenization (tokenization_utils_base.py). */
static int clean_up(tk_buf *text) {
    static const struct {
        const char *from, *to;
    } rules[] = {{" .", "."},   {" ?", "?"},   {" !", "!"},   {" ,", ","},   {" ' ", "'"},
                 {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++) {
        size_t from_len = strlen(rules[r].from), to_len = strlen(rules[r].to), w = 0, i = 0;
        /* each rule replaces every occurrence, left to right, as str.replace */
        while (i < text->len) {
            if (i + from_len <= text->len && memcmp(text->data + i, rules[r].from, from_len) == 0) {
                memmove(text->data + w, rules[r].to, to_len);
                w += to_len;
                i += from_len;
            } else {
                text->data[w++] = text->data[i++];
            }
        }
        text->len = w;
        text->data[w] = '\0';
    }
    return 0;
}

char *tl_tokenizer_decode(const tl_tokenizer *t, const int32_t *ids, size_t n, int flags,
                          size_t *len) {
    if (len) *len = 0;
    if (!t) return tl_propagate("tl_tokenizer_decode: the tokenizer is NULL");
    if (!ids && n > 0) return tl_fail("tl_tokenizer_decode: ids is NULL but n is %zu", n);
    toklist a = {0}, b = {0};
    tk_buf tmp = {0}, result = {0};
    int r = tk_buf_reserve(&result, 0);
    for (size_t i = 0; i < n && r == 0; i++) {
        const char *tok = tl_tokenizer_id_to_token(t, ids[i]);
        if (!tok) continue;
        if ((flags & TL_DECODE_SKIP_SPECIAL) && tl_tokenizer_is_special(t, ids[i])) continue;
        int32_t at = t->added_index_by_id[ids[i]];
        size_t tok_len = at >= 0 ? t->added[at].len : t->bpe.id_token_len[ids[i]];
        r = toklist_push(&a, tok, tok_len);
    }
    if (r == 0 && t->decoder) {
        r = decode_chain(t->decoder, &a, &b, &tmp);
        for (size_t i = 0; i < b.count && r == 0; i++)
            r = tk_buf_append(&result, TOK(&b, i), b.len[i]);
    } else if (r == 0) {
        for (size_t i = 0; i < a.count && r == 0; i++) {
            if (i && tk_buf_putc(&result, ' ') < 0) r = -1;
            if (r == 0) r = tk_buf_append(&result, TOK(&a, i), a.len[i]);
        }
    }
    if (r == 0 && (flags & TL_DECODE_CLEAN_UP_SPACES)) r = clean_up(&result);
    toklist_free(&a);
    toklist_free(&b);
    tk_buf_free(&tmp);
    if (r < 0) {
        tk_buf_free(&result);
        return NULL;
    }
    if (len) *len = result.len;
    return result.data;
}
