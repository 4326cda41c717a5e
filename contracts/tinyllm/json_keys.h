/* tinyllm/json_keys.h: what cJSON reads otherwise than Python and Rust do.
 *
 * cJSON keeps every member of an object and its lookups find the first of a
 * repeated key; Python's json.load, JavaScript's JSON.parse and serde_json
 * into a map keep the last, and serde's derived structs refuse the document.
 * And cJSON cuts a string at a \u0000. A reader that must agree with them
 * (a checkpoint's config.json, a tokenizer.json) refuses such a document.
 */
#ifndef TINYLLM_JSON_KEYS_H
#define TINYLLM_JSON_KEYS_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* Finds the first object of v, in document order, that gives a key twice and
 * writes the path of the key's second member into path (size bytes, at least
 * 1): members as .name, elements as [i], the repeated key and any name that
 * is not an identifier as a JSON string (escaped, cut with "..." past 60
 * bytes), e.g. model.vocab."hello", added_tokens[3]."content", "eos_token".
 * Returns 1 when found, 0 when no object repeats a key (path ""), -1 when
 * out of memory. */
int tl_json_repeated_key(const cJSON *v, char *path, size_t size);

/* The byte offset in JSON text of the first \u0000 escape inside a string,
 * or -1. cJSON ends a string at the NUL it decodes, where Python and Rust
 * keep the rest ("a\u0000b" and "a\u0000c" are two keys to them, one to
 * cJSON): a reader that must agree with them refuses such a document too. */
long tl_json_nul_escape(const char *text);

#endif
