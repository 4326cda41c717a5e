/* tokenizer_load.c: tokenizer.json (and tokenizer_config.json,
 * generation_config.json, config.json) into a tl_tokenizer.
 *
 * The file is untrusted: every field is checked for its JSON type, ids for
 * their range, merges for their tokens; a component this runtime does not
 * implement is refused by its name, never silently skipped; a key given twice
 * (in tokenizer.json, tokenizer_config.json or the files of the stop ids) is
 * refused by its path, as HF would read the last of the two and cJSON reads
 * the first, and so is a \u0000 in a string, which cJSON cuts the string at.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "tinyllm/files.h"
#include "tinyllm/json_keys.h"
#include "tinyllm/tensor.h"
#include "tokenizer_internal.h"

/* Ids up to this bound (the largest real vocabularies hold ~260k). */
#define MAX_ID (1 << 24)
/* The largest tokenizer file read: real ones are tens of MB. */
#define TK_MAX_FILE_BYTES ((size_t)1 << 30)

static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

typedef struct {
    const char *origin;   /* the file, for messages */
} ctx;

/* Sets the error "tl_tokenizer_load: FILE: WHAT"; returns -1. */
__attribute__((format(printf, 2, 3))) static int fail(const ctx *c, const char *fmt, ...) {
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    tl_fail("tl_tokenizer_load: %s: %s", c->origin, what);
    return -1;
}

char *tk_read_file(const char *path, size_t *len) {
    char *text = tl_read_whole_file(path, TK_MAX_FILE_BYTES, len);
    if (!text) {
        char why[1024];
        snprintf(why, sizeof why, "%s", tl_error());
        tl_fail("tl_tokenizer_load: %s", why);
    }
    return text;
}

/* ---- JSON fields ---------------------------------------------------------- */

static int get_bool(const ctx *c, const cJSON *o, const char *key, bool fallback, bool *out,
                    const char *where) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v)) {
        *out = fallback;
        return 0;
    }
    if (!cJSON_IsBool(v)) return fail(c, "%s.%s must be true or false", where, key);
    *out = cJSON_IsTrue(v);
    return 0;
}

/* A string field; NULL (and 0) when absent or null, -1 when of another type. */
static int get_string(const ctx *c, const cJSON *o, const char *key, const char **out,
                      const char *where) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = NULL;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsString(v)) return fail(c, "%s.%s must be a string", where, key);
    *out = v->valuestring;
    return 0;
}

static int get_int(const ctx *c, const cJSON *o, const char *key, long lo, long hi,
                   long fallback, long *out, const char *where) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v)) {
        *out = fallback;
        return 0;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != (double)(long)v->valuedouble ||
        v->valuedouble < (double)lo || v->valuedouble > (double)hi)
        return fail(c, "%s.%s must be an integer from %ld to %ld", where, key, lo, hi);
    *out = (long)v->valuedouble;
    return 0;
}

static char *dup_bytes(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return tl_fail("tl_tokenizer_load: out of memory");
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* The one character of a JSON string (Strip's content, Metaspace's replacement). */
static int get_char(const ctx *c, const cJSON *o, const char *key, uint32_t fallback,
                    uint32_t *out, const char *where) {
    const char *s;
    if (get_string(c, o, key, &s, where) < 0) return -1;
    if (!s) {
        *out = fallback;
        return 0;
    }
    size_t n = strlen(s);
    uint32_t cp;
    if (n == 0 || tk_utf8_valid_prefix(s, n) != n || (size_t)tk_utf8_decode(s, &cp) != n)
        return fail(c, "%s.%s must be exactly one character", where, key);
    *out = cp;
    return 0;
}

/* {"String": "..."} or {"Regex": "..."} */
static int get_pattern(const ctx *c, const cJSON *o, tk_pattern *p, const char *where) {
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(o, "pattern");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(pat, "String");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(pat, "Regex");
    memset(p, 0, sizeof *p);
    if (cJSON_IsString(s)) {
        p->kind = TK_PAT_LITERAL;
        p->literal_len = strlen(s->valuestring);
        p->literal = dup_bytes(s->valuestring, p->literal_len);
        return p->literal ? 0 : -1;
    }
    if (cJSON_IsString(r)) {
        char place[600];
        snprintf(place, sizeof place, "tl_tokenizer_load: %s: %s.pattern", c->origin, where);
        return tk_pattern_regex(p, r->valuestring, strlen(r->valuestring), place);
    }
    return fail(c, "%s.pattern must be {\"String\": ...} or {\"Regex\": ...}", where);
}

static const char *type_of(const cJSON *o) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
    return cJSON_IsString(t) ? t->valuestring : NULL;
}

/* A component's "type", or -1 with an error when it is missing. */
static int need_type(const ctx *c, const cJSON *o, const char *where, const char **type) {
    if (!cJSON_IsObject(o)) return fail(c, "%s must be an object or null", where);
    *type = type_of(o);
    if (!*type) return fail(c, "%s has no \"type\"", where);
    return 0;
}

static int unknown(const ctx *c, const char *where, const char *type, const char *supported) {
    return fail(c,
                "%s type '%s' is not supported by tinyllm's tokenizer (supported: %s); use a "
                "tokenizer whose pipeline has only these, or add the component to "
                "reference/tinyllm/core",
                where, type, supported);
}

/* Sequence members, parsed by parse_one into items of size elem. */
static int parse_list(const ctx *c, const cJSON *o, const char *key, const char *where,
                      void **items, int *count, size_t elem,
                      int (*parse_one)(const ctx *, const cJSON *, void *, const char *)) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsArray(list)) return fail(c, "%s.%s must be a list", where, key);
    int n = cJSON_GetArraySize(list);
    *items = calloc(n ? (size_t)n : 1, elem);
    if (!*items) return fail(c, "out of memory");
    *count = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, list) {
        char place[300];
        snprintf(place, sizeof place, "%s.%s[%d]", where, key, *count);
        if (parse_one(c, e, (char *)*items + (size_t)*count * elem, place) < 0) return -1;
        (*count)++;
    }
    return 0;
}

