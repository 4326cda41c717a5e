/* Pre-tokenizers split a text as the library does: Split's five behaviours
 * and invert, Digits, Metaspace's prepend schemes and split, ByteLevel's
 * prefix space, Sequence. Word boundaries are made visible with an
 * end_of_word_suffix: a piece's last character is the "X</w>" token. */
#include "tk_test_util.h"

/* a0 b1 c2 ' '3 a</w>4 b</w>5 c</w>6 ' </w>'7 1:8 2:9 1</w>10 2</w>11, no merges */
static tl_tokenizer *with_pre(const char *pre) {
    char json[1024];
    snprintf(json, sizeof json,
             "{'pre_tokenizer': %s, 'model': {'type': 'BPE', 'end_of_word_suffix': '</w>', "
             "'vocab': {'a': 0, 'b': 1, 'c': 2, ' ': 3, 'a</w>': 4, 'b</w>': 5, 'c</w>': 6, "
             "' </w>': 7, '1': 8, '2': 9, '1</w>': 10, '2</w>': 11}, 'merges': []}}",
             pre);
    return make(J(json));
}

static const char *split_ids(const char *behavior, bool invert, const char *text) {
    char pre[256];
    snprintf(pre, sizeof pre, "{'type': 'Split', 'pattern': {'String': ' '}, 'behavior': '%s', "
             "'invert': %s}", behavior, invert ? "true" : "false");
    tl_tokenizer *t = with_pre(pre);
    static char out[256];
    snprintf(out, sizeof out, "%s", ids_of(t, text, strlen(text), false));
    tl_tokenizer_free(t);
    return out;
}

/* Whitespace is \w+|[^\w\s]+ in Rust's regex crate (not Oniguruma, whose \w
 * takes ² and leaves out the zero-width joiner); characters outside the
 * vocabulary are dropped. */
START_TEST(whitespace_splits_on_rusts_word_characters)
{
    tl_tokenizer *t = with_pre("{'type': 'Whitespace'}");
    ASSERT_IDS(t, "a\xC2\xB2" "b", false, "4 5");           /* a | ² | b */
    ASSERT_IDS(t, "a\xE2\x91\xA0" "b c", false, "4 5 6");   /* a | ① | b | c */
    ASSERT_IDS(t, "a\xE2\x80\x8D" "b", false, "0 5");       /* a+ZWJ+b is one word */
    ASSERT_IDS(t, "\xE2\x80\xBF" "a b_c", false, "4 1 6");  /* ‿ and _ are Pc */
    tl_tokenizer_free(t);
}
END_TEST

START_TEST(split_behaviours_cut_and_join_as_the_library)
{
    /* "ab  c": pieces ab | ' ' | ' ' | c, the spaces matching */
    ck_assert_str_eq(split_ids("Removed", false, "ab  c"), "0 5 6");
    ck_assert_str_eq(split_ids("Isolated", false, "ab  c"), "0 5 7 7 6");
    ck_assert_str_eq(split_ids("MergedWithPrevious", false, "ab  c"), "0 1 7 7 6");
    ck_assert_str_eq(split_ids("MergedWithNext", false, "ab  c"), "0 5 7 3 6");
    ck_assert_str_eq(split_ids("Contiguous", false, "ab  c"), "0 5 3 7 6");
    ck_assert_str_eq(split_ids("Removed", true, "ab  c"), "7 7");   /* keeps the matches */
}
END_TEST

START_TEST(split_regex_runs_on_oniguruma)
{
    /* lookahead and \p{L}: GPT-2's \s+(?!\S) keeps the last space for the word */
    tl_tokenizer *t = with_pre(J("{'type': 'Split', 'pattern': {'Regex': "
                                 "' ?\\\\p{L}+|\\\\s+(?!\\\\S)|\\\\s+'}, 'behavior': 'Isolated'}"));
    ASSERT_IDS(t, "a   b", false, "4 3 7 3 5");   /* a | '  ' | ' b' */
    tl_tokenizer_free(t);
}
END_TEST

