/* tokenizer_bpe.c: the BPE model (tokenizers' src/models/bpe/model.rs, word.rs).
 *
 * A word starts as one symbol per character (with continuing_subword_prefix
 * on all but the first, end_of_word_suffix on the last); a character outside
 * the vocabulary becomes "<0xXX>" byte tokens (byte_fallback) or unk_token
 * (consecutive unknowns fused into one when fuse_unk) or is dropped. Then the
 * adjacent pair of lowest merge rank is merged, the leftmost first among
 * equals, until no adjacent pair has a merge. The symbols form a linked list
 * and candidate pairs sit in a binary heap, stale entries skipped when
 * popped: O(n log n) for a word of n characters, as in the library.
 */
#include <stdlib.h>
#include <string.h>

#include "tinyllm/tensor.h"
#include "tokenizer_internal.h"

enum { CACHE_MAX_WORD = 256, CACHE_MAX_ENTRIES = 1 << 16 };

/* ---- the merge map ---------------------------------------------------- */

static uint64_t pair_key(int32_t left, int32_t right) {
    return ((uint64_t)(uint32_t)left << 32 | (uint32_t)right) + 1;
}

static size_t pair_slot(const tk_bpe *m, uint64_t key) {
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    size_t mask = m->merge_cap - 1, i = (size_t)(h >> 20) & mask;
    while (m->merge_keys[i] && m->merge_keys[i] != key) i = (i + 1) & mask;
    return i;
}

int tk_bpe_build_merges(tk_bpe *m, size_t count) {
    size_t cap = 16;
    while (cap < count * 2) cap *= 2;
    m->merge_keys = calloc(cap, sizeof *m->merge_keys);
    m->merge_rank = malloc(cap * sizeof *m->merge_rank);
    m->merge_id = malloc(cap * sizeof *m->merge_id);
    m->merge_cap = cap;
    if (!m->merge_keys || !m->merge_rank || !m->merge_id) {
        tl_fail("tokenizer: out of memory for %zu merges", count);
        return -1;
    }
    return 0;
}

/* A pair listed twice keeps the later rank, as the library's HashMap does. */
int tk_bpe_add_merge(tk_bpe *m, int32_t left, int32_t right, uint32_t rank, int32_t merged) {
    uint64_t key = pair_key(left, right);
    size_t i = pair_slot(m, key);
    m->merge_keys[i] = key;
    m->merge_rank[i] = rank;
    m->merge_id[i] = merged;
    return 0;
}

static bool find_merge(const tk_bpe *m, int32_t left, int32_t right, uint32_t *rank,
                       int32_t *merged) {
    if (!m->merge_cap) return false;
    size_t i = pair_slot(m, pair_key(left, right));
    if (!m->merge_keys[i]) return false;
    *rank = m->merge_rank[i];
    *merged = m->merge_id[i];
    return true;
}

/* ---- one word ----------------------------------------------------------- */

typedef struct {
    int32_t id;
    int32_t prev, next;   /* -1 at the ends */
    uint32_t len;         /* bytes of the word it covers; 0 once merged away */
} symbol;

typedef struct {
    uint32_t rank;
    int32_t pos, merged;
} candidate;

static bool before(candidate a, candidate b) {
    return a.rank != b.rank ? a.rank < b.rank : a.pos < b.pos;
}

typedef struct {
    symbol *symbols;
    size_t count, cap;
    candidate *heap;
    size_t heap_count, heap_cap;
} word;

static int add_symbol(word *w, int32_t id, uint32_t len) {
    if (w->count == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        symbol *s = realloc(w->symbols, cap * sizeof *s);
        if (!s) {
            tl_fail("tokenizer: out of memory for a word's symbols");
            return -1;
        }
        w->symbols = s;
        w->cap = cap;
    }
    int32_t pos = (int32_t)w->count;
    w->symbols[w->count++] = (symbol){id, pos - 1, -1, len};
    if (pos > 0) w->symbols[pos - 1].next = pos;
    return 0;
}