/* ---- normalizers ------------------------------------------------------------ */

static int parse_normalizer(const ctx *c, const cJSON *o, void *out, const char *where) {
    tk_normalizer *n = out;
    const char *type;
    if (need_type(c, o, where, &type) < 0) return -1;
    if (!strcmp(type, "NFC")) n->kind = TK_NORM_NFC;
    else if (!strcmp(type, "NFD")) n->kind = TK_NORM_NFD;
    else if (!strcmp(type, "NFKC")) n->kind = TK_NORM_NFKC;
    else if (!strcmp(type, "NFKD")) n->kind = TK_NORM_NFKD;
    else if (!strcmp(type, "Lowercase")) n->kind = TK_NORM_LOWERCASE;
    else if (!strcmp(type, "Prepend")) {
        const char *s;
        n->kind = TK_NORM_PREPEND;
        if (get_string(c, o, "prepend", &s, where) < 0) return -1;
        if (!s) return fail(c, "%s.prepend is missing", where);
        n->text_len = strlen(s);
        if (!(n->text = dup_bytes(s, n->text_len))) return -1;
    } else if (!strcmp(type, "Replace")) {
        const char *s;
        n->kind = TK_NORM_REPLACE;
        if (get_pattern(c, o, &n->pattern, where) < 0) return -1;
        if (get_string(c, o, "content", &s, where) < 0) return -1;
        if (!s) return fail(c, "%s.content is missing", where);
        n->text_len = strlen(s);
        if (!(n->text = dup_bytes(s, n->text_len))) return -1;
    } else if (!strcmp(type, "Strip")) {
        n->kind = TK_NORM_STRIP;
        if (get_bool(c, o, "strip_left", true, &n->strip_left, where) < 0 ||
            get_bool(c, o, "strip_right", true, &n->strip_right, where) < 0)
            return -1;
    } else if (!strcmp(type, "Sequence")) {
        n->kind = TK_NORM_SEQUENCE;
        return parse_list(c, o, "normalizers", where, (void **)&n->items, &n->count,
                          sizeof *n->items, parse_normalizer);
    } else {
        return unknown(c, where, type,
                       "NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace, Strip, Sequence");
    }
    return 0;
}

static void free_normalizer(tk_normalizer *n) {
    for (int i = 0; i < n->count; i++) free_normalizer(&n->items[i]);
    free(n->items);
    free(n->text);
    tk_pattern_free(&n->pattern);
}

/* ---- pre-tokenizers ----------------------------------------------------------- */

static int parse_behavior(const ctx *c, const cJSON *o, tk_split_behavior fallback,
                          tk_split_behavior *out, const char *where) {
    const char *s;
    if (get_string(c, o, "behavior", &s, where) < 0) return -1;
    if (!s) *out = fallback;
    else if (!strcmp(s, "Removed")) *out = TK_SPLIT_REMOVED;
    else if (!strcmp(s, "Isolated")) *out = TK_SPLIT_ISOLATED;
    else if (!strcmp(s, "MergedWithPrevious")) *out = TK_SPLIT_MERGED_WITH_PREVIOUS;
    else if (!strcmp(s, "MergedWithNext")) *out = TK_SPLIT_MERGED_WITH_NEXT;
    else if (!strcmp(s, "Contiguous")) *out = TK_SPLIT_CONTIGUOUS;
    else
        return fail(c, "%s.behavior '%s' is not one of Removed, Isolated, MergedWithPrevious, "
                       "MergedWithNext, Contiguous", where, s);
    return 0;
}

/* prepend_scheme, or the older add_prefix_space (true: always). */
static int parse_prepend_scheme(const ctx *c, const cJSON *o, tk_prepend_scheme *out,
                                const char *where) {
    const char *s;
    if (get_string(c, o, "prepend_scheme", &s, where) < 0) return -1;
    if (!s) {
        bool add;
        if (get_bool(c, o, "add_prefix_space", true, &add, where) < 0) return -1;
        *out = add ? TK_PREPEND_ALWAYS : TK_PREPEND_NEVER;
    } else if (!strcmp(s, "always")) *out = TK_PREPEND_ALWAYS;
    else if (!strcmp(s, "first")) *out = TK_PREPEND_FIRST;
    else if (!strcmp(s, "never")) *out = TK_PREPEND_NEVER;
    else return fail(c, "%s.prepend_scheme '%s' is not always, first or never", where, s);
    return 0;
}

