/* stream.h: token ids to text as they come, for streamed output.
 *
 * A token's text can depend on its neighbours (a SentencePiece decoder drops
 * the first word's leading space; a UTF-8 character may span tokens), so a
 * token is never decoded alone. As Hugging Face's text-generation-inference
 * does, the stream decodes a short window twice, without and with the new
 * ids, and writes the difference; a window whose text ends in U+FFFD (an
 * unfinished character) waits for the next id. Each id is decoded a bounded
 * number of times, so a long reply costs linear time.
 */
#ifndef TINYLLM_TOOL_STREAM_H
#define TINYLLM_TOOL_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tinyllm/tokenizer.h"

typedef struct {
    const tl_tokenizer *tokenizer;   /* NULL: ids are written as numbers */
    int flags;                       /* TL_DECODE_* */
    FILE *out;
    int32_t *ids;
    size_t n, cap;
    size_t prefix, read;             /* the window: ids[prefix, read) already written */
} text_stream;

/* The flags replies are decoded with: special tokens dropped, and
 * transformers' clean-up when tokenizer_config.json asks for it. */
int stream_decode_flags(const tl_tokenizer *t);

/* out NULL: the ids are kept, nothing is written. */
void text_stream_init(text_stream *s, const tl_tokenizer *t, int flags, FILE *out);
/* Adds one id and writes what text it completes. -1 when memory runs out. */
int text_stream_push(text_stream *s, int64_t id);
/* Writes what is left (an unfinished character as U+FFFD). */
void text_stream_finish(text_stream *s);
void text_stream_free(text_stream *s);

#endif
