/* Adopting a checkpoint in place and fusing projections after it (nn.h):
 * parameters keep their tl_tensor pointers and read the mapped file (one
 * copy: the module's own storage is released, counted by tl_owned_bytes);
 * BF16 stays BF16; the module keeps the checkpoint alive; failures change
 * nothing. A fuse gives one weight whose row blocks are the parts, copying
 * only when the parts are not already back to back, and then handing the
 * mapped pages of the originals back (their resident size, read from
 * /proc/self/smaps, drops). Packing then moves every weight into one region
 * of huge pages, keeping pointers, values, read-only flags and fused parts. */
#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../reference/tinyllm/core/internal.h"   /* a storage's record of parts */
#include "tinyllm/autograd.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/safetensors.h"
#include "tinyllm/testing.h"
#include "st_test_util.h"

enum { HIDDEN = 128, KV = 64, FFN = 256, VOCAB = 96 };

/* A decoder layer's worth of parameters, in HF's names. */
typedef struct {
    tl_module *root;
    tl_tensor *embed, *q, *k, *v, *o, *gate, *up, *down, *norm, *head;
} mini_model;

static tl_module *linear_under(tl_module *parent, const char *name, int64_t in, int64_t out,
                               tl_pcg32 *rng) {
    return tl_module_add(parent, name, tl_linear_new(in, out, false, rng));
}

static mini_model mini_new(tl_pcg32 *rng, bool tied) {
    mini_model m;
    memset(&m, 0, sizeof m);
    m.root = tl_module_new("Mini");
    tl_module *model = tl_module_add(m.root, "model", tl_module_new("Model"));
    m.embed = tl_module_param(tl_module_add(model, "embed_tokens",
                                            tl_embedding_new(VOCAB, HIDDEN, rng)), "weight");
    tl_module *attn = tl_module_add(model, "self_attn", tl_module_new("Attention"));
    m.q = tl_module_param(linear_under(attn, "q_proj", HIDDEN, HIDDEN, rng), "weight");
    m.k = tl_module_param(linear_under(attn, "k_proj", HIDDEN, KV, rng), "weight");
    m.v = tl_module_param(linear_under(attn, "v_proj", HIDDEN, KV, rng), "weight");
    m.o = tl_module_param(linear_under(attn, "o_proj", HIDDEN, HIDDEN, rng), "weight");
    tl_module *mlp = tl_module_add(model, "mlp", tl_module_new("MLP"));
    m.gate = tl_module_param(linear_under(mlp, "gate_proj", HIDDEN, FFN, rng), "weight");
    m.up = tl_module_param(linear_under(mlp, "up_proj", HIDDEN, FFN, rng), "weight");
    m.down = tl_module_param(linear_under(mlp, "down_proj", FFN, HIDDEN, rng), "weight");
    m.norm = tl_module_param_new(model, "norm", TL_SHAPE(HIDDEN));
    if (rng) tl_copy_into(m.norm, tl_randn(rng, TL_SHAPE(HIDDEN)));
    tl_module *head = tl_module_add(m.root, "lm_head", tl_module_new("Linear"));
    if (tied) {
        tl_module_param_share(head, "weight", m.embed);
        m.head = m.embed;
    } else {
        m.head = tl_module_param_new(head, "weight", TL_SHAPE(VOCAB, HIDDEN));
        if (rng) tl_copy_into(m.head, tl_randn(rng, TL_SHAPE(VOCAB, HIDDEN)));
    }
    return m;
}

static int64_t weight_bytes(const tl_module *m) {
    tl_state_dict sd = tl_module_state_dict(m);
    int64_t bytes = 0;
    for (int i = 0; i < sd.count; i++)
        if (!sd.items[i].shared) {
            const tl_tensor *t = sd.items[i].tensor;
            bytes += tl_numel(t) * (int64_t)tl_dtype_size(t->dtype);
        }
    tl_state_dict_free(&sd);
    return bytes;
}

/* Saves a random model (F32 or BF16 on disk) into dir/model.safetensors and
 * returns it, for the values to compare with. */
static mini_model saved_model(const char *dir, int save_dtype, bool tied, uint64_t seed) {
    tl_pcg32 rng = tl_test_rng(seed);
    mini_model m = mini_new(&rng, tied);
    tl_state_dict sd = tl_module_state_dict(m.root);
    if (tied) {   /* HF saves a tied head under the embedding's name only */
        for (int i = 0; i < sd.count; i++)
            if (sd.items[i].shared) {
                free(sd.items[i].name);
                sd.items[i--] = sd.items[--sd.count];
            }
    }
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    ck_assert_msg(tl_st_save(path, &sd, save_dtype, NULL, NULL, 0) == 0, "%s", tl_error());
    tl_state_dict_free(&sd);
    return m;
}

