/* L7.7 gradcheck: softmax_with_sink's gradients with respect to the scores
 * AND the sink logits agree with central differences (a masked entry
 * included), and so do a whole attention's with learned sinks. */
#include "mask_fixture.h"

static tl_tensor *sink_softmax_of_inputs(tl_tensor *const *inputs, void *ctx) {
    tl_tensor *mask = ctx;
    return softmax_with_sink(tl_add(inputs[0], mask), inputs[1]);
}

static tl_tensor *attention_of_inputs(tl_tensor *const *inputs, void *ctx) {
    return gqa_forward(ctx, inputs[0], NULL, NULL, NULL, 0);
}

START_TEST(test_gradcheck_softmax_with_sink)
{
    tl_scope_push();
    double tol = mask_tol("test_gradcheck_softmax_with_sink", "max_rel_error");
    tl_pcg32 rng = tl_test_rng(7703);
    tl_tensor *mask = attention_mask(tl_arange(2, 5), tl_arange(0, 5), 2, 1);  /* [3, 5] */
    tl_tensor *inputs[2] = {
        tl_requires_grad(tl_mul_scalar(tl_randn(&rng, TL_SHAPE(2, 3, 3, 5)), 2.0), true),
        tl_requires_grad(tl_randn(&rng, TL_SHAPE(3)), true)};
    tl_assert_gradcheck(sink_softmax_of_inputs, mask, inputs, 2, tol);
    tl_zero_grad(inputs[0]);
    tl_zero_grad(inputs[1]);

    /* Through an attention layer with learned sinks: x and the sinks. */
    RopeSpec r;
    ck_assert_int_eq(rope_spec_init(&r, 4, 4, 10000.0, ROPE_HALF), 0);
    GQAConfig cfg = {.hidden = 8, .n_heads = 2, .n_kv_heads = 1, .head_dim = 4};
    GQAttention a;
    ck_assert_int_eq(gqa_init(&a, &cfg, &r, &rng), 0);
    ck_assert_int_eq(gqa_add_learned_sinks(&a, &rng), 0);
    ck_assert_int_eq(tl_copy_into(a.sinks, tl_randn(&rng, TL_SHAPE(2))), 0);
    tl_tensor *layer_inputs[2] = {tl_requires_grad(tl_randn(&rng, TL_SHAPE(1, 3, 8)), true),
                                  a.sinks};
    tl_assert_gradcheck(attention_of_inputs, &a, layer_inputs, 2, tol);
    tl_zero_grad(layer_inputs[0]);
    tl_zero_grad(a.sinks);
    gqa_free(&a);
    tl_scope_pop();
}
END_TEST
