/* tinyllm/files.h: reading and replacing whole files, safely.
 *
 * A checkpoint folder is user input: any name in it may be a folder, a FIFO
 * (whose open would wait for a writer forever), a device or a dangling
 * symlink, and a reader says so rather than hang or call it missing. And a
 * file written in full and then renamed over its final name (never half
 * written under it) goes through a temporary name of its own: a fixed name
 * such as "report.json.tmp" could be a user's file, or a symlink an attacker
 * left there, and would be written through or deleted.
 */
#ifndef TINYLLM_FILES_H
#define TINYLLM_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Whether path names anything at all (lstat): a folder, a FIFO or a dangling
 * symlink count, so that the caller opens it and reports what it is instead
 * of treating it as absent. */
bool tl_path_present(const char *path);

/* The whole of the regular file path, NUL-terminated (the caller frees it),
 * its length in *len when len is not NULL. Refuses, with an error naming
 * path and what it is, a folder, a FIFO, a device, a socket, a dangling
 * symlink or a loop of them, and a file over max_bytes. Never blocks on a
 * FIFO. NULL with the error set (tl_error); errno is ENOENT when path names
 * nothing, so a caller can treat an optional file's absence as such. */
char *tl_read_whole_file(const char *path, size_t max_bytes, size_t *len);

/* Creates a new file beside path, for a write that ends with rename(tmp,
 * path): named "<path>.tmp.XXXXXX" (six random letters), made with O_CREAT,
 * O_EXCL and O_NOFOLLOW, so no existing file or symlink is written through,
 * with the mode fopen would give it (0666 less the umask, applied by the
 * kernel: the process's umask is never changed). tmp (tmp_size bytes, at
 * least strlen(path) + 12) receives the name, for the rename or for unlink
 * on failure. Returns the stream open for writing, or NULL with errno set
 * (ENAMETOOLONG when tmp is too small). */
FILE *tl_create_temp_beside(const char *path, char *tmp, size_t tmp_size);

#endif