static bool inside(const void *p, const tl_st_file *f) {
    return (const unsigned char *)p >= f->map && (const unsigned char *)p < f->map + f->map_size;
}

static void assert_same_values(const tl_tensor *got, const tl_tensor *want, const char *what) {
    char msg[512];
    ck_assert_msg(tl_close_report(got, want, 0, 0, msg, sizeof msg), "%s: %s", what, msg);
}

/* The resident kB of the mapping that holds p, from /proc/self/smaps. */
static long resident_kb(const void *p) {
    FILE *f = fopen("/proc/self/smaps", "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    bool in = false;
    long kb = -1;
    uintptr_t at = (uintptr_t)p;
    while (fgets(line, sizeof line, f)) {
        uintptr_t lo, hi;
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &lo, &hi) == 2 && strchr(line, ' ') &&
            line[strcspn(line, " ")] == ' ' && strchr(line, '-') < strchr(line, ' '))
            in = at >= lo && at < hi;
        else if (in && sscanf(line, "Rss: %ld kB", &kb) == 1)
            break;
    }
    fclose(f);
    return kb;
}

START_TEST(adopt_keeps_pointers_reads_the_map_and_frees_the_modules_copy)
{
    char *dir = temp_dir();
    mini_model src = saved_model(dir, TL_F32, false, 1);
    mini_model m = mini_new(NULL, false);
    tl_tensor *q_before = m.q;
    size_t owned_before = tl_owned_bytes();
    int64_t bytes = weight_bytes(m.root);

    tl_checkpoint *c = tl_checkpoint_load(dir, TL_F32);
    tl_assert_ok(c);
    ck_assert_int_eq(tl_module_adopt_checkpoint(m.root, c, true), 0);
    ck_assert_ptr_eq(tl_module_param(m.root, "model.self_attn.q_proj.weight"), q_before);
    ck_assert_int_eq(c->refs, 2);
    ck_assert_msg(tl_owned_bytes() == owned_before - (size_t)bytes,
                  "owned bytes %zu, expected %zu - %lld", tl_owned_bytes(), owned_before,
                  (long long)bytes);
    tl_tensor *params[] = {m.embed, m.q, m.k, m.v, m.o, m.gate, m.up, m.down, m.norm, m.head};
    tl_tensor *want[] = {src.embed, src.q, src.k, src.v, src.o, src.gate, src.up, src.down,
                         src.norm, src.head};
    for (int i = 0; i < 10; i++) {
        ck_assert_msg(inside(tl_data(params[i]), c->files[0]), "parameter %d is not in the map", i);
        assert_same_values(params[i], want[i], "adopted value");
    }
    tl_clear_error();
    ck_assert_int_eq(tl_set(m.q, (const int64_t[]){0, 0}, 1.0), -1);
    ck_assert(strstr(tl_error(), "read-only"));

    tl_checkpoint_free(c);   /* the module keeps its own reference */
    ck_assert_int_eq(c->refs, 1);
    tl_tensor *x = tl_randn(&(tl_pcg32){1, 1, 0, 0}, TL_SHAPE(2, HIDDEN));
    assert_same_values(tl_linear(x, m.q, NULL), tl_linear(x, src.q, NULL), "forward");
    tl_module_free(m.root);   /* releases the checkpoint: valgrind and ASan see the rest */
    tl_module_free(src.root);
    remove_tree(dir);
}
END_TEST

START_TEST(adopt_bf16_keeps_bf16_and_computes_as_its_widened_values)
{
    char *dir = temp_dir();
    mini_model src = saved_model(dir, TL_BF16, true, 2);
    mini_model m = mini_new(NULL, true);
    tl_checkpoint *c = tl_checkpoint_load(dir, TL_BF16);
    tl_assert_ok(c);
    ck_assert_int_eq(tl_module_adopt_checkpoint(m.root, c, true), 0);   /* head absent: tied */
    tl_checkpoint_free(c);
    ck_assert_int_eq(m.q->dtype, TL_BF16);
    ck_assert_int_eq(m.head->dtype, TL_BF16);
    ck_assert_ptr_eq(tl_module_param(m.root, "lm_head.weight"), m.embed);
    tl_tensor *q32 = tl_cast(tl_cast(src.q, TL_BF16), TL_F32);   /* what the file holds */
    assert_same_values(tl_cast(m.q, TL_F32), q32, "BF16 values");
    tl_pcg32 rng = tl_test_rng(3);
    tl_tensor *x1 = tl_randn(&rng, TL_SHAPE(1, 1, HIDDEN));
    tl_tensor *x5 = tl_randn(&rng, TL_SHAPE(5, HIDDEN));
    char msg[512];
    ck_assert_msg(tl_close_report(tl_linear(x1, m.q, NULL), tl_linear(x1, q32, NULL), 1e-6, 1e-6,
                                  msg, sizeof msg), "one row: %s", msg);
    ck_assert_msg(tl_close_report(tl_linear(x5, m.q, NULL), tl_linear(x5, q32, NULL), 1e-6, 1e-6,
                                  msg, sizeof msg), "five rows: %s", msg);
    tl_module_free(m.root);
    tl_module_free(src.root);
    remove_tree(dir);
}
END_TEST