START_TEST(split_classifies_by_onigurumas_unicode_version)
{
    /* U+1FABF (goose, Unicode 15) is unassigned for Oniguruma 6.9.8's Unicode
     * 14 tables, as in the Rust library: \p{S} does not match it; U+1F986
     * (duck, Unicode 9) is a symbol. Node's regexes (Unicode 15.1) disagree,
     * which is why the agreement corpus leaves such characters out. */
    tl_tokenizer *t = make(J("{'pre_tokenizer': {'type': 'Split', 'pattern': {'Regex': "
                             "'\\\\p{S}'}, 'behavior': 'Removed'}, 'model': {'type': 'BPE', "
                             "'byte_fallback': true, 'vocab': {'<0xF0>': 0, '<0x9F>': 1, "
                             "'<0xAA>': 2, '<0xBF>': 3}, 'merges': []}}"));
    ASSERT_IDS(t, "\xF0\x9F\xAA\xBF", false, "0 1 2 3");   /* kept: not a symbol */
    ASSERT_IDS(t, "\xF0\x9F\xA6\x86", false, "");          /* removed: a symbol */
    tl_tokenizer_free(t);
}
END_TEST

START_TEST(digits_individual_or_contiguous)
{
    tl_tokenizer *one = with_pre(J("{'type': 'Digits', 'individual_digits': true}"));
    ASSERT_IDS(one, "a12b", false, "4 10 11 5");
    tl_tokenizer *runs = with_pre(J("{'type': 'Digits', 'individual_digits': false}"));
    ASSERT_IDS(runs, "a12b", false, "4 8 11 5");
    tl_tokenizer_free(one);
    tl_tokenizer_free(runs);
}
END_TEST

static tl_tokenizer *metaspace(const char *scheme, bool split) {
    char json[700];
    snprintf(json, sizeof json,
             "{'added_tokens': [{'id': 6, 'content': '<s>', 'special': true}], "
             "'pre_tokenizer': {'type': 'Metaspace', 'replacement': '\xE2\x96\x81', "
             "'prepend_scheme': '%s', 'split': %s}, 'model': {'type': 'BPE', "
             "'end_of_word_suffix': '</w>', 'vocab': {'\xE2\x96\x81': 0, 'a': 1, 'b': 2, "
             "'\xE2\x96\x81</w>': 3, 'a</w>': 4, 'b</w>': 5}, 'merges': []}}",
             scheme, split ? "true" : "false");
    return make(J(json));
}

START_TEST(metaspace_prepend_schemes_and_split)
{
    tl_tokenizer *always = metaspace("always", true), *never = metaspace("never", true);
    tl_tokenizer *first = metaspace("first", true), *whole = metaspace("always", false);
    ASSERT_IDS(always, "a b", false, "0 4 0 5");   /* ▁a | ▁b */
    ASSERT_IDS(never, "a b", false, "4 0 5");      /* a | ▁b */
    ASSERT_IDS(first, "a b", false, "0 4 0 5");
    ASSERT_IDS(whole, "a b", false, "0 1 0 5");    /* one piece ▁a▁b */
    /* after an added token the text does not start the input: "first" adds no ▁ */
    ASSERT_IDS(first, "<s>a b", false, "6 4 0 5");
    ASSERT_IDS(always, "<s>a b", false, "6 0 4 0 5");
    tl_tokenizer_free(always);
    tl_tokenizer_free(never);
    tl_tokenizer_free(first);
    tl_tokenizer_free(whole);
}
END_TEST

START_TEST(bytelevel_maps_bytes_and_adds_a_prefix_space)
{
    /* Ġ (U+0120) is the space byte; \0 is U+0100 */
    tl_tokenizer *t = make(J("{'pre_tokenizer': {'type': 'ByteLevel', 'add_prefix_space': true, "
                             "'use_regex': false}, 'model': {'type': 'BPE', 'vocab': "
                             "{'\xC4\xA0': 0, 'h': 1, 'i': 2, '\xC4\x80': 3}, 'merges': []}}"));
    ASSERT_IDS(t, "hi", false, "0 1 2");
    ck_assert_str_eq(ids_of(t, " h\0i", 4, false), "0 1 3 2");   /* no second space; NUL kept */
    tl_tokenizer_free(t);
}
END_TEST
