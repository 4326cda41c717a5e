/* tokenizer_internal.h: what the tokenizer's files share (not a contract).
 *
 * tokenizer_text.c    bytes, UTF-8, string maps, GPT-2's byte table
 * tokenizer_load.c    tokenizer.json and the config files -> the structs below
 * tokenizer_vocab.c   queries: ids, tokens, specials, config tokens, stop ids
 * tokenizer_pattern.c Oniguruma regexes, literal and character patterns, splits
 * tokenizer_normalize.c, tokenizer_pretokenize.c, tokenizer_bpe.c,
 * tokenizer_encode.c (added tokens, the pipeline, post-processors),
 * tokenizer_decode.c (decoders)
 */
#ifndef TINYLLM_TOKENIZER_INTERNAL_H
#define TINYLLM_TOKENIZER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <oniguruma.h>

#include "tinyllm/tokenizer.h"

/* ---- bytes and UTF-8 (tokenizer_text.c) ------------------------------- */

typedef struct {
    char *data;
    size_t len, cap;
} tk_buf;

/* Appends; on allocation failure returns -1 with tl_error set. */
int tk_buf_append(tk_buf *b, const void *data, size_t len);
int tk_buf_putc(tk_buf *b, char c);
int tk_buf_put_cp(tk_buf *b, uint32_t cp);   /* a code point as UTF-8 */
int tk_buf_reserve(tk_buf *b, size_t extra);
void tk_buf_free(tk_buf *b);

/* The length of the valid UTF-8 prefix of s (len when all of s is valid). */
size_t tk_utf8_valid_prefix(const char *s, size_t len);
/* Decodes the character at s (valid UTF-8 assumed); returns its byte length. */
int tk_utf8_decode(const char *s, uint32_t *cp);
/* Appends s with every maximal invalid subsequence replaced by U+FFFD, as
 * Rust's String::from_utf8_lossy and the WHATWG decoder do. */
int tk_buf_append_lossy(tk_buf *b, const char *s, size_t len);

/* Unicode predicates as Rust's char methods define them. */
bool tk_is_whitespace(uint32_t cp);   /* White_Space */
bool tk_is_numeric(uint32_t cp);      /* Nd, Nl, No */
bool tk_is_word(uint32_t cp);         /* \w of Rust's regex crate (not a char method) */
bool tk_is_punctuation(uint32_t cp);  /* ASCII punctuation or a P* category */
bool tk_is_mark(uint32_t cp);         /* Mn, Mc, Me */

/* GPT-2's byte <-> character table: byte b is the code point TK_BYTE_CHAR[b];
 * tk_char_byte maps back (-1 for a character outside the table). */
extern const uint16_t TK_BYTE_CHAR[256];
int tk_char_byte(uint32_t cp);

/* A map from byte strings to int32 (open addressing; keys copied). */
typedef struct {
    uint32_t *hashes;     /* 0: empty slot */
    uint32_t *key_off, *key_len;
    int32_t *values;
    size_t cap, count;
    tk_buf keys;
} tk_strmap;

int tk_strmap_init(tk_strmap *m, size_t expected);
/* Sets key -> value; returns 1 when key was new, 0 when it replaced, -1 on
 * allocation failure. */
int tk_strmap_put(tk_strmap *m, const char *key, size_t len, int32_t value);
/* The value, or -1 when the key is absent. */
int32_t tk_strmap_get(const tk_strmap *m, const char *key, size_t len);
void tk_strmap_free(tk_strmap *m);
uint32_t tk_hash(const void *data, size_t len);

/* ---- patterns (tokenizer_pattern.c) ---------------------------------- */

typedef enum { TK_PAT_LITERAL, TK_PAT_REGEX, TK_PAT_CHAR_FN } tk_pattern_kind;

typedef struct {
    tk_pattern_kind kind;
    char *literal;          /* TK_PAT_LITERAL */
    size_t literal_len;
    OnigRegex regex;        /* TK_PAT_REGEX */
    bool (*char_fn)(uint32_t cp);   /* TK_PAT_CHAR_FN */
    bool invert;            /* keep what does not match as the "match" */
} tk_pattern;

/* Compiles a regex as the Rust library does (Oniguruma's default syntax,
 * UTF-8). where names the place for the error message. */
int tk_pattern_regex(tk_pattern *p, const char *source, size_t len, const char *where);
void tk_pattern_free(tk_pattern *p);