START_TEST(adopt_failures_change_nothing)
{
    char *dir = temp_dir();
    mini_model src = saved_model(dir, TL_F32, true, 4);   /* no lm_head.weight on disk */
    mini_model m = mini_new(NULL, false);                 /* expects one */
    tl_checkpoint *c = tl_checkpoint_load(dir, TL_F32);
    size_t owned = tl_owned_bytes();
    void *q_data = tl_data(m.q);
    tl_clear_error();
    ck_assert_int_eq(tl_module_adopt_checkpoint(m.root, c, true), -1);
    ck_assert_str_eq(tl_error(), "tl_module_adopt_checkpoint: 1 missing key: lm_head.weight; "
                                 "nothing was loaded");
    ck_assert_ptr_eq(tl_data(m.q), q_data);
    ck_assert_int_eq(m.q->dtype, TL_F32);
    ck_assert_uint_eq(tl_owned_bytes(), owned);
    ck_assert_int_eq(c->refs, 1);
    /* A shape that does not fit. */
    mini_model tied = mini_new(NULL, true);
    tl_module *extra = tl_module_add(tied.root, "extra", tl_module_new("X"));
    tl_module_param_new(extra, "w", TL_SHAPE(3));
    ck_assert_int_eq(tl_module_adopt_checkpoint(tied.root, c, true), -1);
    ck_assert(strstr(tl_error(), "1 missing key: extra.w"));
    tl_module_free(extra);
    tl_clear_error();
    ck_assert_int_eq(tl_module_adopt_checkpoint(tied.root, NULL, true), -1);
    ck_assert_str_eq(tl_error(), "tl_module_adopt_checkpoint: the checkpoint is NULL");
    tl_fail("the load failed");
    ck_assert_int_eq(tl_module_adopt_checkpoint(tied.root, NULL, true), -1);
    ck_assert_str_eq(tl_error(), "the load failed");
    tl_clear_error();
    ck_assert_int_eq(tl_module_adopt_checkpoint(NULL, c, true), -1);
    ck_assert_str_eq(tl_error(), "tl_module_adopt_checkpoint: the module is NULL");
    /* Non-strict: what fits is adopted. */
    ck_assert_int_eq(tl_module_adopt_checkpoint(m.root, c, false), 0);
    assert_same_values(m.q, src.q, "non-strict adopt");
    tl_checkpoint_free(c);
    tl_module_free(m.root);
    tl_module_free(tied.root);
    tl_module_free(src.root);
    remove_tree(dir);
    tl_clear_error();
}
END_TEST

START_TEST(adopt_rejects_a_shape_that_does_not_fit)
{
    char *dir = temp_dir();
    tl_module *a = tl_module_new("A"), *b = tl_module_new("A");
    tl_tensor *w = tl_module_param_new(a, "w", TL_SHAPE(4, 3));
    tl_tensor *wb = tl_module_param_new(b, "w", TL_SHAPE(3, 4));
    (void)w;
    tl_state_dict sd = tl_module_state_dict(a);
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    ck_assert_int_eq(tl_st_save(path, &sd, -1, NULL, NULL, 0), 0);
    tl_state_dict_free(&sd);
    tl_checkpoint *c = tl_checkpoint_load(dir, TL_F32);
    ck_assert_int_eq(tl_module_adopt_checkpoint(b, c, true), -1);
    ck_assert(strstr(tl_error(), "tl_module_adopt_checkpoint: size mismatch for w: the "
                                 "checkpoint has shape [4, 3], the module [3, 4]"));
    ck_assert(!wb->storage || tl_data(wb) != tl_data(tl_checkpoint_get(c, "w")));
    tl_checkpoint_free(c);
    tl_module_free(a);
    tl_module_free(b);
    remove_tree(dir);
    tl_clear_error();
}
END_TEST

/* A fresh model (no values of its own) that adopted dir's checkpoint, loaded
 * as dtype; returns the checkpoint, for the caller to free. */
static tl_checkpoint *adopt_into(mini_model *m, const char *dir, tl_dtype dtype) {
    *m = mini_new(NULL, false);
    tl_checkpoint *c = tl_checkpoint_load(dir, dtype);
    tl_assert_ok(c);
    ck_assert_int_eq(tl_module_adopt_checkpoint(m->root, c, true), 0);
    return c;
}

/* ---- fusing ------------------------------------------------------------- */

