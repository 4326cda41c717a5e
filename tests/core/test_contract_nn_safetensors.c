/* nn.h and safetensors.h keep their promises: every "Errors" clause quoted
 * in the two headers gives the failure value and the message quoted (issue 7,
 * item 5); the format rules of the reader are test_safetensors.c's, the
 * index rules test_checkpoint.c's. Out-of-memory clauses are not provoked. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/safetensors.h"
#include "tinyllm/testing.h"
#include "st_test_util.h"

#define assert_status(expr, needle)                                                     \
    do {                                                                                \
        tl_clear_error();                                                               \
        long long s_ = (long long)(expr);                                               \
        const char *e_ = tl_error();                                                    \
        ck_assert_msg(s_ == -1, "%s returned %lld; expected -1 and '%s'", #expr, s_, needle); \
        ck_assert_msg(e_ && strstr(e_, needle), "%s failed with '%s'; expected '%s'",   \
                      #expr, e_ ? e_ : "(no message)", needle);                         \
    } while (0)

START_TEST(module_tree_errors)
{
    tl_module *root = tl_module_new(NULL);
    ck_assert_str_eq(tl_module_type(root), "Module");
    ck_assert_ptr_null(tl_module_type(NULL));
    tl_module *q = tl_module_add(root, "q", tl_linear_new(2, 2, false, NULL));
    tl_assert_error(tl_module_add(root, "q", NULL), "tl_module_add: child 'q' is NULL");
    tl_module *other = tl_module_new("Other");
    tl_assert_error(tl_module_add(other, "again", q), "tl_module_add: Linear 'q' is already part "
                                                      "of a module tree; a module has one parent");
    ck_assert_ptr_eq(tl_module_child(root, "q"), q);   /* left where it was */
    tl_assert_error(tl_module_add(NULL, "q", tl_module_new("X")),
                    "tl_module_add: parent module is NULL (adding 'q')");
    tl_assert_error(tl_module_add(root, "", tl_module_new("X")),
                    "tl_module_add: the name is empty; give every parameter and child a name");
    tl_assert_error(tl_module_add(root, NULL, tl_module_new("X")), "tl_module_add: the name is "
                                                                   "NULL");
    tl_assert_error(tl_module_add(root, "a.b", tl_module_new("X")),
                    "tl_module_add: the name 'a.b' contains '.', which separates the parts of a "
                    "dotted path");
    tl_assert_error(tl_module_add(root, "q", tl_module_new("X")),
                    "tl_module_add: Module '(root)' already has a child named 'q'; names must "
                    "be unique");
    tl_assert_error(tl_module_child(NULL, "q"), "tl_module_child: module is NULL");
    tl_assert_error(tl_module_child(root, NULL), "tl_module_child: name is NULL");
    tl_assert_error(tl_module_child(root, "x"), "tl_module_child: Module '(root)' has no child "
                                                "'x'");
    tl_assert_error(tl_module_param_new(NULL, "w", TL_SHAPE(1)),
                    "tl_module_param_new: module is NULL (parameter 'w')");
    tl_assert_error(tl_module_param_new(root, "q", TL_SHAPE(1)),
                    "tl_module_param_new: Module '(root)' already has a child named 'q'");
    tl_assert_error(tl_module_param_new(root, "w", TL_SHAPE(-1)),
                    "tl_module_param_new: parameter 'w' of Module '(root)': tensor: size -1 at "
                    "axis 0 is negative");
    assert_status(tl_module_param_share(root, "w", NULL),
                  "tl_module_param_share: tensor is NULL (sharing as 'w')");
    assert_status(tl_module_param_share(root, "w", tl_ones(TL_F32, TL_SHAPE(1))),
                  "tl_module_param_share: the tensor shared as 'w' lives in a scope and would be "
                  "freed under the module");
    tl_assert_error(tl_module_param(root, NULL), "tl_module_param: name is NULL");
    tl_assert_error(tl_module_param(root, "x"), "tl_module_param: Module '(root)' has no "
                                                "parameter 'x'");
    tl_clear_error();
    tl_state_dict sd = tl_module_state_dict(NULL);
    ck_assert_int_eq(sd.count, 0);
    ck_assert_str_eq(tl_error(), "tl_module_state_dict: module is NULL");
    assert_status(tl_module_param_count(NULL), "tl_module_param_count: module is NULL");
    tl_state_dict_free(NULL);
    tl_module_free(NULL);
    tl_module_free(other);
    tl_module_free(root);
}
END_TEST

