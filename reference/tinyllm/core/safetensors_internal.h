/* safetensors_internal.h: what safetensors.c, safetensors_write.c and
 * checkpoint.c share. Not a contract. */
#ifndef TINYLLM_CORE_SAFETENSORS_INTERNAL_H
#define TINYLLM_CORE_SAFETENSORS_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include "tinyllm/safetensors.h"

/* safetensors refuses headers above 100 MB; the index file gets the same cap. */
#define TL_ST_MAX_HEADER 100000000ull

/* The largest product of a shape's nonzero dimensions the reader accepts:
 * the runtime's tensors index and allocate in int64 bytes (8-byte elements). */
#define TL_ST_MAX_SPAN ((uint64_t)INT64_MAX / 8)   /* 2^60 - 1 */

/* Bytes per element of a stored dtype. */
size_t tl_st_dtype_size(tl_st_dtype dt);

/* A name fit for an error message: printable ASCII kept, other bytes as
 * \xNN, cut at about 80 characters. Returns buf. */
const char *tl_st_shown(const char *name, char *buf, size_t size);

/* The deepest nesting serde_json takes (its counter of 128 stops at the
 * 128th level); cJSON's own limit is 1000, reported as a bare syntax error. */
#define TL_JSON_MAX_DEPTH 127
#define TL_JSON_MAX_DEPTH_TEXT "127"

/* Checks JSON text the way serde_json does before cJSON sees it: valid UTF-8,
 * no raw control bytes (none inside strings; only tab, LF and CR outside),
 * strict numbers, nesting at most TL_JSON_MAX_DEPTH deep; and no \u0000
 * escape, which cJSON would turn into a NUL that silently cuts a C string.
 * Returns NULL when fine, else a description, with the offending offset in *at. */
const char *tl_json_text_problem(const unsigned char *text, size_t n, size_t *at);

/* cJSON keeps every copy of a repeated key; the format forbids them. Sets *dup
 * to a repeated member name of obj and returns 1; 0 when all names differ;
 * -1 when out of memory. */
int tl_json_duplicate_key(const cJSON *obj, const char **dup);

/* What a path is that is not a regular file ("a FIFO", "a folder", ...),
 * for errors; NULL for a regular file. (files.c) */
const char *tl_file_kind_problem(mode_t mode);

/* Opens path read-only for a reader: never blocks (a FIFO opens at once,
 * then fails the regular-file check), and a dangling symlink is named as
 * one. Returns the fd and fills *st, or -1 with why set to a description
 * (st->st_mode then tells the kind of a file that is not regular, else 0).
 * (files.c) */
int tl_open_regular(const char *path, struct stat *st, char *why, size_t why_size);

/* A JSON value as an error shows it: the number, or its kind ("an array"). */
const char *tl_json_shown(const cJSON *v, char *buf, size_t size);

/* Parses NUL-terminated JSON text (already checked with tl_json_text_problem).
 * On failure returns NULL and writes the byte offset of the error in *at. */
cJSON *tl_json_parse(const char *text, size_t *at);

#endif