START_TEST(fuse_copies_parts_that_are_apart_and_releases_their_pages)
{
    char *dir = temp_dir();
    mini_model src = saved_model(dir, TL_F32, false, 5), m;
    tl_checkpoint *c = adopt_into(&m, dir, TL_F32);
    tl_checkpoint_free(c);
    tl_state_dict before = tl_module_state_dict(m.root);

    /* Touch every page of the map: q, k and v are resident. */
    double sum = 0;
    for (int i = 0; i < before.count; i++) sum += tl_item(tl_sum_all(before.items[i].tensor));
    ck_assert(sum == sum);
    long rss_before = resident_kb(tl_data(m.q));
    size_t owned = tl_owned_bytes();

    tl_tensor *q = m.q, *k = m.k;
    tl_tensor *qkv = tl_linear_fuse((tl_tensor *[]){m.q, m.k, m.v}, 3);   /* k, o, q, v on disk */
    tl_assert_ok(qkv);
    ck_assert_int_eq(qkv->shape[0], HIDDEN + 2 * KV);
    ck_assert_int_eq(qkv->shape[1], HIDDEN);
    ck_assert_uint_eq(tl_owned_bytes(), owned + (size_t)tl_numel(qkv) * 4);   /* one copy */
    ck_assert_ptr_eq(m.q, q);
    ck_assert_ptr_eq(m.k, k);
    ck_assert_ptr_eq(tl_data(m.q), tl_data(qkv));
    ck_assert_ptr_eq(tl_data(m.k), (float *)tl_data(qkv) + HIDDEN * HIDDEN);
    ck_assert_ptr_eq(tl_data(m.v), (float *)tl_data(qkv) + (HIDDEN + KV) * HIDDEN);
    assert_same_values(tl_narrow(qkv, 0, 0, HIDDEN), src.q, "q block");
    assert_same_values(tl_narrow(qkv, 0, HIDDEN, KV), src.k, "k block");
    assert_same_values(tl_narrow(qkv, 0, HIDDEN + KV, KV), src.v, "v block");
    assert_same_values(m.v, src.v, "v part");
    long rss_after = resident_kb(tl_data(m.o));   /* o is still in the map */
    long dropped = rss_before - rss_after, qkv_kb = (long)(tl_numel(qkv) * 4 / 1024);
    /* Each part's first and last page may hold a neighbour's bytes: kept. */
    ck_assert_msg(rss_before > 0 && dropped >= qkv_kb - 3 * 8,
                  "the map's resident size went from %ld to %ld kB; q, k, v are %ld kB",
                  rss_before, rss_after, qkv_kb);

    /* The state dict: same names, same tensors, same values. */
    tl_state_dict after = tl_module_state_dict(m.root);
    ck_assert_int_eq(after.count, before.count);
    for (int i = 0; i < after.count; i++) {
        ck_assert_str_eq(after.items[i].name, before.items[i].name);
        ck_assert_ptr_eq(after.items[i].tensor, before.items[i].tensor);
    }
    /* One linear on the fused weight is the three. */
    tl_tensor *x = tl_randn(&(tl_pcg32){1, 1, 0, 0}, TL_SHAPE(1, HIDDEN)), *parts[3];
    ck_assert_int_eq(tl_split(tl_linear(x, qkv, NULL), -1, (const int64_t[]){HIDDEN, KV, KV}, 3,
                              parts), 0);
    assert_same_values(parts[1], tl_linear(x, src.k, NULL), "fused k output");
    tl_state_dict_free(&before);
    tl_state_dict_free(&after);
    tl_module_free(m.root);   /* module first, fused weight after: both orders work */
    assert_same_values(tl_narrow(qkv, 0, 0, HIDDEN), src.q, "after the module");
    tl_tensor_free(qkv);
    tl_module_free(src.root);
    remove_tree(dir);
}
END_TEST

START_TEST(fuse_of_parts_back_to_back_in_the_file_copies_nothing)
{
    char *dir = temp_dir();
    mini_model src = saved_model(dir, TL_BF16, false, 6), m;
    tl_checkpoint *c = adopt_into(&m, dir, TL_BF16);
    size_t owned = tl_owned_bytes();
    void *gate_data = tl_data(m.gate);
    tl_tensor *gate_up = tl_linear_fuse((tl_tensor *[]){m.gate, m.up}, 2);
    tl_assert_ok(gate_up);
    ck_assert_uint_eq(tl_owned_bytes(), owned);
    ck_assert_ptr_eq(tl_data(gate_up), gate_data);
    ck_assert(inside(tl_data(gate_up), c->files[0]));
    ck_assert_int_eq(gate_up->dtype, TL_BF16);
    assert_same_values(tl_cast(tl_narrow(gate_up, 0, FFN, FFN), TL_F32),
                       tl_cast(tl_cast(src.up, TL_BF16), TL_F32), "up block");
    /* Fusing the same parts again shares the same storage. */
    tl_tensor *again = tl_linear_fuse((tl_tensor *[]){m.gate, m.up}, 2);
    ck_assert_ptr_eq(tl_data(again), gate_data);
    ck_assert_ptr_eq(again->storage, gate_up->storage);
    tl_checkpoint_free(c);
    tl_tensor_free(gate_up);   /* fused first, module after */
    tl_tensor_free(again);
    tl_tensor *x = tl_randn(&(tl_pcg32){1, 1, 0, 0}, TL_SHAPE(1, HIDDEN));
    tl_assert_ok(tl_linear(x, m.up, NULL));
    tl_module_free(m.root);
    tl_module_free(src.root);
    remove_tree(dir);
}
END_TEST

