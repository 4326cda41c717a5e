/* L7.9 saving (section 2.3), properties: a checkpoint saved in F32 and loaded
 * again is bit for bit the model (and its logits); saved in BF16 every weight
 * is its value rounded to nearest even, and loads as BF16; saved in shards it
 * writes model-0000k-of-0000n.safetensors and model.safetensors.index.json and
 * loads the same; a tied model writes no lm_head.weight; config.json reads back
 * as the model's config. */
#include <dirent.h>
#include <ftw.h>
#include <unistd.h>
#include "llama_fixture.h"

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}

static char *scratch_dir(void) {
    char *dir = strdup("/tmp/tl-llama-save-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    return dir;
}

static void remove_dir(char *dir) {
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

static bool exists(const char *dir, const char *name) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* Whether dir holds any name with ".tmp" in it: a temporary file a save left. */
static bool temp_left(const char *dir) {
    DIR *d = opendir(dir);
    bool found = false;
    for (struct dirent *e; d && !found && (e = readdir(d));) found = strstr(e->d_name, ".tmp");
    if (d) closedir(d);
    return found;
}

/* Every parameter of a equals b's, within rtol/atol (0, 0: bit for bit). */
static void assert_same_weights(const LlamaForCausalLM *a, const LlamaForCausalLM *b, bool bf16,
                                const char *what) {
    tl_state_dict sa = tl_module_state_dict(a->module), sb = tl_module_state_dict(b->module);
    ck_assert_int_eq(sa.count, sb.count);
    for (int i = 0; i < sa.count; i++) {
        ck_assert_str_eq(sa.items[i].name, sb.items[i].name);
        tl_tensor *want = bf16 ? tl_cast(sa.items[i].tensor, TL_BF16) : sa.items[i].tensor;
        char msg[768];
        ck_assert_msg(tl_close_report(sb.items[i].tensor, want, 0, 0, msg, sizeof msg),
                      "%s: %s: %s", what, sa.items[i].name, msg);
        if (bf16) ck_assert_int_eq(sb.items[i].tensor->dtype, TL_BF16);
    }
    tl_state_dict_free(&sa);
    tl_state_dict_free(&sb);
}

START_TEST(test_save_load_roundtrip_and_shards)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(LL_ST);
    double rtol = ll_tol("test_save_load_roundtrip_and_shards", "rtol");
    double atol = ll_tol("test_save_load_roundtrip_and_shards", "atol");
    const char *names[3] = {"llama-gqa", "llama-mqa-tied", "deepseek-v3"};
    for (int i = 0; i < 3; i++) {
        LlamaForCausalLM m, f32, bf16, sharded;
        ll_load(&m, names[i]);
        char *dir = scratch_dir(), *dir2 = scratch_dir();
        ck_assert_msg(llama_save_pretrained(&m, dir, TL_F32, 0) == 0, "%s", tl_error());
        ck_assert(exists(dir, "config.json") && exists(dir, "generation_config.json") &&
                  exists(dir, "model.safetensors") && !temp_left(dir));
        ck_assert_int_eq(llama_from_pretrained(&f32, dir, -1), 0);
        assert_same_weights(&m, &f32, false, names[i]);
        tl_tensor *ids = ll_golden(fx, names[i], "ids");
        tl_assert_close(ll_forward(&f32, ids, NULL, NULL), ll_forward(&m, ids, NULL, NULL), 0, 0);
        ck_assert_str_eq(f32.config.torch_dtype, "float32");

        /* The tied head is written once, under the embedding's name. */
        tl_checkpoint *saved = tl_checkpoint_open(dir);
        tl_assert_ok(saved);
        bool has_head = false;
        for (int k = 0; k < saved->files[0]->count; k++)
            has_head |= strcmp(saved->files[0]->entries[k].name, "lm_head.weight") == 0;
        ck_assert_msg(has_head == !m.config.tie_word_embeddings, "%s: lm_head.weight %s saved",
                      names[i], has_head ? "was" : "was not");
        tl_checkpoint_free(saved);

        ck_assert_int_eq(llama_save_pretrained(&m, dir, TL_BF16, 0), 0);   /* over the F32 one */
        ck_assert_int_eq(llama_from_pretrained(&bf16, dir, -1), 0);
        assert_same_weights(&m, &bf16, true, names[i]);
        ck_assert_str_eq(bf16.config.torch_dtype, "bfloat16");

        ck_assert_int_eq(llama_save_pretrained(&m, dir2, TL_F32, 20000), 0);
        ck_assert(exists(dir2, "model.safetensors.index.json") && !exists(dir2,
                                                                           "model.safetensors"));
        tl_checkpoint *shards = tl_checkpoint_open(dir2);
        tl_assert_ok(shards);
        ck_assert_msg(shards->file_count >= 2, "%s: %d shard(s) of at most 20000 bytes",
                      names[i], shards->file_count);
        for (int k = 0; k < shards->file_count; k++) {
            char want[64];
            snprintf(want, sizeof want, "model-%05d-of-%05d.safetensors", k + 1,
                     shards->file_count);
            ck_assert_msg(exists(dir2, want), "%s: no %s in the saved folder", names[i], want);
        }
        tl_checkpoint_free(shards);
        ck_assert_int_eq(llama_from_pretrained(&sharded, dir2, -1), 0);
        assert_same_weights(&m, &sharded, false, names[i]);
        tl_assert_close(ll_forward(&sharded, ids, NULL, NULL), ll_golden(fx, names[i], "logits"),
                        rtol, atol);
        llama_free(&m);
        llama_free(&f32);
        llama_free(&bf16);
        llama_free(&sharded);
        remove_dir(dir);
        remove_dir(dir2);
    }
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* A fresh model (llama_init with a PCG32) saves and loads too: its weights are
 * HF's initialisation, N(0, initializer_range^2) matrices and unit norms. */
START_TEST(test_initialised_model_saves_and_loads)
{
    tl_scope_push();
    LlamaConfig c = ll_config("qwen2-window-bias");
    tl_pcg32 rng = tl_test_rng(5);
    LlamaForCausalLM m, back;
    ck_assert_int_eq(llama_init(&m, &c, &rng), 0);
    tl_tensor *q = tl_module_param(m.module, "model.layers.0.self_attn.q_proj.weight");
    double sum2 = 0;
    for (int64_t i = 0; i < tl_numel(q); i++) sum2 += tl_item_at(q, i) * tl_item_at(q, i);
    double std = sqrt(sum2 / (double)tl_numel(q));
    ck_assert_msg(fabs(std - c.initializer_range) < 0.2 * c.initializer_range,
                  "q_proj's std is %g; HF's init draws N(0, %g^2)", std, c.initializer_range);
    ck_assert_double_eq(tl_item_at(tl_module_param(m.module, "model.norm.weight"), 3), 1.0);
    ck_assert_double_eq(tl_item_at(tl_module_param(m.module,
                                                   "model.layers.0.self_attn.q_proj.bias"), 0), 0);
    char *dir = scratch_dir();
    ck_assert_int_eq(llama_save_pretrained(&m, dir, TL_F32, 0), 0);
    ck_assert_int_eq(llama_from_pretrained(&back, dir, TL_F32), 0);
    assert_same_weights(&m, &back, false, "qwen2 init");
    llama_free(&m);
    llama_free(&back);
    remove_dir(dir);
    tl_scope_pop();
}
END_TEST