static int parse_pretokenizer(const ctx *c, const cJSON *o, void *out, const char *where) {
    tk_pretokenizer *p = out;
    const char *type;
    char place[600];
    if (need_type(c, o, where, &type) < 0) return -1;
    snprintf(place, sizeof place, "tl_tokenizer_load: %s: %s", c->origin, where);
    if (!strcmp(type, "ByteLevel")) {
        p->kind = TK_PRE_BYTELEVEL;
        if (get_bool(c, o, "add_prefix_space", true, &p->add_prefix_space, where) < 0 ||
            get_bool(c, o, "use_regex", true, &p->use_regex, where) < 0)
            return -1;
        if (p->use_regex) return tk_pattern_regex(&p->pattern, GPT2_PATTERN,
                                                  sizeof GPT2_PATTERN - 1, place);
    } else if (!strcmp(type, "Split")) {
        p->kind = TK_PRE_SPLIT;
        bool invert;
        if (get_pattern(c, o, &p->pattern, where) < 0 ||
            parse_behavior(c, o, TK_SPLIT_ISOLATED, &p->behavior, where) < 0 ||
            get_bool(c, o, "invert", false, &invert, where) < 0)
            return -1;
        if (!cJSON_GetObjectItemCaseSensitive(o, "behavior"))
            return fail(c, "%s.behavior is missing", where);
        p->pattern.invert = invert;
    } else if (!strcmp(type, "Digits")) {
        p->kind = TK_PRE_DIGITS;
        if (get_bool(c, o, "individual_digits", false, &p->individual_digits, where) < 0)
            return -1;
        p->pattern = (tk_pattern){.kind = TK_PAT_CHAR_FN, .char_fn = tk_is_numeric};
        p->behavior = p->individual_digits ? TK_SPLIT_ISOLATED : TK_SPLIT_CONTIGUOUS;
    } else if (!strcmp(type, "Metaspace")) {
        p->kind = TK_PRE_METASPACE;
        if (get_char(c, o, "replacement", 0x2581, &p->replacement, where) < 0 ||
            parse_prepend_scheme(c, o, &p->prepend_scheme, where) < 0 ||
            get_bool(c, o, "split", true, &p->split, where) < 0)
            return -1;
        tk_buf b = {0};
        if (tk_buf_put_cp(&b, p->replacement) < 0) return -1;
        memcpy(p->replacement_utf8, b.data, b.len + 1);
        p->pattern = (tk_pattern){.kind = TK_PAT_LITERAL, .literal = b.data,
                                  .literal_len = b.len};
    } else if (!strcmp(type, "Whitespace")) {
        /* \w+|[^\w\s]+ in Rust's regex crate, whose \w (tk_is_word) is not
         * Oniguruma's: that one takes ¹²³¼½¾ and leaves out U+200C, U+200D */
        static const char re[] = "[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}]+|"
                                 "[^\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}\\s]+";
        p->kind = TK_PRE_WHITESPACE;
        p->behavior = TK_SPLIT_REMOVED;
        if (tk_pattern_regex(&p->pattern, re, sizeof re - 1, place) < 0) return -1;
        p->pattern.invert = true;   /* keep the matches */
    } else if (!strcmp(type, "WhitespaceSplit")) {
        p->kind = TK_PRE_WHITESPACE_SPLIT;
        p->behavior = TK_SPLIT_REMOVED;
        p->pattern = (tk_pattern){.kind = TK_PAT_CHAR_FN, .char_fn = tk_is_whitespace};
    } else if (!strcmp(type, "Punctuation")) {
        p->kind = TK_PRE_PUNCTUATION;
        if (parse_behavior(c, o, TK_SPLIT_ISOLATED, &p->behavior, where) < 0) return -1;
        p->pattern = (tk_pattern){.kind = TK_PAT_CHAR_FN, .char_fn = tk_is_punctuation};
    } else if (!strcmp(type, "Sequence")) {
        p->kind = TK_PRE_SEQUENCE;
        return parse_list(c, o, "pretokenizers", where, (void **)&p->items, &p->count,
                          sizeof *p->items, parse_pretokenizer);
    } else {
        return unknown(c, where, type,
                       "ByteLevel, Split, Digits, Metaspace, Whitespace, WhitespaceSplit, "
                       "Punctuation, Sequence");
    }
    return 0;
}

static void free_pretokenizer(tk_pretokenizer *p) {
    for (int i = 0; i < p->count; i++) free_pretokenizer(&p->items[i]);
    free(p->items);
    tk_pattern_free(&p->pattern);
}

/* ---- decoders ------------------------------------------------------------------ */

static int parse_decoder(const ctx *c, const cJSON *o, void *out, const char *where) {
    tk_decoder *d = out;
    const char *type;
    if (need_type(c, o, where, &type) < 0) return -1;
    if (!strcmp(type, "ByteLevel")) d->kind = TK_DEC_BYTELEVEL;
    else if (!strcmp(type, "ByteFallback")) d->kind = TK_DEC_BYTE_FALLBACK;
    else if (!strcmp(type, "Fuse")) d->kind = TK_DEC_FUSE;
    else if (!strcmp(type, "Strip")) {
        long start, stop;
        d->kind = TK_DEC_STRIP;
        if (get_char(c, o, "content", ' ', &d->strip_char, where) < 0 ||
            get_int(c, o, "start", 0, 1 << 20, 0, &start, where) < 0 ||
            get_int(c, o, "stop", 0, 1 << 20, 0, &stop, where) < 0)
            return -1;
        d->strip_start = (int)start;
        d->strip_stop = (int)stop;
    } else if (!strcmp(type, "Replace")) {
        const char *s;
        d->kind = TK_DEC_REPLACE;
        if (get_pattern(c, o, &d->pattern, where) < 0) return -1;
        if (get_string(c, o, "content", &s, where) < 0) return -1;
        if (!s) return fail(c, "%s.content is missing", where);
        d->text_len = strlen(s);
        if (!(d->text = dup_bytes(s, d->text_len))) return -1;
    } else if (!strcmp(type, "Metaspace")) {
        d->kind = TK_DEC_METASPACE;
        if (get_char(c, o, "replacement", 0x2581, &d->replacement, where) < 0 ||
            parse_prepend_scheme(c, o, &d->prepend_scheme, where) < 0)
            return -1;
    } else if (!strcmp(type, "BPEDecoder")) {
        const char *s;
        d->kind = TK_DEC_BPE;
        if (get_string(c, o, "suffix", &s, where) < 0) return -1;
        if (!s) s = "</w>";
        d->text_len = strlen(s);
        if (!(d->text = dup_bytes(s, d->text_len))) return -1;
    } else if (!strcmp(type, "Sequence")) {
        d->kind = TK_DEC_SEQUENCE;
        return parse_list(c, o, "decoders", where, (void **)&d->items, &d->count,
                          sizeof *d->items, parse_decoder);
    } else {
        return unknown(c, where, type,
                       "ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace, BPEDecoder, "
                       "Sequence");
    }
    return 0;
}

