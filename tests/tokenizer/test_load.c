/* Loading: a component the runtime does not implement is refused by its name
 * and the file's path; hostile files (bad JSON, ids out of range, a token or
 * an id twice, merges outside the vocabulary, bad regexes, truncation) are
 * refused with a message, a key given twice (in tokenizer.json or
 * tokenizer_config.json) with its path; a thousand mutated files never crash
 * the loader; a folder gives the config's tokens and the stop ids from
 * generation_config.json (int or list; an empty list says nothing), else
 * config.json, else eos_token. */
#include <sys/stat.h>
#include <unistd.h>

#include "tinyllm/pcg32.h"
#include "tk_test_util.h"

#define ROOT TL_SOURCE_ROOT "/fixtures/tokenizer/"
#define MODEL "'model': {'type': 'BPE', 'vocab': {'a': 0, 'b': 1, 'ab': 2}, 'merges': ['a b']}"

START_TEST(unknown_components_are_refused_by_name_and_path)
{
    char dir[] = "/tmp/tl-tok-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    FILE *f = fopen(path, "w");
    fputs(J("{'pre_tokenizer': {'type': 'UnicodeScripts'}, " MODEL "}"), f);
    fclose(f);
    tl_clear_error();
    ck_assert_ptr_null(tl_tokenizer_load(dir));
    ck_assert_msg(strstr(tl_error(), "UnicodeScripts") && strstr(tl_error(), path) &&
                      strstr(tl_error(), "pre_tokenizer"),
                  "%s", tl_error());
    unlink(path);
    rmdir(dir);
    ASSERT_REFUSED(J("{'normalizer': {'type': 'BertNormalizer'}, " MODEL "}"), "BertNormalizer",
                   "hostile/tokenizer.json");
    ASSERT_REFUSED(J("{'decoder': {'type': 'WordPiece'}, " MODEL "}"), "decoder type 'WordPiece'");
    ASSERT_REFUSED(J("{'post_processor': {'type': 'Magic'}, " MODEL "}"), "'Magic'");
    ASSERT_REFUSED(J("{'pre_tokenizer': {'type': 'Sequence', 'pretokenizers': [{'type': "
                     "'Digits'}, {'type': 'CharDelimiterSplit'}]}, " MODEL "}"),
                   "pre_tokenizer.pretokenizers[1]", "CharDelimiterSplit");
    ASSERT_REFUSED(J("{'model': {'type': 'Unigram', 'vocab': []}}"), "Unigram");
    ASSERT_REFUSED(J("{'normalizer': {'kind': 'NFC'}, " MODEL "}"), "has no \"type\"");
    tl_clear_error();
}
END_TEST

