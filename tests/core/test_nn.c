/* Modules (L0.4): the state dict's names and order, strict and lenient
 * loading, a tied (shared) parameter, initialisation, and the layers. */
#include <check.h>
#include <math.h>
#include <string.h>
#include "tinyllm/testing.h"
#include "tinyllm/autograd.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"

/* The tree below, built in PyTorch (torch 1.13) as
 *   Tiny: embed = Embedding(5, 4); layers = ModuleList([Block(), Block()]);
 *         head = Linear(4, 5, bias=False) with head.weight = embed.weight;
 *         scale = Parameter([1])            (registered last)
 *   Block: q = Linear(4, 4); norm = Parameter([4]); mlp = MLP()
 *   MLP: up = Linear(4, 8, bias=False)
 * has these state_dict keys, in this order (own parameters come before
 * children whatever the registration order), and 133 parameters. */
static const char *const TINY_KEYS[] = {
    "scale",         "embed.weight",  "layers.0.norm",         "layers.0.q.weight",
    "layers.0.q.bias", "layers.0.mlp.up.weight", "layers.1.norm", "layers.1.q.weight",
    "layers.1.q.bias", "layers.1.mlp.up.weight", "head.weight",
};
enum { TINY_SLOTS = 11, TINY_PARAMS = 1 + 5 * 4 + 2 * (4 + 16 + 4 + 4 * 8) };

static tl_module *block_new(tl_pcg32 *rng) {
    tl_module *b = tl_module_new("Block");
    tl_module_add(b, "q", tl_linear_new(4, 4, true, rng));
    tl_module_param_new(b, "norm", TL_SHAPE(4));
    tl_module *mlp = tl_module_add(b, "mlp", tl_module_new("MLP"));
    tl_module_add(mlp, "up", tl_linear_new(4, 8, false, rng));
    return b;
}

static tl_module *tiny_new(tl_pcg32 *rng) {
    tl_module *m = tl_module_new("Tiny");
    tl_module *embed = tl_module_add(m, "embed", tl_embedding_new(5, 4, rng));
    tl_module *layers = tl_module_add(m, "layers", tl_module_list_new());
    tl_module_list_append(layers, block_new(rng));
    tl_module_list_append(layers, block_new(rng));
    tl_module *head = tl_module_add(m, "head", tl_module_new("Linear"));
    ck_assert_int_eq(tl_module_param_share(head, "weight", tl_module_param(embed, "weight")), 0);
    tl_assert_ok(tl_module_param_new(m, "scale", TL_SHAPE(1)));
    return m;
}

/* A state dict over caller-made tensors (names are not copied). */
static tl_state_dict dict_of(tl_named_tensor *items, int count) {
    return (tl_state_dict){items, count};
}

static void assert_load_fails(tl_module *m, const tl_state_dict *sd, bool strict,
                              const char *expected) {
    tl_clear_error();
    ck_assert_int_eq(tl_module_load_state_dict(m, sd, strict), -1);
    ck_assert_msg(tl_error() && strstr(tl_error(), expected),
                  "error:\n  %s\nexpected it to contain:\n  %s",
                  tl_error() ? tl_error() : "(none)", expected);
    tl_clear_error();
}

START_TEST(nn_state_dict_names_and_order_match_pytorch)
{
    tl_module *m = tiny_new(NULL);
    tl_state_dict sd = tl_module_state_dict(m);
    ck_assert_int_eq(sd.count, TINY_SLOTS);
    for (int i = 0; i < TINY_SLOTS; i++)
        ck_assert_msg(strcmp(sd.items[i].name, TINY_KEYS[i]) == 0, "slot %d is '%s', expected '%s'",
                      i, sd.items[i].name, TINY_KEYS[i]);
    ck_assert_ptr_eq(sd.items[1].tensor, tl_module_param(m, "embed.weight"));
    ck_assert_ptr_eq(sd.items[4].tensor, tl_module_param(m, "layers.0.q.bias"));
    tl_state_dict_free(&sd);
    ck_assert_int_eq(sd.count, 0);
    tl_module_free(m);
}
END_TEST

