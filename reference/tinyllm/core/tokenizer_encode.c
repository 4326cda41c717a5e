/* tokenizer_encode.c: encoding (tokenizers' src/tokenizer/mod.rs and
 * added_vocabulary.rs): added tokens split out, then normalizer,
 * pre-tokenizer, BPE and post-processor.
 *
 * Added tokens are found leftmost-longest (the library's Aho-Corasick with
 * MatchKind::LeftmostLongest): at the first position where any token starts,
 * the longest one wins, and the scan resumes after it. A byte trie finds them;
 * UTF-8 being self-synchronising, a match of a valid token in valid text
 * always starts and ends on character boundaries.
 */
#include <stdlib.h>
#include <string.h>

#include "tinyllm/tensor.h"
#include "tokenizer_internal.h"

/* ---- the trie of added tokens ------------------------------------------- */

static size_t edge_slot(const tk_trie *t, uint64_t key) {
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    size_t mask = t->edge_cap - 1, i = (size_t)(h >> 24) & mask;
    while (t->edge_keys[i] && t->edge_keys[i] != key) i = (i + 1) & mask;
    return i;
}

static int32_t child(const tk_trie *t, int32_t node, unsigned char byte) {
    if (!t->edge_cap) return -1;
    size_t i = edge_slot(t, ((uint64_t)node << 8 | byte) + 1);
    return t->edge_keys[i] ? t->edge_child[i] : -1;
}

static int32_t new_node(tk_trie *t) {
    if (t->node_count == t->node_cap) {
        size_t cap = t->node_cap ? t->node_cap * 2 : 64;
        int32_t *p = realloc(t->terminal, cap * sizeof *p);
        if (!p) return -1;
        t->terminal = p;
        t->node_cap = cap;
    }
    t->terminal[t->node_count] = -1;
    return (int32_t)t->node_count++;
}

int tk_trie_build(tk_trie *t, const tl_tokenizer *tok, bool normalized) {
    memset(t, 0, sizeof *t);
    size_t bytes = 0;
    for (int i = 0; i < tok->added_count; i++) bytes += tok->added[i].match_len;
    t->edge_cap = 16;
    while (t->edge_cap < bytes * 2) t->edge_cap *= 2;
    t->edge_keys = calloc(t->edge_cap, sizeof *t->edge_keys);
    t->edge_child = malloc(t->edge_cap * sizeof *t->edge_child);
    if (!t->edge_keys || !t->edge_child || new_node(t) < 0) goto oom;
    for (int i = 0; i < tok->added_count; i++) {
        const tk_added_token *a = &tok->added[i];
        if (a->normalized != normalized || a->match_len == 0) continue;
        int32_t node = 0;
        for (size_t k = 0; k < a->match_len; k++) {
            unsigned char byte = (unsigned char)a->match[k];
            int32_t next = child(t, node, byte);
            if (next < 0) {
                next = new_node(t);
                if (next < 0) goto oom;
                size_t slot = edge_slot(t, ((uint64_t)node << 8 | byte) + 1);
                t->edge_keys[slot] = ((uint64_t)node << 8 | byte) + 1;
                t->edge_child[slot] = next;
                t->edge_count++;
            }
            node = next;
        }
        /* the same content twice: the later entry of added_tokens wins */
        t->terminal[node] = i;
    }
    return 0;
oom:
    tk_trie_free(t);
    tl_fail("tokenizer: out of memory for the added tokens' trie");
    return -1;
}

void tk_trie_free(tk_trie *t) {
    free(t->edge_keys);
    free(t->edge_child);
    free(t->terminal);
    memset(t, 0, sizeof *t);
}

/* The longest added token starting at s[i], as an index into added[], or -1. */
static int longest_at(const tk_trie *t, const char *s, size_t len, size_t i, size_t *end) {
    int32_t node = 0;
    int best = -1;
    for (size_t k = i; k < len; k++) {
        node = child(t, node, (unsigned char)s[k]);
        if (node < 0) break;
        if (t->terminal[node] >= 0) {
            best = t->terminal[node];
            *end = k + 1;
        }
    }
    return best;
}

static uint32_t char_before(const char *s, size_t at) {
    size_t b = at - 1;
    while (b > 0 && ((unsigned char)s[b] & 0xC0) == 0x80) b--;
    uint32_t cp;
    tk_utf8_decode(s + b, &cp);
    return cp;
}

/* AddedVocabulary::find_matches: text and added-token pieces of s, pushed
 * onto out. orig is s's offset in the input. */
