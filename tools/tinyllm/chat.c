/* chat.c: `tinyllm chat DIR [--system TEXT] [-n N] [--threads T] [--dtype D]`:
 * an interactive loop over generate's path (generator.h, reply.h).
 *
 * Each line read is a user turn. The whole conversation is rendered with the
 * checkpoint's chat template, encoded, and only the ids the KV cache does not
 * hold yet are run: the cache keeps the conversation between turns, so a turn
 * costs its own tokens, not the history's. When the rendering of the history
 * differs from what was run (a template that rewrites earlier turns), the
 * cache keeps the common prefix and the rest is run again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tinyllm/chat_template.h"
#include "tinyllm/tensor.h"
#include "tinyllm/tokenizer.h"
#include "conversation.h"
#include "folder.h"
#include "reply.h"
#include "session.h"
#include "stream.h"
#include "output.h"
#include "verbs.h"

static const char USAGE[] =
    "usage: tinyllm chat DIR [--system TEXT] [-n N] [--threads T] [--dtype f32|bf16]\n"
    "                    [--no-cache]\n"
    "  DIR           a checkpoint folder with its tokenizer and a chat template\n"
    "                (tokenizer.json, tokenizer_config.json's chat_template)\n"
    "  --system TEXT a system message before the first turn\n"
    "  -n N          at most N tokens per reply (default 512)\n"
    "  --threads T, --dtype D, --no-cache   as for tinyllm generate\n"
    "Type a message and Enter; the reply streams back. /reset starts a new\n"
    "conversation, /exit (or Ctrl-D) ends. Ctrl-C stops a reply (the timings so\n"
    "far are shown); at the prompt it ends the chat. Each reply's timings go to\n"
    "stderr. A turn that fails is said and dropped, and the chat goes on; the exit\n"
    "status is then 1 (0 when every turn ran).\n";

/* The ids of the whole conversation, rendered for the assistant's next turn. */
static int64_t render_ids(tl_tokenizer *tok, const conversation *c, int64_t **ids) {
    char *messages = conversation_json(c);
    tl_chat_request req = {.messages_json = messages, .add_generation_prompt = true};
    char *prompt = messages ? tl_chat_template_apply(tok, &req, NULL) : NULL;
    free(messages);
    if (!prompt) return -1;
    int32_t *tids = NULL;
    int64_t n = tl_tokenizer_encode(tok, prompt, strlen(prompt), false, &tids);
    free(prompt);
    if (n < 0) return -1;
    *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof **ids);
    for (int64_t i = 0; *ids && i < n; i++) (*ids)[i] = tids[i];
    free(tids);
    return *ids ? n : tl_fail_status("out of memory");
}

/* The reply's text, special tokens and the stop id left out. */
static char *reply_text(const tl_tokenizer *tok, const reply_stats *st) {
    int64_t n = st->n_ids - (st->end == REPLY_STOP_ID ? 1 : 0);
    int32_t *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof *ids);
    if (!ids) return NULL;
    for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)st->ids[i];
    char *text = tl_tokenizer_decode(tok, ids, (size_t)n, stream_decode_flags(tok), NULL);
    free(ids);
    return text;
}

static void print_turn_timings(const reply_stats *st, int64_t fed) {
    fprintf(stderr, "[%lld new prompt tokens in %.0f ms; %lld tokens at %.1f tok/s%s]\n",
            (long long)fed, st->prefill_seconds * 1e3, (long long)st->n_ids,
            st->decode_seconds > 0 ? (double)st->n_steps / st->decode_seconds : 0.0,
            st->end == REPLY_INTERRUPTED ? "; interrupted" : "");
}

/* One user turn: render, run what the cache lacks, stream the reply, keep it. */
static int turn(generator *g, tl_tokenizer *tok, conversation *c, const gen_options *o) {
    int64_t *ids = NULL;
    int64_t n = render_ids(tok, c, &ids);
    if (n < 0) {
        free(ids);
        return -1;
    }
    if (n == 0) {
        free(ids);
        return tl_fail_status("the chat template (tokenizer_config.json's chat_template) "
                              "rendered no token for this conversation: nothing to answer; "
                              "check the template, or /reset");
    }
    int64_t room = g->capacity - n;
    if (room < 1) {
        free(ids);
        return tl_fail_status("the conversation is %lld tokens and the context %lld: /reset "
                              "to start a new one", (long long)n, (long long)g->capacity);
    }
    int64_t keep = 0;   /* what the cache already holds of these ids */
    while (keep < g->held && keep < n - 1 && g->sequence[keep] == ids[keep]) keep++;
    generator_truncate(g, keep);
    text_stream out;
    text_stream_init(&out, tok, stream_decode_flags(tok), stdout);
    reply_stats st;
    int64_t max_new = o->max_new < room ? o->max_new : room;
    int rc = reply_generate(g, ids + keep, n - keep, max_new, false, &out, &st);
    putchar('\n');
    if (rc == 0 && st.n_ids == 0 && st.end == REPLY_INTERRUPTED)
        rc = tl_fail_status("interrupted before the reply began; the turn is dropped");
    if (rc == 0) {
        print_turn_timings(&st, n - keep);
        char *text = reply_text(tok, &st);
        rc = text && conversation_add(c, "assistant", text) == 0 ? 0
             : tl_fail_status("out of memory");
        free(text);
    }
    reply_stats_free(&st);
    text_stream_free(&out);
    free(ids);
    return rc;
}