START_TEST(fuse_of_owned_parameters_keeps_one_copy)
{
    tl_pcg32 rng = tl_test_rng(7);
    tl_module *a = tl_module_new("A");
    tl_tensor *w1 = tl_module_param(linear_under(a, "one", 8, 5, &rng), "weight");
    tl_tensor *w2 = tl_module_param(linear_under(a, "two", 8, 3, &rng), "weight");
    tl_tensor *b1 = tl_module_param_new(a, "b1", TL_SHAPE(5));
    tl_tensor *b2 = tl_module_param_new(a, "b2", TL_SHAPE(3));
    tl_tensor *copy1 = tl_clone(w1), *copy2 = tl_clone(w2);
    size_t owned = tl_owned_bytes();
    tl_tensor *fused = tl_linear_fuse((tl_tensor *[]){w1, w2}, 2);
    tl_tensor *bias = tl_linear_fuse((tl_tensor *[]){b1, b2}, 2);
    tl_assert_ok(fused);
    tl_assert_ok(bias);
    ck_assert_int_eq(bias->ndim, 1);
    ck_assert_int_eq(bias->shape[0], 8);
    ck_assert_uint_eq(tl_owned_bytes(), owned);   /* the parts' old storage went */
    assert_same_values(w1, copy1, "part one");
    assert_same_values(tl_narrow(fused, 0, 5, 3), copy2, "block two");
    ck_assert(w1->requires_grad && !fused->requires_grad);
    tl_tensor_free(bias);
    tl_tensor_free(fused);
    tl_module_free(a);
}
END_TEST

/* Under no_grad, tl_linear on a part of a fused weight computes every part
 * in one product and serves the siblings from it (ops_linalg.c): the
 * values equal each part's own product bit for bit at few rows (GEMV and
 * multi-row GEMV, F32 and BF16, with a bias), and within float rounding at
 * a GEMM's 40 rows (other column blocks). A weight written between two
 * forwards with the same input is seen by the second (each part is served
 * once per product), as is a part asked twice. */
static void assert_bits(const tl_tensor *got, const tl_tensor *want, const char *what) {
    tl_assert_ok(got);
    tl_assert_ok(want);
    ck_assert_int_eq(tl_numel(got), tl_numel(want));
    ck_assert_msg(memcmp(tl_data(got), tl_data(want), (size_t)tl_numel(got) * 4) == 0,
                  "%s: the fused product differs from the part's own", what);
}

