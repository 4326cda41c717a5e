/* bench_tokenizer: encode speed of the runtime's tokenizer beside the
 * JavaScript implementation (@huggingface/tokenizers), measured in the same
 * run on the same text (`make bench-tokenizer`), and the cost of one long
 * word and of long whitespace runs at 10 kB, 100 kB and 1 MB, which must grow
 * linearly (a BPE merge loop or a regex that is quadratic shows here).
 *
 *   bench_tokenizer TOKENIZER_DIR... (the first names the headline ratio)
 *
 * The mixed text (about 1 MB) interleaves slices of the agreement corpus
 * (tests/tokenizer/corpus: English, code, numbers, CJK, Arabic, emoji, marks,
 * whitespace) with made-up words, from a fixed seed, so that the word caches
 * of both implementations see a realistic share of new words. It is cut into
 * documents of about 2 kB (a form feed, which the corpus never holds, ends
 * each), as a prompt or a training document is encoded: tokenizers.js slows
 * down badly on one multi-megabyte string, which would flatter the ratio.
 * It is written to build/bench/tokenizer_text.txt; both sides encode every
 * document of that file, warm (one pass first), median of REPS passes. Node
 * runs with ORACLE_NPM naming
 * the oracle's npm folder (mk/tokenizer.mk sets it).
 * The last lines are `name: value`, one per figure, for scripts.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tinyllm/pcg32.h"
#include "tinyllm/tensor.h"
#include "tinyllm/tokenizer.h"

enum { REPS = 3, TEXT_BYTES = 1 << 20, DOCUMENT_BYTES = 2048 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int by_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    char *data;
    size_t len, cap;
} buf;

static void put(buf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->data = realloc(b->data, b->cap);
        if (!b->data) exit(1);
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc(*len + 1);
    if (s && fread(s, 1, *len, f) != *len) *len = 0;
    fclose(f);
    if (s) s[*len] = '\0';
    return s;
}

/* The corpus files, then slices of them and made-up words to TEXT_BYTES. */
static buf mixed_text(void) {
    buf corpus = {0}, text = {0};
    const char *dir = TL_SOURCE_ROOT "/tests/tokenizer/corpus";
    DIR *d = opendir(dir);
    struct dirent *e;
    char *names[64];
    int n = 0;
    while (d && (e = readdir(d)) && n < 64)
        if (strstr(e->d_name, ".txt")) names[n++] = strdup(e->d_name);
    if (d) closedir(d);
    for (int i = 0; i < n; i++)   /* a fixed order */
        for (int j = i + 1; j < n; j++)
            if (strcmp(names[i], names[j]) > 0) {
                char *t = names[i];
                names[i] = names[j];
                names[j] = t;
            }
    for (int i = 0; i < n; i++) {
        char path[512];
        size_t len;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        char *s = slurp(path, &len);
        if (s) put(&corpus, s, len);
        free(s);
        free(names[i]);
    }
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 2024, 19);
    static const char *syllables[] = {"ka", "to", "ri", "mun", "sel", "dra", "qu", "ex",
                                      "ion", "ph", "th", "ing", "ou", "zy", "lo", "ve"};
    size_t document_start = 0;
    while (text.len < TEXT_BYTES) {
        if (text.len - document_start >= DOCUMENT_BYTES) {
            put(&text, "\f", 1);
            document_start = text.len;
        }
        if (tl_pcg32_bounded(&rng, 3) == 0) {
            /* a made-up word: 1-5 syllables, sometimes capitalised or with digits */
            char word[64];
            size_t w = 0;
            word[w++] = ' ';
            int k = 1 + (int)tl_pcg32_bounded(&rng, 5);
            for (int i = 0; i < k; i++) {
                const char *s = syllables[tl_pcg32_bounded(&rng, 16)];
                size_t sl = strlen(s);
                memcpy(word + w, s, sl);
                w += sl;
            }
            if (tl_pcg32_bounded(&rng, 4) == 0) word[1] = (char)(word[1] - 32);
            if (tl_pcg32_bounded(&rng, 6) == 0)
                w += (size_t)snprintf(word + w, 8, "%u", tl_pcg32_bounded(&rng, 1000));
            put(&text, word, w);
        } else {
            /* a slice of the corpus, cut at character boundaries */
            size_t a = tl_pcg32_bounded(&rng, (uint32_t)corpus.len);
            size_t b = a + 1 + tl_pcg32_bounded(&rng, 200);
            if (b > corpus.len) b = corpus.len;
            while (a > 0 && ((unsigned char)corpus.data[a] & 0xC0) == 0x80) a--;
            while (b < corpus.len && ((unsigned char)corpus.data[b] & 0xC0) == 0x80) b++;
            put(&text, corpus.data + a, b - a);
        }
    }
    free(corpus.data);
    return text;
}

