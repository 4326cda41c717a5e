/* Checkpoints (L0.6): one file or the shards of an index, loaded as one
 * dict; sharded saving; every way an index can disagree with its shards. */
#include <check.h>
#include "tinyllm/testing.h"
#include "tinyllm/safetensors.h"
#include "st_test_util.h"

/* Five owned F32 tensors of 16, 40, 12, 400 and 4 bytes, each filled with
 * its own index, plus a shared slot (a tied head). */
typedef struct {
    tl_named_tensor items[6];
    tl_state_dict sd;
} model;

static void make_model(model *m) {
    static const char *names[] = {"model.embed_tokens.weight", "model.layers.0.w",
                                  "model.layers.1.w", "model.big", "model.norm.weight"};
    static const int64_t sizes[] = {4, 10, 3, 100, 1};
    for (int i = 0; i < 5; i++) {
        tl_tensor *t = tl_tensor_new_owned(TL_F32, 1, &sizes[i]);
        float *v = tl_f32(t);
        for (int64_t k = 0; k < sizes[i]; k++) v[k] = (float)(i * 1000 + k);
        m->items[i] = (tl_named_tensor){(char *)names[i], t, false};
    }
    m->items[5] = (tl_named_tensor){"lm_head.weight", m->items[0].tensor, true};
    m->sd = (tl_state_dict){m->items, 6};
}

static void free_model(model *m) {
    for (int i = 0; i < 5; i++) tl_tensor_free(m->items[i].tensor);
}

static void assert_same_values(const tl_tensor *a, const tl_tensor *b) {
    ck_assert(tl_same_shape(a, b));
    ck_assert(memcmp(tl_data(a), tl_data(b), (size_t)tl_numel(a) * tl_dtype_size(a->dtype)) == 0);
}

static void write_text(const char *path, const char *text) {
    write_bytes(path, text, strlen(text));
}

/* A one-tensor shard file named name in dir. */
static void write_shard(const char *dir, const char *name, const char *tensor) {
    char header[256];
    snprintf(header, sizeof header,
             "{\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", tensor);
    write_st(in_dir(dir, name), header, 4);
}

/* ---- sharded saving and loading ----------------------------------------------- */

START_TEST(test_sharded_save_then_load_round_trips)
{
    model m;
    make_model(&m);
    char *d = temp_dir();
    /* 64 bytes per shard: {16, 40} {12} {400, alone} {4} */
    ck_assert_int_eq(tl_st_save_sharded(d, &m.sd, -1, 64), 0);
    ck_assert(file_exists(in_dir(d, "model-00001-of-00004.safetensors")));
    ck_assert(file_exists(in_dir(d, "model-00004-of-00004.safetensors")));
    ck_assert(!file_exists(in_dir(d, "model-00005-of-00004.safetensors")));
    ck_assert(!file_exists(in_dir(d, "model.safetensors")));
    ck_assert(!temp_left(d, "model.safetensors.index.json"));

    tl_checkpoint *c = tl_checkpoint_load(d, TL_F32);
    tl_assert_ok(c);
    ck_assert_int_eq(c->file_count, 4);
    ck_assert_int_eq(c->dict.count, 5);   /* the shared slot is not stored */
    for (int i = 0; i < 5; i++) {
        ck_assert_str_eq(c->dict.items[i].name, m.items[i].name);   /* shards in order */
        assert_same_values(c->dict.items[i].tensor, m.items[i].tensor);
    }
    ck_assert_ptr_eq(tl_checkpoint_get(c, "model.big"), c->dict.items[3].tensor);
    ck_assert_int_eq(c->files[2]->count, 1);   /* the big tensor sits alone */
    bool has_total = false;
    for (int i = 0; i < c->meta_count; i++)
        if (strcmp(c->meta_keys[i], "total_size") == 0) {
            ck_assert_str_eq(c->meta_values[i], "472");
            has_total = true;
        }
    ck_assert(has_total);
    tl_checkpoint_free(c);
    free_model(&m);
    remove_tree(d);
}
END_TEST

