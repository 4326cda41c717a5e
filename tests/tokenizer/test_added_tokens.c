/* Added tokens (tokenizers' added_vocabulary.rs): found leftmost-longest
 * before anything else; lstrip / rstrip take the whitespace beside them;
 * single_word matches only between non-word characters (\w of Rust's regex
 * crate); normalized ones are matched on the normalized text, the others on
 * the raw text; the post-processor adds its tokens only with add_special.
 * Normalizers run on each piece between added tokens. */
#include "tk_test_util.h"

/* a0 b1 ' '2 and one added token, its flags spliced in */
static tl_tokenizer *with_token(const char *content, const char *flags, const char *normalizer) {
    char json[1024];
    snprintf(json, sizeof json,
             "{'added_tokens': [{'id': 9, 'content': '%s', 'special': true %s}], "
             "'normalizer': %s, 'model': {'type': 'BPE', 'vocab': {'a': 0, 'b': 1, ' ': 2}, "
             "'merges': []}}",
             content, flags, normalizer ? normalizer : "null");
    return make(J(json));
}

START_TEST(added_token_is_split_out_first)
{
    tl_tokenizer *t = with_token("<m>", "", NULL);
    ASSERT_IDS(t, "a <m> b", false, "0 2 9 2 1");
    ASSERT_IDS(t, "<m><m>a<m", false, "9 9 0");   /* '<' and 'm' are not in the vocabulary */
    tl_tokenizer_free(t);
}
END_TEST

START_TEST(added_token_lstrip_and_rstrip_take_the_whitespace_beside_it)
{
    tl_tokenizer *l = with_token("<m>", ", 'lstrip': true", NULL);
    tl_tokenizer *r = with_token("<m>", ", 'rstrip': true", NULL);
    tl_tokenizer *both = with_token("<m>", ", 'lstrip': true, 'rstrip': true", NULL);
    ASSERT_IDS(l, "a  <m> b", false, "0 9 2 1");
    ASSERT_IDS(r, "a <m>  b", false, "0 2 9 1");
    ASSERT_IDS(both, "a \t<m>\n b", false, "0 9 1");
    /* the second token's lstrip finds the spaces already taken by the first's rstrip */
    ASSERT_IDS(both, "<m>  <m>", false, "9 9");
    tl_tokenizer_free(l);
    tl_tokenizer_free(r);
    tl_tokenizer_free(both);
}
END_TEST

START_TEST(added_token_single_word_needs_non_word_neighbours)
{
    tl_tokenizer *t = with_token("ab", ", 'single_word': true", NULL);
    ASSERT_IDS(t, "a ab b", false, "0 2 9 2 1");
    ASSERT_IDS(t, "aab", false, "0 0 1");     /* inside a word: not the token */
    ASSERT_IDS(t, "ab_", false, "0 1");       /* '_' is a word character; '_' is dropped */
    /* Rust's regex \w: not ² ½ ₂ (No); but ⓐ (So, Other_Alphabetic), Ⅰ (Nl), ‿ (Pc) */
    ASSERT_IDS(t, "\xC2\xB2" "ab\xC2\xBD", false, "9");
    ASSERT_IDS(t, "ab\xE2\x82\x82", false, "9");
    ASSERT_IDS(t, "\xE2\x93\x90" "ab", false, "0 1");
    ASSERT_IDS(t, "\xE2\x85\xA0" "ab", false, "0 1");
    ASSERT_IDS(t, "a\xE2\x80\xBF" "ab", false, "0 0 1");
    tl_tokenizer_free(t);
}
END_TEST

START_TEST(added_token_normalized_flag_picks_the_text_it_matches)
{
    const char *lower = "{'type': 'Lowercase'}";
    tl_tokenizer *norm = with_token("<M>", ", 'normalized': true", lower);
    tl_tokenizer *raw = with_token("<M>", ", 'normalized': false", lower);
    ASSERT_IDS(norm, "a<m>b", false, "0 9 1");   /* matched as "<m>" on the lowercased text */
    ASSERT_IDS(norm, "a<M>b", false, "0 9 1");
    ASSERT_IDS(raw, "a<M>b", false, "0 9 1");    /* matched on the raw text only */
    ASSERT_IDS(raw, "a<m>b", false, "0 1");
    tl_tokenizer_free(norm);
    tl_tokenizer_free(raw);
}
END_TEST

START_TEST(added_tokens_match_leftmost_longest)
{
    tl_tokenizer *t = make(J("{'added_tokens': [{'id': 9, 'content': '<m>', 'special': true}, "
                             "{'id': 10, 'content': '<m>>', 'special': true}, "
                             "{'id': 11, 'content': 'm>>b', 'special': true}], "
                             "'model': {'type': 'BPE', 'vocab': {'a': 0, 'b': 1}, 'merges': []}}"));
    ASSERT_IDS(t, "<m>>b", false, "10 1");   /* longest at the leftmost start */
    ASSERT_IDS(t, "a<m>a", false, "0 9 0");
    tl_tokenizer_free(t);
}
END_TEST

