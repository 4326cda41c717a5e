/* tokenizer_pattern.c: patterns and NormalizedString::split, as the tokenizers
 * library defines them (src/utils/pattern.rs, src/tokenizer/normalizer.rs).
 *
 * Regexes are Oniguruma's, compiled as the Rust library compiles them (the
 * onig crate's Regex::new: default syntax, no options, UTF-8), so lookahead,
 * \p{...} classes and (?i:...) behave as in the library itself.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tinyllm/tensor.h"
#include "tokenizer_internal.h"

static pthread_once_t onig_once = PTHREAD_ONCE_INIT;
static void onig_setup(void) {
    OnigEncoding encodings[1] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
}

int tk_pattern_regex(tk_pattern *p, const char *source, size_t len, const char *where) {
    pthread_once(&onig_once, onig_setup);
    memset(p, 0, sizeof *p);
    OnigErrorInfo info;
    const UChar *s = (const UChar *)source;
    int r = onig_new(&p->regex, s, s + len, ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
                     ONIG_SYNTAX_DEFAULT, &info);
    if (r != ONIG_NORMAL) {
        UChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
        onig_error_code_to_str(message, r, &info);
        p->regex = NULL;
        tl_fail("%s: the regex \"%.200s\" does not compile (Oniguruma: %s); fix the pattern",
                where, source, (const char *)message);
        return -1;
    }
    p->kind = TK_PAT_REGEX;
    return 0;
}

void tk_pattern_free(tk_pattern *p) {
    if (p->regex) onig_free(p->regex);
    free(p->literal);
    memset(p, 0, sizeof *p);
}

static int push(tk_pieces *out, size_t start, size_t end, bool match) {
    if (out->count == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 16;
        tk_piece *items = realloc(out->items, cap * sizeof *items);
        if (!items) {
            tl_fail("tokenizer: out of memory splitting a text");
            return -1;
        }
        out->items = items;
        out->cap = cap;
    }
    out->items[out->count++] = (tk_piece){start, end, match};
    return 0;
}

void tk_pieces_free(tk_pieces *p) {
    free(p->items);
    memset(p, 0, sizeof *p);
}

/* Matches as (start, end) pairs, then the gaps: the onig crate's find_iter
 * (an empty match right after the previous match is skipped by one char). */
static int regex_matches(OnigRegex re, const char *s, size_t len, tk_pieces *out) {
    OnigRegion *region = onig_region_new();
    if (!region) {
        tl_fail("tokenizer: out of memory for a regex region");
        return -1;
    }
    const UChar *u = (const UChar *)s, *end = u + len;
    size_t prev = 0, from = 0;
    bool have_last = false;
    size_t last_end = 0;
    int status = 0;
    while (from <= len) {
        onig_region_clear(region);
        int r = onig_search(re, u, end, u + from, end, region, ONIG_OPTION_NONE);
        if (r == ONIG_MISMATCH) break;
        if (r < 0) {
            UChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
            onig_error_code_to_str(message, r);
            tl_fail("tokenizer: a regex search failed (Oniguruma: %s)", (const char *)message);
            status = -1;
            break;
        }
        size_t ms = (size_t)region->beg[0], me = (size_t)region->end[0];
        if (ms == me && have_last && last_end == me) {
            if (from >= len) break;
            uint32_t cp;
            from += (size_t)tk_utf8_decode(s + from, &cp);
            continue;
        }
        from = me;
        have_last = true;
        last_end = me;
        if (prev != ms && push(out, prev, ms, false) < 0) {
            status = -1;
            break;
        }
        if (push(out, ms, me, true) < 0) {
            status = -1;
            break;
        }
        prev = me;
    }
    onig_region_free(region, 1);
    if (status == 0 && prev != len) status = push(out, prev, len, false);
    return status;
}

