/* generator.h: the inference path of `tinyllm generate` and `tinyllm chat`.
 *
 * One model (the course's LlamaForCausalLM, whoever wrote it), one resident
 * copy of its weights (llama_from_pretrained adopts the mapped checkpoint:
 * BF16 stays BF16), one preallocated KV cache, and greedy decoding: a batched
 * prefill of the prompt (one forward of T rows: GEMMs), then one forward of
 * one row per new token (GEMVs that read each weight in place), each under
 * no_grad in a scope of its own, so the arena is reused and memory stays flat
 * but for the cache. After the load, projections that read the same input
 * (q/k/v and gate/up, found by their HF names in the state dict, so any
 * model that follows the course's naming gets it) are fused in the
 * runtime (nn.h: tl_linear_fuse): the state dict is unchanged, the parts
 * become views of one weight, and tl_linear on a part computes the siblings
 * in the same pass (one thread-pool job instead of three, or two).
 * TINYLLM_FUSE=0 leaves them apart (to measure what fusing buys). Then
 * every weight is copied once into one region of huge pages (nn.h:
 * tl_weights_pack) and the mapped pages are handed back: still one resident
 * copy, read with one TLB entry per 2 MiB; TINYLLM_PACK=0 keeps the weights
 * in the map (a faster load, slower tokens: course/MS-L7/README.md 4.12).
 * Every phase is timed and the resident size read at the points the report
 * names.
 *
 * Errors: functions return -1 with tl_error() saying what and what to do.
 */
#ifndef TINYLLM_TOOL_GENERATOR_H
#define TINYLLM_TOOL_GENERATOR_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "tinyllm/modern/llama.h"

#define GENERATOR_MAX_STOPS 16

typedef struct {
    LlamaForCausalLM model;
    KVCache cache;
    bool cached;             /* false: every step reruns the whole sequence (--no-cache) */
    int64_t capacity;        /* the positions the cache holds */
    int64_t held;            /* positions the cache holds now */
    int64_t *sequence;       /* every id the cache holds, then the one not yet run */
    int64_t sequence_len;
    int64_t stops[GENERATOR_MAX_STOPS];
    int n_stops;
    int64_t weight_bytes;    /* the bytes of every parameter, as resident */
    tl_tensor **fused;       /* the fused weights (freed with the model) */
    int n_fused;
    double load_seconds;     /* llama_from_pretrained and the weights paged in */
    /* When set and nonzero (a Ctrl-C), a prompt's prefill stops between its chunks. */
    const volatile sig_atomic_t *stop_flag;
} generator;

/* Called while the weights are paged in: done of total bytes. */
typedef void (*generator_progress)(int64_t done, int64_t total, void *ctx);

/* Loads dir (dtype TL_F32, TL_BF16, or -1: the checkpoint's own), pages every
 * weight in (progress, when given, is called as it goes), reads the stop ids
 * (generation_config.json's eos_token_id, else config.json's; one that is not
 * a token id or a list of them is refused, before the load) and makes a
 * cache of `capacity` positions (0: max_position_embeddings). */
int generator_open(generator *g, const char *dir, int dtype, int64_t capacity, bool cached,
                   generator_progress progress, void *ctx);
void generator_close(generator *g);

/* Runs ids [n] after what the cache holds (a prefill: one forward of n rows,
 * or chunks of them) and sets *next to the greedy token after them. Returns
 * 0; 1 when *stop_flag was set before a chunk (the cache then holds the
 * chunks run, held says how far; *next is -1); -1 with an error. */
int generator_feed(generator *g, const int64_t *ids, int64_t n, int64_t *next);

/* Keeps the first n positions the cache holds and forgets the rest (a chat
 * whose history renders differently), or, for a cache kind other than the
 * plain one (where slot i is position i), forgets everything. */
void generator_truncate(generator *g, int64_t n);

/* Forgets what the cache holds (a new conversation). */
void generator_reset(generator *g);

/* Whether id ends generation. */
bool generator_is_stop(const generator *g, int64_t id);

/* The monotonic clock, in seconds. */
double generator_now(void);

#endif