START_TEST(fused_parts_compute_once_and_match_their_own_products)
{
    tl_pcg32 rng = tl_test_rng(11);
    for (int bf16 = 0; bf16 < 2; bf16++) {
        tl_module *a = tl_module_new("Attn");
        tl_tensor *w[3], *copy[3];
        const int64_t outs[3] = {40, 16, 24};
        const char *names[3] = {"q_proj", "k_proj", "v_proj"};
        for (int k = 0; k < 3; k++) {
            w[k] = tl_module_param(linear_under(a, names[k], 48, outs[k], &rng), "weight");
            if (bf16) {   /* a BF16 parameter, as adopted from a BF16 checkpoint */
                tl_tensor *b = tl_tensor_new_owned(TL_BF16, TL_SHAPE(outs[k], 48));
                tl_assert_ok(b);
                tl_copy_into(b, w[k]);
                w[k] = b;
            }
            copy[k] = tl_clone(w[k]);   /* unfused, for the expected values */
        }
        tl_tensor *bias = tl_randn(&rng, TL_SHAPE(16));
        tl_tensor *fused = tl_linear_fuse(w, 3);
        tl_assert_ok(fused);
        tl_no_grad_push();
        const int64_t rows[3] = {1, 3, 40};
        for (int r = 0; r < 3; r++) {
            tl_tensor *x = tl_randn(&rng, TL_SHAPE(rows[r], 48));
            tl_tensor *q = tl_linear(x, w[0], NULL), *k = tl_linear(x, w[1], bias);
            tl_tensor *v = tl_linear(x, w[2], NULL);
            tl_tensor *want[3] = {tl_linear(x, copy[0], NULL), tl_linear(x, copy[1], bias),
                                  tl_linear(x, copy[2], NULL)};
            tl_tensor *got[3] = {q, k, v};
            for (int p = 0; p < 3; p++) {
                if (rows[r] <= 3) {
                    assert_bits(got[p], want[p], names[p]);
                    continue;
                }
                tl_assert_ok(got[p]);
                for (int64_t i = 0; i < tl_numel(got[p]); i++)   /* 48 products of |x| < 5 */
                    ck_assert_msg(fabsf(tl_f32(got[p])[i] - tl_f32(want[p])[i]) <= 1e-4f,
                                  "%s at 40 rows, element %lld: %g vs %g", names[p],
                                  (long long)i, tl_f32(got[p])[i], tl_f32(want[p])[i]);
            }
        }
        if (!bf16) {   /* a write between two forwards on the same input is seen */
            tl_tensor *x = tl_randn(&rng, TL_SHAPE(2, 48));
            tl_tensor *q0 = tl_linear(x, w[0], NULL);
            tl_tensor *k0 = tl_linear(x, w[1], NULL);
            tl_assert_ok(tl_linear(x, w[2], NULL));
            tl_assert_ok(q0);
            tl_assert_ok(k0);
            ck_assert_int_eq(tl_set(w[1], (int64_t[]){0, 0}, 100.0), 0);
            ck_assert_int_eq(tl_set(copy[1], (int64_t[]){0, 0}, 100.0), 0);
            tl_tensor *q1 = tl_linear(x, w[0], NULL), *k1 = tl_linear(x, w[1], NULL);
            assert_bits(q1, q0, "q again");
            assert_bits(k1, tl_linear(x, copy[1], NULL), "k after a write");
            assert_bits(tl_linear(x, w[0], NULL), q0, "q asked twice");
        }
        tl_no_grad_pop();
        tl_tensor_free(fused);   /* copies and inputs live in the test's scope */
        if (bf16)
            for (int k = 0; k < 3; k++) tl_tensor_free(w[k]);
        tl_module_free(a);
    }
}
END_TEST

START_TEST(fuse_errors)
{
    tl_module *a = tl_module_new("A");
    tl_tensor *w = tl_module_param_new(a, "w", TL_SHAPE(4, 3));
    tl_tensor *w5 = tl_module_param_new(a, "w5", TL_SHAPE(4, 5));
    tl_tensor *cube = tl_module_param_new(a, "c", TL_SHAPE(2, 3, 4));
    tl_tensor *bf = tl_tensor_new_owned(TL_BF16, TL_SHAPE(4, 3));
    tl_tensor *ids = tl_tensor_new_owned(TL_I64, TL_SHAPE(4, 3));
    tl_assert_error(tl_linear_fuse((tl_tensor *[]){w}, 0), "tl_linear_fuse: needs n >= 1 parts "
                                                            "(got n=0)");
    tl_assert_error(tl_linear_fuse(NULL, 2), "tl_linear_fuse: needs n >= 1 parts (got n=2 and "
                                             "no array)");
    tl_assert_error(tl_linear_fuse((tl_tensor *[]){w, NULL, w}, 3),
                    "tl_linear_fuse: part 1 of 3 is NULL");
    tl_fail("cause");
    ck_assert_ptr_null(tl_linear_fuse((tl_tensor *[]){w, NULL}, 2));
    ck_assert_str_eq(tl_error(), "cause");
    tl_assert_error(tl_linear_fuse((tl_tensor *[]){tl_ones(TL_F32, TL_SHAPE(4, 3))}, 1),
                    "tl_linear_fuse: part 0 [4, 3] lives in a scope; fuse parameters (owned "
                    "tensors)");
    tl_assert_error(tl_linear_fuse((tl_tensor *[]){w, cube}, 2),
                    "tl_linear_fuse: part 1 is F32 [2, 3, 4]; parts are contiguous float "
                    "weights [out, in] or biases [out]");
    tl_assert_error(tl_linear_fuse((tl_tensor *[]){ids}, 1), "part 0 is I64 [4, 3]");
    tl_assert_error(tl_linear_fuse((tl_tensor *[]){w, bf}, 2),
                    "tl_linear_fuse: part 1 BF16 [4, 3] does not match part 0 F32 [4, 3]: parts "
                    "share the dtype and the input width");
    tl_assert_error(tl_linear_fuse((tl_tensor *[]){w, w5}, 2), "part 1 F32 [4, 5] does not match");
    tl_tensor_free(bf);
    tl_tensor_free(ids);
    tl_module_free(a);
}
END_TEST

/* Fails unless rc is -1 and the error message contains needle. */
static void assert_status_error(int rc, const char *needle) {
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(tl_error() && strstr(tl_error(), needle), "error '%s'; expected '%s'",
                  tl_error() ? tl_error() : "(none)", needle);
    tl_clear_error();
}

