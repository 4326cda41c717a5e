/* Decoding (Tokenizer::decode and the decoders): ByteLevel back to bytes with
 * U+FFFD per maximal invalid subsequence (Rust's from_utf8_lossy);
 * ByteFallback with one U+FFFD per byte of an invalid run; Replace, Fuse,
 * Strip, Metaspace (the first token's ▁ dropped), BPEDecoder; specials kept or
 * skipped; unknown ids skipped; no decoder joins with spaces; transformers'
 * clean-up only when asked. */
#include "tk_test_util.h"

#define ROOT TL_SOURCE_ROOT "/fixtures/tokenizer/"

static int32_t id(tl_tokenizer *t, const char *token) {
    int32_t i = tl_tokenizer_token_to_id(t, token);
    ck_assert_msg(i >= 0, "no token '%s'", token);
    return i;
}

START_TEST(bytelevel_decode_repairs_invalid_utf8_per_maximal_subpart)
{
    tl_tokenizer *t = tl_tokenizer_load(ROOT "tiny-bytelevel");
    ck_assert_msg(t != NULL, "%s", tl_error());
    /* byte tokens: U+00C3 is byte 0xC3, U+00E2 0xE2, U+0124 0x82 (GPT-2's table) */
    int32_t ids[] = {id(t, "a"), id(t, "\xC3\x83"), id(t, "b"), id(t, "\xC3\xA2"),
                     id(t, "\xC4\xA4"), id(t, "c")};
    /* a, C3 (truncated), b, E2 82 (truncated 3-byte), c */
    ck_assert_str_eq(text_of(t, ids, 6, 0, NULL), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c");
    int32_t nul[] = {id(t, "\xC4\x80")};   /* U+0100 stands for byte 0 */
    size_t len;
    text_of(t, nul, 1, 0, &len);
    ck_assert_uint_eq(len, 1);
    tl_tokenizer_free(t);
}
END_TEST

START_TEST(bytefallback_gives_one_replacement_per_byte)
{
    tl_tokenizer *t = tl_tokenizer_load(ROOT "tiny-sentencepiece");
    ck_assert_msg(t != NULL, "%s", tl_error());
    int32_t euro[] = {id(t, "<0xE2>"), id(t, "<0x82>"), id(t, "<0xAC>")};
    ck_assert_str_eq(text_of(t, euro, 3, 0, NULL), "\xE2\x82\xAC");   /* a valid run: € */
    int32_t cut[] = {id(t, "<0xE2>"), id(t, "<0x82>"), id(t, "a")};
    /* from_utf8_lossy would give one U+FFFD; ByteFallback gives two */
    ck_assert_str_eq(text_of(t, cut, 3, 0, NULL), "\xEF\xBF\xBD\xEF\xBF\xBD" "a");
    tl_tokenizer_free(t);
}
END_TEST

START_TEST(sentencepiece_decoders_strip_the_first_space_and_keep_specials_unless_skipped)
{
    tl_tokenizer *t = tl_tokenizer_load(ROOT "tiny-sentencepiece");
    ck_assert_msg(t != NULL, "%s", tl_error());
    int32_t *ids;
    int64_t n = tl_tokenizer_encode(t, "The cat", 7, true, &ids);
    ck_assert_int_gt(n, 2);
    ck_assert_int_eq(ids[0], id(t, "<s>"));
    ck_assert_str_eq(text_of(t, ids, (size_t)n, 0, NULL), "<s> The cat");
    ck_assert_str_eq(text_of(t, ids, (size_t)n, TL_DECODE_SKIP_SPECIAL, NULL), "The cat");
    ck_assert(tl_tokenizer_is_special(t, ids[0]));
    ck_assert(!tl_tokenizer_is_special(t, ids[1]));
    free(ids);
    tl_tokenizer_free(t);
}
END_TEST

START_TEST(metaspace_decoder_drops_the_first_tokens_replacement)
{
    tl_tokenizer *t = make(J("{'decoder': {'type': 'Metaspace', 'replacement': '\xE2\x96\x81', "
                             "'prepend_scheme': 'always'}, 'model': {'type': 'BPE', 'vocab': "
                             "{'\xE2\x96\x81" "a': 0, '\xE2\x96\x81" "b': 1, 'c': 2}, "
                             "'merges': []}}"));
    int32_t ids[] = {0, 1, 2};
    ck_assert_str_eq(text_of(t, ids, 3, 0, NULL), "a bc");
    tl_tokenizer_free(t);
}
END_TEST

START_TEST(unknown_ids_are_skipped_and_no_decoder_joins_with_spaces)
{
    tl_tokenizer *t = make(J("{'model': {'type': 'BPE', 'vocab': {'a': 0, 'b': 1}, "
                             "'merges': []}}"));
    int32_t ids[] = {0, 7, -1, 1, 1000000};
    ck_assert_str_eq(text_of(t, ids, 5, 0, NULL), "a b");
    ck_assert_str_eq(text_of(t, ids, 0, 0, NULL), "");
    ck_assert_ptr_null(tl_tokenizer_id_to_token(t, 7));
    ck_assert_int_eq(tl_tokenizer_vocab_size(t), 2);
    tl_tokenizer_free(t);
}
END_TEST

START_TEST(strip_replace_fuse_and_bpe_decoders)
{
    tl_tokenizer *t = make(J("{'decoder': {'type': 'Sequence', 'decoders': ["
                             "{'type': 'Replace', 'pattern': {'Regex': '_+'}, 'content': '-'}, "
                             "{'type': 'Strip', 'content': 'x', 'start': 2, 'stop': 1}, "
                             "{'type': 'Fuse'}]}, 'model': {'type': 'BPE', 'vocab': "
                             "{'xxxa__bx': 0, 'xc': 1}, 'merges': []}}"));
    int32_t ids[] = {0, 1};
    /* two x's off each token's front, one off its end */
    ck_assert_str_eq(text_of(t, ids, 2, 0, NULL), "xa-bc");
    tl_tokenizer *bpe = make(J("{'decoder': {'type': 'BPEDecoder', 'suffix': '</w>'}, "
                               "'model': {'type': 'BPE', 'vocab': {'ab</w>': 0, 'c': 1, "
                               "'d</w>': 2}, 'merges': []}}"));
    int32_t words[] = {0, 1, 2};
    ck_assert_str_eq(text_of(bpe, words, 3, 0, NULL), "ab cd");
    tl_tokenizer_free(t);
    tl_tokenizer_free(bpe);
}
END_TEST

START_TEST(clean_up_spaces_only_when_asked)
{
    tl_tokenizer *t = make(J("{'model': {'type': 'BPE', 'vocab': {'I': 0, 'do': 1, ',': 2, "
                             "'.': 3}, 'merges': []}}"));
    int32_t ids[] = {0, 1, 2, 0, 3};
    ck_assert_str_eq(text_of(t, ids, 5, 0, NULL), "I do , I .");
    ck_assert_str_eq(text_of(t, ids, 5, TL_DECODE_CLEAN_UP_SPACES, NULL), "I do, I.");
    tl_tokenizer_free(t);
}
END_TEST

START_TEST(encode_then_decode_gives_the_text_back_on_the_fixtures)
{
    const char *texts[] = {"Hello, world! 123", "  spaces  and\ttabs\n\nnewlines ",
                           "caf\xC3\xA9 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x99\x82", "a\0b"};
    size_t lens[] = {17, 29, 17, 3};
    tl_tokenizer *t = tl_tokenizer_load(ROOT "tiny-bytelevel");
    ck_assert_msg(t != NULL, "%s", tl_error());
    for (int k = 0; k < 4; k++) {
        int32_t *ids;
        int64_t n = tl_tokenizer_encode(t, texts[k], lens[k], false, &ids);
        ck_assert_int_ge(n, 1);
        size_t len;
        const char *back = text_of(t, ids, (size_t)n, 0, &len);
        ck_assert_uint_eq(len, lens[k]);
        ck_assert(memcmp(back, texts[k], len) == 0);
        free(ids);
    }
    tl_tokenizer_free(t);
}
END_TEST
