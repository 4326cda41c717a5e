/* tokenize.c: `tinyllm tokenize PATH (--text TEXT | --file F) [--no-special]`
 * prints the ids of a text as a JSON array on one line, as Hugging Face's
 * tokenizer(text)["input_ids"] gives them (the post-processor's special
 * tokens included unless --no-special). PATH is a tokenizer.json or a folder
 * holding one. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinyllm/tensor.h"
#include "tinyllm/tokenizer.h"
#include "output.h"
#include "verbs.h"

static const char usage[] =
    "usage: tinyllm tokenize PATH (--text TEXT | --file F) [--no-special]\n"
    "  PATH          a tokenizer.json, or a model folder holding one\n"
    "  --text TEXT   the text to encode (UTF-8)\n"
    "  --file F      encode the whole of file F instead ('-' reads standard input)\n"
    "  --no-special  do not add the post-processor's special tokens (BOS, ...);\n"
    "                use it for a rendered chat template, which holds its own\n"
    "prints the ids as a JSON array on one line, e.g. [1, 15043, 3186]\n";

static char *read_all(FILE *f, size_t *len) {
    size_t cap = 65536, n = 0, got;
    char *data = malloc(cap);
    if (!data) return NULL;
    while ((got = fread(data + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *bigger = realloc(data, cap * 2);
            if (!bigger) {
                free(data);
                return NULL;
            }
            data = bigger;
            cap *= 2;
        }
    }
    if (ferror(f)) {
        free(data);
        return NULL;
    }
    *len = n;
    return data;
}

int tinyllm_tokenize(int argc, char **argv) {
    const char *path = NULL, *text = NULL, *file = NULL;
    bool special = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--text") && i + 1 < argc) {
            text = argv[++i];
        } else if (!strcmp(argv[i], "--file") && i + 1 < argc) {
            file = argv[++i];
        } else if (!strcmp(argv[i], "--no-special")) {
            special = false;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "tinyllm tokenize: unknown option or missing value: %s\n\n%s",
                    argv[i], usage);
            return 2;
        } else if (!path) {
            path = argv[i];
        } else {
            fprintf(stderr, "tinyllm tokenize: one PATH only (got '%s' too)\n\n%s", argv[i],
                    usage);
            return 2;
        }
    }
    if (!path || (!text) == (!file)) {
        fprintf(stderr, "tinyllm tokenize: give PATH and one of --text or --file\n\n%s", usage);
        return 2;
    }
    char *owned = NULL;
    size_t len = text ? strlen(text) : 0;
    if (file) {
        FILE *f = strcmp(file, "-") ? fopen(file, "rb") : stdin;
        if (!f) {
            fprintf(stderr, "tinyllm tokenize: cannot open %s\n", file);
            return 1;
        }
        owned = read_all(f, &len);
        if (f != stdin) fclose(f);
        if (!owned) {
            fprintf(stderr, "tinyllm tokenize: cannot read %s\n", file);
            return 1;
        }
        text = owned;
    }
    tl_clear_error();
    tl_tokenizer *t = tl_tokenizer_load(path);
    int32_t *ids = NULL;
    int64_t n = t ? tl_tokenizer_encode(t, text, len, special, &ids) : -1;
    if (n < 0) {
        print_failure("tokenize", "failed");
        free(owned);
        tl_tokenizer_free(t);
        return 1;
    }
    putchar('[');
    for (int64_t i = 0; i < n; i++) printf("%s%" PRId32, i ? ", " : "", ids[i]);
    puts("]");
    free(ids);
    free(owned);
    tl_tokenizer_free(t);
    return 0;
}