static void free_decoder(tk_decoder *d) {
    if (!d) return;
    for (int i = 0; i < d->count; i++) free_decoder(&d->items[i]);
    free(d->items);
    tk_pattern_free(&d->pattern);
    free(d->text);
    memset(d, 0, sizeof *d);
}

/* ---- post-processors -------------------------------------------------------------- */

static int push_single(tk_post *p, int32_t id) {
    int32_t *s = realloc(p->single, ((size_t)p->single_count + 1) * sizeof *s);
    if (!s) return -1;
    p->single = s;
    p->single[p->single_count++] = id;
    return 0;
}

static int parse_template(const ctx *c, const cJSON *o, tk_post *p, const char *where) {
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(o, "single");
    const cJSON *specials = cJSON_GetObjectItemCaseSensitive(o, "special_tokens");
    if (!cJSON_IsArray(single)) return fail(c, "%s.single must be a list", where);
    int k = 0;
    const cJSON *piece;
    cJSON_ArrayForEach(piece, single) {
        const cJSON *seq = cJSON_GetObjectItemCaseSensitive(piece, "Sequence");
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(piece, "SpecialToken");
        if (seq) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(seq, "id");
            if (!cJSON_IsString(id) || strcmp(id->valuestring, "A") != 0)
                return fail(c, "%s.single[%d] must be sequence A (a single text has no B)",
                            where, k);
            if (push_single(p, -1) < 0) return fail(c, "out of memory");
        } else if (sp) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(sp, "id");
            if (!cJSON_IsString(id)) return fail(c, "%s.single[%d].SpecialToken.id", where, k);
            const cJSON *entry = cJSON_GetObjectItemCaseSensitive(specials, id->valuestring);
            const cJSON *ids = cJSON_GetObjectItemCaseSensitive(entry, "ids");
            if (!cJSON_IsArray(ids))
                return fail(c, "%s.special_tokens has no entry '%s' with its ids", where,
                            id->valuestring);
            const cJSON *v;
            cJSON_ArrayForEach(v, ids) {
                if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble >= MAX_ID ||
                    v->valuedouble != (double)(int32_t)v->valuedouble)
                    return fail(c, "%s.special_tokens['%s'].ids holds an id out of range",
                                where, id->valuestring);
                if (push_single(p, (int32_t)v->valuedouble) < 0) return fail(c, "out of memory");
            }
        } else {
            return fail(c, "%s.single[%d] must be a Sequence or a SpecialToken", where, k);
        }
        k++;
    }
    return 0;
}

/* RobertaProcessing / BertProcessing: "cls": [token, id], "sep": [token, id]. */
static int parse_wrap(const ctx *c, const cJSON *o, tk_post *p, const char *where) {
    int32_t ids[2];
    const char *keys[2] = {"cls", "sep"};
    for (int i = 0; i < 2; i++) {
        const cJSON *pair = cJSON_GetObjectItemCaseSensitive(o, keys[i]);
        const cJSON *id = cJSON_GetArrayItem(pair, 1);
        if (!cJSON_IsArray(pair) || !cJSON_IsNumber(id) || id->valuedouble < 0 ||
            id->valuedouble >= MAX_ID)
            return fail(c, "%s.%s must be [token, id]", where, keys[i]);
        ids[i] = (int32_t)id->valuedouble;
    }
    if (push_single(p, ids[0]) < 0 || push_single(p, -1) < 0 || push_single(p, ids[1]) < 0)
        return fail(c, "out of memory");
    return 0;
}

static int parse_post(const ctx *c, const cJSON *o, void *out, const char *where) {
    tk_post *p = out;
    const char *type;
    if (need_type(c, o, where, &type) < 0) return -1;
    if (!strcmp(type, "TemplateProcessing")) {
        p->kind = TK_POST_TEMPLATE;
        return parse_template(c, o, p, where);
    }
    if (!strcmp(type, "RobertaProcessing") || !strcmp(type, "BertProcessing")) {
        p->kind = TK_POST_WRAP;
        return parse_wrap(c, o, p, where);
    }
    if (!strcmp(type, "ByteLevel")) {
        p->kind = TK_POST_BYTELEVEL;
        return 0;
    }
    if (!strcmp(type, "Sequence")) {
        p->kind = TK_POST_SEQUENCE;
        return parse_list(c, o, "processors", where, (void **)&p->items, &p->count,
                          sizeof *p->items, parse_post);
    }
    return unknown(c, where, type,
                   "TemplateProcessing, ByteLevel, RobertaProcessing, BertProcessing, Sequence");
}

static void free_post(tk_post *p) {
    for (int i = 0; i < p->count; i++) free_post(&p->items[i]);
    free(p->items);
    free(p->single);
}

/* ---- the model ------------------------------------------------------------------ */

static int set_token(tk_bpe *m, int32_t id, const char *s, size_t n) {
    if (!(m->id_token[id] = dup_bytes(s, n))) return -1;
    m->id_token_len[id] = (uint32_t)n;
    return 0;
}

