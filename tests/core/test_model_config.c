/* ModelConfig (M05.1): SmolLM2's numbers by hand, biases, grouped heads and
 * the configurations that must be refused. */
#include <check.h>
#include <stdint.h>
#include "tinyllm/testing.h"
#include "tinyllm/model_config.h"

/* A config small enough to count on paper: d 8, f 12, V 10, 2 layers,
 * 4 heads of 2, 2 KV heads. */
static tl_model_config tiny(void) {
    return (tl_model_config){
        .vocab_size = 10, .hidden_size = 8, .intermediate_size = 12,
        .num_hidden_layers = 2, .num_attention_heads = 4, .num_key_value_heads = 2,
        .tie_word_embeddings = true,
    };
}

/* One tiny layer: q 8x8, k and v 4x8 each, o 8x8, MLP 3 x 8x12, norms 2 x 8. */
static const int64_t TINY_LAYER = 64 + 32 + 32 + 64 + 288 + 16;   /* 496 */
static const int64_t TINY_EMBED = 10 * 8;

static int64_t count_ok(const tl_model_config *c) {
    tl_clear_error();
    int64_t n = tl_model_config_param_count(c);
    ck_assert_msg(n > 0, "param_count failed: %s", tl_error() ? tl_error() : "(no message)");
    return n;
}

static void assert_refused(const tl_model_config *c, const char *needle) {
    tl_clear_error();
    ck_assert_int_eq(tl_model_config_param_count(c), -1);
    const char *e = tl_error();
    ck_assert_msg(e && strstr(e, needle), "error '%s' should mention '%s'",
                  e ? e : "(none)", needle);
    tl_clear_error();
}

START_TEST(model_config_smollm2_matches_its_config_json)
{
    tl_model_config c = tl_model_config_smollm2_135m();
    ck_assert_int_eq(c.vocab_size, 49152);
    ck_assert_int_eq(c.hidden_size, 576);
    ck_assert_int_eq(c.intermediate_size, 1536);
    ck_assert_int_eq(c.num_hidden_layers, 30);
    ck_assert_int_eq(c.num_attention_heads, 9);
    ck_assert_int_eq(c.num_key_value_heads, 3);
    ck_assert(c.tie_word_embeddings);
    ck_assert(!c.attention_bias && !c.qkv_bias && !c.mlp_bias);
    ck_assert_int_eq(tl_model_config_head_dim(&c), 64);
}
END_TEST

/* hf-numerics.md section 10: HF's num_parameters(), tied and untied. */
START_TEST(model_config_smollm2_counts_134515008_tied_162826560_untied)
{
    tl_model_config c = tl_model_config_smollm2_135m();
    ck_assert_int_eq(count_ok(&c), 134515008);
    c.tie_word_embeddings = false;
    ck_assert_int_eq(count_ok(&c), 162826560);
}
END_TEST

/* The L7.9 chapter's section 3 table, row by row. */
START_TEST(model_config_smollm2_layer_is_3540096_by_hand)
{
    const int64_t q_and_o = 2 * 576 * 576;          /* 663,552 */
    const int64_t k_and_v = 2 * 192 * 576;          /* 221,184 */
    const int64_t mlp = 3 * 576 * 1536;             /* 2,654,208 */
    const int64_t norms = 2 * 576;                  /* 1,152 */
    ck_assert_int_eq(q_and_o + k_and_v + mlp + norms, 3540096);

    tl_model_config c = tl_model_config_smollm2_135m();
    int64_t thirty = count_ok(&c);
    c.num_hidden_layers = 31;
    ck_assert_int_eq(count_ok(&c) - thirty, 3540096);
    /* The rest: embedding (tied, once) and the final norm. */
    ck_assert_int_eq(thirty - 30 * 3540096, 49152 * 576 + 576);
}
END_TEST

START_TEST(model_config_tiny_counts_by_hand)
{
    tl_model_config c = tiny();
    ck_assert_int_eq(count_ok(&c), 2 * TINY_LAYER + TINY_EMBED + 8);
    c.tie_word_embeddings = false;
    ck_assert_int_eq(count_ok(&c), 2 * TINY_LAYER + 2 * TINY_EMBED + 8);
}
END_TEST

/* Llama's attention_bias biases q, k, v and o: 8 + 4 + 4 + 8 per layer. */
START_TEST(model_config_attention_bias_adds_q_k_v_and_o_biases)
{
    tl_model_config c = tiny();
    int64_t plain = count_ok(&c);
    c.attention_bias = true;
    ck_assert_int_eq(count_ok(&c) - plain, 2 * (8 + 4 + 4 + 8));
    c.qkv_bias = true;   /* implied by attention_bias: nothing more */
    ck_assert_int_eq(count_ok(&c) - plain, 2 * (8 + 4 + 4 + 8));
}
END_TEST