static int literal_matches(const tk_pattern *p, const char *s, size_t len, tk_pieces *out) {
    if (p->literal_len == 0) return push(out, 0, len, false);
    size_t prev = 0, i = 0;
    while (i + p->literal_len <= len) {
        const char *hit = memmem(s + i, len - i, p->literal, p->literal_len);
        if (!hit) break;
        size_t ms = (size_t)(hit - s), me = ms + p->literal_len;
        if (prev != ms && push(out, prev, ms, false) < 0) return -1;
        if (push(out, ms, me, true) < 0) return -1;
        prev = i = me;
    }
    return prev != len ? push(out, prev, len, false) : 0;
}

/* Every character for which char_fn holds is one match. */
static int char_matches(const tk_pattern *p, const char *s, size_t len, tk_pieces *out) {
    size_t last = 0, i = 0;
    while (i < len) {
        uint32_t cp;
        int n = tk_utf8_decode(s + i, &cp);
        if (p->char_fn(cp)) {
            if (last < i && push(out, last, i, false) < 0) return -1;
            if (push(out, i, i + (size_t)n, true) < 0) return -1;
            last = i + (size_t)n;
        }
        i += (size_t)n;
    }
    return last < len ? push(out, last, len, false) : 0;
}

int tk_find_matches(const tk_pattern *p, const char *s, size_t len, tk_pieces *out) {
    out->count = 0;
    int r;
    if (len == 0) r = push(out, 0, 0, false);
    else if (p->kind == TK_PAT_REGEX) r = regex_matches(p->regex, s, len, out);
    else if (p->kind == TK_PAT_LITERAL) r = literal_matches(p, s, len, out);
    else r = char_matches(p, s, len, out);
    if (r < 0) return -1;
    if (p->invert)
        for (size_t i = 0; i < out->count; i++) out->items[i].match = !out->items[i].match;
    return 0;
}

int tk_split(const tk_pattern *p, tk_split_behavior behavior, const char *s, size_t len,
             tk_pieces *out) {
    if (tk_find_matches(p, s, len, out) < 0) return -1;
    tk_piece *m = out->items;
    size_t n = out->count, kept = 0;
    /* Each case rewrites the pieces in place (kept <= i always holds); a
     * piece's match flag then means "remove it". */
    switch (behavior) {
    case TK_SPLIT_ISOLATED:
        for (size_t i = 0; i < n; i++) m[kept++] = (tk_piece){m[i].start, m[i].end, false};
        break;
    case TK_SPLIT_REMOVED:
        for (size_t i = 0; i < n; i++) m[kept++] = (tk_piece){m[i].start, m[i].end, m[i].match};
        break;
    case TK_SPLIT_MERGED_WITH_PREVIOUS: {
        bool previous_match = false;
        for (size_t i = 0; i < n; i++) {
            tk_piece cur = m[i];
            if (cur.match && !previous_match && kept > 0) m[kept - 1].end = cur.end;
            else m[kept++] = (tk_piece){cur.start, cur.end, false};
            previous_match = cur.match;
        }
        break;
    }
    case TK_SPLIT_MERGED_WITH_NEXT: {
        /* from the right: a match joins the piece after it */
        bool previous_match = false;
        size_t w = n;   /* pieces are written from the end backwards */
        for (size_t i = n; i-- > 0;) {
            tk_piece cur = m[i];
            if (cur.match && !previous_match && w < n) m[w].start = cur.start;
            else m[--w] = (tk_piece){cur.start, cur.end, false};
            previous_match = cur.match;
        }
        memmove(m, m + w, (n - w) * sizeof *m);
        kept = n - w;
        break;
    }
    case TK_SPLIT_CONTIGUOUS: {
        int previous = -1;
        for (size_t i = 0; i < n; i++) {
            tk_piece cur = m[i];
            if ((int)cur.match == previous && kept > 0) m[kept - 1].end = cur.end;
            else m[kept++] = (tk_piece){cur.start, cur.end, false};
            previous = cur.match;
        }
        break;
    }
    }
    size_t w = 0;
    for (size_t i = 0; i < kept; i++)
        if (!m[i].match && m[i].start < m[i].end) m[w++] = m[i];
    out->count = w;
    return 0;
}
