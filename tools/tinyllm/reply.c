/* reply.c: the greedy loop of generate and chat (reply.h). */
#include <stdlib.h>
#include <string.h>

#include "tinyllm/tensor.h"
#include "machine.h"
#include "reply.h"

volatile sig_atomic_t reply_interrupted;

static void on_interrupt(int sig) {
    (void)sig;
    reply_interrupted = 1;
}

void reply_catch_interrupt(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

void reply_stats_free(reply_stats *st) {
    free(st->ids);
    free(st->step_seconds);
    memset(st, 0, sizeof *st);
}

int reply_generate(generator *g, const int64_t *prompt, int64_t n, int64_t max_new,
                   bool ignore_stops, text_stream *out, reply_stats *st) {
    memset(st, 0, sizeof *st);
    st->prompt_tokens = n;
    st->end = REPLY_LENGTH;
    size_t room = (size_t)(max_new > 0 ? max_new : 1);
    st->ids = malloc(room * sizeof *st->ids);
    st->step_seconds = malloc(room * sizeof *st->step_seconds);
    if (!st->ids || !st->step_seconds) return tl_fail_status("out of memory for %zu ids", room);
    if (max_new < 1) return 0;

    double t0 = generator_now();
    int64_t next;
    g->stop_flag = &reply_interrupted;
    int64_t held = g->held;
    int fed = reply_interrupted ? 1 : generator_feed(g, prompt, n, &next);   /* 1: Ctrl-C */
    g->stop_flag = NULL;
    if (fed < 0) return -1;
    st->prefill_seconds = generator_now() - t0;
    if (fed == 1) {   /* during the load or between the prompt's chunks: no reply */
        st->prompt_tokens = g->held - held;   /* what the prefill ran, for its rate */
        if (st->prompt_tokens == 0) st->prefill_seconds = 0;
        st->end = REPLY_INTERRUPTED;
        text_stream_finish(out);
        return 0;
    }
    st->rss_after_prefill = machine_rss_bytes();
    for (int64_t k = 0;; k++) {
        st->ids[st->n_ids++] = next;
        bool stop = !ignore_stops && generator_is_stop(g, next);
        if (!stop && text_stream_push(out, next) != 0)
            return tl_fail_status("out of memory while writing the reply");
        double now = generator_now();
        if (k == 0) st->first_token_seconds = now - t0;
        else st->step_seconds[st->n_steps - 1] = now - t0;   /* the step, its host work */
        if (stop) {
            st->end = REPLY_STOP_ID;
            break;
        }
        if (reply_interrupted) {
            st->end = REPLY_INTERRUPTED;
            break;
        }
        if (k + 1 >= max_new) break;
        t0 = now;
        st->n_steps++;
        int64_t last = next;
        if (generator_feed(g, &last, 1, &next) != 0) return -1;
    }
    text_stream_finish(out);
    for (int64_t s = 0; s < st->n_steps; s++) st->decode_seconds += st->step_seconds[s];
    st->rss_after_decode = machine_rss_bytes();
    return 0;
}