/* One piece of a string: [start, end) and whether the pattern matched it. */
typedef struct {
    size_t start, end;
    bool match;
} tk_piece;

typedef struct {
    tk_piece *items;
    size_t count, cap;
} tk_pieces;

/* Covers s[0, len) with pieces, matches and the gaps between them, as the
 * library's Pattern::find_matches (an empty s gives one empty non-match). */
int tk_find_matches(const tk_pattern *p, const char *s, size_t len, tk_pieces *out);
void tk_pieces_free(tk_pieces *p);

typedef enum {
    TK_SPLIT_REMOVED,
    TK_SPLIT_ISOLATED,
    TK_SPLIT_MERGED_WITH_PREVIOUS,
    TK_SPLIT_MERGED_WITH_NEXT,
    TK_SPLIT_CONTIGUOUS
} tk_split_behavior;

/* NormalizedString::split: the pieces to keep after applying behavior, empty
 * ones dropped (out is reused; its match flags are meaningless). */
int tk_split(const tk_pattern *p, tk_split_behavior behavior, const char *s, size_t len,
             tk_pieces *out);

/* ---- the pipeline's components (tokenizer_load.c fills them) ---------- */

typedef enum {
    TK_NORM_NFC, TK_NORM_NFD, TK_NORM_NFKC, TK_NORM_NFKD, TK_NORM_LOWERCASE,
    TK_NORM_PREPEND, TK_NORM_REPLACE, TK_NORM_STRIP, TK_NORM_SEQUENCE
} tk_norm_kind;

typedef struct tk_normalizer {
    tk_norm_kind kind;
    char *text;                /* Prepend's string, Replace's content */
    size_t text_len;
    tk_pattern pattern;        /* Replace */
    bool strip_left, strip_right;
    struct tk_normalizer *items;   /* Sequence */
    int count;
} tk_normalizer;

typedef enum {
    TK_PRE_BYTELEVEL, TK_PRE_SPLIT, TK_PRE_DIGITS, TK_PRE_METASPACE, TK_PRE_WHITESPACE,
    TK_PRE_WHITESPACE_SPLIT, TK_PRE_PUNCTUATION, TK_PRE_SEQUENCE
} tk_pre_kind;

typedef enum { TK_PREPEND_ALWAYS, TK_PREPEND_FIRST, TK_PREPEND_NEVER } tk_prepend_scheme;

typedef struct tk_pretokenizer {
    tk_pre_kind kind;
    bool add_prefix_space, use_regex;        /* ByteLevel */
    tk_pattern pattern;                      /* Split, Whitespace, Punctuation */
    tk_split_behavior behavior;
    bool individual_digits;                  /* Digits */
    uint32_t replacement;                    /* Metaspace */
    char replacement_utf8[5];
    tk_prepend_scheme prepend_scheme;
    bool split;
    struct tk_pretokenizer *items;           /* Sequence */
    int count;
} tk_pretokenizer;

typedef enum {
    TK_DEC_BYTELEVEL, TK_DEC_BYTE_FALLBACK, TK_DEC_FUSE, TK_DEC_STRIP, TK_DEC_REPLACE,
    TK_DEC_METASPACE, TK_DEC_BPE, TK_DEC_SEQUENCE
} tk_dec_kind;

typedef struct tk_decoder {
    tk_dec_kind kind;
    uint32_t strip_char;                 /* Strip: content, start, stop */
    int strip_start, strip_stop;
    tk_pattern pattern;                  /* Replace */
    char *text;                          /* Replace's content, BPEDecoder's suffix */
    size_t text_len;
    uint32_t replacement;                /* Metaspace */
    tk_prepend_scheme prepend_scheme;
    struct tk_decoder *items;            /* Sequence */
    int count;
} tk_decoder;

typedef enum { TK_POST_TEMPLATE, TK_POST_BYTELEVEL, TK_POST_WRAP, TK_POST_SEQUENCE } tk_post_kind;

typedef struct tk_post {
    tk_post_kind kind;
    /* TemplateProcessing's "single": ids to emit, -1 standing for sequence A;
     * RobertaProcessing / BertProcessing: cls, -1, sep. */
    int32_t *single;
    int single_count;
    struct tk_post *items;               /* Sequence */
    int count;
} tk_post;

