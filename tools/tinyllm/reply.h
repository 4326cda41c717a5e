/* reply.h: one greedy reply, streamed and timed (generate and chat).
 *
 * The prompt's ids go through the model in one prefill; its last position
 * gives the first new token. Then each new token is written and, unless it
 * is a stop id or the last one asked for, fed back as a one-row decode step.
 * The clock is read at each token, so every decode step's time is its
 * forward and the host work around it (the argmax, the stop check, the
 * text). A SIGINT (Ctrl-C) sets reply_interrupted; the loop stops after the
 * step under way, with the timings so far. Set during the load or between a
 * long prompt's prefill chunks, it ends the reply before its first token.
 */
#ifndef TINYLLM_TOOL_REPLY_H
#define TINYLLM_TOOL_REPLY_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "generator.h"
#include "stream.h"

extern volatile sig_atomic_t reply_interrupted;

typedef enum { REPLY_STOP_ID, REPLY_LENGTH, REPLY_INTERRUPTED } reply_end;

typedef struct {
    int64_t prompt_tokens;      /* the ids fed in the prefill */
    int64_t *ids;               /* the new ids, malloc'd (the stop id included) */
    int64_t n_ids;
    double prefill_seconds;     /* the prefill's forward, to the first token */
    double first_token_seconds; /* from the start of the prefill to the first token written */
    double *step_seconds;       /* [n_steps] each decode step, malloc'd */
    int64_t n_steps;
    double decode_seconds;      /* their sum */
    int64_t rss_after_prefill, rss_after_decode;
    reply_end end;
} reply_stats;

/* Generates up to max_new ids after prompt [n] (fed after what the cache
 * holds), writing them to out as they come. ignore_stops: run max_new steps
 * whatever the ids. Returns 0 (also when interrupted: st->end says so), or
 * -1 with tl_error() set (a forward failed). Free st with reply_stats_free. */
int reply_generate(generator *g, const int64_t *prompt, int64_t n, int64_t max_new,
                   bool ignore_stops, text_stream *out, reply_stats *st);
void reply_stats_free(reply_stats *st);

/* Makes SIGINT set reply_interrupted (instead of ending the process). */
void reply_catch_interrupt(void);

#endif