START_TEST(nn_only_the_second_slot_of_a_tied_tensor_is_shared)
{
    tl_module *m = tiny_new(NULL);
    tl_state_dict sd = tl_module_state_dict(m);
    for (int i = 0; i < sd.count; i++)
        ck_assert_msg(sd.items[i].shared == (i == TINY_SLOTS - 1), "slot %s shared=%d",
                      sd.items[i].name, sd.items[i].shared);
    ck_assert_ptr_eq(sd.items[TINY_SLOTS - 1].tensor, sd.items[1].tensor);
    tl_state_dict_free(&sd);
    tl_module_free(m);
}
END_TEST

START_TEST(nn_param_count_counts_a_tied_tensor_once)
{
    tl_module *m = tiny_new(NULL);
    ck_assert_int_eq(tl_module_param_count(m), TINY_PARAMS);   /* 133, as torch says */
    /* An untied head of the same shape adds its 20 values. */
    tl_module *untied = tl_module_add(m, "untied_head", tl_linear_new(4, 5, false, NULL));
    tl_assert_ok(untied);
    ck_assert_int_eq(tl_module_param_count(m), TINY_PARAMS + 20);
    tl_module_free(m);
}
END_TEST

START_TEST(nn_param_new_is_a_zeroed_owned_f32_leaf)
{
    tl_module *m = tl_module_new("M");
    tl_tensor *p = tl_module_param_new(m, "w", TL_SHAPE(3, 2));
    tl_assert_ok(p);
    ck_assert_int_eq(p->dtype, TL_F32);
    ck_assert(p->requires_grad);
    ck_assert(p->owned);
    ck_assert_int_eq(p->ndim, 2);
    ck_assert_int_eq(p->shape[0], 3);
    ck_assert_int_eq(p->shape[1], 2);
    for (int i = 0; i < 6; i++) ck_assert_float_eq(tl_f32(p)[i], 0.0f);
    ck_assert_ptr_eq(tl_module_param(m, "w"), p);
    ck_assert_str_eq(tl_module_type(m), "M");
    tl_module_free(m);
}
END_TEST

START_TEST(nn_lookups_follow_dotted_paths)
{
    tl_module *m = tiny_new(NULL);
    tl_module *layers = tl_module_child(m, "layers");
    tl_assert_ok(layers);
    ck_assert_ptr_eq(tl_module_child(m, "layers.1.mlp"),
                     tl_module_child(tl_module_list_at(layers, 1), "mlp"));
    ck_assert_str_eq(tl_module_type(tl_module_child(m, "layers.1.mlp.up")), "Linear");
    ck_assert_ptr_eq(tl_module_param(m, "layers.1.mlp.up.weight"),
                     tl_module_param(tl_module_child(m, "layers.1.mlp.up"), "weight"));
    tl_assert_error(tl_module_param(m, "layers.1.mlp.up.bias"),
                    "no parameter 'layers.1.mlp.up.bias'");
    tl_assert_error(tl_module_param(m, "layers.7.norm"), "no parameter");
    tl_assert_error(tl_module_child(m, "layers.2"), "no child 'layers.2'");
    tl_module_free(m);
}
END_TEST

START_TEST(nn_module_list_names_children_by_index)
{
    tl_module *list = tl_module_list_new();
    ck_assert_str_eq(tl_module_type(list), "ModuleList");
    ck_assert_int_eq(tl_module_list_len(list), 0);
    tl_module *a = tl_module_list_append(list, tl_linear_new(2, 3, false, NULL));
    tl_module *b = tl_module_list_append(list, tl_linear_new(3, 2, false, NULL));
    ck_assert_int_eq(tl_module_list_len(list), 2);
    ck_assert_ptr_eq(tl_module_list_at(list, 0), a);
    ck_assert_ptr_eq(tl_module_list_at(list, 1), b);
    ck_assert_ptr_eq(tl_module_child(list, "1"), b);
    tl_assert_error(tl_module_list_at(list, 2),
                    "index 2 out of range for a ModuleList of length 2");
    tl_assert_error(tl_module_list_at(list, -1), "index -1 out of range");
    tl_assert_error(tl_module_list_at(a, 0), "expected a ModuleList, got Linear");
    tl_module_free(list);
}
END_TEST