/* Encodes every document of text; returns the id count. */
static int64_t encode_documents(tl_tokenizer *t, const char *text, size_t len) {
    int64_t total = 0;
    for (size_t a = 0; a < len;) {
        const char *ff = memchr(text + a, '\f', len - a);
        size_t b = ff ? (size_t)(ff - text) : len;
        int32_t *ids;
        int64_t n = tl_tokenizer_encode(t, text + a, b - a, false, &ids);
        if (n < 0) {
            fprintf(stderr, "bench_tokenizer: %s\n", tl_error());
            exit(1);
        }
        free(ids);
        total += n;
        a = b + 1;
    }
    return total;
}

/* Median, min and max seconds of REPS warm passes over the documents. */
static void time_encode(tl_tokenizer *t, const char *text, size_t len, double out[3],
                        int64_t *count) {
    double times[REPS];
    *count = encode_documents(t, text, len);   /* warm up */
    for (int r = 0; r < REPS; r++) {
        double t0 = now();
        *count = encode_documents(t, text, len);
        times[r] = now() - t0;
    }
    qsort(times, REPS, sizeof times[0], by_double);
    out[0] = times[REPS / 2];
    out[1] = times[0];
    out[2] = times[REPS - 1];
}

static bool js_encode(const char *dir, const char *file, double out[3], long *ids) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "node %s/bench/bench_tokenizer.mjs '%s' '%s' %d", TL_SOURCE_ROOT,
             dir, file, REPS);
    FILE *p = popen(cmd, "r");
    if (!p) return false;
    char line[256];
    bool ok = false;
    while (fgets(line, sizeof line, p)) {
        if (sscanf(line, "js_encode_seconds: %lf %lf %lf", &out[0], &out[1], &out[2]) == 3)
            ok = true;
        sscanf(line, "js_ids: %ld", ids);
    }
    return pclose(p) == 0 && ok;
}

static const char *base(const char *dir) {
    /* ".../tokenizer-llama3/models" -> "tokenizer-llama3" */
    static char name[128];
    const char *end = dir + strlen(dir);
    while (end > dir && end[-1] == '/') end--;
    if (end - dir > 7 && !strncmp(end - 7, "/models", 7)) end -= 7;
    const char *start = end;
    while (start > dir && start[-1] != '/') start--;
    snprintf(name, sizeof name, "%.*s", (int)(end - start), start);
    return name;
}

