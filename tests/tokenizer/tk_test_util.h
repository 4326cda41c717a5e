/* tk_test_util.h: hand-made tokenizer.json texts and assertions for the
 * tokenizer tests. Included by test files only (each file is its own
 * translation unit, so these statics stay private to it). */
#ifndef TESTS_TOKENIZER_TK_TEST_UTIL_H
#define TESTS_TOKENIZER_TK_TEST_UTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinyllm/tensor.h"
#include "tinyllm/tokenizer.h"

/* JSON written with ' for " (the texts here hold no apostrophes), in one of
 * 64 rotating buffers (a test uses far fewer at once). */
static const char *J(const char *single_quoted) {
    static char *ring[64];
    static int next;
    char **slot = &ring[next++ % 64];
    free(*slot);
    char *s = *slot = strdup(single_quoted);
    for (char *p = s; *p; p++)
        if (*p == '\'') *p = '"';
    return s;
}

static tl_tokenizer *make(const char *json) {
    tl_clear_error();
    tl_tokenizer *t = tl_tokenizer_from_strings(json, NULL, "test.json");
    ck_assert_msg(t != NULL, "the tokenizer did not load: %s", tl_error());
    return t;
}

static tl_tokenizer *make_with_config(const char *json, const char *config) {
    tl_clear_error();
    tl_tokenizer *t = tl_tokenizer_from_strings(json, config, "test.json");
    ck_assert_msg(t != NULL, "the tokenizer did not load: %s", tl_error());
    return t;
}

/* The ids of text as "1 2 3" (a string compares with one assertion). */
static const char *ids_of(tl_tokenizer *t, const char *text, size_t len, bool special) {
    static char buf[8192];
    int32_t *ids = NULL;
    tl_clear_error();
    int64_t n = tl_tokenizer_encode(t, text, len, special, &ids);
    ck_assert_msg(n >= 0, "encode failed: %s", tl_error());
    size_t o = 0;
    buf[0] = '\0';
    for (int64_t i = 0; i < n && o < sizeof buf - 16; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%d", i ? " " : "", ids[i]);
    free(ids);
    return buf;
}

#define ASSERT_IDS(t, text, special, want) \
    ck_assert_str_eq(ids_of((t), (text), strlen(text), (special)), (want))

/* The decoded text of ids (a static buffer; NUL bytes kept, *len set). */
static const char *text_of(tl_tokenizer *t, const int32_t *ids, size_t n, int flags,
                           size_t *len) {
    static char buf[8192];
    tl_clear_error();
    size_t got;
    char *s = tl_tokenizer_decode(t, ids, n, flags, &got);
    ck_assert_msg(s != NULL, "decode failed: %s", tl_error());
    ck_assert_uint_lt(got, sizeof buf);
    memcpy(buf, s, got + 1);
    free(s);
    if (len) *len = got;
    return buf;
}

/* json must be refused with a message holding every needle (NULL-ended). */
static void assert_refused_v(const char *json, const char *const *needles) {
    tl_clear_error();
    tl_tokenizer *t = tl_tokenizer_from_strings(json, NULL, "hostile/tokenizer.json");
    ck_assert_msg(t == NULL, "the tokenizer loaded but should have been refused: %s", json);
    const char *e = tl_error();
    ck_assert_msg(e != NULL, "refused without a message");
    for (size_t i = 0; needles[i]; i++)
        ck_assert_msg(strstr(e, needles[i]), "the message '%s' should mention '%s'", e,
                      needles[i]);
    tl_clear_error();
}

#define ASSERT_REFUSED(json, ...) \
    assert_refused_v((json), (const char *const[]){__VA_ARGS__, NULL})

/* A character-level BPE on the letters a-e (ids 0-4) and the space (5),
 * with merges "a b" (rank 0) -> ab (6), "b c" (1) -> bc (7), "ab c" (2) -> abc (8);
 * MODEL_EXTRA and TOP_EXTRA splice more keys in. */
#define LETTERS_MODEL(MODEL_EXTRA, TOP_EXTRA)                                                \
    "{'model': {'type': 'BPE', 'vocab': {'a': 0, 'b': 1, 'c': 2, 'd': 3, 'e': 4, ' ': 5, "  \
    "'ab': 6, 'bc': 7, 'abc': 8}, 'merges': ['a b', 'b c', 'ab c']" MODEL_EXTRA "}"         \
    TOP_EXTRA "}"

#endif