START_TEST(nn_registration_errors_name_the_module_and_the_name)
{
    tl_module *m = tiny_new(NULL);
    tl_module *q = tl_module_child(m, "layers.0.q");
    tl_assert_error(tl_module_param_new(q, "weight", TL_SHAPE(2)),
                    "Linear 'layers.0.q' already has a parameter named 'weight'");
    tl_assert_error(tl_module_param_new(q, "a.b", TL_SHAPE(2)), "contains '.'");
    tl_assert_error(tl_module_param_new(q, "", TL_SHAPE(2)), "the name is empty");
    tl_assert_error(tl_module_add(m, "layers", tl_module_new("X")),
                    "Tiny '(root)' already has a child named 'layers'");
    /* A module already in a tree is refused and left there. */
    tl_assert_error(tl_module_add(m, "again", q), "already part of a module tree");
    ck_assert_ptr_eq(tl_module_child(m, "layers.0.q"), q);
    tl_assert_error(tl_module_add(q, "cycle", m), "already part of a module tree");
    tl_clear_error();
    ck_assert_int_eq(tl_module_param_share(q, "shared", NULL), -1);
    tl_assert_error(tl_module_add(NULL, "x", tl_module_new("X")), "parent module is NULL");
    ck_assert_int_eq(tl_module_param_count(m), TINY_PARAMS);
    tl_module_free(m);
}
END_TEST

/* Only long-lived tensors can be parameters. */
START_TEST(nn_sharing_a_scoped_tensor_is_refused)
{
    tl_module *m = tl_module_new("M");
    tl_scope_push();
    tl_tensor *t = tl_zeros(TL_F32, TL_SHAPE(2));
    tl_clear_error();
    ck_assert_int_eq(tl_module_param_share(m, "w", t), -1);
    ck_assert_ptr_nonnull(strstr(tl_error(), "lives in a scope"));
    tl_clear_error();
    tl_scope_pop();
    ck_assert_int_eq(tl_module_param_count(m), 0);
    tl_module_free(m);
}
END_TEST

/* The module below has a.weight [2, 3] and b.bias [2] (b is a Linear with
 * bias, so b.weight too); the dict has only b.weight and an extra c.weight. */
START_TEST(nn_strict_load_lists_every_missing_and_unexpected_key)
{
    tl_module *m = tl_module_new("M");
    tl_module_add(m, "a", tl_linear_new(3, 2, false, NULL));
    tl_module_add(m, "b", tl_linear_new(3, 2, true, NULL));
    tl_scope_push();
    tl_named_tensor items[] = {
        {"b.weight", tl_full(TL_F32, TL_SHAPE(2, 3), 1.5), false},
        {"c.weight", tl_full(TL_F32, TL_SHAPE(2, 3), 2.5), false},
    };
    tl_state_dict sd = dict_of(items, 2);
    assert_load_fails(m, &sd, true,
                      "load_state_dict: 2 missing keys: a.weight, b.bias; "
                      "1 unexpected key: c.weight");
    /* All or nothing: b.weight was not copied. */
    ck_assert_double_eq(tl_item_at(tl_module_param(m, "b.weight"), 0), 0.0);
    tl_scope_pop();
    tl_module_free(m);
}
END_TEST

