/* output.h: checking a file a verb will write at its end (--json, --out)
 * before the run, so a path that cannot be written does not waste it; and
 * printing text that came from a file, so that no byte of it drives the
 * terminal. */
#ifndef TINYLLM_TOOL_OUTPUT_H
#define TINYLLM_TOOL_OUTPUT_H

#include <stdio.h>

/* Whether a file can be written to path and renamed over it: path is not a
 * folder, a link, a device, a pipe or a socket, nor a file of the checkpoint
 * folder the run reads (any of its names, links followed); its folder exists
 * and a new file can be made in it (a unique one, removed at once: nothing of
 * the user's is touched). option names the command-line option in messages
 * ("--json"). 0, or -1 with an error. */
int output_path_check(const char *option, const char *path, const char *checkpoint);

/* Writes s to out (with out NULL, only measures) with the bytes that could
 * drive a terminal escaped: control characters and DEL as \xNN, C1 controls
 * (as UTF-8) as \u00NN. Returns the width in characters. */
int print_clean(FILE *out, const char *s);

/* "tinyllm VERB: " and the error (tl_error(), else fallback, else "failed")
 * on stderr, printed clean, and a newline: an error quotes the checkpoint's
 * files (a tensor name, a model_type, a shard's name), which anyone may have
 * written. */
void print_failure(const char *verb, const char *fallback);

#endif
