/* opts: the one option parser every command uses. A command lists its
 * options in a table; opts_parse fills them in, collects the other
 * arguments, and says what is wrong in one voice ("ol check: --json needs
 * a FILE", "ol tests: unknown option --jsn"), with the way to --help.
 * Options may come before or after the other arguments, as --name VALUE,
 * --name=VALUE, -k VALUE or -kVALUE; an unambiguous prefix of a long name
 * works too (--ref for --ref-deps); "--" ends the options. */
#ifndef OL_OPTS_H
#define OL_OPTS_H

#include <stdbool.h>
#include "util.h"

typedef struct {
    const char *name;  /* the long name, without "--" ("json"), or NULL for a letter only */
    char letter;       /* the short name ('k'), or 0 */
    const char *value; /* the value's name in messages ("FILE"); NULL for a flag */
    const char **str;  /* where a value goes (the last one given wins) */
    bool *flag;        /* where a flag goes */
} ol_option;

typedef enum { OPTS_RUN, OPTS_HELP, OPTS_ERROR } opts_result;

/* Parses argv[1..argc-1] against opts (a table ended by an entry with
 * neither name nor letter: {0}); --help and -h always mean OPTS_HELP. The other arguments
 * go into args, in order. After stop_after of them (0: never) the rest is
 * taken as it is, options included: what a subcommand parses itself.
 * OPTS_ERROR has been said on stderr (cmd names the command: "tests"). */
opts_result opts_parse(const char *cmd, int argc, char **argv, const ol_option *opts,
                       int stop_after, strlist *args);

/* For a command that takes one lesson (`ol check L7.1`): parses; true with
 * *id (the caller frees it) to go on, else false with *status: 0 when the
 * help was printed, 2 when a usage error was said ("give one lesson, e.g.
 * `ol CMD EXAMPLE`"). */
bool opts_one_lesson(const char *cmd, int argc, char **argv, const ol_option *opts,
                     const char *help, const char *example, char **id, int *status);

#endif