static int parse_vocab(const ctx *c, tk_bpe *m, const cJSON *vocab) {
    if (!cJSON_IsObject(vocab)) return fail(c, "model.vocab must be an object {token: id}");
    int n = cJSON_GetArraySize(vocab);
    int32_t max_id = -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble >= MAX_ID ||
            e->valuedouble != (double)(int32_t)e->valuedouble)
            return fail(c, "model.vocab['%.100s'] must be an id from 0 to %d", e->string,
                        MAX_ID - 1);
        if ((int32_t)e->valuedouble > max_id) max_id = (int32_t)e->valuedouble;
    }
    m->n_ids = max_id + 1;
    m->id_token = calloc(m->n_ids ? (size_t)m->n_ids : 1, sizeof *m->id_token);
    m->id_token_len = calloc(m->n_ids ? (size_t)m->n_ids : 1, sizeof *m->id_token_len);
    if (!m->id_token || !m->id_token_len || tk_strmap_init(&m->vocab, (size_t)n) < 0)
        return fail(c, "out of memory for a vocabulary of %d tokens", n);
    cJSON_ArrayForEach(e, vocab) {
        int32_t id = (int32_t)e->valuedouble;
        size_t len = strlen(e->string);
        if (m->id_token[id])
            return fail(c, "model.vocab gives id %d to both '%.100s' and '%.100s'; each id "
                           "must name one token", id, m->id_token[id], e->string);
        int fresh = tk_strmap_put(&m->vocab, e->string, len, id);
        if (fresh < 0) return -1;
        if (!fresh) return fail(c, "model.vocab lists '%.100s' twice", e->string);
        if (set_token(m, id, e->string, len) < 0) return -1;
    }
    return 0;
}

/* One merge as its two tokens. */
static int merge_parts(const ctx *c, const cJSON *e, int rank, const char **a, size_t *alen,
                       const char **b, size_t *blen) {
    if (cJSON_IsString(e)) {
        const char *s = e->valuestring, *space = strchr(s, ' ');
        if (!space || strchr(space + 1, ' '))
            return fail(c, "model.merges[%d] \"%.100s\" must be two tokens separated by one "
                           "space", rank, s);
        *a = s;
        *alen = (size_t)(space - s);
        *b = space + 1;
        *blen = strlen(space + 1);
        return 0;
    }
    const cJSON *x = cJSON_GetArrayItem(e, 0), *y = cJSON_GetArrayItem(e, 1);
    if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsString(x) ||
        !cJSON_IsString(y))
        return fail(c, "model.merges[%d] must be \"a b\" or [\"a\", \"b\"]", rank);
    *a = x->valuestring;
    *alen = strlen(*a);
    *b = y->valuestring;
    *blen = strlen(*b);
    return 0;
}

static int parse_merges(const ctx *c, tk_bpe *m, const cJSON *merges) {
    if (!cJSON_IsArray(merges)) return fail(c, "model.merges must be a list");
    if (tk_bpe_build_merges(m, (size_t)cJSON_GetArraySize(merges)) < 0) return -1;
    tk_buf joined = {0};
    int rank = 0, r = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, merges) {
        if (cJSON_IsString(e) && !strncmp(e->valuestring, "#version", 8)) continue;
        const char *a = NULL, *b = NULL;
        size_t alen = 0, blen = 0;
        if ((r = merge_parts(c, e, rank, &a, &alen, &b, &blen)) < 0) break;
        int32_t ia = tk_strmap_get(&m->vocab, a, alen), ib = tk_strmap_get(&m->vocab, b, blen);
        if (ia < 0 || ib < 0) {
            r = fail(c, "model.merges[%d] names '%.*s', which is not in model.vocab", rank,
                     (int)(ia < 0 ? alen : blen), ia < 0 ? a : b);
            break;
        }
        /* the merged token drops b's continuing_subword_prefix */
        if (m->prefix_len && (blen < m->prefix_len || memcmp(b, m->prefix, m->prefix_len))) {
            r = fail(c, "model.merges[%d]: '%.*s' does not start with the continuing prefix",
                     rank, (int)blen, b);
            break;
        }
        joined.len = 0;
        if ((r = tk_buf_append(&joined, a, alen)) < 0 ||
            (r = tk_buf_append(&joined, b + m->prefix_len, blen - m->prefix_len)) < 0)
            break;
        int32_t merged = tk_strmap_get(&m->vocab, joined.data, joined.len);
        if (merged < 0) {
            r = fail(c, "model.merges[%d] makes '%.100s', which is not in model.vocab", rank,
                     joined.data);
            break;
        }
        tk_bpe_add_merge(m, ia, ib, (uint32_t)rank, merged);
        rank++;
    }
    tk_buf_free(&joined);
    return r;
}

static int parse_model(const ctx *c, tk_bpe *m, const cJSON *o) {
    if (!cJSON_IsObject(o)) return fail(c, "\"model\" is missing or not an object");
    const char *type = type_of(o);
    if (!type && cJSON_GetObjectItemCaseSensitive(o, "merges")) type = "BPE";
    if (!type) return fail(c, "model has no \"type\"");
    if (strcmp(type, "BPE") != 0)
        return unknown(c, "model", type, "BPE (WordPiece, Unigram and WordLevel are not)");
    const cJSON *dropout = cJSON_GetObjectItemCaseSensitive(o, "dropout");
    bool no_dropout = !dropout || cJSON_IsNull(dropout) ||
                      (cJSON_IsNumber(dropout) && dropout->valuedouble == 0);
    if (!no_dropout)
        return fail(c, "model.dropout is set: BPE dropout is random, so ids would not be "
                       "reproducible; set it to null");
    const char *unk, *prefix, *suffix;
    if (get_string(c, o, "unk_token", &unk, "model") < 0 ||
        get_string(c, o, "continuing_subword_prefix", &prefix, "model") < 0 ||
        get_string(c, o, "end_of_word_suffix", &suffix, "model") < 0 ||
        get_bool(c, o, "fuse_unk", false, &m->fuse_unk, "model") < 0 ||
        get_bool(c, o, "byte_fallback", false, &m->byte_fallback, "model") < 0 ||
        get_bool(c, o, "ignore_merges", false, &m->ignore_merges, "model") < 0)
        return -1;
    if (prefix) {
        m->prefix_len = strlen(prefix);
        if (!(m->prefix = dup_bytes(prefix, m->prefix_len))) return -1;
    }
    if (suffix) {
        m->suffix_len = strlen(suffix);
        if (!(m->suffix = dup_bytes(suffix, m->suffix_len))) return -1;
    }
    if (parse_vocab(c, m, cJSON_GetObjectItemCaseSensitive(o, "vocab")) < 0) return -1;
    m->unk_id = -1;
    if (unk) {
        m->unk_id = tk_strmap_get(&m->vocab, unk, strlen(unk));
        if (m->unk_id < 0)
            return fail(c, "model.unk_token '%.100s' is not in model.vocab", unk);
    }
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        m->byte_ids[b] = tk_strmap_get(&m->vocab, name, 6);
    }
    return parse_merges(c, m, cJSON_GetObjectItemCaseSensitive(o, "merges"));
}