/* Packing after the load (nn.h: tl_weights_pack): every weight, mapped or
 * owned, fused or not, moves into one region that starts on a 2 MiB
 * boundary, in the order listed; tensors keep their pointers, values,
 * strides and read-only flag; the fused weights keep computing their parts
 * in one product, to the same bits; the map's pages are handed back. */
START_TEST(pack_moves_every_weight_into_one_region_and_keeps_the_rest)
{
    char *dir = temp_dir();
    mini_model src = saved_model(dir, TL_BF16, false, 9), m;
    tl_checkpoint *c = adopt_into(&m, dir, TL_BF16);
    tl_tensor *qkv = tl_linear_fuse((tl_tensor *[]){m.q, m.k, m.v}, 3);     /* a copy */
    tl_tensor *gate_up = tl_linear_fuse((tl_tensor *[]){m.gate, m.up}, 2);  /* in the map */
    tl_assert_ok(qkv);
    tl_assert_ok(gate_up);
    ck_assert(inside(tl_data(gate_up), c->files[0]));

    /* Region order: embed, qkv (q, k, v), o, gate_up (gate, up), down, norm, head. */
    tl_tensor *list[] = {m.embed, m.q, m.k, m.v, m.o, m.gate, m.up, m.down, m.norm, m.head,
                         qkv, gate_up, m.q};   /* m.q twice */
    enum { LISTED = sizeof list / sizeof list[0], PARAMS = 10 };
    tl_tensor *before[LISTED];
    for (int i = 0; i < LISTED; i++) before[i] = tl_clone(list[i]);   /* pages resident */
    long mapped_kb = 0;   /* what is left in the map: all but q, k, v */
    for (int i = 0; i < PARAMS; i++)
        if (inside(tl_data(list[i]), c->files[0])) mapped_kb += (long)tl_numel(list[i]) * 2 / 1024;
    const void *in_map = tl_data(m.o);
    long map_kb = resident_kb(in_map);
    tl_no_grad_push();
    tl_tensor *x = tl_randn(&(tl_pcg32){3, 1, 0, 0}, TL_SHAPE(1, HIDDEN));
    tl_tensor *k_out = tl_linear(x, m.k, NULL), *up_out = tl_linear(x, m.up, NULL);

    ck_assert_int_eq(tl_weights_pack(list, LISTED, NULL, NULL), 0);
    const char *start = tl_data(m.embed), *last = start;
    ck_assert_msg((uintptr_t)start % (2u << 20) == 0, "the region starts at %p", (void *)start);
    for (int i = 0; i < LISTED; i++) {
        ck_assert_msg(!inside(tl_data(list[i]), c->files[0]), "tensor %d is still mapped", i);
        ck_assert_int_eq(list[i]->strides[0], before[i]->strides[0]);
        assert_same_values(list[i], before[i], "packed value");
        ck_assert_msg((const char *)tl_data(list[i]) >= last || i >= PARAMS || list[i] == m.k ||
                      list[i] == m.v || list[i] == m.up, "tensor %d is out of order", i);
        if (i < PARAMS) last = tl_data(list[i]);
    }
    ck_assert_ptr_eq(tl_module_param(m.root, "model.self_attn.o_proj.weight"), m.o);
    ck_assert_ptr_eq(tl_data(m.k), (const uint16_t *)tl_data(qkv) + HIDDEN * HIDDEN);
    ck_assert_ptr_eq(tl_data(m.up), (const uint16_t *)tl_data(gate_up) + FFN * HIDDEN);
    ck_assert_ptr_eq(m.k->storage, qkv->storage);
    ck_assert_ptr_eq(m.up->storage, gate_up->storage);
    ck_assert_msg(qkv->storage->fused && gate_up->storage->fused, "a fused record was lost");
    tl_clear_error();
    ck_assert_int_eq(tl_set(m.o, (const int64_t[]){0, 0}, 1.0), -1);   /* still read-only */
    ck_assert(strstr(tl_error(), "read-only"));
    assert_bits(tl_linear(x, m.k, NULL), k_out, "k from the packed qkv");
    assert_bits(tl_linear(x, m.up, NULL), up_out, "up from the packed gate_up");
    tl_no_grad_pop();
    long dropped = map_kb - resident_kb(in_map);
    /* Each tensor's first and last page may hold a neighbour's bytes: kept. */
    ck_assert_msg(dropped >= mapped_kb - 7 * 2 * 4,
                  "the map's resident size went from %ld kB down by %ld; %ld kB were weights",
                  map_kb, dropped, mapped_kb);

    tl_checkpoint_free(c);
    tl_module_free(m.root);   /* the region lives on in the fused weights */
    assert_same_values(tl_narrow(gate_up, 0, FFN, FFN), before[6], "after the module");
    tl_tensor_free(qkv);
    tl_tensor_free(gate_up);
    tl_module_free(src.root);
    remove_tree(dir);
}
END_TEST