START_TEST(nn_long_key_lists_end_with_and_n_more)
{
    tl_module *list = tl_module_list_new();
    for (int i = 0; i < 20; i++) tl_module_list_append(list, tl_linear_new(1, 1, false, NULL));
    tl_state_dict empty = {NULL, 0};
    assert_load_fails(list, &empty, true, "20 missing keys: 0.weight, 1.weight, ");
    assert_load_fails(list, &empty, true, "7.weight and 12 more; nothing was loaded");
    tl_module_free(list);
}
END_TEST

START_TEST(nn_shape_mismatch_names_the_key_and_both_shapes)
{
    tl_module *m = tl_module_new("M");
    tl_module_add(m, "q", tl_linear_new(8, 8, false, NULL));
    tl_scope_push();
    tl_named_tensor items[] = {{"q.weight", tl_ones(TL_F32, TL_SHAPE(4, 8)), false}};
    tl_state_dict sd = dict_of(items, 1);
    const char *expected =
        "size mismatch for q.weight: the checkpoint has shape [4, 8], the module [8, 8]";
    assert_load_fails(m, &sd, true, expected);
    assert_load_fails(m, &sd, false, expected);   /* lenient loads refuse it too */
    items[0].tensor = tl_from_i64((const int64_t[]){1, 2, 3, 4, 5, 6, 7, 8}, TL_SHAPE(1, 8));
    assert_load_fails(m, &sd, false,
                      "q.weight is I64 in the checkpoint; a parameter needs a float dtype");
    tl_scope_pop();
    tl_module_free(m);
}
END_TEST

START_TEST(nn_lenient_load_fills_what_matches_and_ignores_extras)
{
    tl_module *m = tl_module_new("M");
    tl_module_add(m, "a", tl_linear_new(2, 2, true, NULL));
    tl_scope_push();
    tl_named_tensor items[] = {
        {"extra", tl_ones(TL_F32, TL_SHAPE(7)), false},
        {"a.weight", tl_from_f32((const float[]){1, 2, 3, 4}, TL_SHAPE(2, 2)), false},
    };
    tl_state_dict sd = dict_of(items, 2);
    tl_clear_error();
    ck_assert_int_eq(tl_module_load_state_dict(m, &sd, false), 0);
    ck_assert_ptr_null(tl_error());
    tl_tensor *w = tl_module_param(m, "a.weight");
    for (int i = 0; i < 4; i++) ck_assert_double_eq(tl_item_at(w, i), i + 1);
    ck_assert_double_eq(tl_item_at(tl_module_param(m, "a.bias"), 0), 0.0);   /* untouched */
    tl_scope_pop();
    tl_module_free(m);
}
END_TEST

/* BF16 checkpoints load into F32 parameters (1.5 and -2.25 are exact). */
START_TEST(nn_load_casts_bf16_values)
{
    tl_module *m = tl_embedding_new(1, 2, NULL);
    tl_scope_push();
    tl_tensor *bf = tl_cast(tl_from_f32((const float[]){1.5f, -2.25f}, TL_SHAPE(1, 2)), TL_BF16);
    tl_assert_ok(bf);
    tl_named_tensor items[] = {{"weight", bf, false}};
    tl_state_dict sd = dict_of(items, 1);
    ck_assert_int_eq(tl_module_load_state_dict(m, &sd, true), 0);
    ck_assert_double_eq(tl_item_at(tl_module_param(m, "weight"), 0), 1.5);
    ck_assert_double_eq(tl_item_at(tl_module_param(m, "weight"), 1), -2.25);
    tl_scope_pop();
    tl_module_free(m);
}
END_TEST

/* Round trip: a module's own state dict loads into a twin built from another
 * seed, and a module can load its own dict (source is destination). */