static int split_added(const tl_tokenizer *tok, const tk_trie *trie, const char *s, size_t len,
                       size_t orig, tk_splits *out) {
    size_t start_offset = 0, i = 0;
    while (trie->node_count > 1 && i < len) {
        size_t stop = 0;
        int which = longest_at(trie, s, len, i, &stop);
        if (which < 0) {
            i++;
            continue;
        }
        const tk_added_token *a = &tok->added[which];
        size_t start = i;
        i = stop;   /* the scan resumes after the match, even a discarded one */
        if (a->single_word) {   /* Rust's regex \w and \s, as find_matches uses */
            bool start_space = start == 0 || !tk_is_word(char_before(s, start));
            uint32_t next = 0;
            if (stop < len) tk_utf8_decode(s + stop, &next);
            bool stop_space = stop == len || !tk_is_word(next);
            if (!start_space || !stop_space) continue;
        }
        if (a->lstrip) {
            size_t newstart = start;
            while (newstart > 0) {
                size_t b = newstart - 1;
                while (b > 0 && ((unsigned char)s[b] & 0xC0) == 0x80) b--;
                uint32_t cp;
                tk_utf8_decode(s + b, &cp);
                if (!tk_is_whitespace(cp)) break;
                newstart = b;
            }
            start = newstart > start_offset ? newstart : start_offset;
        }
        if (a->rstrip)
            while (stop < len) {
                uint32_t cp;
                int n = tk_utf8_decode(s + stop, &cp);
                if (!tk_is_whitespace(cp)) break;
                stop += (size_t)n;
            }
        i = stop;
        if (start_offset < start &&
            tk_splits_push(out, s + start_offset, start - start_offset, orig + start_offset,
                           -1) < 0)
            return -1;
        if (tk_splits_push(out, s + start, stop - start, orig + start, a->id) < 0) return -1;
        start_offset = stop;
    }
    if (start_offset < len &&
        tk_splits_push(out, s + start_offset, len - start_offset, orig + start_offset, -1) < 0)
        return -1;
    return 0;
}

/* ---- post-processors ---------------------------------------------------- */

static int post_process(const tk_post *p, int32_t **ids, size_t *count, size_t *cap) {
    if (p->kind == TK_POST_BYTELEVEL) return 0;   /* offsets only */
    if (p->kind == TK_POST_SEQUENCE) {
        for (int i = 0; i < p->count; i++)
            if (post_process(&p->items[i], ids, count, cap) < 0) return -1;
        return 0;
    }
    size_t extra = 0;
    for (int i = 0; i < p->single_count; i++) extra += p->single[i] >= 0 ? 1 : 0;
    size_t total = *count + extra;
    int32_t *out = malloc((total ? total : 1) * sizeof *out);
    if (!out) {
        tl_fail("tokenizer: out of memory adding special tokens");
        return -1;
    }
    size_t k = 0;
    for (int i = 0; i < p->single_count; i++) {
        if (p->single[i] >= 0) {
            out[k++] = p->single[i];
        } else {
            if (*count) memcpy(out + k, *ids, *count * sizeof *out);
            k += *count;
        }
    }
    free(*ids);
    *ids = out;
    *count = k;
    *cap = total ? total : 1;
    return 0;
}

/* ---- encode --------------------------------------------------------------- */

int64_t tl_tokenizer_encode(tl_tokenizer *t, const char *text, size_t len, bool add_special,
                            int32_t **ids) {
    if (ids) *ids = NULL;
    if (!t || !ids || (!text && len > 0)) {
        tl_propagate("tl_tokenizer_encode: %s is NULL",
                     !t ? "the tokenizer" : !ids ? "ids" : "text");
        return -1;
    }
    size_t valid = tk_utf8_valid_prefix(text, len);
    if (valid < len) {
        tl_fail("tl_tokenizer_encode: the text is not valid UTF-8 (byte 0x%02X at offset %zu); "
                "decode it first (invalid bytes become U+FFFD with errors='replace')",
                (unsigned char)text[valid], valid);
        return -1;
    }
    tk_splits a = {0}, b = {0}, c = {0};
    tk_buf normalized = {0};
    int32_t *out = NULL;
    size_t count = 0, cap = 0;
    int r = 0;

    /* 1. added tokens matched on the raw text, 2. the normalizer on each
     * piece between them, 3. added tokens matched on the normalized pieces */
    r = split_added(t, &t->trie_raw, text ? text : "", len, 0, &b);
    for (size_t i = 0; i < b.count && r == 0; i++) {
        const tk_split_t *sp = &b.items[i];
        const char *s = b.text.data + sp->start;
        if (sp->token >= 0) {
            r = tk_splits_push(&a, s, sp->len, sp->orig, sp->token);
            continue;
        }
        if (t->normalizer) {
            r = tk_normalize(t->normalizer, s, sp->len, &normalized);
            if (r == 0) r = split_added(t, &t->trie_normalized, normalized.data, normalized.len,
                                        sp->orig, &a);
        } else {
            r = split_added(t, &t->trie_normalized, s, sp->len, sp->orig, &a);
        }
    }
    /* 4. the pre-tokenizer on the text pieces */
    tk_splits *words = &a;
    if (r == 0 && t->pretokenizer) {
        r = tk_pretokenize(t->pretokenizer, &a, &b, &c);
        words = &b;
    }
    /* 5. the model on each word */
    for (size_t i = 0; i < words->count && r == 0; i++) {
        const tk_split_t *sp = &words->items[i];
        if (sp->token >= 0) {
            if (count == cap) {
                cap = cap ? cap * 2 : 64;
                int32_t *p = realloc(out, cap * sizeof *p);
                if (!p) {
                    tl_fail("tl_tokenizer_encode: out of memory for the ids");
                    r = -1;
                    break;
                }
                out = p;
            }
            out[count++] = sp->token;
        } else {
            r = tk_bpe_tokenize(&t->bpe, words->text.data + sp->start, sp->len, &out, &count,
                                &cap);
        }
    }
    /* 6. the post-processor adds the special tokens */
    if (r == 0 && add_special && t->post) r = post_process(t->post, &out, &count, &cap);
    tk_splits_free(&a);
    tk_splits_free(&b);
    tk_splits_free(&c);
    tk_buf_free(&normalized);
    if (r < 0) {
        free(out);
        return -1;
    }
    if (count == 0) {
        free(out);
        out = NULL;
    }
    *ids = out;
    return (int64_t)count;
}