START_TEST(load_state_dict_errors)
{
    tl_module *m = tl_module_new("M");
    tl_tensor *w = tl_module_param_new(m, "x", TL_SHAPE(4));
    tl_state_dict empty = {NULL, 0};
    assert_status(tl_module_load_state_dict(NULL, &empty, true),
                  "load_state_dict: the module is NULL");
    assert_status(tl_module_load_state_dict(m, NULL, true),
                  "load_state_dict: the state dict is NULL");
    tl_named_tensor items[1] = {{"x", NULL, false}};
    tl_state_dict sd = {items, 1};
    assert_status(tl_module_load_state_dict(m, &sd, true), "x is NULL in the state dict");
    items[0].tensor = tl_arange(0, 4);
    assert_status(tl_module_load_state_dict(m, &sd, true),
                  "x is I64 in the checkpoint; a parameter needs a float dtype");
    items[0].tensor = tl_ones(TL_F32, TL_SHAPE(3));
    assert_status(tl_module_load_state_dict(m, &sd, true),
                  "size mismatch for x: the checkpoint has shape [3], the module [4]");
    /* A read-only (adopted) parameter refuses the copy. */
    float backing[4] = {0};
    tl_tensor *ro = tl_tensor_wrap_external(backing, TL_F32, TL_SHAPE(4));
    tl_module *m2 = tl_module_new("M");
    tl_module_param_share(m2, "x", ro);
    items[0].tensor = tl_ones(TL_F32, TL_SHAPE(4));
    assert_status(tl_module_load_state_dict(m2, &sd, true),
                  "load_state_dict: copying x: tl_copy_into: tensor is read-only");
    ck_assert_int_eq(tl_module_load_state_dict(m, &sd, true), 0);
    ck_assert_double_eq(tl_item_at(w, 3), 1.0);
    tl_module_free(m2);
    tl_tensor_free(ro);
    tl_module_free(m);
    tl_clear_error();
}
END_TEST

START_TEST(module_list_and_layer_errors)
{
    tl_module *list = tl_module_list_new(), *lin = tl_linear_new(2, 3, true, NULL);
    tl_assert_error(tl_module_list_append(lin, tl_module_new("X")),
                    "tl_module_list_append: expected a ModuleList, got Linear");
    assert_status(tl_module_list_len(NULL), "tl_module_list_len: expected a ModuleList, got "
                                            "NULL");
    tl_module_list_append(list, tl_module_new("A"));
    tl_module_list_append(list, tl_module_new("B"));
    tl_assert_error(tl_module_list_at(list, 3),
                    "tl_module_list_at: index 3 out of range for a ModuleList of length 2");
    tl_assert_error(tl_module_list_at(lin, 0), "tl_module_list_at: expected a ModuleList, got "
                                               "Linear");
    tl_assert_error(tl_linear_new(0, 3, false, NULL),
                    "tl_linear_new: in_features and out_features must be positive, got 0 and 3");
    tl_assert_error(tl_embedding_new(0, 4, NULL),
                    "tl_embedding_new: num_embeddings and dim must be positive, got 0 and 4");
    tl_module *emb = tl_embedding_new(4, 2, NULL);
    tl_assert_error(tl_linear_forward(emb, tl_ones(TL_F32, TL_SHAPE(2))),
                    "tl_linear_forward: expected a Linear module, got Embedding");
    tl_assert_error(tl_embedding_forward(lin, tl_arange(0, 2)),
                    "tl_embedding_forward: expected an Embedding module, got Linear");
    tl_assert_error(tl_linear_forward(NULL, tl_ones(TL_F32, TL_SHAPE(2))),
                    "tl_linear_forward: module is NULL");
    tl_fail("cause");
    ck_assert_ptr_null(tl_embedding_forward(NULL, tl_arange(0, 2)));
    ck_assert_str_eq(tl_error(), "cause");
    tl_assert_error(tl_linear_forward(lin, tl_ones(TL_F32, TL_SHAPE(5))),
                    "linear: input [5] must end with in=2");
    tl_module_free(emb);
    tl_module_free(lin);
    tl_module_free(list);
    tl_clear_error();
}
END_TEST