START_TEST(nn_state_dict_round_trips_into_a_twin)
{
    tl_pcg32 r1 = tl_test_rng(1), r2 = tl_test_rng(2);
    tl_module *a = tiny_new(&r1), *b = tiny_new(&r2);
    tl_state_dict sd = tl_module_state_dict(a);
    ck_assert_int_eq(tl_module_load_state_dict(b, &sd, true), 0);
    ck_assert_int_eq(tl_module_load_state_dict(a, &sd, true), 0);
    tl_state_dict sb = tl_module_state_dict(b);
    for (int i = 0; i < sd.count; i++)
        tl_assert_close(sb.items[i].tensor, sd.items[i].tensor, 0, 0);
    tl_state_dict_free(&sb);
    tl_state_dict_free(&sd);
    tl_module_free(a);
    tl_module_free(b);
}
END_TEST

/* The tied head may be absent when embed.weight is present; when both are
 * present, embed.weight's values win and head.weight must fit. */
START_TEST(nn_tied_tensor_loads_once_from_its_first_name)
{
    tl_module *m = tiny_new(NULL);
    tl_state_dict full = tl_module_state_dict(m);
    tl_scope_push();
    tl_named_tensor items[TINY_SLOTS];
    for (int i = 0; i < TINY_SLOTS; i++)
        items[i] = (tl_named_tensor){full.items[i].name,
                                     tl_full(TL_F32, full.items[i].tensor->ndim,
                                             full.items[i].tensor->shape, i + 1),
                                     false};
    tl_state_dict without_head = dict_of(items, TINY_SLOTS - 1);
    ck_assert_int_eq(tl_module_load_state_dict(m, &without_head, true), 0);
    ck_assert_double_eq(tl_item_at(tl_module_param(m, "head.weight"), 0), 2.0);

    tl_state_dict with_head = dict_of(items, TINY_SLOTS);   /* head.weight holds 11s */
    ck_assert_int_eq(tl_module_load_state_dict(m, &with_head, true), 0);
    ck_assert_double_eq(tl_item_at(tl_module_param(m, "embed.weight"), 19), 2.0);

    items[TINY_SLOTS - 1].tensor = tl_ones(TL_F32, TL_SHAPE(4, 5));
    assert_load_fails(m, &with_head, true,
                      "size mismatch for head.weight: the checkpoint has shape [4, 5], "
                      "the module [5, 4]");

    /* Strict loading needs the first name; a lenient one takes the second. */
    tl_named_tensor no_embed[TINY_SLOTS - 1];
    for (int i = 0, k = 0; i < TINY_SLOTS; i++)
        if (i != 1) no_embed[k++] = items[i];
    no_embed[TINY_SLOTS - 2].tensor = tl_full(TL_F32, TL_SHAPE(5, 4), 7.0);
    tl_state_dict head_only = dict_of(no_embed, TINY_SLOTS - 1);
    assert_load_fails(m, &head_only, true, "1 missing key: embed.weight");
    ck_assert_int_eq(tl_module_load_state_dict(m, &head_only, false), 0);
    ck_assert_double_eq(tl_item_at(tl_module_param(m, "embed.weight"), 0), 7.0);
    tl_scope_pop();
    tl_state_dict_free(&full);
    tl_module_free(m);
}
END_TEST

/* loss = sum(R * head(embed(ids))) with head.weight = E. By hand:
 *   dL/dE[v][d] = sum_t R[t][v] E[ids[t]][d]          (the head)
 *               + sum_{t: ids[t] = v} sum_u R[t][u] E[u][d]   (the lookup)
 * and autograd must give their sum in the one .grad. */