START_TEST(hostile_files_are_refused_with_a_message)
{
    ASSERT_REFUSED("{", "not valid JSON");
    ASSERT_REFUSED("[1, 2]", "top level");
    ASSERT_REFUSED(J("{'model': 3}"), "\"model\"");
    ASSERT_REFUSED(J("{'model': {'type': 'BPE', 'vocab': {'a': -1}, 'merges': []}}"), "'a'");
    ASSERT_REFUSED(J("{'model': {'type': 'BPE', 'vocab': {'a': 3000000000}, 'merges': []}}"),
                   "from 0 to");
    ASSERT_REFUSED(J("{'model': {'type': 'BPE', 'vocab': {'a': 1.5}, 'merges': []}}"), "'a'");
    ASSERT_REFUSED(J("{'model': {'type': 'BPE', 'vocab': {'a': 0, 'b': 0}, 'merges': []}}"),
                   "id 0", "'a'", "'b'");
    ASSERT_REFUSED(J("{'model': {'type': 'BPE', 'vocab': {'a': 0, 'a': 1}, 'merges': []}}"),
                   "twice");
    ASSERT_REFUSED(J("{'model': {'type': 'BPE', 'vocab': {'a': 0}, 'merges': ['a z']}}"),
                   "merges[0]", "'z'");
    ASSERT_REFUSED(J("{'model': {'type': 'BPE', 'vocab': {'a': 0, 'b': 1}, 'merges': ['a b']}}"),
                   "makes 'ab'");
    ASSERT_REFUSED(J("{'model': {'type': 'BPE', 'vocab': {'a': 0}, 'merges': ['a a a']}}"),
                   "two tokens");
    ASSERT_REFUSED(J("{'model': {'type': 'BPE', 'vocab': {'a': 0}, 'merges': [[1, 2]]}}"),
                   "merges[0]");
    ASSERT_REFUSED(J("{'model': {'type': 'BPE', 'unk_token': '<unk>', 'vocab': {'a': 0}, "
                     "'merges': []}}"), "unk_token");
    ASSERT_REFUSED(J("{'model': {'type': 'BPE', 'dropout': 0.1, 'vocab': {}, 'merges': []}}"),
                   "dropout");
    ASSERT_REFUSED(J("{'truncation': {'max_length': 5}, " MODEL "}"), "truncation");
    ASSERT_REFUSED(J("{'padding': {'strategy': {'Fixed': 8}}, " MODEL "}"), "padding");
    ASSERT_REFUSED(J("{'added_tokens': [{'id': -4, 'content': 'x'}], " MODEL "}"),
                   "added_tokens[0].id");
    ASSERT_REFUSED(J("{'added_tokens': [{'id': 5, 'content': ''}], " MODEL "}"), "content");
    ASSERT_REFUSED(J("{'added_tokens': [{'id': 7, 'content': 'x'}, {'id': 7, 'content': 'y'}], "
                     MODEL "}"), "id 7");
    ASSERT_REFUSED(J("{'pre_tokenizer': {'type': 'Split', 'pattern': {'Regex': '(a'}, "
                     "'behavior': 'Isolated'}, " MODEL "}"), "Oniguruma", "(a");
    ASSERT_REFUSED(J("{'pre_tokenizer': {'type': 'Split', 'pattern': {'Regex': 'a'}, "
                     "'behavior': 'Sideways'}, " MODEL "}"), "Sideways");
    ASSERT_REFUSED(J("{'pre_tokenizer': {'type': 'Metaspace', 'replacement': 'ab'}, " MODEL "}"),
                   "one character");
    ASSERT_REFUSED(J("{'post_processor': {'type': 'TemplateProcessing', 'single': [{'SpecialToken'"
                     ": {'id': '<s>'}}], 'special_tokens': {}}, " MODEL "}"), "'<s>'");
    tl_clear_error();
    ck_assert_ptr_null(tl_tokenizer_load("/nonexistent/tokenizer.json"));
    ck_assert_ptr_nonnull(strstr(tl_error(), "does not exist"));
    tl_clear_error();
    ck_assert_ptr_null(tl_tokenizer_load(TL_SOURCE_ROOT "/fixtures"));
    ck_assert_ptr_nonnull(strstr(tl_error(), "holds no tokenizer.json"));
    tl_clear_error();
}
END_TEST

/* A key given twice: the tokenizers library keeps the last (the top level, a
 * component, a map such as the vocabulary) or refuses the file (an added
 * token's field), transformers' json.load keeps the last of tokenizer_config.json,
 * cJSON the first. Refused, naming the file and the key's path. */
