/* session.h: what generate and chat share around the generator: opening a
 * checkpoint folder sized for one run, with progress on a terminal. */
#ifndef TINYLLM_TOOL_SESSION_H
#define TINYLLM_TOOL_SESSION_H

#include <stdint.h>

#include "generator.h"
#include "options.h"

/* Loads o->dir (o->dtype, o->no_cache) for n prompt tokens and up to
 * *max_new more (shortened to the context, folder.h), showing the load's
 * progress when stderr is a terminal. Returns 0, 1 (failed: tl_error() says
 * why) or 2 (the prompt does not fit the model: tl_error()). */
int open_for_run(generator *g, const gen_options *o, int64_t n, int64_t *max_new,
                 const char *verb);

/* Loads o->dir with a cache of the model's whole context (chat). 0 or 1. */
int open_whole_context(generator *g, const gen_options *o);

#endif
