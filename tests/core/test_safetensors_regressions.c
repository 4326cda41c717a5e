/* Inputs the fuzzers (tests/fuzz) and the review found, replayed: each must
 * be refused with an error that says what is wrong, never crash or load.
 * tests/fuzz/regressions/NAME.safetensors goes to tl_st_open and through
 * tl_checkpoint_open (the path `tinyllm inspect` takes); NAME.index.json is
 * the index of the fuzzers' model folder (two shards, a link to one of them
 * and a link out of the folder: tests/fuzz/fuzz_model_dir.h), loaded with
 * tl_checkpoint_load. Every file there needs a row below. */
#include <check.h>
#include <dirent.h>
#include "tinyllm/testing.h"
#include "tinyllm/safetensors.h"
#include "st_test_util.h"
#include "../fuzz/fuzz_model_dir.h"

#define REGRESSIONS_DIR TL_SOURCE_ROOT "/tests/fuzz/regressions"

typedef struct {
    const char *file;     /* in REGRESSIONS_DIR */
    const char *needle;   /* what the error must say */
} regression;

static const regression REGRESSIONS[] = {
    /* cJSON decoded \u0000 into a NUL: "a\u0000b" loaded as "a", and so on */
    {"st-nul-escape-in-name.safetensors", "header holds a \\u0000 escape"},
    {"st-nul-escape-in-metadata-key.safetensors", "header holds a \\u0000 escape"},
    {"st-nul-escape-in-metadata-value.safetensors", "header holds a \\u0000 escape"},
    {"index-nul-in-shard-name.index.json", "holds a \\u0000 escape"},
    /* accepted; tl_st_tensor then failed naming no file (strides past int64) */
    {"st-zero-dim-stride-overflow.safetensors",
     "shape[2] = 9007199254740992 makes the shape too large"},
    {"st-shape-product-wraps-64-bits.safetensors",
     "shape[1] = 9007199254740992 makes the shape too large"},
    {"st-offsets-near-2-64.safetensors", "must be two integers from 0 to 2^53"},
    {"st-header-length-2-64.safetensors", "header length 18446744073709551615 is over the"},
    /* cJSON's own depth limit gave a bare "not valid JSON" */
    {"st-deep-nesting.safetensors", "nest more than 127 deep"},
    {"index-deep-nesting.index.json", "nest more than 127 deep"},
    /* strtod took what JSON does not */
    {"st-leading-zero-number.safetensors", "a malformed number"},
    /* the first input fuzz_index crashed on: the loader read a file outside the folder */
    {"index-shard-links-out.index.json", "outside the model folder"},
    {"index-absolute-shard-path.index.json", "not \"/etc/passwd\""},
    {"index-dotdot-shard-path.index.json", "not \"../outside.safetensors\""},
    /* the tensors of one file under two names: the error blamed a tensor */
    {"index-same-shard-two-names.index.json",
     "lists alias.safetensors and model-00001-of-00002.safetensors, which are the same file"},
    /* loaded as a checkpoint of no tensor */
    {"index-empty-weight-map.index.json", "\"weight_map\" is empty"},
    {"index-weight-map-array.index.json", "\"weight_map\" is an array, not an object"},
    /* the first "total_size" won silently */
    {"index-duplicate-metadata-key.index.json", "key \"total_size\" appears twice in \"metadata\""},
    {"index-empty.index.json", "is empty (an interrupted download?"},
};
#define N_REGRESSIONS (int)(sizeof REGRESSIONS / sizeof REGRESSIONS[0])

static bool is_index(const char *file) {
    size_t n = strlen(file), k = strlen(".index.json");
    return n >= k && strcmp(file + n - k, ".index.json") == 0;
}

START_TEST(test_each_regression_input_is_refused_with_its_reason)
{
    for (int i = 0; i < N_REGRESSIONS; i++) {
        const regression *r = &REGRESSIONS[i];
        const char *path = in_dir(REGRESSIONS_DIR, r->file);
        if (is_index(r->file)) {
            size_t n;
            unsigned char *bytes = read_all(path, &n);
            model_dir_make();
            model_dir_write_index(bytes, n);
            free(bytes);
            assert_fails_naming(tl_checkpoint_load(model_dir, TL_F32), model_index, r->needle);
            model_dir_remove();
        } else {
            assert_fails_naming(tl_st_open(path), path, r->needle);
            assert_fails_naming(tl_checkpoint_open(path), path, r->needle);
        }
    }
}
END_TEST

START_TEST(test_every_regression_file_has_a_row)
{
    DIR *d = opendir(REGRESSIONS_DIR);
    ck_assert_msg(d != NULL, "cannot list %s", REGRESSIONS_DIR);
    int files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        files++;
        bool listed = false;
        for (int i = 0; i < N_REGRESSIONS && !listed; i++)
            listed = strcmp(REGRESSIONS[i].file, e->d_name) == 0;
        ck_assert_msg(listed, "%s/%s has no row in REGRESSIONS: add the error it must give",
                      REGRESSIONS_DIR, e->d_name);
    }
    closedir(d);
    ck_assert_int_eq(files, N_REGRESSIONS);
}
END_TEST