START_TEST(test_sharded_index_is_hf_format)
{
    model m;
    make_model(&m);
    char *d = temp_dir();
    ck_assert_int_eq(tl_st_save_sharded(d, &m.sd, -1, 64), 0);
    size_t n;
    char *text = (char *)read_all(in_dir(d, "model.safetensors.index.json"), &n);
    text = realloc(text, n + 1);
    text[n] = '\0';
    const char *want =
        "{\n  \"metadata\": {\n    \"total_size\": 472\n  },\n  \"weight_map\": {\n"
        "    \"model.big\": \"model-00003-of-00004.safetensors\",\n"
        "    \"model.embed_tokens.weight\": \"model-00001-of-00004.safetensors\",\n"
        "    \"model.layers.0.w\": \"model-00001-of-00004.safetensors\",\n"
        "    \"model.layers.1.w\": \"model-00002-of-00004.safetensors\",\n"
        "    \"model.norm.weight\": \"model-00004-of-00004.safetensors\"\n  }\n}\n";
    ck_assert_str_eq(text, want);
    free(text);
    free_model(&m);
    remove_tree(d);
}
END_TEST

START_TEST(test_sharded_save_that_fits_writes_one_file)
{
    model m;
    make_model(&m);
    char *d = temp_dir();
    ck_assert_int_eq(tl_st_save_sharded(d, &m.sd, TL_BF16, 1 << 20), 0);
    ck_assert(file_exists(in_dir(d, "model.safetensors")));
    ck_assert(!file_exists(in_dir(d, "model.safetensors.index.json")));
    tl_checkpoint *c = tl_checkpoint_load(in_dir(d, "model.safetensors"), TL_BF16);
    tl_assert_ok(c);
    ck_assert_int_eq(c->dict.count, 5);
    for (int i = 0; i < c->dict.count; i++)
        ck_assert_int_eq(c->dict.items[i].tensor->dtype, TL_BF16);
    /* 3099 needs 12 significant bits; bf16 keeps 8: round to nearest, 3104 */
    ck_assert(tl_item_at(tl_checkpoint_get(c, "model.big"), 99) == 3104.0);
    ck_assert(tl_item_at(tl_checkpoint_get(c, "model.big"), 8) == 3008.0);
    tl_checkpoint_free(c);
    free_model(&m);
    remove_tree(d);
}
END_TEST

START_TEST(test_sharded_save_creates_the_folder_and_rejects_zero_limit)
{
    model m;
    make_model(&m);
    char *d = temp_dir();
    char sub[512];
    snprintf(sub, sizeof sub, "%s/new", d);
    ck_assert_int_eq(tl_st_save_sharded(sub, &m.sd, -1, 100), 0);
    ck_assert(file_exists(in_dir(sub, "model.safetensors.index.json")));
    tl_clear_error();
    ck_assert_int_eq(tl_st_save_sharded(sub, &m.sd, -1, 0), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "max_shard_bytes is 0"));
    tl_clear_error();
    free_model(&m);
    remove_tree(d);
}
END_TEST

/* ---- loading -------------------------------------------------------------------- */

START_TEST(test_load_single_file_is_zero_copy_in_its_dtype)
{
    const char *path = fixture("core/st_golden.safetensors");
    tl_checkpoint *c = tl_checkpoint_load(path, TL_F32);
    tl_assert_ok(c);
    ck_assert_int_eq(c->file_count, 1);
    ck_assert_int_eq(c->dict.count, 8);
    ck_assert_str_eq(c->dict.items[0].name, "z.ids");   /* file order */
    const tl_st_file *f = c->files[0];
    const unsigned char *w = tl_data(tl_checkpoint_get(c, "b.weight"));
    ck_assert(w >= f->map && w < f->map + f->map_size);
    const unsigned char *emb = tl_data(tl_checkpoint_get(c, "emb"));   /* BF16 -> F32: a copy */
    ck_assert(emb < f->map || emb >= f->map + f->map_size);
    ck_assert_int_eq(tl_checkpoint_get(c, "emb")->dtype, TL_F32);
    ck_assert_int_eq(tl_checkpoint_get(c, "z.ids")->dtype, TL_I64);    /* integers as they are */
    ck_assert_int_eq(tl_checkpoint_get(c, "a.count")->dtype, TL_I32);
    ck_assert_int_eq(tl_checkpoint_get(c, "mask")->dtype, TL_BOOL);
    ck_assert_int_eq(c->meta_count, 1);
    ck_assert_str_eq(c->meta_values[0], "pt");
    tl_assert_error(tl_checkpoint_get(c, "lm_head.weight"), "no tensor named \"lm_head.weight\"");
    tl_checkpoint_free(c);
}
END_TEST