START_TEST(nn_tied_tensor_gets_the_sum_of_both_gradients)
{
    tl_pcg32 rng = tl_test_rng(11);
    tl_module *embed = tl_embedding_new(3, 2, &rng);
    tl_module *head = tl_module_new("Linear");
    tl_tensor *E = tl_module_param(embed, "weight");
    ck_assert_int_eq(tl_module_param_share(head, "weight", E), 0);
    const int64_t ids_v[] = {0, 2, 2};
    const float R_v[] = {0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.75f, -2.0f, 1.0f, 0.125f};

    tl_scope_push();
    tl_tensor *ids = tl_from_i64(ids_v, TL_SHAPE(3));
    tl_tensor *R = tl_from_f32(R_v, TL_SHAPE(3, 3));
    tl_tensor *logits = tl_linear_forward(head, tl_embedding_forward(embed, ids));
    tl_tensor *loss = tl_sum_all(tl_mul(logits, R));
    tl_assert_ok(loss);
    ck_assert_int_eq(tl_backward(loss), 0);
    tl_assert_ok(E->grad);

    const float *e = tl_f32(E);
    for (int v = 0; v < 3; v++) {
        for (int d = 0; d < 2; d++) {
            double expected = 0;
            for (int t = 0; t < 3; t++) {
                expected += R_v[t * 3 + v] * e[ids_v[t] * 2 + d];
                if (ids_v[t] == v)
                    for (int u = 0; u < 3; u++) expected += R_v[t * 3 + u] * e[u * 2 + d];
            }
            double got = tl_get(E->grad, (const int64_t[]){v, d});
            ck_assert_msg(fabs(got - expected) < 1e-5, "dL/dE[%d][%d] = %.7g, by hand %.7g", v,
                          d, got, expected);
        }
    }
    tl_scope_pop();
    tl_module *root = tl_module_new("Tied");
    tl_module_add(root, "embed", embed);
    tl_module_add(root, "head", head);
    ck_assert_int_eq(tl_module_param_count(root), 6);
    tl_module_free(root);   /* E freed once, with its .grad */
}
END_TEST

/* PyTorch's Linear default: weight then bias, each U(-1/sqrt(in), 1/sqrt(in)),
 * drawn in C order from the generator's uniform stream. */
START_TEST(nn_linear_init_draws_weight_then_bias_within_the_bound)
{
    tl_pcg32 rng = tl_test_rng(5), replay = tl_test_rng(5);
    tl_module *lin = tl_linear_new(16, 32, true, &rng);
    tl_assert_ok(lin);
    const double bound = 0.25;   /* 1/sqrt(16) */
    const char *names[] = {"weight", "bias"};
    double lo = 1, hi = -1;
    for (int p = 0; p < 2; p++) {
        tl_tensor *t = tl_module_param(lin, names[p]);
        for (int64_t i = 0; i < tl_numel(t); i++) {
            float expected = (float)(bound * (2.0 * tl_pcg32_uniform(&replay) - 1.0));
            float got = tl_f32(t)[i];
            ck_assert_msg(got == expected, "%s[%lld] = %.9g, expected %.9g", names[p],
                          (long long)i, (double)got, (double)expected);
            ck_assert(got >= -bound && got < bound);
            lo = fmin(lo, got);
            hi = fmax(hi, got);
        }
    }
    ck_assert_msg(lo < -0.2 && hi > 0.2, "544 draws span [%.3f, %.3f]", lo, hi);
    ck_assert(rng.state == replay.state);
    tl_module_free(lin);
}
END_TEST

START_TEST(nn_embedding_init_is_the_normal_stream)
{
    tl_pcg32 rng = tl_test_rng(9), replay = tl_test_rng(9);
    tl_module *emb = tl_embedding_new(100, 50, &rng);
    tl_tensor *w = tl_module_param(emb, "weight");
    double sum = 0, sumsq = 0;
    for (int64_t i = 0; i < 5000; i++) {
        ck_assert_float_eq(tl_f32(w)[i], (float)tl_pcg32_normal(&replay));
        sum += tl_f32(w)[i];
        sumsq += tl_f32(w)[i] * tl_f32(w)[i];
    }
    ck_assert_msg(fabs(sum / 5000) < 0.06 && fabs(sumsq / 5000 - 1) < 0.08,
                  "mean %.4f, variance %.4f", sum / 5000, sumsq / 5000);
    tl_module_free(emb);
}
END_TEST