START_TEST(reader_and_checkpoint_argument_errors)
{
    tl_assert_error(tl_st_open(NULL), "tl_st_open: path is NULL");
    const char *golden = tl_fixture_path("core/st_golden.safetensors");
    tl_st_file *f = tl_st_open(golden);
    tl_assert_ok(f);
    tl_assert_error(tl_st_find(f, NULL), "tl_st_find: name is NULL");
    tl_assert_error(tl_st_find(NULL, "x"), "tl_st_find: file is NULL");
    tl_assert_error(tl_st_find(f, "x"), "no tensor named \"x\" (the file holds");
    tl_assert_error(tl_st_tensor(f, NULL, TL_F32), "tl_st_tensor: file or entry is NULL");
    tl_assert_error(tl_st_tensor(f, &f->entries[0], (tl_dtype)9),
                    "tl_st_tensor: want is 9, not a tl_dtype");
    ck_assert_str_eq(tl_st_dtype_name(TL_ST_F8_E5M2), "F8_E5M2");
    tl_st_close(f);
    tl_st_close(NULL);
    tl_assert_error(tl_checkpoint_load(golden, TL_I64),
                    "tl_checkpoint_load: want is I64; floats load as TL_F32 or TL_BF16");
    tl_assert_error(tl_checkpoint_load_rounded(golden, TL_I32),
                    "tl_checkpoint_load_rounded: want is I32");
    tl_assert_error(tl_checkpoint_open(NULL), "tl_checkpoint_open: path is NULL");
    char *dir = temp_dir();
    tl_assert_error(tl_checkpoint_load(dir, TL_F32), "holds neither model.safetensors nor "
                                                     "model.safetensors.index.json");
    remove_tree(dir);
    tl_checkpoint *c = tl_checkpoint_load(golden, TL_F32);
    tl_assert_error(tl_checkpoint_get(c, NULL), "tl_checkpoint_get: name is NULL");
    tl_assert_error(tl_checkpoint_get(NULL, "x"), "tl_checkpoint_get: checkpoint is NULL");
    tl_assert_error(tl_checkpoint_get(c, "x"), "checkpoint: no tensor named \"x\" among its");
    tl_checkpoint_free(c);
    tl_checkpoint_free(NULL);
}
END_TEST

/* With want BF16, load refuses F32 (lossy); load_rounded rounds it, nearest
 * even, and the result is the BF16 values torch gives. */
START_TEST(load_rounded_rounds_f32_to_bf16)
{
    char *dir = temp_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    /* 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even gives 1; 1 + 3 * 2^-8 gives 1 + 2^-6. */
    tl_tensor *w = tl_from_f32((const float[]){1.00390625f, 1.01171875f, -3.5f, 1e-3f},
                               TL_SHAPE(4));
    tl_state_dict sd = {(tl_named_tensor[]){{"w", w, false}}, 1};
    ck_assert_int_eq(tl_st_save(path, &sd, TL_F32, NULL, NULL, 0), 0);
    tl_assert_error(tl_checkpoint_load(dir, TL_BF16), "cannot become BF16");
    tl_checkpoint *c = tl_checkpoint_load_rounded(dir, TL_BF16);
    tl_assert_ok(c);
    tl_tensor *b = tl_checkpoint_get(c, "w");
    ck_assert_int_eq(b->dtype, TL_BF16);
    const uint16_t *bits = tl_data(b);
    ck_assert_uint_eq(bits[0], 0x3F80);
    ck_assert_uint_eq(bits[1], 0x3F82);
    ck_assert_uint_eq(bits[2], 0xC060);
    ck_assert_double_eq(tl_item_at(b, 3), tl_item_at(tl_cast(tl_cast(w, TL_BF16), TL_F32), 3));
    tl_checkpoint_free(c);
    remove_tree(dir);
}
END_TEST

START_TEST(writer_argument_errors)
{
    tl_tensor *w = tl_ones(TL_F32, TL_SHAPE(2));
    tl_state_dict sd = {(tl_named_tensor[]){{"w", w, false}}, 1};
    assert_status(tl_st_save(NULL, &sd, -1, NULL, NULL, 0), "tl_st_save: path or state dict is "
                                                            "NULL");
    assert_status(tl_st_save("/tmp/x.safetensors", &sd, 9, NULL, NULL, 0),
                  "save_dtype is 9; use TL_F32, TL_BF16, or -1");
    const char *keys[] = {"k", "k"}, *values[] = {"1", "2"};
    assert_status(tl_st_save("/tmp/x.safetensors", &sd, -1, keys, values, 2),
                  "metadata key \"k\" given twice");
    tl_state_dict twice = {(tl_named_tensor[]){{"w", w, false}, {"w", w, false}}, 2};
    assert_status(tl_st_save("/tmp/x.safetensors", &twice, -1, NULL, NULL, 0),
                  "the state dict names \"w\" twice");
    assert_status(tl_st_save("/no/such/folder/x.safetensors", &sd, -1, NULL, NULL, 0),
                  "safetensors: cannot create a file beside /no/such/folder/x.safetensors");
    assert_status(tl_st_save_sharded(NULL, &sd, -1, 100), "tl_st_save_sharded: folder or state "
                                                          "dict is NULL");
    assert_status(tl_st_save_sharded("/tmp/tl-unused", &sd, -1, 0), "max_shard_bytes is 0");
    assert_status(tl_st_save_sharded("/proc/no/such", &sd, -1, 100),
                  "safetensors: cannot create the folder /proc/no/such");
    tl_clear_error();
}
END_TEST