START_TEST(test_load_bf16_refuses_f32_tensors)
{
    const char *path = fixture("core/st_golden.safetensors");
    assert_fails_naming(tl_checkpoint_load(path, TL_BF16), path,
                        "is stored as F32, which cannot become BF16");
    tl_assert_error(tl_checkpoint_load(path, TL_I64), "floats load as TL_F32 or TL_BF16");
}
END_TEST

START_TEST(test_open_validates_without_making_tensors)
{
    tl_checkpoint *c = tl_checkpoint_open(fixture("core/st_golden.safetensors"));
    tl_assert_ok(c);
    ck_assert_int_eq(c->dict.count, 0);
    ck_assert_int_eq(c->file_count, 1);
    ck_assert_int_eq(c->files[0]->count, 8);
    tl_checkpoint_free(c);
}
END_TEST

START_TEST(test_folder_prefers_model_safetensors_and_explains_when_empty)
{
    char *d = temp_dir();
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), d,
                        "holds neither model.safetensors nor model.safetensors.index.json");
    write_shard(d, "model.safetensors", "single");
    write_text(in_dir(d, "model.safetensors.index.json"), "not even json");
    tl_checkpoint *c = tl_checkpoint_load(d, TL_F32);
    tl_assert_ok(c);
    ck_assert_str_eq(c->dict.items[0].name, "single");
    tl_checkpoint_free(c);
    const char *missing = in_dir(d, "nope.safetensors");
    assert_fails_naming(tl_checkpoint_load(missing, TL_F32), missing, "does not exist");
    remove_tree(d);
}
END_TEST

/* ---- an index that disagrees with its shards ----------------------------------------- */

#define INDEX(map) "{\"metadata\":{\"total_size\":8},\"weight_map\":{" map "}}"

START_TEST(test_index_with_tensor_in_the_wrong_shard)
{
    char *d = temp_dir();
    write_shard(d, "s1.safetensors", "a");
    write_shard(d, "s2.safetensors", "b");
    const char *index = in_dir(d, "model.safetensors.index.json");
    write_text(index, INDEX("\"a\":\"s2.safetensors\",\"b\":\"s1.safetensors\""));
    assert_fails_naming(tl_checkpoint_load(index, TL_F32), "s1.safetensors",
                        "tensor \"a\" is in");
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), "maps it to s2.safetensors",
                        "must live in exactly the shard the index names");
    remove_tree(d);
}
END_TEST

START_TEST(test_index_with_tensor_missing_from_its_shard)
{
    char *d = temp_dir();
    write_shard(d, "s1.safetensors", "a");
    const char *index = in_dir(d, "model.safetensors.index.json");
    write_text(index, INDEX("\"a\":\"s1.safetensors\",\"gone\":\"s1.safetensors\""));
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), index,
                        "maps tensor \"gone\" to s1.safetensors, but that shard does not hold it");
    remove_tree(d);
}
END_TEST

START_TEST(test_index_with_unlisted_or_duplicated_tensor)
{
    char *d = temp_dir();
    write_shard(d, "s1.safetensors", "a");
    write_shard(d, "s2.safetensors", "a");   /* a second copy of "a" */
    const char *index = in_dir(d, "model.safetensors.index.json");
    write_text(index, INDEX("\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\""));
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), "s2.safetensors",
                        "tensor \"a\" is in");
    write_shard(d, "s2.safetensors", "stray");
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), "s2.safetensors",
                        "holds tensor \"stray\", which");
    remove_tree(d);
}
END_TEST

