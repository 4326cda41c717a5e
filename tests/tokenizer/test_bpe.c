/* The BPE model (tokenizers' models/bpe): the lowest-rank pair merges first,
 * the leftmost among equals; a pair listed twice keeps its later rank;
 * ignore_merges; unknown characters as unk (fused or not), as "<0xXX>" bytes,
 * or dropped (their neighbours then merge); continuing_subword_prefix and
 * end_of_word_suffix. Expected ids worked out by hand from the merge lists. */
#include "tk_test_util.h"

START_TEST(bpe_merges_the_lowest_rank_pair_first)
{
    tl_tokenizer *t = make(J(LETTERS_MODEL("", "")));
    ASSERT_IDS(t, "abc", false, "8");      /* a b -> ab (rank 0), then ab c -> abc */
    ASSERT_IDS(t, "bcab", false, "7 6");   /* ab (rank 0) before bc (rank 1) */
    ASSERT_IDS(t, "cba", false, "2 1 0");  /* no merge applies */
    ASSERT_IDS(t, "", false, "");
    tl_tokenizer_free(t);
}
END_TEST

START_TEST(bpe_breaks_ties_to_the_left)
{
    tl_tokenizer *t = make(J("{'model': {'type': 'BPE', 'vocab': {'a': 0, 'aa': 1}, "
                             "'merges': ['a a']}}"));
    ASSERT_IDS(t, "aaa", false, "1 0");    /* (aa)a, not a(aa) */
    ASSERT_IDS(t, "aaaaa", false, "1 1 0");
    tl_tokenizer_free(t);
}
END_TEST

START_TEST(bpe_duplicate_merge_keeps_its_later_rank)
{
    /* "a b" listed again at rank 3 now ranks after "b c" (1): abc becomes a + bc */
    tl_tokenizer *t = make(J("{'model': {'type': 'BPE', 'vocab': {'a': 0, 'b': 1, 'c': 2, "
                             "'ab': 3, 'bc': 4, 'abc': 5}, 'merges': ['a b', 'b c', 'ab c', "
                             "'a b']}}"));
    ASSERT_IDS(t, "abc", false, "0 4");
    tl_tokenizer_free(t);
}
END_TEST

START_TEST(bpe_ignore_merges_takes_a_whole_word_from_the_vocabulary)
{
    const char *vocab = "'vocab': {'a': 0, 'b': 1, 'c': 2, 'ab': 3, 'bc': 4, 'bca': 5}, "
                        "'merges': ['a b', 'b c']";
    char json[512];
    snprintf(json, sizeof json, "{'model': {'type': 'BPE', %s}}", vocab);
    tl_tokenizer *merged = make(J(json));
    ASSERT_IDS(merged, "bca", false, "4 0");
    snprintf(json, sizeof json, "{'model': {'type': 'BPE', 'ignore_merges': true, %s}}", vocab);
    tl_tokenizer *whole = make(J(json));
    ASSERT_IDS(whole, "bca", false, "5");
    ASSERT_IDS(whole, "abca", false, "3 2 0");   /* not in the vocabulary: merged as usual */
    tl_tokenizer_free(merged);
    tl_tokenizer_free(whole);
}
END_TEST

START_TEST(bpe_unknown_characters_become_unk_fused_or_not_or_are_dropped)
{
    tl_tokenizer *plain = make(J("{'model': {'type': 'BPE', 'unk_token': '?', 'vocab': {'a': 0, "
                                 "'b': 1, 'ab': 2, '?': 3}, 'merges': ['a b']}}"));
    ASSERT_IDS(plain, "axyb", false, "0 3 3 1");
    tl_tokenizer *fused = make(J("{'model': {'type': 'BPE', 'unk_token': '?', 'fuse_unk': true, "
                                 "'vocab': {'a': 0, 'b': 1, 'ab': 2, '?': 3}, "
                                 "'merges': ['a b']}}"));
    ASSERT_IDS(fused, "axyb", false, "0 3 1");
    ASSERT_IDS(fused, "axbyz", false, "0 3 1 3");
    tl_tokenizer *none = make(J("{'model': {'type': 'BPE', 'vocab': {'a': 0, 'b': 1, 'ab': 2}, "
                                "'merges': ['a b']}}"));
    ASSERT_IDS(none, "axyb", false, "2");   /* x, y dropped: a and b meet and merge */
    tl_tokenizer_free(plain);
    tl_tokenizer_free(fused);
    tl_tokenizer_free(none);
}
END_TEST

START_TEST(bpe_byte_fallback_spells_unknown_characters_in_bytes)
{
    tl_tokenizer *t = make(J("{'model': {'type': 'BPE', 'byte_fallback': true, "
                             "'unk_token': '<unk>', 'vocab': {'<unk>': 0, 'a': 1, '<0x78>': 2, "
                             "'<0xC3>': 3, '<0xA9>': 4}, 'merges': []}}"));
    ASSERT_IDS(t, "ax\xC3\xA9", false, "1 2 3 4");   /* x, then é as C3 A9 */
    ASSERT_IDS(t, "y", false, "0");                   /* <0x79> is missing: unk */
    tl_tokenizer_free(t);
}
END_TEST

START_TEST(bpe_end_of_word_suffix_and_continuing_prefix)
{
    tl_tokenizer *suffix = make(J("{'pre_tokenizer': {'type': 'WhitespaceSplit'}, "
                                  "'model': {'type': 'BPE', 'end_of_word_suffix': '</w>', "
                                  "'vocab': {'a': 0, 'b': 1, 'b</w>': 2, 'a</w>': 3, 'ab</w>': 4},"
                                  " 'merges': ['a b</w>']}}"));
    ASSERT_IDS(suffix, "ab ba", false, "4 1 3");
    tl_tokenizer *prefix = make(J("{'model': {'type': 'BPE', 'continuing_subword_prefix': '##', "
                                  "'vocab': {'a': 0, '##b': 1, 'ab': 2}, 'merges': ['a ##b']}}"));
    ASSERT_IDS(prefix, "ab", false, "2");   /* a + ##b makes "ab" (b's prefix dropped) */
    ASSERT_IDS(prefix, "ba", false, "");    /* b and ##a are not in the vocabulary */
    tl_tokenizer_free(suffix);
    tl_tokenizer_free(prefix);
}
END_TEST

START_TEST(bpe_a_long_word_merges_completely)
{
    /* 60 000 a's with "a a" and "aa aa": the heap-driven merge reaches the same
     * result as merging pair by pair: 15 000 "aaaa" */
    tl_tokenizer *t = make(J("{'model': {'type': 'BPE', 'vocab': {'a': 0, 'aa': 1, 'aaaa': 2}, "
                             "'merges': ['a a', 'aa aa']}}"));
    size_t n = 60000;
    char *text = malloc(n);
    memset(text, 'a', n);
    int32_t *ids = NULL;
    ck_assert_int_eq(tl_tokenizer_encode(t, text, n, false, &ids), 15000);
    for (int i = 0; i < 15000; i++) ck_assert_int_eq(ids[i], 2);
    free(ids);
    free(text);
    tl_tokenizer_free(t);
}
END_TEST