static void linear_case(tl_tokenizer *t, const char *what, char fill, const char *tail,
                        const char *key) {
    static const size_t sizes[] = {10000, 100000, 1000000};
    double secs[3];
    printf("  %s:\n", what);
    for (int s = 0; s < 3; s++) {
        size_t n = sizes[s], tl = strlen(tail);
        char *text = malloc(n + tl + 1);
        for (size_t i = 0; i < n; i++) text[i] = fill ? fill : (char)('a' + (i * 7 + i / 13) % 26);
        memcpy(text + n, tail, tl + 1);
        double best = 1e30;
        for (int r = 0; r < 3; r++) {
            int32_t *ids;
            double t0 = now();
            int64_t c = tl_tokenizer_encode(t, text, n + tl, false, &ids);
            double dt = now() - t0;
            if (c < 0) {
                fprintf(stderr, "bench_tokenizer: %s\n", tl_error());
                exit(1);
            }
            free(ids);
            if (dt < best) best = dt;
        }
        secs[s] = best;
        printf("    %7zu bytes: %9.3f ms  (%.3f us per kB)\n", n, 1e3 * best,
               1e6 * best / ((double)n / 1000.0));
        free(text);
    }
    /* linear: per-byte cost at 1 MB over that at 10 kB stays near 1 */
    printf("    growth of the per-byte cost from 10 kB to 1 MB: %.2fx (1.0 is linear; a "
           "quadratic loop gives ~100x)\n", (secs[2] / 1e6) / (secs[0] / 1e4));
    printf("%s_growth_10k_to_1m: %.2f\n", key, (secs[2] / 1e6) / (secs[0] / 1e4));
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_tokenizer TOKENIZER_DIR...\n");
        return 2;
    }
    buf text = mixed_text();
    const char *file = TL_SOURCE_ROOT "/build/bench/tokenizer_text.txt";
    FILE *f = fopen(file, "wb");
    if (!f || fwrite(text.data, 1, text.len, f) != text.len) {
        fprintf(stderr, "bench_tokenizer: cannot write %s\n", file);
        return 1;
    }
    fclose(f);
    printf("bench_tokenizer: encode of a %.2f MB mixed text in ~%d-byte documents (%s), warm, "
           "median of %d\n", text.len / 1e6, DOCUMENT_BYTES, file, REPS);
    double headline = 0;
    char results[8][128];
    int n_results = 0;
    for (int i = 1; i < argc; i++) {
        tl_clear_error();
        tl_tokenizer *t = tl_tokenizer_load(argv[i]);
        if (!t) {
            fprintf(stderr, "bench_tokenizer: %s\n", tl_error());
            return 1;
        }
        double c[3], js[3];
        int64_t ids;
        long js_ids = -1;
        time_encode(t, text.data, text.len, c, &ids);
        bool have_js = js_encode(argv[i], file, js, &js_ids);
        double mbs = text.len / 1e6 / c[0];
        printf(" %s: %lld ids\n", base(argv[i]), (long long)ids);
        printf("  tinyllm (C)      %8.2f MB/s  (%.3f s; min %.3f, max %.3f)\n", mbs, c[0], c[1],
               c[2]);
        if (have_js) {
            double js_mbs = text.len / 1e6 / js[0], ratio = js[0] / c[0];
            printf("  tokenizers.js    %8.2f MB/s  (%.3f s; min %.3f, max %.3f)%s\n", js_mbs,
                   js[0], js[1], js[2], js_ids == ids ? "" : "  (ids differ!)");
            printf("  ratio C / JS     %8.2f\n", ratio);
            if (i == 1) headline = ratio;
            if (n_results < 8)
                snprintf(results[n_results++], sizeof results[0], "tokenizer_encode_mbs_%s: %.2f",
                         base(argv[i]), mbs);
        } else {
            printf("  tokenizers.js: could not run node (is the oracle installed? make "
                   "tokenizer-oracle)\n");
        }
        if (i == 1) {
            printf(" linear time (%s):\n", base(argv[i]));
            linear_case(t, "one long word (letters, no space)", 0, "", "long_word");
            linear_case(t, "a long run of spaces, then a word", ' ', "x", "long_spaces");
            linear_case(t, "a long run of newlines, then a word", '\n', "x", "long_newlines");
        }
        tl_tokenizer_free(t);
    }
    for (int i = 0; i < n_results; i++) puts(results[i]);
    if (headline > 0) printf("tokenizer_encode_vs_js: %.2f\n", headline);
    free(text.data);
    tl_shutdown();
    return 0;
}