START_TEST(a_key_given_twice_is_refused_with_its_path)
{
    ASSERT_REFUSED(J("{'model': {'type': 'BPE', 'vocab': {'a': 0, 'b': 1, 'a': 2}, "
                     "'merges': []}}"),
                   "hostile/tokenizer.json: the key model.vocab.\"a\" is given twice",
                   "keeps the last one", "remove one of the two");
    ASSERT_REFUSED(J(LETTERS_MODEL("", ", 'decoder': {'type': 'ByteLevel'}, 'decoder': null")),
                   "the key \"decoder\" is given twice");
    ASSERT_REFUSED(J(LETTERS_MODEL(", 'vocab': {'a': 0}", "")), "the key model.\"vocab\"");
    ASSERT_REFUSED(J("{'added_tokens': [{'id': 9, 'content': 'x'}, {'id': 10, 'content': 'y', "
                     "'id': 11}], " MODEL "}"),
                   "the key added_tokens[1].\"id\" is given twice");
    ASSERT_REFUSED(J("{'normalizer': {'type': 'Sequence', 'normalizers': [{'type': 'Replace', "
                     "'pattern': {'String': 'a'}, 'content': 'b', 'content': 'c'}]}, " MODEL "}"),
                   "the key normalizer.normalizers[0].\"content\"");
    /* a name that is no identifier is quoted as JSON writes it; a long one is cut */
    ASSERT_REFUSED(J("{'post_processor': {'type': 'TemplateProcessing', 'single': [], "
                     "'special_tokens': {'<s>': {'id': '<s>', 'ids': [0], 'ids': [1]}}}, "
                     MODEL "}"),
                   "the key post_processor.special_tokens.\"<s>\".\"ids\"");
    ASSERT_REFUSED(J("{'model': {'type': 'BPE', 'vocab': {'a\\\"b\\n\\u0001': 0, "
                     "'a\\\"b\\n\\u0001': 1}, 'merges': []}}"),
                   "the key model.vocab.\"a\\\"b\\n\\u0001\" is given twice");
    /* "é", 57 x, "ééé", 40 x: cut at the first character that starts past 60 bytes */
    char key[128] = "\xC3\xA9", json[512], want[256];
    memset(key + 2, 'x', 57);
    strcpy(key + 59, "\xC3\xA9\xC3\xA9\xC3\xA9");
    memset(key + 65, 'x', 40);
    snprintf(json, sizeof json, "{\"model\": {\"vocab\": {\"%s\": 0, \"%s\": 1}}}", key, key);
    snprintf(want, sizeof want, "model.vocab.\"%.61s...\" is given twice", key);
    ASSERT_REFUSED(json, want);
    /* bytes that are not UTF-8 are shown as \xHH, so the message stays UTF-8 */
    ASSERT_REFUSED("{\"model\": {\"vocab\": {\"x\xFF\xC3\": 0, \"x\xFF\xC3\": 1}}}",
                   "the key model.vocab.\"x\\xFF\\xC3\" is given twice");
    /* a path longer than the message's room keeps its first steps and the key */
    char deep[4096] = "";
    for (int i = 0; i < 40; i++) strcat(deep, "{\"abcdefghijklmnopqrstu\": ");
    strcat(deep, "{\"k\": 1, \"k\": 2}");
    for (int i = 0; i < 40; i++) strcat(deep, "}");
    tl_clear_error();
    char *model_deep = malloc(strlen(deep) + 64);
    sprintf(model_deep, "{\"model\": %s}", deep);
    ck_assert_ptr_null(tl_tokenizer_from_strings(model_deep, NULL, "hostile/tokenizer.json"));
    ck_assert_msg(strstr(tl_error(), "the key model.abcdefghijklmnopqrstu.") &&
                  strstr(tl_error(), "...\"k\" is given twice"), "%s", tl_error());
    free(model_deep);
    /* cJSON cuts a string at \u0000, where HF keeps the rest: refused, with its byte */
    ASSERT_REFUSED(J("{'model': {'type': 'BPE', 'vocab': {'a\\u0000b': 0, 'a\\u0000c': 1}, "
                     "'merges': []}}"),
                   "hostile/tokenizer.json: a string holds \\u0000 (byte 38)");
    ASSERT_REFUSED(J("{'model': {'type': 'BPE', 'vocab': {'a': 0, 'b\\\\u0000': 1}, "
                     "'merges': [], 'x': '\\u0000'}}"),
                   "\\u0000 (byte 80)");

    /* tokenizer_config.json */
    tl_clear_error();
    ck_assert_ptr_null(tl_tokenizer_from_strings(
        J("{" MODEL "}"), J("{'eos_token': 'a', 'chat_template': 'x', 'eos_token': 'b'}"),
        "t.json"));
    ck_assert_msg(strstr(tl_error(), "tokenizer_config.json: the key \"eos_token\" is given "
                                     "twice; transformers' json.load keeps the last one"),
                  "%s", tl_error());
    /* one name in two objects is no repeat */
    tl_tokenizer *t = make_with_config(
        J("{'added_tokens': [{'id': 9, 'content': 'type'}], 'model': {'type': 'BPE', "
          "'vocab': {'type': 0, 'model': 1}, 'merges': []}}"),
        J("{'eos_token': {'content': 'type'}, 'bos_token': {'content': 'model'}}"));
    ck_assert_str_eq(tl_tokenizer_eos_token(t), "type");
    tl_tokenizer_free(t);
    tl_clear_error();
}
END_TEST

