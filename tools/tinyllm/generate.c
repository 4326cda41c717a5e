/* generate.c: `tinyllm generate DIR (--prompt TEXT [--chat] | --ids 1,2,3) [-n N]
 * [--threads T] [--dtype f32|bf16] [--json FILE]`: greedy decoding through the
 * KV cache, streamed to stdout as text (generator.h, reply.h).
 *
 * The prompt is encoded as tokenizer(text) encodes it (the post-processor's
 * BOS included), or, with --chat, rendered by the checkpoint's chat template
 * as one user turn with the assistant's header, and encoded without adding
 * special tokens again. Generation stops at generation_config.json's stop
 * ids (else config.json's eos_token_id) or after N tokens. A summary goes to
 * stderr; --json writes the whole report.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tinyllm/chat_template.h"
#include "tinyllm/tensor.h"
#include "tinyllm/tokenizer.h"
#include "conversation.h"
#include "folder.h"
#include "options.h"
#include "output.h"
#include "reply.h"
#include "session.h"
#include "report.h"
#include "stream.h"
#include "verbs.h"

static const char USAGE[] =
    "usage: tinyllm generate DIR (--prompt TEXT [--chat] | --ids ID,ID,...) [-n N]\n"
    "                        [--threads T] [--dtype f32|bf16] [--json FILE]\n"
    "                        [--ignore-eos] [--no-cache] [--quiet]\n"
    "  DIR           a checkpoint folder in Hugging Face's layout (config.json, the\n"
    "                weights; tokenizer.json and tokenizer_config.json for --prompt)\n"
    "  --prompt TEXT the prompt, encoded as tokenizer(TEXT) encodes it\n"
    "  --chat        render TEXT as one user turn with the checkpoint's chat template\n"
    "                (tokenizer_config.json's chat_template), the assistant's turn next\n"
    "  --ids LIST    the prompt as token ids instead (e.g. --ids 1,15043,3186)\n"
    "  -n N          generate at most N new tokens (default 64); stops earlier at a\n"
    "                stop id of generation_config.json (else config.json's eos_token_id)\n"
    "  --threads T   the threads the kernels use (default: every core)\n"
    "  --dtype D     f32 or bf16: the dtype the weights are held in (default: the\n"
    "                checkpoint's own; bf16 rounds an f32 checkpoint, f32 widens bf16)\n"
    "  --json FILE   write the report: the rendered prompt, the ids, the timings (load,\n"
    "                prefill, each decode step, total, tokens/s), memory after load,\n"
    "                prefill and decode and the peak, the machine and the threads\n"
    "  --ignore-eos  do not stop at stop ids: exactly N tokens (for measuring)\n"
    "  --no-cache    run the whole sequence again at every step (no KV cache: slow;\n"
    "                for checking that the cache changes nothing)\n"
    "  --quiet       write nothing to stdout (the summary still goes to stderr)\n"
    "The reply streams to stdout as text (as ids when DIR has no tokenizer); a\n"
    "summary of the timings goes to stderr. Ctrl-C stops it and prints the timings\n"
    "so far. Exit status: 0 done (or interrupted: 130), 1 failed, 2 a usage error.\n";

/* The prompt's ids: --ids as given, else the text through the tokenizer (and
 * the chat template). *rendered gets the text the tokenizer encoded. */
static int64_t prompt_ids(const gen_options *o, tl_tokenizer *tok, int64_t **ids,
                          char **rendered) {
    *rendered = NULL;
    if (o->ids) {   /* parsed with the options */
        *ids = malloc((size_t)o->n_ids * sizeof **ids);
        if (!*ids) return tl_fail_status("out of memory");
        memcpy(*ids, o->ids, (size_t)o->n_ids * sizeof **ids);
        return o->n_ids;
    }
    const char *text = o->prompt;
    if (o->chat) {
        conversation *c = conversation_new();
        char *messages = c && conversation_add(c, "user", o->prompt) == 0
                         ? conversation_json(c) : NULL;
        conversation_free(c);
        tl_chat_request req = {.messages_json = messages, .add_generation_prompt = true};
        *rendered = messages ? tl_chat_template_apply(tok, &req, NULL) : NULL;
        free(messages);
        if (!*rendered)
            return tl_fail_status("--chat: %s", tl_error() ? tl_error() : "out of memory");
        text = *rendered;
    } else {
        *rendered = strdup(text);
    }
    int32_t *tids = NULL;
    int64_t n = tl_tokenizer_encode(tok, text, strlen(text), !o->chat, &tids);
    if (n < 0) return -1;
    *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof **ids);
    if (!*ids) {
        free(tids);
        return tl_fail_status("out of memory");
    }
    for (int64_t i = 0; i < n; i++) (*ids)[i] = tids[i];
    free(tids);
    return n;
}