/* Renders the template once for a first turn (the --system message, a user
 * line), so a template that does not parse or fails is said at startup, as a
 * missing one is, not after the user has typed. 0, or -1 with an error. */
static int try_template(const tl_tokenizer *tok, const char *system) {
    conversation *c = conversation_new();
    bool ok = c && (!system || conversation_add(c, "system", system) == 0) &&
              conversation_add(c, "user", "hello") == 0;
    char *messages = ok ? conversation_json(c) : NULL;
    conversation_free(c);
    if (!messages) return tl_fail_status("out of memory");
    tl_chat_request req = {.messages_json = messages, .add_generation_prompt = true};
    char *prompt = tl_chat_template_apply(tok, &req, NULL);
    int rc = prompt ? 0 : -1;
    free(messages);
    free(prompt);
    return rc;
}

int tinyllm_chat(int argc, char **argv) {
    gen_options o;
    int usage = gen_options_parse(&o, argc, argv, true, USAGE);
    if (usage >= 0) return usage;
    apply_threads(o.threads);
    tl_clear_error();
    LlamaConfig config;   /* the folder first: a wrong folder is said as such */
    if (folder_read_config(o.dir, &config) != 0) {
        print_failure("chat", NULL);
        return 1;
    }
    tl_tokenizer *tok = tl_tokenizer_load(o.dir);
    if (!tok || !tl_chat_template_exists(tok, NULL)) {
        if (tok) fprintf(stderr, "tinyllm chat: the checkpoint's tokenizer_config.json has no "
                         "chat_template; `tinyllm generate DIR --prompt TEXT` runs a plain "
                         "prompt\n");
        else print_failure("chat", NULL);
        tl_tokenizer_free(tok);
        return 1;
    }
    if (try_template(tok, o.system) != 0) {
        print_failure("chat", NULL);
        tl_tokenizer_free(tok);
        return 1;
    }
    generator g;
    int status = open_whole_context(&g, &o);
    if (status != 0) {
        print_failure("chat", NULL);
        tl_tokenizer_free(tok);
        return status;
    }
    conversation *c = conversation_new();
    if (status == 0 && o.system && conversation_add(c, "system", o.system) != 0) status = 1;
    bool tty = isatty(STDIN_FILENO);
    if (status == 0 && tty)
        fprintf(stderr, "tinyllm chat: %s (%lld positions). /reset, /exit; Ctrl-C stops a "
                "reply.\n", o.dir, (long long)g.capacity);
    reply_catch_interrupt();
    char *line = NULL;
    size_t cap = 0;
    bool turn_failed = false;
    while (status == 0) {
        if (tty) fputs("> ", stdout);
        fflush(stdout);
        reply_interrupted = 0;
        ssize_t len = getline(&line, &cap, stdin);
        if (len < 0) break;   /* end of input, or Ctrl-C at the prompt */
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
        if (len == 0) continue;
        if (strcmp(line, "/exit") == 0) break;
        if (strcmp(line, "/reset") == 0) {
            while (conversation_len(c) > (o.system ? 1 : 0)) conversation_pop(c);
            generator_reset(&g);
            continue;
        }
        if (conversation_add(c, "user", line) != 0) status = 1;
        else if (turn(&g, tok, c, &o) != 0) {
            print_failure("chat", NULL);
            conversation_pop(c);   /* the turn did not happen */
            turn_failed = true;    /* the chat goes on; the exit status says it */
        }
    }
    if (tty && status == 0) putchar('\n');
    free(line);
    conversation_free(c);
    generator_close(&g);
    tl_tokenizer_free(tok);
    return status != 0 ? status : turn_failed ? 1 : 0;
}
