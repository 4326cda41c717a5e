/* output.h: checking a file a verb will write at its end (--json, --out)
 * before the run, so a path that cannot be written does not waste it. */
#ifndef TINYLLM_TOOL_OUTPUT_H
#define TINYLLM_TOOL_OUTPUT_H

/* Whether a file can be written to path and renamed over it: path is not a
 * folder, its folder exists and a new file can be made in it (a unique one,
 * removed at once: nothing of the user's is touched). option names the
 * command-line option in messages ("--json"). 0, or -1 with an error. */
int output_path_check(const char *option, const char *path);

#endif