/* Each id of the prompt is one the model has a row for. An --ids past the
 * vocabulary is a usage error (2); a --prompt's token past it is the
 * checkpoint's own inconsistency (1): its tokenizer.json gives ids its
 * config.json does not have. */
static int check_vocab(const gen_options *o, const tl_tokenizer *tok, const int64_t *ids,
                       int64_t n, int64_t vocab) {
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < vocab) continue;
        if (o->ids) {
            fprintf(stderr, "tinyllm generate: --ids: id %lld (item %lld) is outside the "
                    "vocabulary of %s (0 .. %lld)\n", (long long)ids[i], (long long)i + 1,
                    o->dir, (long long)vocab - 1);
            return 2;
        }
        const char *text = tl_tokenizer_id_to_token(tok, (int32_t)ids[i]);
        fprintf(stderr, "tinyllm generate: the prompt's token '%.80s' (token %lld of %lld) "
                "has id %lld, outside the model's vocabulary of %lld (config.json's "
                "vocab_size): %s/tokenizer.json gives ids the model has no row for; is it "
                "this checkpoint's tokenizer?\n", text ? text : "?", (long long)i + 1,
                (long long)n, (long long)ids[i], (long long)vocab, o->dir);
        return 1;
    }
    return 0;
}

int tinyllm_generate(int argc, char **argv) {
    gen_options o;
    int usage = gen_options_parse(&o, argc, argv, false, USAGE);
    if (usage >= 0) return usage;
    apply_threads(o.threads);
    tl_clear_error();
    reply_catch_interrupt();
    gen_report rep;
    gen_report_init(&rep, o.dir, o.threads);

    LlamaConfig cfg;
    if (folder_read_config(o.dir, &cfg) != 0 ||
        (o.json && output_path_check("--json", o.json, o.dir) != 0)) {
        print_failure("generate", NULL);
        free(o.ids);
        return 1;
    }
    /* The tokenizer before the weights: a prompt that cannot be encoded is
     * said before the load. --ids needs none (the reply is then ids). */
    tl_tokenizer *tok = NULL;
    if (!o.ids_text || folder_has_tokenizer(o.dir)) {
        tok = tl_tokenizer_load(o.dir);
        if (!tok) {
            bool none = !folder_has_tokenizer(o.dir);
            print_failure("generate", NULL);
            if (none)
                fputs("  (--prompt needs the checkpoint's tokenizer.json; --ids runs without)\n",
                      stderr);
            free(o.ids);
            return 1;
        }
    }
    int64_t *ids = NULL;
    char *rendered = NULL;
    double t_tok = generator_now();
    int64_t n = prompt_ids(&o, tok, &ids, &rendered);
    rep.tokenize_seconds = generator_now() - t_tok;
    int status = 0;
    if (n < 0) {
        print_failure("generate", NULL);
        status = 1;
    } else if (n == 0) {
        fprintf(stderr, "tinyllm generate: the prompt encodes to no token at all; give a "
                        "non-empty --prompt (or --ids)\n");
        status = 2;
    }
    if (status == 0) status = check_vocab(&o, tok, ids, n, cfg.vocab_size);
    generator g = {0};
    if (status == 0) {
        status = open_for_run(&g, &o, n, &o.max_new, "generate");
        if (status != 0) print_failure("generate", NULL);
    }
    if (status == 0) {
        gen_report_loaded(&rep);
        text_stream out;
        text_stream_init(&out, tok, tok ? stream_decode_flags(tok) : 0, o.quiet ? NULL : stdout);
        reply_stats st;
        double t0 = generator_now();
        if (reply_generate(&g, ids, n, o.max_new, o.ignore_eos, &out, &st) != 0) {
            fputc('\n', stderr);
            print_failure("generate", NULL);
            status = 1;
        } else {
            if (!o.quiet) putchar('\n');
            rep.total_seconds = rep.tokenize_seconds + g.load_seconds + generator_now() - t0;
            gen_report_print(&rep, &g, &st, stderr);
            if (o.json && gen_report_write(&rep, &g, &st, o.json, rendered, ids, n, tok) != 0) {
                print_failure("generate", NULL);
                status = 1;
            }
            if (status == 0 && st.end == REPLY_INTERRUPTED) status = 130;
        }
        reply_stats_free(&st);
        text_stream_free(&out);
    }
    generator_close(&g);
    tl_tokenizer_free(tok);
    free(ids);
    free(o.ids);
    free(rendered);
    return status;
}