START_TEST(mutated_files_never_crash_the_loader)
{
    /* 1200 mutations of a real file (cut short, bytes replaced, bytes inserted):
     * each one loads or is refused with a message; a crash fails the test */
    size_t len;
    FILE *f = fopen(ROOT "tiny-sentencepiece/tokenizer.json", "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *good = malloc(len + 1), *bad = malloc(len + 64);
    ck_assert_uint_eq(fread(good, 1, len, f), len);
    fclose(f);
    good[len] = '\0';
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 19, 1);
    static const char junk[] = "{}[]\",:0-9e.\\ntrufalsn\xC3\xFF";
    int loaded = 0, refused = 0;
    for (int k = 0; k < 1200; k++) {
        size_t n = len;
        memcpy(bad, good, len);
        int kind = k % 3;
        if (kind == 0) {
            n = tl_pcg32_next(&rng) % len;
        } else {
            int edits = 1 + (int)(tl_pcg32_next(&rng) % 4);
            for (int e = 0; e < edits; e++) {
                size_t at = tl_pcg32_next(&rng) % n;
                char c = junk[tl_pcg32_next(&rng) % (sizeof junk - 1)];
                if (kind == 1) {
                    bad[at] = c;
                } else if (n < len + 60) {
                    memmove(bad + at + 1, bad + at, n - at);
                    bad[at] = c;
                    n++;
                }
            }
        }
        bad[n] = '\0';
        tl_clear_error();
        tl_tokenizer *t = tl_tokenizer_from_strings(bad, NULL, "mutant.json");
        if (t) {
            loaded++;
            int32_t *ids;
            int64_t m = tl_tokenizer_encode(t, "The cat <mask> sat.", 19, true, &ids);
            if (m >= 0) {
                char *s = tl_tokenizer_decode(t, ids, (size_t)m, 0, NULL);
                free(s);
                free(ids);
            }
            tl_tokenizer_free(t);
        } else {
            refused++;
            ck_assert_msg(tl_error() != NULL, "mutant %d refused without a message", k);
        }
    }
    ck_assert_int_gt(refused, 400);   /* the mutants are mostly broken... */
    ck_assert_int_gt(loaded, 4);      /* ...and some still load and encode */
    free(good);
    free(bad);
    tl_clear_error();
}
END_TEST

START_TEST(folder_gives_config_tokens_and_stop_ids)
{
    tl_tokenizer *smol = tl_tokenizer_load(ROOT "tiny-bytelevel");
    ck_assert_msg(smol != NULL, "%s", tl_error());
    ck_assert_str_eq(tl_tokenizer_bos_token(smol), "<|im_start|>");
    ck_assert_str_eq(tl_tokenizer_eos_token(smol), "<|im_end|>");
    const int32_t *stop;
    ck_assert_int_eq(tl_tokenizer_stop_ids(smol, &stop), 1);   /* "eos_token_id": 2 */
    ck_assert_int_eq(stop[0], 2);
    ck_assert(!tl_tokenizer_clean_up_spaces(smol));
    ck_assert_str_eq(tl_tokenizer_dir(smol), ROOT "tiny-bytelevel");
    tl_tokenizer_free(smol);

    /* a path to the file works too; the list form of eos_token_id */
    tl_tokenizer *sp = tl_tokenizer_load(ROOT "tiny-sentencepiece/tokenizer.json");
    ck_assert_msg(sp != NULL, "%s", tl_error());
    ck_assert_int_eq(tl_tokenizer_stop_ids(sp, &stop), 2);   /* [2, 0] */
    ck_assert_int_eq(stop[0], 2);
    ck_assert_int_eq(stop[1], 0);
    tl_tokenizer_free(sp);

    /* no generation_config.json: config.json's; neither: the eos_token's id */
    char dir[] = "/tmp/tl-tok-test-XXXXXX", path[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    const char *files[][2] = {{"tokenizer.json", J("{" MODEL "}")},
                              {"tokenizer_config.json", J("{'eos_token': {'content': 'ab'}}")},
                              {"config.json", J("{'eos_token_id': [1, 0]}")}};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i][0]);
        FILE *f = fopen(path, "w");
        fputs(files[i][1], f);
        fclose(f);
    }
    tl_tokenizer *t = tl_tokenizer_load(dir);
    ck_assert_msg(t != NULL, "%s", tl_error());
    ck_assert_int_eq(tl_tokenizer_stop_ids(t, &stop), 2);
    ck_assert_int_eq(stop[0], 1);
    ck_assert_str_eq(tl_tokenizer_eos_token(t), "ab");
    tl_tokenizer_free(t);
    /* an empty list in generation_config.json says nothing: config.json's (no leak) */
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    FILE *g = fopen(path, "w");
    fputs("{\"eos_token_id\": []}", g);
    fclose(g);
    t = tl_tokenizer_load(dir);
    ck_assert_msg(t != NULL, "%s", tl_error());
    ck_assert_int_eq(tl_tokenizer_stop_ids(t, &stop), 2);
    ck_assert_int_eq(stop[0], 1);
    ck_assert_int_eq(stop[1], 0);
    tl_tokenizer_free(t);
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    t = tl_tokenizer_load(dir);
    ck_assert_msg(t != NULL, "%s", tl_error());
    ck_assert_int_eq(tl_tokenizer_stop_ids(t, &stop), 1);
    ck_assert_int_eq(stop[0], 2);   /* "ab" */
    tl_tokenizer_free(t);
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i][0]);
        unlink(path);
    }
    rmdir(dir);
}
END_TEST
