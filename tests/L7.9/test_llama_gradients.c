/* L7.9 training (section 2.6), gradcheck: a small model with every bias and a
 * tied head, trained on cross-entropy, gets a gradient on every parameter (no
 * silent one), and the tied embedding's gradient, which sums its two uses (the
 * lookup and the head), matches central differences; so do the final norm's. */
#include "llama_fixture.h"

static const char *CONFIG =
    "{\"model_type\": \"llama\", \"vocab_size\": 11, \"hidden_size\": 8, "
    "\"intermediate_size\": 12, \"num_hidden_layers\": 2, \"num_attention_heads\": 2, "
    "\"num_key_value_heads\": 1, \"attention_bias\": true, \"mlp_bias\": true, "
    "\"tie_word_embeddings\": true, \"rms_norm_eps\": 1e-5, \"initializer_range\": 0.5, "
    "\"rope_theta\": 100.0}";

typedef struct {
    LlamaForCausalLM *m;
    tl_tensor *ids, *targets;
} loss_ctx;

static tl_tensor *loss_of(tl_tensor *const *inputs, void *p) {
    (void)inputs;   /* the parameters are the model's own tensors */
    loss_ctx *c = p;
    tl_tensor *logits = llama_forward(c->m, c->ids, NULL, NULL);
    return tl_cross_entropy(tl_reshape(logits, TL_SHAPE(-1, 11)), c->targets, -100);
}

START_TEST(test_gradients_reach_every_parameter)
{
    tl_scope_push();
    LlamaConfig c = ll_config_text(CONFIG);
    tl_pcg32 rng = tl_test_rng(3);
    LlamaForCausalLM m;
    ck_assert_int_eq(llama_init(&m, &c, &rng), 0);
    /* Norms away from 1 and biases away from 0, so their gradients mean something. */
    tl_state_dict sd = tl_module_state_dict(m.module);
    for (int i = 0; i < sd.count; i++)
        if (sd.items[i].tensor->ndim == 1)
            for (int64_t k = 0; k < tl_numel(sd.items[i].tensor); k++)
                tl_set(sd.items[i].tensor, (int64_t[]){k},
                       tl_item_at(sd.items[i].tensor, k) + 0.3 * tl_pcg32_normal(&rng));
    loss_ctx ctx = {&m, tl_from_i64((int64_t[]){1, 4, 7, 10, 2, 5}, TL_SHAPE(2, 3)),
                    tl_from_i64((int64_t[]){4, 7, 10, 2, 5, 8}, TL_SHAPE(6))};
    ck_assert_int_eq(tl_backward(loss_of(NULL, &ctx)), 0);
    for (int i = 0; i < sd.count; i++) {
        tl_tensor *g = sd.items[i].tensor->grad;
        ck_assert_msg(g != NULL, "%s got no gradient", sd.items[i].name);
        double norm = 0;
        for (int64_t k = 0; k < tl_numel(g); k++) norm += fabs(tl_item_at(g, k));
        ck_assert_msg(norm > 0, "%s's gradient is zero", sd.items[i].name);
        tl_zero_grad(sd.items[i].tensor);
    }
    double tol = ll_tol("test_gradients_reach_every_parameter", "max_rel_error");
    tl_tensor *embed = tl_module_param(m.module, "model.embed_tokens.weight");
    tl_tensor *norm = tl_module_param(m.module, "model.norm.weight");
    ck_assert_ptr_eq(embed, m.head_weight);
    tl_assert_gradcheck(loss_of, &ctx, (tl_tensor *[]){embed}, 1, tol);
    tl_assert_gradcheck(loss_of, &ctx, (tl_tensor *[]){norm}, 1, tol);
    tl_state_dict_free(&sd);
    llama_free(&m);
    tl_scope_pop();
}
END_TEST