START_TEST(test_index_json_errors)
{
    char *d = temp_dir();
    write_shard(d, "s1.safetensors", "a");
    const char *index = in_dir(d, "model.safetensors.index.json");
    write_text(index, "{\"metadata\":{}}");
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), index, "has no \"weight_map\"");
    write_text(index, "{\"weight_map\":{\"a\":\"s1.safetensors\",\"a\":\"s1.safetensors\"}}");
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), index, "key \"a\" appears twice");
    write_text(index, "{\"weight_map\":{\"a\":\"../s1.safetensors\"}}");
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), index,
                        "weight_map[\"a\"] must be the name of a shard file in the index's folder");
    write_text(index, "{\"weight_map\":{\"a\":3}}");
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), index, "weight_map[\"a\"] must be the name");
    write_text(index,
               "{\"weight_map\":{\"a\":\"s1.safetensors\"},\"metadata\":{\"total_size\":-1}}");
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), index,
                        "metadata.total_size is not a non-negative integer");
    write_text(index, "{\"weight_map\":{\"a\":\"s1.safetensors\"");
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), index, "is not valid JSON");
    write_text(index, "{\"weight_map\":{\"a\":\"absent.safetensors\"}}");
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), "absent.safetensors", "cannot open");
    write_text(index, "{\"weight_map\":{\"a\":\"s1.safetensors\"}}");   /* no metadata: fine */
    tl_checkpoint *c = tl_checkpoint_load(index, TL_F32);
    tl_assert_ok(c);
    ck_assert_int_eq(c->dict.count, 1);
    tl_checkpoint_free(c);
    remove_tree(d);
}
END_TEST

START_TEST(test_index_structure_errors_say_what_is_wrong)
{
    char *d = temp_dir();
    write_shard(d, "s1.safetensors", "a");
    const char *index = in_dir(d, "model.safetensors.index.json");
    write_text(index, "[1,2]");
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), index,
                        "is an array, not a JSON object (is it a safetensors index?)");
    write_text(index, "{\"weight_map\":[\"s1.safetensors\"]}");
    assert_fails_naming(
        tl_checkpoint_load(d, TL_F32), index,
        "\"weight_map\" is an array, not an object mapping tensor names to shard files");
    write_text(index, "{\"weight_map\":{}}");
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), index,
                        "\"weight_map\" is empty, so the index lists no tensor");
    write_text(index, "{\"metadata\":{\"k\":1,\"k\":2},\"weight_map\":{\"a\":\"s1.safetensors\"}}");
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), index,
                        "key \"k\" appears twice in \"metadata\"");
    write_text(index, "{\"metadata\":[],\"weight_map\":{\"a\":\"s1.safetensors\"}}");
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), index,
                        "\"metadata\" is an array, not an object");
    write_text(index, "{\"weight_map\":{\"a\":\"/etc/passwd\"}}");
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), index,
                        "weight_map[\"a\"] must be the name of a shard file in the index's folder "
                        "(no '/', not \"..\"), not \"/etc/passwd\"");
    write_text(index, "{\"weight_map\":{\"a\":null}}");
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), index, "not null");
    /* "s1.safetensors\u0000junk" would silently become "s1.safetensors" */
    write_text(index, "{\"weight_map\":{\"a\":\"s1.safetensors\\u0000junk\"}}");
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), index, "\\u0000 escape");
    write_text(index, "");
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), index, "is empty (an interrupted download?");
    remove_tree(d);
}
END_TEST

/* Shard names have no '/', but a symlink in the folder can point anywhere:
 * a hostile index must not make the loader read files outside it. */
