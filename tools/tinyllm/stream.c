/* stream.c: incremental detokenization (stream.h). */
#include <stdlib.h>
#include <string.h>

#include "stream.h"

void text_stream_init(text_stream *s, const tl_tokenizer *t, int flags, FILE *out) {
    memset(s, 0, sizeof *s);
    s->tokenizer = t;
    s->flags = flags;
    s->out = out;
}

int stream_decode_flags(const tl_tokenizer *t) {
    int clean = tl_tokenizer_clean_up_spaces(t) ? TL_DECODE_CLEAN_UP_SPACES : 0;
    return TL_DECODE_SKIP_SPECIAL | clean;
}

static bool ends_unfinished(const char *text, size_t len) {
    /* U+FFFD is EF BF BD in UTF-8. */
    return len >= 3 && (unsigned char)text[len - 3] == 0xEF &&
           (unsigned char)text[len - 2] == 0xBF && (unsigned char)text[len - 1] == 0xBD;
}

int text_stream_push(text_stream *s, int64_t id) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        int32_t *ids = realloc(s->ids, cap * sizeof *ids);
        if (!ids) return -1;
        s->ids = ids;
        s->cap = cap;
    }
    s->ids[s->n++] = (int32_t)id;
    if (!s->out) return 0;
    if (!s->tokenizer) {
        fprintf(s->out, "%s%lld", s->n > 1 ? " " : "", (long long)id);
        fflush(s->out);
        return 0;
    }
    size_t before_len = 0, after_len = 0;
    char *before = tl_tokenizer_decode(s->tokenizer, s->ids + s->prefix, s->read - s->prefix,
                                       s->flags, &before_len);
    char *after = tl_tokenizer_decode(s->tokenizer, s->ids + s->prefix, s->n - s->prefix,
                                      s->flags, &after_len);
    int rc = before && after ? 0 : -1;
    if (rc == 0 && after_len > before_len && !ends_unfinished(after, after_len)) {
        fwrite(after + before_len, 1, after_len - before_len, s->out);
        fflush(s->out);
        s->prefix = s->read;
        s->read = s->n;
    }
    free(before);
    free(after);
    return rc;
}

void text_stream_finish(text_stream *s) {
    if (!s->out) return;
    if (s->tokenizer && s->read < s->n) {
        size_t before_len = 0, after_len = 0;
        char *before = tl_tokenizer_decode(s->tokenizer, s->ids + s->prefix, s->read - s->prefix,
                                           s->flags, &before_len);
        char *after = tl_tokenizer_decode(s->tokenizer, s->ids + s->prefix, s->n - s->prefix,
                                          s->flags, &after_len);
        if (before && after && after_len > before_len)
            fwrite(after + before_len, 1, after_len - before_len, s->out);
        free(before);
        free(after);
        s->prefix = s->read = s->n;
    }
    fflush(s->out);
}

void text_stream_free(text_stream *s) {
    free(s->ids);
    memset(s, 0, sizeof *s);
}