/* ---- added tokens ------------------------------------------------------------------ */

static int parse_added(const ctx *c, tl_tokenizer *t, const cJSON *list) {
    if (!list || cJSON_IsNull(list)) return 0;
    if (!cJSON_IsArray(list)) return fail(c, "added_tokens must be a list");
    int n = cJSON_GetArraySize(list);
    t->added = calloc(n ? (size_t)n : 1, sizeof *t->added);
    if (!t->added || tk_strmap_init(&t->added_by_content, (size_t)n) < 0)
        return fail(c, "out of memory");
    const cJSON *e;
    cJSON_ArrayForEach(e, list) {
        char where[64];
        snprintf(where, sizeof where, "added_tokens[%d]", t->added_count);
        tk_added_token *a = &t->added[t->added_count];
        const char *content;
        long id;
        if (!cJSON_IsObject(e)) return fail(c, "%s must be an object", where);
        if (get_string(c, e, "content", &content, where) < 0 ||
            get_int(c, e, "id", 0, MAX_ID - 1, -1, &id, where) < 0 ||
            get_bool(c, e, "special", false, &a->special, where) < 0 ||
            get_bool(c, e, "lstrip", false, &a->lstrip, where) < 0 ||
            get_bool(c, e, "rstrip", false, &a->rstrip, where) < 0 ||
            get_bool(c, e, "single_word", false, &a->single_word, where) < 0 ||
            get_bool(c, e, "normalized", !a->special, &a->normalized, where) < 0)
            return -1;
        if (!content || !*content) return fail(c, "%s.content must be a non-empty string", where);
        if (id < 0) return fail(c, "%s.id is missing", where);
        a->len = strlen(content);
        a->id = (int32_t)id;
        if (!(a->content = dup_bytes(content, a->len))) return -1;
        if (tk_strmap_put(&t->added_by_content, content, a->len, t->added_count) < 0) return -1;
        t->added_count++;
    }
    return 0;
}

/* The text each added token is matched as: normalized ones through the
 * normalizer (the library's normalized_cache). */
static int added_match_strings(tl_tokenizer *t) {
    tk_buf out = {0};
    for (int i = 0; i < t->added_count; i++) {
        tk_added_token *a = &t->added[i];
        const char *s = a->content;
        size_t n = a->len;
        if (a->normalized && t->normalizer) {
            if (tk_normalize(t->normalizer, a->content, a->len, &out) < 0) {
                tk_buf_free(&out);
                return -1;
            }
            s = out.data;
            n = out.len;
        }
        if (!(a->match = dup_bytes(s, n))) {
            tk_buf_free(&out);
            return -1;
        }
        a->match_len = n;
    }
    tk_buf_free(&out);
    return 0;
}

static int index_ids(const ctx *c, tl_tokenizer *t) {
    int32_t n = t->bpe.n_ids;
    for (int i = 0; i < t->added_count; i++)
        if (t->added[i].id + 1 > n) n = t->added[i].id + 1;
    t->n_total = n;
    t->added_index_by_id = malloc((n ? (size_t)n : 1) * sizeof *t->added_index_by_id);
    if (!t->added_index_by_id) return fail(c, "out of memory");
    for (int32_t i = 0; i < n; i++) t->added_index_by_id[i] = -1;
    for (int i = 0; i < t->added_count; i++) {
        int32_t id = t->added[i].id;
        int32_t prev = t->added_index_by_id[id];
        if (prev >= 0 && strcmp(t->added[prev].content, t->added[i].content) != 0)
            return fail(c, "added_tokens gives id %d to both '%.100s' and '%.100s'", id,
                        t->added[prev].content, t->added[i].content);
        t->added_index_by_id[id] = i;
    }
    return 0;
}

/* ---- a key given twice ---------------------------------------------------------------- */

/* Hugging Face keeps the last of a repeated key (or refuses the file) where
 * cJSON's lookups find the first, and keeps a string past a \u0000 where
 * cJSON cuts it, so such a file would be read otherwise than HF reads it: 0,
 * or -1 with an error naming the file and the key's path or the byte.
 * reader: what HF does with a repeated key. */
static int refuse_misread(const char *json, const cJSON *root, const char *origin,
                          const char *reader) {
    long nul = tl_json_nul_escape(json);
    if (nul >= 0) {
        tl_fail("tl_tokenizer_load: %s: a string holds \\u0000 (byte %ld), which Hugging Face "
                "keeps and tinyllm's JSON reader cuts the string at: remove it", origin, nul);
        return -1;
    }
    char where[512];
    int found = tl_json_repeated_key(root, where, sizeof where);
    if (found < 0) tl_fail("tl_tokenizer_load: %s: out of memory", origin);
    else if (found)
        tl_fail("tl_tokenizer_load: %s: the key %s is given twice; %s, tinyllm's JSON reader "
                "the first: remove one of the two", origin, where, reader);
    return found ? -1 : 0;
}