START_TEST(test_index_refuses_a_shard_that_links_out_of_the_folder)
{
    char *root = temp_dir();
    const char *d = strdup(in_dir(root, "model"));
    ck_assert_int_eq(mkdir(d, 0700), 0);
    write_shard(root, "outside.safetensors", "a");
    ck_assert_int_eq(symlink("../outside.safetensors", in_dir(d, "s1.safetensors")), 0);
    const char *index = in_dir(d, "model.safetensors.index.json");
    write_text(index, INDEX("\"a\":\"s1.safetensors\""));
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), index,
                        "shard s1.safetensors is a symlink to ");
    assert_fails_naming(tl_checkpoint_open(index), "outside.safetensors",
                        "outside the model folder");
    /* a link that stays inside the folder is fine */
    remove(in_dir(d, "s1.safetensors"));
    write_shard(d, "real.safetensors", "a");
    ck_assert_int_eq(symlink("real.safetensors", in_dir(d, "s1.safetensors")), 0);
    tl_checkpoint *c = tl_checkpoint_load(d, TL_F32);
    tl_assert_ok(c);
    tl_checkpoint_free(c);
    free((char *)d);
    remove_tree(root);
}
END_TEST

/* The Hugging Face cache keeps a snapshot's files as symlinks into the
 * repo's blobs folder: models--org--name/snapshots/REV/x -> ../../blobs/HASH. */
START_TEST(test_index_follows_links_into_the_hf_cache_blobs)
{
    char *root = temp_dir();
    char blobs[256], snap[256];
    snprintf(blobs, sizeof blobs, "%s/blobs", root);
    snprintf(snap, sizeof snap, "%s/snapshots", root);
    ck_assert_int_eq(mkdir(blobs, 0700), 0);
    ck_assert_int_eq(mkdir(snap, 0700), 0);
    strcat(snap, "/abc123");
    ck_assert_int_eq(mkdir(snap, 0700), 0);
    write_shard(blobs, "1111", "a");
    write_text(in_dir(blobs, "2222"), INDEX("\"a\":\"model-00001-of-00001.safetensors\""));
    ck_assert_int_eq(symlink("../../blobs/1111", in_dir(snap, "model-00001-of-00001.safetensors")),
                     0);
    ck_assert_int_eq(symlink("../../blobs/2222", in_dir(snap, "model.safetensors.index.json")), 0);
    tl_checkpoint *c = tl_checkpoint_load(snap, TL_F32);
    tl_assert_ok(c);
    ck_assert_int_eq(c->dict.count, 1);
    tl_checkpoint_free(c);
    /* but not anywhere else from there */
    write_shard(root, "elsewhere.safetensors", "a");
    remove(in_dir(snap, "model-00001-of-00001.safetensors"));
    ck_assert_int_eq(symlink("../../elsewhere.safetensors",
                             in_dir(snap, "model-00001-of-00001.safetensors")), 0);
    assert_fails_naming(tl_checkpoint_load(snap, TL_F32), "elsewhere.safetensors",
                        "outside the model folder");
    remove_tree(root);
}
END_TEST

START_TEST(test_index_refuses_one_shard_under_two_names)
{
    char *d = temp_dir();
    write_st(in_dir(d, "s1.safetensors"),
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
             "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8);
    ck_assert_int_eq(symlink("s1.safetensors", in_dir(d, "alias.safetensors")), 0);
    const char *index = in_dir(d, "model.safetensors.index.json");
    write_text(index, INDEX("\"a\":\"s1.safetensors\",\"b\":\"alias.safetensors\""));
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), index,
                        "lists alias.safetensors and s1.safetensors, which are the same file");
    ck_assert_int_eq(link(in_dir(d, "s1.safetensors"), in_dir(d, "hard.safetensors")), 0);
    write_text(index, INDEX("\"a\":\"s1.safetensors\",\"b\":\"hard.safetensors\""));
    assert_fails_naming(tl_checkpoint_load(d, TL_F32), index, "which are the same file");
    remove_tree(d);
}
END_TEST

