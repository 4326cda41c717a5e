/* L7.5 gradcheck: autograd's gradients through the whole attention (x, every
 * weight and bias) agree with central differences, for GQA with Llama's
 * attention_bias, at position ids that do not start at 0. */
#include "attn_fixture.h"

enum { GC_HIDDEN = 8, GC_T = 4 };

typedef struct {
    GQAttention *a;
    tl_tensor *positions;
} gc_ctx;

/* inputs[0] is x; the others are the attention's own parameters, so the
 * perturbations gradcheck makes land in the weights gqa_forward reads. */
static tl_tensor *attention_of_inputs(tl_tensor *const *inputs, void *ctx) {
    gc_ctx *c = ctx;
    return gqa_forward(c->a, inputs[0], c->positions, NULL, NULL, 0);
}

START_TEST(test_gradcheck_x_and_every_weight)
{
    tl_scope_push();
    double tol = attn_tol("test_gradcheck_x_and_every_weight", "max_rel_error");
    tl_pcg32 rng = tl_test_rng(7506);
    RopeSpec rope = attn_rope(4);
    GQAConfig cfg = {.hidden = GC_HIDDEN, .n_heads = 4, .n_kv_heads = 2, .head_dim = 4,
                     .qkv_bias = true, .o_bias = true};
    GQAttention a;
    ck_assert_msg(gqa_init(&a, &cfg, &rope, &rng) == 0, "gqa_init: %s", tl_error());
    /* Larger weights than the default init, so the softmax is not near uniform. */
    tl_state_dict sd = tl_module_state_dict(a.module);
    tl_tensor *inputs[16];
    inputs[0] = tl_requires_grad(tl_randn(&rng, TL_SHAPE(2, GC_T, GC_HIDDEN)), true);
    for (int i = 0; i < sd.count; i++) {
        tl_tensor *p = sd.items[i].tensor;
        ck_assert_int_eq(tl_copy_into(p, tl_mul_scalar(tl_randn(&rng, p->ndim, p->shape), 0.7)),
                         0);
        inputs[1 + i] = p;
    }
    gc_ctx ctx = {&a, tl_arange(5, 5 + GC_T)};
    tl_assert_gradcheck(attention_of_inputs, &ctx, inputs, 1 + sd.count, tol);
    for (int i = 0; i < 1 + sd.count; i++) tl_zero_grad(inputs[i]);
    tl_state_dict_free(&sd);
    gqa_free(&a);
    tl_scope_pop();
}
END_TEST