/* Qwen2 biases q, k and v but not o. */
START_TEST(model_config_qkv_bias_adds_q_k_v_biases_only)
{
    tl_model_config c = tiny();
    int64_t plain = count_ok(&c);
    c.qkv_bias = true;
    ck_assert_int_eq(count_ok(&c) - plain, 2 * (8 + 4 + 4));
}
END_TEST

/* gate and up are biased by f each, down by d. */
START_TEST(model_config_mlp_bias_adds_gate_up_down_biases)
{
    tl_model_config c = tiny();
    int64_t plain = count_ok(&c);
    c.mlp_bias = true;
    ck_assert_int_eq(count_ok(&c) - plain, 2 * (12 + 12 + 8));
}
END_TEST

/* One KV head (multi-query): k and v are 2 x 8 each. Zero means as many KV
 * heads as query heads (multi-head): k and v are 8 x 8 each. */
START_TEST(model_config_mqa_and_default_kv_heads)
{
    tl_model_config c = tiny();
    int64_t gqa = count_ok(&c);
    c.num_key_value_heads = 1;
    ck_assert_int_eq(gqa - count_ok(&c), 2 * 2 * (32 - 16));
    c.num_key_value_heads = 0;
    int64_t mha = count_ok(&c);
    c.num_key_value_heads = 4;
    ck_assert_int_eq(count_ok(&c), mha);
    ck_assert_int_eq(mha - gqa, 2 * 2 * (64 - 32));
}
END_TEST

/* An explicit head_dim overrides d / H and need not multiply back to d:
 * 4 heads of 3 make q 8 x 12, k and v 8 x 6, o 12 x 8. */
START_TEST(model_config_explicit_head_dim_sets_the_projection_widths)
{
    tl_model_config c = tiny();
    c.head_dim = 3;
    ck_assert_int_eq(tl_model_config_head_dim(&c), 3);
    int64_t layer = 96 + 48 + 48 + 96 + 288 + 16;
    ck_assert_int_eq(count_ok(&c), 2 * layer + TINY_EMBED + 8);
}
END_TEST

START_TEST(model_config_heads_not_dividing_hidden_is_an_error)
{
    tl_model_config c = tiny();
    c.num_attention_heads = 3;   /* 8 / 3 */
    c.num_key_value_heads = 1;
    tl_clear_error();
    ck_assert_int_eq(tl_model_config_head_dim(&c), -1);
    ck_assert_ptr_nonnull(tl_error());
    assert_refused(&c, "does not divide hidden_size 8");
    c.head_dim = 4;              /* explicit: allowed */
    ck_assert_int_gt(count_ok(&c), 0);
}
END_TEST

START_TEST(model_config_kv_heads_not_dividing_heads_is_an_error)
{
    tl_model_config c = tiny();
    c.num_key_value_heads = 3;   /* 4 query heads */
    assert_refused(&c, "num_key_value_heads 3 does not divide num_attention_heads 4");
}
END_TEST

START_TEST(model_config_non_positive_sizes_are_errors)
{
    static const char *const names[] = {"vocab_size", "hidden_size", "intermediate_size",
                                        "num_hidden_layers", "num_attention_heads"};
    for (int i = 0; i < 5; i++) {
        for (int64_t bad = 0; bad >= -1; bad--) {
            tl_model_config c = tiny();
            int64_t *field[] = {&c.vocab_size, &c.hidden_size, &c.intermediate_size,
                                &c.num_hidden_layers, &c.num_attention_heads};
            *field[i] = bad;
            assert_refused(&c, names[i]);
        }
    }
    tl_model_config c = tiny();
    c.num_key_value_heads = -2;
    assert_refused(&c, "num_key_value_heads");
    c = tiny();
    c.head_dim = -1;
    assert_refused(&c, "head_dim");
    tl_clear_error();
    ck_assert_int_eq(tl_model_config_param_count(NULL), -1);
    ck_assert_int_eq(tl_model_config_head_dim(NULL), -1);
    tl_clear_error();
}
END_TEST

START_TEST(model_config_overflowing_count_is_an_error)
{
    tl_model_config c = tiny();
    c.vocab_size = INT64_MAX / 4;
    assert_refused(&c, "overflows");
    c = tiny();
    c.intermediate_size = INT64_MAX;
    assert_refused(&c, "overflows");
    c = tiny();
    c.head_dim = INT64_MAX / 2;
    assert_refused(&c, "overflows");
}
END_TEST