static int heap_push(word *w, candidate c) {
    if (w->heap_count == w->heap_cap) {
        size_t cap = w->heap_cap ? w->heap_cap * 2 : 64;
        candidate *h = realloc(w->heap, cap * sizeof *h);
        if (!h) {
            tl_fail("tokenizer: out of memory for a word's merges");
            return -1;
        }
        w->heap = h;
        w->heap_cap = cap;
    }
    size_t i = w->heap_count++;
    while (i > 0 && before(c, w->heap[(i - 1) / 2])) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = c;
    return 0;
}

static candidate heap_pop(word *w) {
    candidate top = w->heap[0], last = w->heap[--w->heap_count];
    size_t i = 0, n = w->heap_count;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && before(w->heap[child + 1], w->heap[child])) child++;
        if (!before(w->heap[child], last)) break;
        w->heap[i] = w->heap[child];
        i = child;
    }
    if (n) w->heap[i] = last;
    return top;
}

static int push_pair(const tk_bpe *m, word *w, int32_t pos) {
    const symbol *a = &w->symbols[pos];
    if (a->next < 0) return 0;
    uint32_t rank;
    int32_t merged;
    if (!find_merge(m, a->id, w->symbols[a->next].id, &rank, &merged)) return 0;
    return heap_push(w, (candidate){rank, pos, merged});
}

static int merge_all(const tk_bpe *m, word *w) {
    w->heap_count = 0;
    for (size_t i = 0; i + 1 < w->count; i++)
        if (push_pair(m, w, (int32_t)i) < 0) return -1;
    while (w->heap_count) {
        candidate top = heap_pop(w);
        symbol *a = &w->symbols[top.pos];
        if (a->len == 0 || a->next < 0) continue;
        symbol *b = &w->symbols[a->next];
        uint32_t rank;
        int32_t merged;
        /* stale: the pair at pos changed since this entry was pushed */
        if (!find_merge(m, a->id, b->id, &rank, &merged) || merged != top.merged) continue;
        a->id = top.merged;
        a->len += b->len;
        a->next = b->next;
        b->len = 0;
        if (a->next >= 0) w->symbols[a->next].prev = top.pos;
        if (a->prev >= 0 && push_pair(m, w, a->prev) < 0) return -1;
        if (push_pair(m, w, top.pos) < 0) return -1;
    }
    return 0;
}

/* ---- tokenize ------------------------------------------------------------ */

static int push_id(int32_t **ids, size_t *count, size_t *cap, int32_t id) {
    if (*count == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        int32_t *p = realloc(*ids, c * sizeof *p);
        if (!p) {
            tl_fail("tokenizer: out of memory for the ids");
            return -1;
        }
        *ids = p;
        *cap = c;
    }
    (*ids)[(*count)++] = id;
    return 0;
}

/* The symbols of a word before merging. */
static int initial_symbols(const tk_bpe *m, const char *s, size_t len, word *w, tk_buf *tmp) {
    int32_t unk_len = -1;   /* a pending unk symbol's byte length, -1: none */
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = (size_t)tk_utf8_decode(s + i, &cp);
        bool first = i == 0, last = i + n == len;
        tmp->len = 0;
        if (!first && m->prefix && tk_buf_append(tmp, m->prefix, m->prefix_len) < 0) return -1;
        if (tk_buf_append(tmp, s + i, n) < 0) return -1;
        if (last && m->suffix && tk_buf_append(tmp, m->suffix, m->suffix_len) < 0) return -1;
        i += n;
        int32_t id = tk_strmap_get(&m->vocab, tmp->data, tmp->len);
        if (id >= 0) {
            if (unk_len >= 0 && add_symbol(w, m->unk_id, (uint32_t)unk_len) < 0) return -1;
            unk_len = -1;
            if (add_symbol(w, id, (uint32_t)n) < 0) return -1;
            continue;
        }
        if (m->byte_fallback) {
            bool all = true;
            for (size_t k = 0; k < tmp->len; k++)
                if (m->byte_ids[(unsigned char)tmp->data[k]] < 0) all = false;
            if (all) {
                /* the library adds these without flushing a pending unk */
                for (size_t k = 0; k < tmp->len; k++)
                    if (add_symbol(w, m->byte_ids[(unsigned char)tmp->data[k]], 1) < 0) return -1;
                continue;
            }
        }
        if (m->unk_id < 0) continue;   /* no unk_token: the character is dropped */
        if (unk_len >= 0 && m->fuse_unk) {
            unk_len += (int32_t)n;
        } else {
            if (unk_len >= 0 && add_symbol(w, m->unk_id, (uint32_t)unk_len) < 0) return -1;
            unk_len = (int32_t)n;
        }
    }
    if (unk_len >= 0 && add_symbol(w, m->unk_id, (uint32_t)unk_len) < 0) return -1;
    return 0;
}