typedef struct {
    char *content;
    size_t len;
    char *match;      /* what the trie looks for: content, normalized when normalized */
    size_t match_len;
    int32_t id;
    bool special, lstrip, rstrip, single_word, normalized;
} tk_added_token;

/* A byte trie of added tokens for leftmost-longest matching. */
typedef struct {
    uint64_t *edge_keys;     /* (node << 8 | byte) + 1; 0: empty */
    int32_t *edge_child;
    size_t edge_cap, edge_count;
    int32_t *terminal;       /* per node: index into added[], or -1 */
    size_t node_count, node_cap;
} tk_trie;

/* The BPE model. */
typedef struct {
    tk_strmap vocab;               /* token -> id */
    char **id_token;               /* id -> token (NUL-terminated; may hold no NUL) */
    uint32_t *id_token_len;
    int32_t n_ids;                 /* id_token's length */
    /* merges: (left id, right id) -> rank and merged id, open addressing */
    uint64_t *merge_keys;          /* (left << 32 | right) + 1; 0: empty */
    uint32_t *merge_rank;
    int32_t *merge_id;
    size_t merge_cap;
    int32_t unk_id;                /* -1 without unk_token */
    char *prefix, *suffix;         /* continuing_subword_prefix, end_of_word_suffix */
    size_t prefix_len, suffix_len;
    bool fuse_unk, byte_fallback, ignore_merges;
    int32_t byte_ids[256];         /* "<0xXX>" ids for byte_fallback (-1: absent) */
    /* the word cache: word -> offset into cache_ids (count first) */
    tk_strmap cache;
    int32_t *cache_ids;
    size_t cache_len, cache_cap;
} tk_bpe;

struct tl_tokenizer {
    char *dir;
    char *origin;                  /* the tokenizer.json path, for messages */
    tk_normalizer *normalizer;     /* NULL: none */
    tk_pretokenizer *pretokenizer;
    tk_post *post;
    tk_decoder *decoder;
    tk_bpe bpe;
    tk_added_token *added;
    int added_count;
    tk_strmap added_by_content;    /* content -> index into added */
    int32_t *added_index_by_id;    /* id -> index into added, or -1; n_total entries */
    int32_t n_total;               /* vocab size including added tokens */
    tk_trie trie_raw, trie_normalized;
    /* tokenizer_config.json and friends */
    char *bos_token, *eos_token;
    char *chat_template_json;      /* the chat_template value as JSON text, or NULL */
    char *template_origin;         /* the file it came from (tokenizer_config.json), for messages */
    bool clean_up_spaces;
    int32_t *stop_ids;
    int stop_count;
};

/* tokenizer_normalize.c: runs n on s[0, len) into out (cleared first). */
int tk_normalize(const tk_normalizer *n, const char *s, size_t len, tk_buf *out);

/* tokenizer_pretokenize.c: a list of splits of one text being encoded. */
typedef struct {
    size_t start, len;     /* bytes in the owning buffer */
    size_t orig;           /* offset of the split's start in the input text */
    int32_t token;         /* an added token's id, or -1 while still text */
} tk_split_t;

typedef struct {
    tk_split_t *items;
    size_t count, cap;
    tk_buf text;
} tk_splits;

int tk_splits_push(tk_splits *s, const char *data, size_t len, size_t orig, int32_t token);
void tk_splits_clear(tk_splits *s);
void tk_splits_free(tk_splits *s);

/* Pre-tokenizes every text split of in into out (token splits are copied). */
int tk_pretokenize(const tk_pretokenizer *p, const tk_splits *in, tk_splits *out,
                   tk_splits *scratch);

/* tokenizer_bpe.c */
int tk_bpe_build_merges(tk_bpe *m, size_t count);
int tk_bpe_add_merge(tk_bpe *m, int32_t left, int32_t right, uint32_t rank, int32_t merged);
/* Appends the ids of one word to *ids (a growable array). */
int tk_bpe_tokenize(tk_bpe *m, const char *word, size_t len, int32_t **ids, size_t *count,
                    size_t *cap);
void tk_bpe_free(tk_bpe *m);

/* tokenizer_encode.c */
int tk_trie_build(tk_trie *t, const tl_tokenizer *tok, bool normalized);
void tk_trie_free(tk_trie *t);

/* tokenizer_load.c: a whole file into a NUL-terminated string, or NULL with
 * an error naming the path. */
char *tk_read_file(const char *path, size_t *len);

#endif
