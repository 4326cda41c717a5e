/* options.c: the command line of generate and chat (options.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinyllm/tensor.h"
#include "options.h"

/* The most -n may ask for: 16M tokens, past any model's context. */
#define MAX_NEW_TOKENS (1 << 24)

static int usage_error(const char *verb, const char *usage, const char *what, const char *arg) {
    fprintf(stderr, "tinyllm %s: %s%s%s\n\n%s", verb, what, arg ? " " : "", arg ? arg : "",
            usage);
    return 2;
}

/* A whole number in [lo, hi], or -1. */
static int64_t whole(const char *text, int64_t lo, int64_t hi) {
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || v < lo || v > hi) return -1;
    return v;
}

static int parse_dtype(const char *verb, const char *usage, const char *text, int *dtype) {
    if (strcmp(text, "f32") == 0 || strcmp(text, "float32") == 0) {
        *dtype = TL_F32;
        return 0;
    }
    if (strcmp(text, "bf16") == 0 || strcmp(text, "bfloat16") == 0) {
        *dtype = TL_BF16;
        return 0;
    }
    fprintf(stderr, "tinyllm %s: --dtype %s: tinyllm computes with weights held in f32 or "
            "bf16 only%s\n\n%s", verb, text,
            strcmp(text, "f16") == 0 || strcmp(text, "float16") == 0
                ? " (an f16 checkpoint loads as f32, widened exactly; --dtype bf16 rounds it)"
                : "", usage);
    return 2;
}

int gen_options_parse(gen_options *o, int argc, char **argv, bool chat, const char *usage) {
    memset(o, 0, sizeof *o);
    o->max_new = chat ? 512 : 64;
    o->dtype = -1;
    const char *verb = chat ? "chat" : "generate";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = !strcmp(a, "-n") || !strcmp(a, "--threads") || !strcmp(a, "--dtype") ||
                     !strcmp(a, "--json") || (!chat && !strcmp(a, "--prompt")) ||
                     (!chat && !strcmp(a, "--ids")) || (chat && !strcmp(a, "--system"));
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (takes && !value) {
            return usage_error(verb, usage, "a value is missing after", a);
        } else if (!strcmp(a, "-n")) {
            if ((o->max_new = whole(value, 1, MAX_NEW_TOKENS)) < 0) {
                char what[80];
                snprintf(what, sizeof what, "-n takes a whole number of tokens from 1 to %d, "
                         "not", MAX_NEW_TOKENS);
                return usage_error(verb, usage, what, value);
            }
            i++;
        } else if (!strcmp(a, "--threads")) {
            if ((o->threads = (int)whole(value, 1, 1024)) < 0)
                return usage_error(verb, usage, "--threads takes a whole number from 1 to "
                                   "1024, not", value);
            i++;
        } else if (!strcmp(a, "--dtype")) {
            if (parse_dtype(verb, usage, value, &o->dtype) != 0) return 2;
            i++;
        } else if (takes) {
            const char **slot = !strcmp(a, "--json") ? &o->json : !strcmp(a, "--prompt")
                                ? &o->prompt : !strcmp(a, "--ids") ? &o->ids_text : &o->system;
            *slot = value;
            i++;
        } else if (!chat && !strcmp(a, "--chat")) {
            o->chat = true;
        } else if (!strcmp(a, "--ignore-eos")) {
            o->ignore_eos = true;
        } else if (!strcmp(a, "--no-cache")) {
            o->no_cache = true;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = true;
        } else if (a[0] == '-' && a[1] != '\0') {
            return usage_error(verb, usage, "unknown option", a);
        } else if (o->dir) {
            return usage_error(verb, usage, "one DIR only; this is a second:", a);
        } else {
            o->dir = a;
        }
    }
    if (!o->dir) return usage_error(verb, usage, "DIR (the checkpoint folder) is required", NULL);
    if (!chat && !o->prompt == !o->ids_text)
        return usage_error(verb, usage, "give the prompt once: --prompt TEXT or --ids LIST",
                           NULL);
    if (o->chat && !o->prompt)
        return usage_error(verb, usage, "--chat renders a --prompt TEXT (not --ids)", NULL);
    /* Parsed here, so a malformed list is a usage error like any other bad value. */
    if (o->ids_text && (o->n_ids = parse_id_list(o->ids_text, &o->ids)) < 0) {
        free(o->ids);
        o->ids = NULL;
        return usage_error(verb, usage, tl_error(), NULL);
    }
    return -1;
}

int64_t parse_id_list(const char *text, int64_t **ids) {
    size_t cap = 1;
    for (const char *p = text; *p; p++) cap += *p == ',';
    *ids = malloc(cap * sizeof **ids);
    if (!*ids) return tl_fail_status("out of memory");
    int64_t n = 0;
    const char *p = text;
    while (true) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno != 0 || v < 0 || (*end != ',' && *end != '\0'))
            return tl_fail_status("--ids '%s': item %lld is not a token id (whole numbers >= 0, "
                                  "comma-separated: --ids 1,2,3)", text, (long long)n + 1);
        (*ids)[n++] = v;
        if (*end == '\0') return n;
        p = end + 1;
    }
}

void apply_threads(int threads) {
    if (threads <= 0) return;
    char text[16];
    snprintf(text, sizeof text, "%d", threads);
    setenv("TINYLLM_THREADS", text, 1);
}
