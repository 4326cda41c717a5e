/* detokenize.c: `tinyllm detokenize PATH --ids 1,2,3 [--skip-special]` prints
 * the text of a list of ids, as Hugging Face's tokenizer.decode(ids) gives it
 * (with skip_special_tokens when --skip-special, and the spaces before
 * punctuation cleaned up when tokenizer_config.json sets
 * clean_up_tokenization_spaces). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinyllm/tensor.h"
#include "tinyllm/tokenizer.h"
#include "output.h"
#include "verbs.h"

static const char usage[] =
    "usage: tinyllm detokenize PATH --ids 1,2,3 [--skip-special]\n"
    "  PATH            a tokenizer.json, or a model folder holding one\n"
    "  --ids LIST      the ids, separated by commas (a JSON array such as [1, 2] works too)\n"
    "  --skip-special  drop special tokens (BOS, EOS, <|im_start|>, ...)\n"
    "prints the decoded text followed by a newline; \" ,\" becomes \",\" (and so on) when\n"
    "tokenizer_config.json sets clean_up_tokenization_spaces, as tokenizer.decode does\n";

/* Parses "1,2,3" or "[1, 2, 3]"; returns the count or -1 with *bad at the fault. */
static long parse_ids(const char *s, int32_t **out, const char **bad) {
    size_t cap = 16, n = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids) return -1;
    const char *p = s;
    while (*p == ' ' || *p == '[') p++;
    while (*p && *p != ']') {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > INT32_MAX) {
            *bad = p;
            free(ids);
            return -1;
        }
        if (n == cap) {
            int32_t *bigger = realloc(ids, 2 * cap * sizeof *ids);
            if (!bigger) {
                free(ids);
                return -1;
            }
            ids = bigger;
            cap *= 2;
        }
        ids[n++] = (int32_t)v;
        p = end;
        while (*p == ' ') p++;
        if (*p == ',') p++;
        else if (*p && *p != ']') {
            *bad = p;
            free(ids);
            return -1;
        }
        while (*p == ' ') p++;
    }
    *out = ids;
    return (long)n;
}

int tinyllm_detokenize(int argc, char **argv) {
    const char *path = NULL, *list = NULL;
    int flags = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--ids") && i + 1 < argc) {
            list = argv[++i];
        } else if (!strcmp(argv[i], "--skip-special")) {
            flags |= TL_DECODE_SKIP_SPECIAL;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "tinyllm detokenize: unknown option or missing value: %s\n\n%s",
                    argv[i], usage);
            return 2;
        } else if (!path) {
            path = argv[i];
        } else {
            fprintf(stderr, "tinyllm detokenize: one PATH only (got '%s' too)\n\n%s", argv[i],
                    usage);
            return 2;
        }
    }
    if (!path || !list) {
        fprintf(stderr, "tinyllm detokenize: give PATH and --ids\n\n%s", usage);
        return 2;
    }
    int32_t *ids = NULL;
    const char *bad = NULL;
    long n = parse_ids(list, &ids, &bad);
    if (n < 0) {
        fprintf(stderr, "tinyllm detokenize: --ids: '%.20s' is not an id (ids are integers "
                "from 0, separated by commas)\n", bad ? bad : list);
        return 2;
    }
    tl_clear_error();
    tl_tokenizer *t = tl_tokenizer_load(path);
    if (t && tl_tokenizer_clean_up_spaces(t)) flags |= TL_DECODE_CLEAN_UP_SPACES;   /* decode() */
    size_t len = 0;
    char *text = t ? tl_tokenizer_decode(t, ids, (size_t)n, flags, &len) : NULL;
    if (!text) {
        print_failure("detokenize", "failed");
        free(ids);
        tl_tokenizer_free(t);
        return 1;
    }
    int32_t size = tl_tokenizer_vocab_size(t);
    for (long i = 0; i < n; i++)
        if (ids[i] >= size)
            fprintf(stderr, "tinyllm detokenize: note: id %d is outside the vocabulary "
                    "(%d ids) and was skipped\n", ids[i], size);
    fwrite(text, 1, len, stdout);
    putchar('\n');
    free(text);
    free(ids);
    tl_tokenizer_free(t);
    return 0;
}