static int cache_put(tk_bpe *m, const char *s, size_t len, const int32_t *ids, size_t count) {
    if (m->cache.count >= CACHE_MAX_ENTRIES) {   /* full: start again */
        tk_strmap_free(&m->cache);
        m->cache_len = 0;
    }
    if (!m->cache.cap && tk_strmap_init(&m->cache, 4096) < 0) return -1;
    if (m->cache_len + count + 1 > m->cache_cap) {
        size_t cap = m->cache_cap ? m->cache_cap * 2 : 65536;
        while (cap < m->cache_len + count + 1) cap *= 2;
        int32_t *p = realloc(m->cache_ids, cap * sizeof *p);
        if (!p) return 0;   /* the cache is only an optimisation */
        m->cache_ids = p;
        m->cache_cap = cap;
    }
    size_t at = m->cache_len;
    m->cache_ids[at] = (int32_t)count;
    if (count) memcpy(m->cache_ids + at + 1, ids, count * sizeof *ids);
    m->cache_len += count + 1;
    return tk_strmap_put(&m->cache, s, len, (int32_t)at) < 0 ? -1 : 0;
}

int tk_bpe_tokenize(tk_bpe *m, const char *s, size_t len, int32_t **ids, size_t *count,
                    size_t *cap) {
    if (len == 0) return 0;
    bool cacheable = len < CACHE_MAX_WORD;
    if (cacheable && m->cache.cap) {
        int32_t at = tk_strmap_get(&m->cache, s, len);
        if (at >= 0) {
            for (int32_t k = 0; k < m->cache_ids[at]; k++)
                if (push_id(ids, count, cap, m->cache_ids[at + 1 + k]) < 0) return -1;
            return 0;
        }
    }
    if (m->ignore_merges) {
        int32_t id = tk_strmap_get(&m->vocab, s, len);
        if (id >= 0) return push_id(ids, count, cap, id);
    }
    word w = {0};
    tk_buf tmp = {0};
    size_t first = *count;
    int r = initial_symbols(m, s, len, &w, &tmp);
    if (r == 0) r = merge_all(m, &w);
    for (size_t i = 0; i < w.count && r == 0; i++)
        if (w.symbols[i].len) r = push_id(ids, count, cap, w.symbols[i].id);
    if (r == 0 && cacheable) r = cache_put(m, s, len, *ids + first, *count - first);
    free(w.symbols);
    free(w.heap);
    tk_buf_free(&tmp);
    return r;
}

void tk_bpe_free(tk_bpe *m) {
    tk_strmap_free(&m->vocab);
    if (m->id_token)
        for (int32_t i = 0; i < m->n_ids; i++) free(m->id_token[i]);
    free(m->id_token);
    free(m->id_token_len);
    free(m->merge_keys);
    free(m->merge_rank);
    free(m->merge_id);
    free(m->prefix);
    free(m->suffix);
    tk_strmap_free(&m->cache);
    free(m->cache_ids);
    memset(m, 0, sizeof *m);
}
