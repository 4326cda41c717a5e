/* options.h: the command line of generate and chat (one parser, so the two
 * verbs take the same options the same way). */
#ifndef TINYLLM_TOOL_OPTIONS_H
#define TINYLLM_TOOL_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    const char *dir;
    const char *prompt, *ids_text, *system, *json;
    int64_t *ids, n_ids;   /* --ids parsed (malloc'd: the caller frees ids) */
    bool chat, ignore_eos, no_cache, quiet;
    int64_t max_new;    /* -n */
    int threads;        /* 0: the runtime's default (every core) */
    int dtype;          /* TL_F32, TL_BF16, or -1: the checkpoint's own */
} gen_options;

/* Parses argv (argv[0] is the verb). chat: the chat verb's options (no
 * --prompt, --ids, --chat; --system). Returns -1 when the verb should run,
 * else the exit status to return (0 after --help, 2 on a usage error, such
 * as an --ids that is not a list of ids: the message and the usage printed). */
int gen_options_parse(gen_options *o, int argc, char **argv, bool chat, const char *usage);

/* "1,2,3" into a malloc'd array; the count, or -1 with an error. */
int64_t parse_id_list(const char *text, int64_t **ids);

/* Sets TINYLLM_THREADS for the kernels (threads > 0). */
void apply_threads(int threads);

#endif
