/* tinyllm/tokenizer.h: Hugging Face's tokenizer.json pipeline (L1.2, read by L7.9).
 *
 * Text becomes token ids exactly as the tokenizers library (Rust; what
 * transformers' fast tokenizers run) computes them, for the BPE tokenizers of
 * GPT-2, SmolLM2, Llama-2/3, Mistral, Gemma, Qwen2/3 and DeepSeek:
 *
 *   encode:  added tokens split out  ->  normalizer  ->  pre-tokenizer
 *            ->  BPE model  ->  post-processor (only with add_special)
 *   decode:  ids -> tokens (specials dropped when asked)  ->  decoder
 *
 * Pitfalls the library's semantics settle (hf-numerics.md section 12):
 * - Added tokens are matched first, leftmost-longest, on the raw text (those
 *   with "normalized": false) or on the normalized text (the others), with
 *   their lstrip / rstrip / single_word flags; the normalizer then runs on
 *   each piece between them separately (Llama-2's Prepend("▁") acts after a
 *   special token too).
 * - A BPE word merges its lowest-rank adjacent pair first, ties to the left,
 *   until no pair is in the merges (a heap over a linked list of symbols:
 *   linear-logarithmic in the word's length, never quadratic).
 *   ignore_merges: a word that is in the vocabulary is one token.
 *   byte_fallback: a character outside the vocabulary becomes its UTF-8 bytes
 *   as "<0xXX>" tokens; else unk_token (fused when fuse_unk), else dropped.
 * - ByteLevel maps every byte to a printable character (GPT-2's table), so
 *   decoding maps back to bytes and repairs invalid UTF-8 with U+FFFD per
 *   maximal invalid subsequence, as Rust's from_utf8_lossy does; ByteFallback
 *   gives one U+FFFD per byte of an invalid "<0xXX>" run.
 *
 * Supported components (anything else is refused, naming the component and
 * the file): normalizers NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace,
 * Strip, Sequence; pre-tokenizers ByteLevel, Split, Digits, Metaspace,
 * Whitespace, WhitespaceSplit, Punctuation, Sequence; model BPE; post-processors
 * TemplateProcessing, ByteLevel, RobertaProcessing, BertProcessing, Sequence;
 * decoders ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace, BPEDecoder,
 * Sequence. Regexes run on Oniguruma (what the Rust library links), Unicode
 * normalisation on utf8proc.
 *
 * Threads: a tokenizer is read-only after loading except for its word cache;
 * encode on one tokenizer from one thread at a time (or load one per thread).
 *
 * Errors follow tensor.h: a failing call returns NULL (or -1) and sets
 * tl_error() to a message naming the function, the file and what to do.
 * Memory: every returned array or string is malloc'd and the caller frees it
 * with free(); a tokenizer is freed with tl_tokenizer_free.
 */
#ifndef TINYLLM_TOKENIZER_H
#define TINYLLM_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tl_tokenizer tl_tokenizer;

/* Loads PATH: a tokenizer.json, or a folder holding one. From the same folder
 * it also reads, when present, tokenizer_config.json (bos/eos tokens, the chat
 * template, clean_up_tokenization_spaces), generation_config.json and
 * config.json (the stop ids). Returns NULL with an error naming the file on a
 * missing or unreadable file, JSON that does not parse, an unknown component
 * (named, e.g. "pre_tokenizer type 'UnicodeScripts'"), a model that is not BPE,
 * truncation or fixed padding (they would change the ids), ids out of range,
 * merges naming tokens outside the vocabulary, a regex Oniguruma refuses, or
 * a key given twice in tokenizer.json or tokenizer_config.json (named by its
 * path, json_keys.h: HF keeps the last or refuses the file, cJSON the first). */
tl_tokenizer *tl_tokenizer_load(const char *path);

/* The same from strings: tokenizer_json (required) and tokenizer_config_json
 * (NULL when there is none). origin names the source in error messages. */
tl_tokenizer *tl_tokenizer_from_strings(const char *tokenizer_json,
                                        const char *tokenizer_config_json, const char *origin);

/* Frees everything; NULL is a no-op. */
void tl_tokenizer_free(tl_tokenizer *t);

/* Encodes len bytes of text (UTF-8; NUL bytes are ordinary characters).
 * add_special: run the post-processor as HF's add_special_tokens=True does
 * (Llama-3 prepends <|begin_of_text|>, Llama-2 <s>); false for a prompt that
 * already holds its special tokens (a rendered chat template).
 * On success *ids is a malloc'd array (NULL when the count is 0) and the count
 * is returned. Returns -1 with an error when t, text (with len > 0) or ids is
 * NULL, or the text is not valid UTF-8 (the message gives the byte offset;
 * Python and Rust refuse such text too). */
int64_t tl_tokenizer_encode(tl_tokenizer *t, const char *text, size_t len, bool add_special,
                            int32_t **ids);

/* Decode flags. */
enum {
    TL_DECODE_SKIP_SPECIAL = 1,     /* drop special added tokens (skip_special_tokens) */
    TL_DECODE_CLEAN_UP_SPACES = 2,  /* transformers' clean_up_tokenization (" ." -> ".", ...) */
};

/* Decodes n ids into a malloc'd NUL-terminated UTF-8 string (*len, when len
 * is not NULL, gets its length; the text may hold NUL bytes). Ids outside the
 * vocabulary are skipped, as the library skips them. Bytes that do not form
 * valid UTF-8 become U+FFFD (see the pitfalls above). flags: TL_DECODE_*.
 * Returns NULL with an error when t is NULL, or ids is NULL with n > 0. */
char *tl_tokenizer_decode(const tl_tokenizer *t, const int32_t *ids, size_t n, int flags,
                          size_t *len);

/* The number of ids: one past the largest id of the vocabulary or the added
 * tokens (the embedding's rows need at least this many). */
int32_t tl_tokenizer_vocab_size(const tl_tokenizer *t);
/* The id of a token string (added tokens first, then the model's vocabulary),
 * or -1 when there is none. */
int32_t tl_tokenizer_token_to_id(const tl_tokenizer *t, const char *token);
/* The token string of an id (borrowed, valid until tl_tokenizer_free), or
 * NULL when the id is outside the vocabulary. */
const char *tl_tokenizer_id_to_token(const tl_tokenizer *t, int32_t id);
/* Whether an id is a special added token (what skip_special drops). */
bool tl_tokenizer_is_special(const tl_tokenizer *t, int32_t id);

/* tokenizer_config.json's bos_token / eos_token (a string or an AddedToken
 * object), borrowed; NULL when absent or null. */
const char *tl_tokenizer_bos_token(const tl_tokenizer *t);
const char *tl_tokenizer_eos_token(const tl_tokenizer *t);
/* Whether tokenizer_config.json sets clean_up_tokenization_spaces (transformers'
 * default for decode; false when the file or the key is missing). */
bool tl_tokenizer_clean_up_spaces(const tl_tokenizer *t);

/* The ids that end generation: generation_config.json's eos_token_id (an int
 * or a list), else config.json's, else the id of tokenizer_config.json's
 * eos_token; *ids is borrowed. Returns the count (0 when none is known). */
int tl_tokenizer_stop_ids(const tl_tokenizer *t, const int32_t **ids);

/* The folder the tokenizer was loaded from ("" for tl_tokenizer_from_strings). */
const char *tl_tokenizer_dir(const tl_tokenizer *t);

#endif