/* ---- tokenizer_config.json ----------------------------------------------------------- */

/* A token given as a string or as {"content": ...}. */
static char *config_token(const cJSON *v) {
    if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
    if (!cJSON_IsString(v)) return NULL;
    return dup_bytes(v->valuestring, strlen(v->valuestring));
}

static int parse_config(tl_tokenizer *t, const char *json, const char *origin) {
    cJSON *root = cJSON_Parse(json);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        tl_fail("tl_tokenizer_load: %s is not a JSON object; fix or remove it", origin);
        return -1;
    }
    if (refuse_misread(json, root, origin, "transformers' json.load keeps the last one") < 0) {
        cJSON_Delete(root);
        return -1;
    }
    t->bos_token = config_token(cJSON_GetObjectItemCaseSensitive(root, "bos_token"));
    t->eos_token = config_token(cJSON_GetObjectItemCaseSensitive(root, "eos_token"));
    t->clean_up_spaces =
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "clean_up_tokenization_spaces"));
    const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(root, "chat_template");
    if (tmpl && !cJSON_IsNull(tmpl)) {
        t->chat_template_json = cJSON_PrintUnformatted(tmpl);
        t->template_origin = dup_bytes(origin, strlen(origin));
    }
    cJSON_Delete(root);
    return 0;
}

/* eos_token_id (an int or a list of ints) of a config file; 1 when found. */
static int stop_ids_from(tl_tokenizer *t, const char *path) {
    if (!tl_path_present(path)) return 0;
    char *json = tk_read_file(path, NULL);
    if (!json) return -1;
    cJSON *root = cJSON_Parse(json);
    int misread = root ? refuse_misread(json, root, path, "transformers' json.load keeps the "
                                        "last one") : 0;
    free(json);
    if (misread < 0) {
        cJSON_Delete(root);
        return -1;
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "eos_token_id");
    int found = 0;
    int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : cJSON_IsNumber(v) ? 1 : 0;
    if (n > 0) {   /* an empty list says nothing: the next source is asked */
        free(t->stop_ids);
        t->stop_ids = calloc((size_t)n + 1, sizeof *t->stop_ids);
        if (!t->stop_ids) {
            cJSON_Delete(root);
            return -1;
        }
        const cJSON *e = cJSON_IsArray(v) ? v->child : v;
        for (int i = 0; i < n && e; i++, e = e->next) {
            if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble >= MAX_ID) {
                char *shown = cJSON_PrintUnformatted(v);
                tl_fail("tl_tokenizer_load: %s: eos_token_id is %.60s; it must be a token id "
                        "(a whole number from 0 below %d) or a list of them: fix it, or remove "
                        "the key", path, shown ? shown : "not a token id", MAX_ID);
                free(shown);
                cJSON_Delete(root);
                return -1;
            }
            t->stop_ids[t->stop_count++] = (int32_t)e->valuedouble;
            if (!cJSON_IsArray(v)) break;
        }
        found = 1;
    }
    cJSON_Delete(root);
    return found;
}

/* ---- the whole file ---------------------------------------------------------------------- */

static int build(tl_tokenizer *t, const char *json, const char *config_json, const char *origin,
                 const char *config_origin) {
    ctx c = {origin};
    cJSON *root = cJSON_Parse(json);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        return fail(&c, "not valid JSON (near byte %ld); is it a tokenizer.json?",
                    at ? (long)(at - json) : -1L);
    }
    int r = -1;
    if (!cJSON_IsObject(root)) {
        fail(&c, "the top level must be an object");
        goto done;
    }
    if (refuse_misread(json, root, origin, "Hugging Face's tokenizers keeps the last one (or "
                       "refuses the file)") < 0)
        goto done;
    const cJSON *trunc = cJSON_GetObjectItemCaseSensitive(root, "truncation");
    if (trunc && !cJSON_IsNull(trunc)) {
        fail(&c, "\"truncation\" is set, which would cut the ids; set it to null (truncate "
                 "the ids yourself if you need to)");
        goto done;
    }
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(root, "padding");
    const cJSON *strategy = cJSON_GetObjectItemCaseSensitive(pad, "strategy");
    if (cJSON_IsObject(strategy) && cJSON_GetObjectItemCaseSensitive(strategy, "Fixed")) {
        fail(&c, "\"padding\" has a Fixed length, which would pad every text; set it to null");
        goto done;
    }
    if (parse_model(&c, &t->bpe, cJSON_GetObjectItemCaseSensitive(root, "model")) < 0) goto done;
    if (parse_added(&c, t, cJSON_GetObjectItemCaseSensitive(root, "added_tokens")) < 0) goto done;
    if (index_ids(&c, t) < 0) goto done;

    const struct {
        const char *key;
        void **slot;
        size_t size;
        int (*parse)(const ctx *, const cJSON *, void *, const char *);
    } parts[] = {
        {"normalizer", (void **)&t->normalizer, sizeof *t->normalizer, parse_normalizer},
        {"pre_tokenizer", (void **)&t->pretokenizer, sizeof *t->pretokenizer,
         parse_pretokenizer},
        {"post_processor", (void **)&t->post, sizeof *t->post, parse_post},
        {"decoder", (void **)&t->decoder, sizeof *t->decoder, parse_decoder},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, parts[i].key);
        if (!o || cJSON_IsNull(o)) continue;
        *parts[i].slot = calloc(1, parts[i].size);
        if (!*parts[i].slot) {
            fail(&c, "out of memory");
            goto done;
        }
        if (parts[i].parse(&c, o, *parts[i].slot, parts[i].key) < 0) goto done;
    }
    if (added_match_strings(t) < 0 || tk_trie_build(&t->trie_raw, t, false) < 0 ||
        tk_trie_build(&t->trie_normalized, t, true) < 0)
        goto done;
    if (config_json && parse_config(t, config_json, config_origin) < 0) goto done;
    r = 0;