typedef struct {
    int calls;
    size_t done, total;
} progress_seen;

static void note_progress(size_t done, size_t total, void *ctx) {
    progress_seen *seen = ctx;
    ck_assert_uint_gt(done, seen->done);   /* it only grows */
    ck_assert_uint_le(done, total);
    seen->calls++;
    seen->done = done;
    seen->total = total;
}

/* Owned parameters packed twice, a tied head listed beside the embedding:
 * the second region replaces the first, whose bytes are given back
 * (tl_owned_bytes counts one region, which 64-byte alignment makes at most
 * 63 bytes a storage larger); the tie stays one storage; a packed parameter
 * still trains; the module's free gives every byte back. */
START_TEST(pack_twice_keeps_one_region_and_a_tie_tied)
{
    tl_pcg32 rng = tl_test_rng(12);
    size_t owned_at_start = tl_owned_bytes();
    mini_model m = mini_new(&rng, true);
    tl_state_dict sd = tl_module_state_dict(m.root);
    tl_tensor **list = malloc((size_t)sd.count * sizeof *list);
    for (int i = 0; i < sd.count; i++) list[i] = sd.items[i].tensor;   /* the tie twice */
    tl_tensor *embed = tl_clone(m.embed);
    size_t owned = tl_owned_bytes();
    progress_seen seen = {0, 0, 0};
    ck_assert_int_eq(tl_weights_pack(list, sd.count, note_progress, &seen), 0);
    size_t one_region = tl_owned_bytes();
    /* Every byte of the weights told, once, in order (the tie counted once). */
    ck_assert_int_ge(seen.calls, 1);
    ck_assert_uint_eq(seen.done, (size_t)weight_bytes(m.root));
    ck_assert_uint_eq(seen.total, (size_t)weight_bytes(m.root));
    ck_assert_uint_ge(one_region, owned);
    ck_assert_uint_le(one_region, owned + 63 * (size_t)sd.count);
    ck_assert_ptr_eq(m.head->storage, m.embed->storage);
    ck_assert_int_eq(tl_weights_pack(list, sd.count, NULL, NULL), 0);
    ck_assert_uint_eq(tl_owned_bytes(), one_region);
    assert_same_values(m.head, embed, "the tied head");
    ck_assert_int_eq(tl_weights_pack(list, 0, NULL, NULL), 0);
    tl_tensor *empty = tl_tensor_new_owned(TL_F32, TL_SHAPE(0, HIDDEN));   /* no bytes */
    ck_assert_int_eq(tl_weights_pack(&empty, 1, NULL, NULL), 0);
    ck_assert_int_eq(tl_weights_pack((tl_tensor *[]){empty, m.norm}, 2, NULL, NULL), 0);
    ck_assert_int_eq(tl_numel(empty), 0);
    tl_tensor_free(empty);
    ck_assert(m.q->requires_grad);
    tl_tensor *loss = tl_sum_all(tl_linear(tl_ones(TL_F32, TL_SHAPE(1, HIDDEN)), m.q, NULL));
    ck_assert_int_eq(tl_backward(loss), 0);
    tl_assert_ok(m.q->grad);
    free(list);
    tl_state_dict_free(&sd);
    tl_module_free(m.root);
    ck_assert_uint_eq(tl_owned_bytes(), owned_at_start);
}
END_TEST

START_TEST(pack_errors_change_nothing)
{
    tl_module *a = tl_module_new("A");
    tl_tensor *w = tl_module_param_new(a, "w", TL_SHAPE(4, 3));
    tl_tensor *before = tl_clone(w);
    const void *data = tl_data(w);
    assert_status_error(tl_weights_pack((tl_tensor *[]){w}, -1, NULL, NULL),
                        "tl_weights_pack: needs n >= 0 tensors and an array of them (got n=-1)");
    assert_status_error(tl_weights_pack(NULL, 2, NULL, NULL), "(got n=2 and no array)");
    assert_status_error(tl_weights_pack((tl_tensor *[]){w, NULL, w}, 3, NULL, NULL),
                        "tl_weights_pack: tensor 1 of 3 is NULL");
    tl_fail("cause");
    ck_assert_int_eq(tl_weights_pack((tl_tensor *[]){w, NULL}, 2, NULL, NULL), -1);
    ck_assert_str_eq(tl_error(), "cause");
    tl_tensor *scoped = tl_ones(TL_F32, TL_SHAPE(4, 3));
    assert_status_error(tl_weights_pack((tl_tensor *[]){w, scoped}, 2, NULL, NULL),
                        "tl_weights_pack: tensor 1 [4, 3] lives in a scope; pack owned tensors "
                        "(parameters, fused weights)");
    ck_assert_ptr_eq(tl_data(w), data);
    assert_same_values(w, before, "after the failures");
    tl_module_free(a);
}
END_TEST
