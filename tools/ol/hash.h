/* hash: SHA-256 (OpenSSL) of strings and files, as 64 hex digits: the keys
 * of ol's build and result cache. */
#ifndef OL_HASH_H
#define OL_HASH_H

#include <stddef.h>

typedef struct hasher hasher;
#define HASH_HEX 65 /* 64 hex digits and a NUL */

hasher *hash_new(void);
void hash_bytes(hasher *h, const void *data, size_t n);
/* A string with its length, so ("ab","c") and ("a","bc") differ. */
void hash_str(hasher *h, const char *s);
/* A file's path-independent content; a missing file hashes as "missing". */
void hash_file(hasher *h, const char *path);
/* Every regular file under dir (sorted, with its relative name). */
void hash_tree(hasher *h, const char *dir);
/* Writes the digest and frees h. */
void hash_done(hasher *h, char out[HASH_HEX]);

#endif
