/* safetensors_internal.h: what safetensors.c, safetensors_write.c and
 * checkpoint.c share. Not a contract. */
#ifndef TINYLLM_CORE_SAFETENSORS_INTERNAL_H
#define TINYLLM_CORE_SAFETENSORS_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include "tinyllm/safetensors.h"

/* safetensors refuses headers above 100 MB; the index file gets the same cap. */
#define TL_ST_MAX_HEADER 100000000ull

/* Bytes per element of a stored dtype. */
size_t tl_st_dtype_size(tl_st_dtype dt);

/* A name fit for an error message: printable ASCII kept, other bytes as
 * \xNN, cut at about 80 characters. Returns buf. */
const char *tl_st_shown(const char *name, char *buf, size_t size);

/* Checks JSON text the way serde_json does before cJSON sees it: valid UTF-8
 * and no raw control bytes (none inside strings; only tab, LF and CR outside).
 * Returns NULL when fine, else a description, with the offending offset in *at. */
const char *tl_json_text_problem(const unsigned char *text, size_t n, size_t *at);

/* cJSON keeps every copy of a repeated key; the format forbids them. Sets *dup
 * to a repeated member name of obj and returns 1; 0 when all names differ;
 * -1 when out of memory. */
int tl_json_duplicate_key(const cJSON *obj, const char **dup);

/* Parses NUL-terminated JSON text (already checked with tl_json_text_problem).
 * On failure returns NULL and writes the byte offset of the error in *at. */
cJSON *tl_json_parse(const char *text, size_t *at);

#endif
