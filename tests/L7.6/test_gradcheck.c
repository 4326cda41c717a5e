/* L7.6 gradcheck: autograd's gradients through the whole layer (x and every
 * parameter: q_a_proj with its bias, q_a_layernorm, q_b_proj,
 * kv_a_proj_with_mqa with its bias, kv_a_layernorm, kv_b_proj, o_proj with its
 * bias) agree with central differences, on both attention paths, with
 * rope_interleave, at position ids that do not start at 0. */
#include "mla_fixture.h"

typedef struct {
    MLAttention *a;
    tl_tensor *positions;
} gc_ctx;

/* inputs[0] is x; the others are the layer's own parameters, so the
 * perturbations gradcheck makes land in the weights mla_forward reads. */
static tl_tensor *mla_of_inputs(tl_tensor *const *inputs, void *ctx) {
    gc_ctx *c = ctx;
    return mla_forward(c->a, inputs[0], c->positions, NULL, NULL, 0);
}

START_TEST(test_gradcheck_x_and_every_weight)
{
    tl_scope_push();
    double tol = mla_tol("test_gradcheck_x_and_every_weight", "max_rel_error");
    tl_pcg32 rng = tl_test_rng(7606);
    MLAConfig cfg = {.hidden = 6, .n_heads = 2, .q_lora_rank = 3, .kv_lora_rank = 4,
                     .qk_nope_head_dim = 2, .qk_rope_head_dim = 4, .v_head_dim = 3,
                     .attention_bias = true, .rope_interleave = true};
    RopeSpec rope;
    ck_assert_int_eq(rope_spec_init(&rope, 4, 4, 100.0, ROPE_HALF), 0);
    const mla_path paths[2] = {MLA_PATH_NAIVE, MLA_PATH_ABSORBED};
    for (int p = 0; p < 2; p++) {
        MLAttention a;
        ck_assert_msg(mla_init(&a, &cfg, &rope, &rng) == 0, "mla_init: %s", tl_error());
        a.path = paths[p];
        /* Larger weights than the default init, so the softmax is not near uniform;
         * norm weights away from 1. */
        tl_state_dict sd = tl_module_state_dict(a.module);
        tl_tensor *inputs[16];
        inputs[0] = tl_requires_grad(tl_randn(&rng, TL_SHAPE(2, 4, 6)), true);
        for (int i = 0; i < sd.count; i++) {
            tl_tensor *w = sd.items[i].tensor;
            tl_tensor *v = tl_mul_scalar(tl_randn(&rng, w->ndim, w->shape), 0.7);
            if (strstr(sd.items[i].name, "layernorm")) v = tl_add_scalar(v, 1.0);
            ck_assert_int_eq(tl_copy_into(w, v), 0);
            inputs[1 + i] = w;
        }
        gc_ctx ctx = {&a, tl_arange(5, 9)};
        tl_assert_gradcheck(mla_of_inputs, &ctx, inputs, 1 + sd.count, tol);
        for (int i = 0; i < 1 + sd.count; i++) tl_zero_grad(inputs[i]);
        tl_state_dict_free(&sd);
        mla_free(&a);
    }
    tl_scope_pop();
}
END_TEST
