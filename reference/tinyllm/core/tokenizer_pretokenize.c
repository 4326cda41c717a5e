/* tokenizer_pretokenize.c: the pre-tokenizers (tokenizers' src/pre_tokenizers/).
 *
 * A text being encoded is a list of splits; a pre-tokenizer replaces every
 * split that is still text (not an added token) by its pieces. Each split
 * keeps the offset of its start in the input, which Metaspace's
 * prepend_scheme "first" reads (the library's offsets_original().0 == 0; a
 * piece keeps its split's offset plus its own start, exact unless a
 * normalizer inserted characters before it).
 */
#include <stdlib.h>
#include <string.h>

#include "tinyllm/tensor.h"
#include "tokenizer_internal.h"

int tk_splits_push(tk_splits *s, const char *data, size_t len, size_t orig, int32_t token) {
    if (s->count == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 32;
        tk_split_t *items = realloc(s->items, cap * sizeof *items);
        if (!items) {
            tl_fail("tokenizer: out of memory for the splits of a text");
            return -1;
        }
        s->items = items;
        s->cap = cap;
    }
    size_t start = s->text.len;
    if (tk_buf_append(&s->text, data, len) < 0) return -1;
    s->items[s->count++] = (tk_split_t){start, len, orig, token};
    return 0;
}

void tk_splits_clear(tk_splits *s) {
    s->count = 0;
    s->text.len = 0;
}

void tk_splits_free(tk_splits *s) {
    free(s->items);
    tk_buf_free(&s->text);
    memset(s, 0, sizeof *s);
}

/* Pushes the kept pieces of text[0, len) (with a byte-level mapping when
 * byte_level) as new splits. */
static int push_pieces(tk_splits *out, const char *text, const tk_pieces *pieces, size_t orig,
                       bool byte_level, tk_buf *scratch) {
    for (size_t i = 0; i < pieces->count; i++) {
        const tk_piece *p = &pieces->items[i];
        const char *data = text + p->start;
        size_t len = p->end - p->start;
        if (byte_level) {
            scratch->len = 0;
            for (size_t k = 0; k < len; k++)
                if (tk_buf_put_cp(scratch, TK_BYTE_CHAR[(unsigned char)data[k]]) < 0) return -1;
            data = scratch->data;
            len = scratch->len;
        }
        if (tk_splits_push(out, data, len, orig + p->start, -1) < 0) return -1;
    }
    return 0;
}

static int whole(tk_pieces *pieces, size_t len) {
    pieces->count = 0;
    if (pieces->cap == 0) {
        pieces->items = malloc(16 * sizeof *pieces->items);
        if (!pieces->items) {
            tl_fail("tokenizer: out of memory splitting a text");
            return -1;
        }
        pieces->cap = 16;
    }
    if (len) pieces->items[pieces->count++] = (tk_piece){0, len, false};
    return 0;
}

typedef struct {
    tk_pieces pieces;
    tk_buf text, mapped;
} work;

static int byte_level(const tk_pretokenizer *p, const char *s, size_t len, size_t orig,
                      tk_splits *out, work *w) {
    w->text.len = 0;
    if (p->add_prefix_space && (len == 0 || s[0] != ' ') && tk_buf_putc(&w->text, ' ') < 0)
        return -1;
    if (tk_buf_append(&w->text, s, len) < 0) return -1;
    int r = p->use_regex
                ? tk_split(&p->pattern, TK_SPLIT_ISOLATED, w->text.data, w->text.len, &w->pieces)
                : whole(&w->pieces, w->text.len);
    if (r < 0) return -1;
    return push_pieces(out, w->text.data, &w->pieces, orig, true, &w->mapped);
}

static int metaspace(const tk_pretokenizer *p, const char *s, size_t len, size_t orig,
                     tk_splits *out, work *w) {
    size_t rep_len = strlen(p->replacement_utf8);
    w->text.len = 0;
    if (tk_buf_reserve(&w->text, len + rep_len) < 0) return -1;
    for (size_t i = 0; i < len; i++) {
        int r = s[i] == ' ' ? tk_buf_append(&w->text, p->replacement_utf8, rep_len)
                            : tk_buf_putc(&w->text, s[i]);
        if (r < 0) return -1;
    }
    bool starts = w->text.len >= rep_len && memcmp(w->text.data, p->replacement_utf8, rep_len) == 0;
    bool prepend = !starts && (p->prepend_scheme == TK_PREPEND_ALWAYS ||
                               (p->prepend_scheme == TK_PREPEND_FIRST && orig == 0));
    if (prepend) {
        if (tk_buf_reserve(&w->text, rep_len) < 0) return -1;
        memmove(w->text.data + rep_len, w->text.data, w->text.len + 1);
        memcpy(w->text.data, p->replacement_utf8, rep_len);
        w->text.len += rep_len;
    }
    int r = p->split ? tk_split(&p->pattern, TK_SPLIT_MERGED_WITH_NEXT, w->text.data,
                                w->text.len, &w->pieces)
                     : whole(&w->pieces, w->text.len);
    if (r < 0) return -1;
    return push_pieces(out, w->text.data, &w->pieces, orig, false, NULL);
}

static int one(const tk_pretokenizer *p, const tk_splits *in, tk_splits *out, work *w) {
    for (size_t i = 0; i < in->count; i++) {
        const tk_split_t *sp = &in->items[i];
        const char *s = in->text.data + sp->start;
        if (sp->token >= 0) {
            if (tk_splits_push(out, s, sp->len, sp->orig, sp->token) < 0) return -1;
            continue;
        }
        int r;
        switch (p->kind) {
        case TK_PRE_BYTELEVEL:
            r = byte_level(p, s, sp->len, sp->orig, out, w);
            break;
        case TK_PRE_METASPACE:
            r = metaspace(p, s, sp->len, sp->orig, out, w);
            break;
        default:   /* Split, Digits, Whitespace, WhitespaceSplit, Punctuation */
            r = tk_split(&p->pattern, p->behavior, s, sp->len, &w->pieces);
            if (r == 0) r = push_pieces(out, s, &w->pieces, sp->orig, false, NULL);
            break;
        }
        if (r < 0) return -1;
    }
    return 0;
}

int tk_pretokenize(const tk_pretokenizer *p, const tk_splits *in, tk_splits *out,
                   tk_splits *scratch) {
    work w = {0};
    int r = 0;
    tk_splits_clear(out);
    if (p->kind != TK_PRE_SEQUENCE) {
        r = one(p, in, out, &w);
    } else if (p->count == 0) {
        for (size_t i = 0; i < in->count && r == 0; i++)
            r = tk_splits_push(out, in->text.data + in->items[i].start, in->items[i].len,
                               in->items[i].orig, in->items[i].token);
    } else {
        /* in -> out -> scratch -> out ...: the last step must land in out */
        const tk_splits *src = in;
        for (int k = 0; k < p->count && r == 0; k++) {
            bool to_out = (p->count - 1 - k) % 2 == 0;
            tk_splits *dst = to_out ? out : scratch;
            tk_splits_clear(dst);
            if (p->items[k].kind == TK_PRE_SEQUENCE) {
                tk_splits inner = {0};
                r = tk_pretokenize(&p->items[k], src, dst, &inner);
                tk_splits_free(&inner);
            } else {
                r = one(&p->items[k], src, dst, &w);
            }
            src = dst;
        }
    }
    tk_pieces_free(&w.pieces);
    tk_buf_free(&w.text);
    tk_buf_free(&w.mapped);
    return r;
}