/* Paths that are not a checkpoint: each refused at once, with the reason. */
START_TEST(test_open_refuses_special_paths_with_the_reason)
{
    char *d = temp_dir();
    const char *loop = in_dir(d, "loop");
    ck_assert_int_eq(symlink("loop", loop), 0);
    assert_fails_naming(tl_checkpoint_open(loop), loop, "cannot be opened: a loop of symlinks");
    const char *dangling = in_dir(d, "dangling.safetensors");
    ck_assert_int_eq(symlink("gone", dangling), 0);
    assert_fails_naming(tl_checkpoint_open(dangling), dangling,
                        "is a symlink to a file that does not exist");
    /* a FIFO index would block a plain open() forever */
    const char *fifo = in_dir(d, "model.safetensors.index.json");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    assert_fails_naming(tl_checkpoint_open(d), fifo, "is a FIFO (named pipe), not a regular file");
    remove(fifo);
    /* a broken model.safetensors link is reported, not skipped */
    ck_assert_int_eq(symlink("gone", in_dir(d, "model.safetensors")), 0);
    assert_fails_naming(tl_checkpoint_open(d), "model.safetensors",
                        "cannot open: it is a symlink to a file that does not exist");
    remove(in_dir(d, "model.safetensors"));
    remove(dangling);
    remove(loop);
    write_shard(d, "weights.safetensors", "a");
    assert_fails_naming(tl_checkpoint_open(d), d,
                        "holds neither model.safetensors nor model.safetensors.index.json but does "
                        "hold weights.safetensors: pass that file itself");
    remove_tree(d);
}
END_TEST

START_TEST(test_each_shard_is_opened_once)
{
    char *d = temp_dir();
    write_st(in_dir(d, "s1.safetensors"),
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
             "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8);
    write_shard(d, "s2.safetensors", "c");
    write_text(in_dir(d, "model.safetensors.index.json"),
               INDEX("\"c\":\"s2.safetensors\",\"b\":\"s1.safetensors\",\"a\":\"s1.safetensors\""));
    tl_checkpoint *c = tl_checkpoint_load(d, TL_F32);
    tl_assert_ok(c);
    ck_assert_int_eq(c->file_count, 2);
    ck_assert_str_eq(c->dict.items[0].name, "a");
    ck_assert_str_eq(c->dict.items[2].name, "c");
    tl_checkpoint_free(c);
    remove_tree(d);
}
END_TEST

START_TEST(test_resaving_in_the_other_layout_removes_the_stale_entry_file)
{
    model m;
    make_model(&m);
    char *d = temp_dir();
    ck_assert_int_eq(tl_st_save_sharded(d, &m.sd, -1, 1 << 20), 0);   /* one file */
    ck_assert_int_eq(tl_st_save_sharded(d, &m.sd, -1, 64), 0);        /* now shards */
    ck_assert(!file_exists(in_dir(d, "model.safetensors")));
    tl_checkpoint *c = tl_checkpoint_load(d, TL_F32);
    tl_assert_ok(c);
    ck_assert_int_eq(c->file_count, 4);
    tl_checkpoint_free(c);
    ck_assert_int_eq(tl_st_save_sharded(d, &m.sd, -1, 1 << 20), 0);   /* back to one file */
    ck_assert(!file_exists(in_dir(d, "model.safetensors.index.json")));
    free_model(&m);
    remove_tree(d);
}
END_TEST

START_TEST(test_loads_a_sharded_checkpoint_laid_out_by_transformers)
{
    tl_checkpoint *c = tl_checkpoint_load(fixture("core/sharded"), TL_F32);
    tl_assert_ok(c);
    ck_assert_int_eq(c->file_count, 2);
    ck_assert_int_eq(c->dict.count, 3);
    ck_assert_str_eq(c->dict.items[0].name, "model.embed_tokens.weight");
    ck_assert_str_eq(c->dict.items[2].name, "lm_head.weight");
    ck_assert_int_eq(tl_checkpoint_get(c, "lm_head.weight")->dtype, TL_F32);   /* from BF16 */
    ck_assert(tl_item_at(tl_checkpoint_get(c, "model.norm.weight"), 1) == 1.0);
    ck_assert_int_eq(c->meta_count, 2);
    ck_assert_str_eq(c->meta_keys[0], "total_size");
    ck_assert_str_eq(c->meta_values[0], "56");
    ck_assert_str_eq(c->meta_keys[1], "format");
    tl_checkpoint_free(c);
}
END_TEST
