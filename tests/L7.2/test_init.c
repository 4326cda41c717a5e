/* L7.2: a fresh GatedMLP. Its children are HF's Linear modules in HF's
 * order, so the state dict reads gate_proj.weight [I, H], up_proj.weight
 * [I, H], down_proj.weight [H, I] (each followed by its bias with mlp_bias):
 * L7.9 attaches it as model.layers.N.mlp and loads checkpoints by these
 * names. Parameters are owned F32 leaves that require a gradient; with rng
 * NULL they are zero, with rng they are drawn as three tl_linear_new calls in
 * that order would draw them. Mixtral's experts name the same three w1
 * (gate), w3 (up) and w2 (down), and compute the same function. */
#include <check.h>
#include "mlp_fixture.h"
#include "tinyllm/ops.h"

static void check_slots(const GatedMLP *m, const char *const *names, const int64_t (*shapes)[2],
                        int n) {
    tl_state_dict sd = tl_module_state_dict(m->module);
    ck_assert_msg(sd.count == n, "the state dict has %d entries, expected %d", sd.count, n);
    for (int i = 0; i < n; i++) {
        const tl_tensor *t = sd.items[i].tensor;
        ck_assert_msg(strcmp(sd.items[i].name, names[i]) == 0,
                      "state dict entry %d is '%s', expected '%s' (HF's names, HF's order)", i,
                      sd.items[i].name, names[i]);
        bool vec = shapes[i][1] == 0;
        ck_assert_msg(t->dtype == TL_F32 && t->ndim == (vec ? 1 : 2) &&
                      t->shape[0] == shapes[i][0] && (vec || t->shape[1] == shapes[i][1]),
                      "%s must be F32 [%lld%s%lld]", names[i], (long long)shapes[i][0],
                      vec ? "" : ", ", vec ? 0LL : (long long)shapes[i][1]);
        ck_assert_msg(t->owned && t->requires_grad, "%s must be an owned leaf that requires a "
                      "gradient", names[i]);
    }
    tl_state_dict_free(&sd);
}

START_TEST(test_init_hf_names_order_and_values)
{
    tl_scope_push();
    GatedMLP m;
    ck_assert_msg(gated_mlp_init(&m, 8, 12, TL_ACT_GELU_PYTORCH_TANH, true, NULL) == 0,
                  "gated_mlp_init: %s", tl_error());
    ck_assert_msg(m.hidden == 8 && m.intermediate == 12 && m.bias &&
                  m.act == TL_ACT_GELU_PYTORCH_TANH, "the fields must hold the arguments");
    ck_assert_msg(m.gate_proj && m.up_proj && m.down_proj, "the child pointers must be set");
    ck_assert_ptr_eq(m.gate_proj, tl_module_child(m.module, "gate_proj"));
    ck_assert_ptr_eq(m.up_proj, tl_module_child(m.module, "up_proj"));
    ck_assert_ptr_eq(m.down_proj, tl_module_child(m.module, "down_proj"));
    const char *names[6] = {"gate_proj.weight", "gate_proj.bias", "up_proj.weight",
                            "up_proj.bias", "down_proj.weight", "down_proj.bias"};
    const int64_t shapes[6][2] = {{12, 8}, {12, 0}, {12, 8}, {12, 0}, {8, 12}, {8, 0}};
    check_slots(&m, names, shapes, 6);
    tl_state_dict sd = tl_module_state_dict(m.module);
    for (int i = 0; i < sd.count; i++)   /* init=false: zeros, nothing drawn */
        for (int64_t j = 0; j < tl_numel(sd.items[i].tensor); j++)
            ck_assert_msg(tl_item_at(sd.items[i].tensor, j) == 0.0, "%s[%lld] is %g with rng "
                          "NULL; expected 0", sd.items[i].name, (long long)j,
                          tl_item_at(sd.items[i].tensor, j));
    tl_state_dict_free(&sd);
    gated_mlp_free(&m);
    ck_assert_msg(m.module == NULL && m.gate_proj == NULL, "gated_mlp_free must clear the struct");
    gated_mlp_free(&m);   /* twice is safe */

    /* With rng: the draws of three Linear layers, gate then up then down. */
    tl_pcg32 rng = tl_test_rng(7201), twin = tl_test_rng(7201);
    ck_assert_msg(gated_mlp_init(&m, 8, 12, TL_ACT_SILU, false, &rng) == 0,
                  "gated_mlp_init: %s", tl_error());
    tl_module *expect[3] = {tl_linear_new(8, 12, false, &twin), tl_linear_new(8, 12, false, &twin),
                            tl_linear_new(12, 8, false, &twin)};
    const char *kids[3] = {"gate_proj", "up_proj", "down_proj"};
    for (int c = 0; c < 3; c++) {
        tl_tensor *w = tl_module_param(tl_module_child(m.module, kids[c]), "weight");
        fx_assert_close(w, tl_module_param(expect[c], "weight"), 0.0, 0.0, kids[c]);
        tl_module_free(expect[c]);
    }
    gated_mlp_free(&m);
    tl_scope_pop();
}
END_TEST

START_TEST(test_init_named_children_mixtral)
{
    tl_scope_push();
    GatedMLP e, ref;
    ck_assert_msg(gated_mlp_init_named(&e, FX_H, FX_I, TL_ACT_SILU, false, "w1", "w3", "w2",
                                       NULL) == 0, "gated_mlp_init_named: %s", tl_error());
    const char *names[3] = {"w1.weight", "w3.weight", "w2.weight"};
    const int64_t shapes[3][2] = {{FX_I, FX_H}, {FX_I, FX_H}, {FX_H, FX_I}};
    check_slots(&e, names, shapes, 3);
    ck_assert_ptr_eq(e.gate_proj, tl_module_child(e.module, "w1"));
    ck_assert_ptr_eq(e.up_proj, tl_module_child(e.module, "w3"));
    ck_assert_ptr_eq(e.down_proj, tl_module_child(e.module, "w2"));

    /* The same weights under Mixtral's names compute LlamaMLP's function. */
    tl_checkpoint *fx = tl_fixture_load(MLP_ST);
    fx_mlp(&ref, fx, TL_ACT_SILU, false);
    const char *from[3] = {"gate_proj.weight", "up_proj.weight", "down_proj.weight"};
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(tl_copy_into(tl_module_param(e.module, names[i]),
                                      tl_module_param(ref.module, from[i])), 0);
    tl_tensor *x = tl_fixture_tensor(fx, "x");
    fx_assert_close(gated_mlp_forward(&e, x), gated_mlp_forward(&ref, x), 0.0, 0.0,
                    "Mixtral-named expert vs LlamaMLP");
    gated_mlp_free(&e);
    gated_mlp_free(&ref);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