START_TEST(normalizer_runs_on_each_piece_between_added_tokens)
{
    /* Llama-2's legacy Prepend("▁") puts a ▁ at the start of every piece */
    tl_tokenizer *t = make(J("{'added_tokens': [{'id': 5, 'content': '<s>', 'special': true}], "
                             "'normalizer': {'type': 'Sequence', 'normalizers': [{'type': "
                             "'Prepend', 'prepend': '\xE2\x96\x81'}, {'type': 'Replace', "
                             "'pattern': {'String': ' '}, 'content': '\xE2\x96\x81'}]}, "
                             "'model': {'type': 'BPE', 'vocab': {'\xE2\x96\x81': 0, 'a': 1}, "
                             "'merges': []}}"));
    ASSERT_IDS(t, "a a<s>a", false, "0 1 0 1 5 0 1");
    ASSERT_IDS(t, "<s>", false, "5");   /* an empty piece gets no ▁ */
    tl_tokenizer_free(t);
}
END_TEST

START_TEST(normalizers_nfkc_lowercase_strip_replace)
{
    /* NFKC: ﬁ -> fi, ① -> 1; Lowercase: İ -> i̇ (two characters, as Rust);
     * Strip; Replace by regex */
    tl_tokenizer *t = make(J("{'normalizer': {'type': 'Sequence', 'normalizers': ["
                             "{'type': 'NFKC'}, {'type': 'Lowercase'}, {'type': 'Strip', "
                             "'strip_left': true, 'strip_right': true}, {'type': 'Replace', "
                             "'pattern': {'Regex': '[0-9]+'}, 'content': '#'}]}, "
                             "'model': {'type': 'BPE', 'vocab': {'f': 0, 'i': 1, '#': 2, "
                             "'\xCC\x87': 3, ' ': 4}, 'merges': []}}"));
    ASSERT_IDS(t, "  \xEF\xAC\x81 \xE2\x91\xA0\xE2\x91\xA1 \xC4\xB0  ", false, "0 1 4 2 4 1 3");
    tl_tokenizer_free(t);
}
END_TEST

/* The library's Unicode forms are Unicode 9.0's: a later character keeps its
 * form and blocks composition. NFKC leaves U+32FF (Unicode 12.1, <square>
 * "令和") alone; NFC does not compose a + U+0301 across U+0C3C (Unicode 14,
 * combining class 7 now, a starter in 9.0). Ids from Rust tokenizers 0.22.2. */
START_TEST(normalizers_use_unicode_9_forms_as_the_library)
{
    tl_tokenizer *k = make(J("{'normalizer': {'type': 'NFKC'}, 'model': {'type': 'BPE', "
                             "'vocab': {'\xE3\x8B\xBF': 0, '\xE4\xBB\xA4': 1, "
                             "'\xE5\x92\x8C': 2}, 'merges': []}}"));
    ASSERT_IDS(k, "\xE3\x8B\xBF", false, "0");
    tl_tokenizer *c = make(J("{'normalizer': {'type': 'NFC'}, 'model': {'type': 'BPE', "
                             "'vocab': {'a': 0, '\xC3\xA1': 1, '\xE0\xB0\xBC': 2, "
                             "'\xCC\x81': 3}, 'merges': []}}"));
    ASSERT_IDS(c, "a\xE0\xB0\xBC\xCC\x81 a\xCC\x81", false, "0 2 3 1");
    tl_tokenizer_free(k);
    tl_tokenizer_free(c);
}
END_TEST

START_TEST(post_processors_add_special_tokens_only_when_asked)
{
    tl_tokenizer *tmpl = make(J("{'added_tokens': [{'id': 3, 'content': '<s>', 'special': true}],"
                                " 'post_processor': {'type': 'TemplateProcessing', 'single': ["
                                "{'SpecialToken': {'id': '<s>', 'type_id': 0}}, {'Sequence': "
                                "{'id': 'A', 'type_id': 0}}], 'special_tokens': {'<s>': {'id': "
                                "'<s>', 'ids': [3], 'tokens': ['<s>']}}}, 'model': {'type': "
                                "'BPE', 'vocab': {'a': 0}, 'merges': []}}"));
    ASSERT_IDS(tmpl, "aa", true, "3 0 0");
    ASSERT_IDS(tmpl, "aa", false, "0 0");
    ASSERT_IDS(tmpl, "", true, "3");
    tl_tokenizer *roberta = make(J("{'post_processor': {'type': 'Sequence', 'processors': ["
                                   "{'type': 'ByteLevel'}, {'type': 'RobertaProcessing', 'cls': "
                                   "['<s>', 1], 'sep': ['</s>', 2]}]}, 'model': {'type': 'BPE', "
                                   "'vocab': {'a': 0, '<s>': 1, '</s>': 2}, 'merges': []}}"));
    ASSERT_IDS(roberta, "a", true, "1 0 2");
    ASSERT_IDS(roberta, "a", false, "0");
    tl_tokenizer_free(tmpl);
    tl_tokenizer_free(roberta);
}
END_TEST

START_TEST(encode_refuses_invalid_utf8_naming_the_offset)
{
    tl_tokenizer *t = with_token("<m>", "", NULL);
    int32_t *ids = (int32_t *)1;
    tl_clear_error();
    ck_assert_int_eq(tl_tokenizer_encode(t, "ab\xC3(", 4, false, &ids), -1);
    ck_assert_ptr_null(ids);
    ck_assert_msg(strstr(tl_error(), "not valid UTF-8") && strstr(tl_error(), "offset 2"),
                  "%s", tl_error());
    tl_clear_error();
    ck_assert_int_eq(tl_tokenizer_encode(t, "\xED\xA0\x80", 3, false, &ids), -1);   /* surrogate */
    tl_clear_error();
    ck_assert_int_eq(tl_tokenizer_encode(NULL, "a", 1, false, &ids), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "tl_tokenizer_encode"));
    tl_clear_error();
    tl_tokenizer_free(t);
}
END_TEST