done:
    cJSON_Delete(root);
    return r;
}

static tl_tokenizer *finish(tl_tokenizer *t, int status) {
    if (status == 0) return t;
    tl_tokenizer_free(t);
    return NULL;
}

tl_tokenizer *tl_tokenizer_from_strings(const char *tokenizer_json,
                                        const char *tokenizer_config_json, const char *origin) {
    if (!tokenizer_json) return tl_propagate("tl_tokenizer_from_strings: tokenizer_json is NULL");
    if (!origin) origin = "tokenizer.json";
    tl_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return tl_fail("tl_tokenizer_from_strings: out of memory");
    t->dir = dup_bytes("", 0);
    t->origin = dup_bytes(origin, strlen(origin));
    if (!t->dir || !t->origin) return finish(t, -1);
    int r = build(t, tokenizer_json, tokenizer_config_json, origin, "tokenizer_config.json");
    if (r == 0 && t->stop_count == 0 && t->eos_token) {
        int32_t id = tl_tokenizer_token_to_id(t, t->eos_token);
        if (id >= 0 && (t->stop_ids = malloc(sizeof *t->stop_ids))) {
            t->stop_ids[0] = id;
            t->stop_count = 1;
        }
    }
    return finish(t, r);
}

tl_tokenizer *tl_tokenizer_load(const char *path) {
    if (!path) return tl_propagate("tl_tokenizer_load: path is NULL");
    struct stat st;
    if (stat(path, &st) != 0)
        return tl_fail("tl_tokenizer_load: %s does not exist (%s); give a tokenizer.json or "
                       "the model folder holding one", path, strerror(errno));
    tk_buf dir = {0}, file = {0};
    if (S_ISDIR(st.st_mode)) {
        if (tk_buf_append(&dir, path, strlen(path)) < 0) return NULL;
    } else {
        const char *slash = strrchr(path, '/');
        if (slash) {
            if (tk_buf_append(&dir, path, (size_t)(slash - path)) < 0) return NULL;
        } else if (tk_buf_append(&dir, ".", 1) < 0) {
            return NULL;
        }
    }
    if (S_ISDIR(st.st_mode)) {
        if (tk_buf_append(&file, dir.data, dir.len) < 0 ||
            tk_buf_append(&file, "/tokenizer.json", 15) < 0)
            goto fail;
        if (stat(file.data, &st) != 0) {
            tl_fail("tl_tokenizer_load: %s holds no tokenizer.json; give the folder of a "
                    "model with a fast (tokenizer.json) tokenizer", path);
            goto fail;
        }
    } else if (tk_buf_append(&file, path, strlen(path)) < 0) {
        goto fail;
    }
    char *json = tk_read_file(file.data, NULL);
    if (!json) goto fail;
    char config_path[4096];
    snprintf(config_path, sizeof config_path, "%s/tokenizer_config.json", dir.data);
    char *config = NULL;
    if (tl_path_present(config_path) && !(config = tk_read_file(config_path, NULL))) {
        free(json);
        goto fail;
    }
    tl_tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        free(json);
        free(config);
        tl_fail("tl_tokenizer_load: out of memory");
        goto fail;
    }
    t->dir = dir.data;
    t->origin = file.data;
    dir = (tk_buf){0};
    file = (tk_buf){0};
    int r = build(t, json, config, t->origin, config_path);
    free(json);
    free(config);
    /* stop ids: generation_config.json, else config.json, else eos_token */
    const char *sources[] = {"generation_config.json", "config.json"};
    for (int i = 0; i < 2 && r == 0 && t->stop_count == 0; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", t->dir, sources[i]);
        if (stop_ids_from(t, p) < 0) r = -1;
    }
    if (r == 0 && t->stop_count == 0 && t->eos_token) {
        int32_t id = tl_tokenizer_token_to_id(t, t->eos_token);
        if (id >= 0 && (t->stop_ids = malloc(sizeof *t->stop_ids))) {
            t->stop_ids[0] = id;
            t->stop_count = 1;
        }
    }
    return finish(t, r);
fail:
    tk_buf_free(&dir);
    tk_buf_free(&file);
    return NULL;
}

void tl_tokenizer_free(tl_tokenizer *t) {
    if (!t) return;
    if (t->normalizer) free_normalizer(t->normalizer);
    free(t->normalizer);
    if (t->pretokenizer) free_pretokenizer(t->pretokenizer);
    free(t->pretokenizer);
    if (t->post) free_post(t->post);
    free(t->post);
    if (t->decoder) free_decoder(t->decoder);
    free(t->decoder);
    tk_bpe_free(&t->bpe);
    for (int i = 0; i < t->added_count; i++) {
        free(t->added[i].content);
        free(t->added[i].match);
    }
    free(t->added);
    tk_strmap_free(&t->added_by_content);
    free(t->added_index_by_id);
    tk_trie_free(&t->trie_raw);
    tk_trie_free(&t->trie_normalized);
    free(t->bos_token);
    free(t->eos_token);
    free(t->chat_template_json);
    free(t->template_origin);
    free(t->stop_ids);
    free(t->dir);
    free(t->origin);
    free(t);
}