START_TEST(nn_init_false_allocates_without_drawing_a_single_number)
{
    tl_pcg32 rng = tl_test_rng(3);
    const tl_pcg32 before = rng;
    tl_module *m = tiny_new(NULL);
    ck_assert(rng.state == before.state && rng.inc == before.inc);
    ck_assert(rng.has_spare == before.has_spare);
    tl_state_dict sd = tl_module_state_dict(m);
    for (int i = 0; i < sd.count; i++)
        for (int64_t j = 0; j < tl_numel(sd.items[i].tensor); j++)
            ck_assert_msg(tl_item_at(sd.items[i].tensor, j) == 0.0, "%s[%lld] is not zero",
                          sd.items[i].name, (long long)j);
    tl_state_dict_free(&sd);
    tl_module_free(m);
    /* The generator passed to a real init is the only one used: a fresh
     * stream gives the same first number as the untouched one. */
    tl_pcg32 fresh = tl_test_rng(3);
    ck_assert_uint_eq(tl_pcg32_next(&rng), tl_pcg32_next(&fresh));
}
END_TEST

START_TEST(nn_layer_constructors_refuse_empty_shapes)
{
    tl_assert_error(tl_linear_new(0, 4, true, NULL), "must be positive, got 0 and 4");
    tl_assert_error(tl_embedding_new(5, -1, NULL), "must be positive, got 5 and -1");
    tl_assert_error(tl_linear_forward(NULL, NULL), "module is NULL");
    tl_module *emb = tl_embedding_new(2, 2, NULL);
    tl_assert_error(tl_linear_forward(emb, NULL), "expected a Linear module, got Embedding");
    tl_module_free(emb);
}
END_TEST

/* y = x W^T + b by hand for W [2, 3], b [2]. */
START_TEST(nn_linear_forward_is_x_times_w_transposed_plus_b)
{
    tl_module *lin = tl_linear_new(3, 2, true, NULL);
    tl_scope_push();
    tl_named_tensor items[] = {
        {"weight", tl_from_f32((const float[]){1, 2, 3, -1, 0, 2}, TL_SHAPE(2, 3)), false},
        {"bias", tl_from_f32((const float[]){0.5f, -0.5f}, TL_SHAPE(2)), false},
    };
    tl_state_dict sd = dict_of(items, 2);
    ck_assert_int_eq(tl_module_load_state_dict(lin, &sd, true), 0);
    tl_tensor *x = tl_from_f32((const float[]){1, 1, 1, 2, 0, -1}, TL_SHAPE(2, 3));
    tl_tensor *y = tl_linear_forward(lin, x);
    tl_assert_ok(y);
    tl_tensor *expected = tl_from_f32((const float[]){6.5f, 0.5f, -0.5f, -4.5f}, TL_SHAPE(2, 2));
    tl_assert_close(y, expected, 0, 1e-6);
    tl_scope_pop();
    tl_module_free(lin);
}
END_TEST

/* Freeing a subtree detaches it, so the parent never lists a freed child;
 * the tied tensor is freed once (ASan and valgrind check the rest). */
START_TEST(nn_free_detaches_and_frees_shared_tensors_once)
{
    tl_module *m = tiny_new(NULL);
    tl_module_free(tl_module_child(m, "layers.0"));
    tl_module *layers = tl_module_child(m, "layers");
    ck_assert_int_eq(tl_module_list_len(layers), 1);
    ck_assert_int_eq(tl_module_param_count(m), TINY_PARAMS - (4 + 16 + 4 + 32));
    /* The list renumbers as PyTorch's del does: the survivor is layers.0, and
     * an append becomes layers.1. */
    tl_assert_ok(tl_module_param(m, "layers.0.mlp.up.weight"));
    tl_assert_ok(tl_module_list_append(layers, block_new(NULL)));
    tl_assert_ok(tl_module_param(m, "layers.1.q.bias"));
    tl_module_free(tl_module_child(m, "embed"));   /* the owner first: head now dangles */
    tl_module_free(tl_module_child(m, "head"));    /* ...and frees nothing of it */
    tl_module_free(m);
    tl_module_free(NULL);
}
END_TEST
