/* folder.h: what generate and chat check about a checkpoint folder before
 * they load it, so that a wrong folder or a prompt too long for the model is
 * said plainly, before any weight is read. */
#ifndef TINYLLM_TOOL_FOLDER_H
#define TINYLLM_TOOL_FOLDER_H

#include <stdbool.h>
#include <stdint.h>

#include "tinyllm/modern/llama.h"

/* The checks every verb that takes a checkpoint folder makes first, so each
 * says a wrong folder the same way: dir exists and is a folder; it has a
 * config.json (else what it does hold) that is JSON with no key twice; and,
 * with weights, model.safetensors or an index with every shard it lists
 * (a missing one named, with its .part when a download was cut short); and
 * weights, when there, stored in dtypes tinyllm computes with (not FP8, F64
 * or a quantization's integers). A name that is there but is not a regular
 * file (a folder, a FIFO, a dangling link) is said as such, not as missing.
 * 0, or -1 with an error that says what is wrong and what to do. */
int folder_check(const char *dir, bool weights);

/* Parses dir/config.json into *c; -1 with an error naming the file. */
int folder_parse_config(const char *dir, LlamaConfig *c);

/* folder_check with weights, then: generation_config.json and
 * tokenizer_config.json, when there, are JSON with no key twice; the config
 * is one the model takes, read into *c. -1 with an error that says what the
 * folder lacks and what to do. */
int folder_read_config(const char *dir, LlamaConfig *c);

/* After llama_from_pretrained(dir) failed: when config.json describes far
 * more parameters than the weights hold (more than twice, as
 * llama_config_param_count counts them: a tied head stored or not is within
 * that), the failure was building a model of another size ("out of memory"
 * for one of unheard-of size, or a shape mismatch), so the error says so,
 * naming config.json, both counts and what to do, the loader's words after.
 * Otherwise the loader's error stands. Returns -1. */
int folder_explain_load_failure(const char *dir);

/* Whether dir holds a tokenizer.json. */
bool folder_has_tokenizer(const char *dir);

/* The positions a run needs: the prompt's n tokens and up to *max_new more.
 * Past max_position_embeddings a model's rotary table was never trained (a
 * dynamic or longrope scaling rescales for it, so those may go on): a prompt
 * longer than the context is an error (-1, the message printed by the verb
 * from tl_error()); a reply that would run past it is shortened to fit, with
 * a note on stderr. Returns the positions to make the cache for. */
int64_t folder_plan_positions(const LlamaConfig *c, int64_t n, int64_t *max_new,
                              const char *verb);

#endif
