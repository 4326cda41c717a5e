/* L7.5 boundary: wrong configs, shapes and caches fail with a message that
 * names the function and what was wrong, and never crash. */
#include "attn_fixture.h"

/* expr must return NULL (or -1 for an int) with an error mentioning each needle. */
#define assert_fails(expr, n1, n2)                                                      \
    do {                                                                                \
        tl_clear_error();                                                               \
        bool failed_ = (expr);                                                          \
        const char *e_ = tl_error() ? tl_error() : "(no message)";                       \
        ck_assert_msg(failed_, "%s succeeded; expected an error", #expr);                \
        ck_assert_msg(strstr(e_, n1) && strstr(e_, n2),                                 \
                      "%s failed with '%s'; expected it to mention '%s' and '%s'", #expr, \
                      e_, n1, n2);                                                      \
        tl_clear_error();                                                               \
    } while (0)

START_TEST(test_boundary_heads_not_divisible_by_kv_heads)
{
    tl_scope_push();
    RopeSpec rope = attn_rope(FX_D);
    GQAttention a;
    GQAConfig cfg = {.hidden = 16, .n_heads = 6, .n_kv_heads = 4, .head_dim = FX_D};
    assert_fails(gqa_init(&a, &cfg, &rope, NULL) == -1, "gqa_init", "6 heads");
    assert_fails(gqa_init(&a, &cfg, &rope, NULL) == -1, "4 kv heads", "multiple");
    ck_assert_msg(a.module == NULL, "a failed gqa_init must leave no module");
    gqa_free(&a);   /* safe after a failed init */
    cfg.n_heads = 2;   /* more kv heads than heads */
    assert_fails(gqa_init(&a, &cfg, &rope, NULL) == -1, "gqa_init", "2 heads");
    /* The RopeSpec must be for the heads' width. */
    cfg = (GQAConfig){.hidden = 16, .n_heads = 4, .n_kv_heads = 2, .head_dim = 4};
    assert_fails(gqa_init(&a, &cfg, &rope, NULL) == -1, "gqa_init", "head_dim");
    /* A struct whose fields were edited after init is checked by the forward. */
    cfg.head_dim = FX_D;
    ck_assert_msg(gqa_init(&a, &cfg, &rope, NULL) == 0, "gqa_init: %s", tl_error());
    a.n_kv_heads = 3;
    assert_fails(gqa_forward(&a, tl_zeros(TL_F32, TL_SHAPE(1, 2, 16)), NULL, NULL, NULL, 0) ==
                     NULL, "gqa_forward", "kv heads");
    a.n_kv_heads = 2;
    a.scale = -1.0;
    assert_fails(gqa_forward(&a, tl_zeros(TL_F32, TL_SHAPE(1, 2, 16)), NULL, NULL, NULL, 0) ==
                     NULL, "gqa_forward", "scale");
    gqa_free(&a);
    tl_scope_pop();
}
END_TEST

START_TEST(test_boundary_shapes_positions_and_masks)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(ATTN_ST);
    GQAttention a;
    attn_from_fixture(&a, fx, attn_case_named("gqa"));
    tl_tensor *x = tl_fixture_tensor(fx, "x");
    assert_fails(gqa_forward(&a, tl_zeros(TL_F32, TL_SHAPE(2, 5, 12)), NULL, NULL, NULL, 0) ==
                     NULL, "[2, 5, 12]", "16");
    assert_fails(gqa_forward(&a, tl_zeros(TL_F32, TL_SHAPE(6, 16)), NULL, NULL, NULL, 0) == NULL,
                 "gqa_forward", "[6, 16]");
    /* Positions that disagree with x: the wrong T, the wrong B, not integers. */
    assert_fails(gqa_forward(&a, x, tl_arange(0, 5), NULL, NULL, 0) == NULL, "positions", "[5]");
    assert_fails(gqa_forward(&a, x, tl_zeros(TL_I64, TL_SHAPE(3, 6)), NULL, NULL, 0) == NULL,
                 "positions", "[3, 6]");
    assert_fails(gqa_forward(&a, x, tl_zeros(TL_F32, TL_SHAPE(6)), NULL, NULL, 0) == NULL,
                 "positions", "F32");
    /* Masks that do not broadcast to [B, Hq, T, S] = [2, 6, 6, 6], or are not F32. */
    assert_fails(gqa_forward(&a, x, NULL, tl_zeros(TL_F32, TL_SHAPE(6, 7)), NULL, 0) == NULL,
                 "mask", "[6, 7]");
    assert_fails(gqa_forward(&a, x, NULL, tl_zeros(TL_F32, TL_SHAPE(2, 4, 6, 6)), NULL, 0) ==
                     NULL, "mask", "[2, 6, 6, 6]");
    assert_fails(gqa_forward(&a, x, NULL, tl_zeros(TL_BOOL, TL_SHAPE(6, 6)), NULL, 0) == NULL,
                 "mask", "F32");
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_boundary_cache_of_the_wrong_shape)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(ATTN_ST);
    GQAttention a;
    attn_from_fixture(&a, fx, attn_case_named("gqa"));   /* 2 kv heads of width 8 */
    tl_tensor *x = tl_fixture_tensor(fx, "x");            /* B = 2 */
    KVCache one_head, narrow, single, two;
    ck_assert_int_eq(kv_cache_init(&one_head, 1, FX_B, 1, FX_D, FX_D, 8), 0);
    ck_assert_int_eq(kv_cache_init(&narrow, 1, FX_B, 2, 4, 4, 8), 0);
    ck_assert_int_eq(kv_cache_init(&single, 1, 1, 2, FX_D, FX_D, 8), 0);
    ck_assert_int_eq(kv_cache_init(&two, 2, FX_B, 2, FX_D, FX_D, 8), 0);
    tl_no_grad_push();
    assert_fails(gqa_forward(&a, x, NULL, NULL, &one_head, 0) == NULL, "gqa_forward", "cache");
    assert_fails(gqa_forward(&a, x, NULL, NULL, &narrow, 0) == NULL, "gqa_forward", "[2, 2, 4, 4]");
    assert_fails(gqa_forward(&a, x, NULL, NULL, &single, 0) == NULL, "gqa_forward", "[1, 2, 8, 8]");
    assert_fails(gqa_forward(&a, x, NULL, NULL, &two, 2) == NULL, "layer 2", "0 .. 1");
    assert_fails(gqa_forward(&a, x, NULL, NULL, &two, -1) == NULL, "layer -1", "0 .. 1");
    ck_assert_int_eq(kv_cache_seq_len(&two, 0), 0);
    ck_assert_int_eq(kv_cache_seq_len(&two, 1), 0);
    /* The same refusals from the cache's own entry points. */
    tl_tensor *k = tl_zeros(TL_F32, TL_SHAPE(FX_B, 2, 3, FX_D));
    KVCacheUpdate u;
    assert_fails(kv_cache_update(&narrow, 0, k, k, NULL, &u) == -1, "kv_cache_update",
                 "[2, 2, 3, 8]");
    assert_fails(kv_cache_update(&two, 0, k, tl_zeros(TL_F32, TL_SHAPE(FX_B, 2, 2, FX_D)), NULL,
                                 &u) == -1, "kv_cache_update", "tokens");
    assert_fails(kv_cache_seq_len(&two, 5) == -1, "kv_cache_seq_len", "layer 5");
    tl_no_grad_pop();
    kv_cache_free(&one_head);
    kv_cache_free(&narrow);
    kv_cache_free(&single);
    kv_cache_free(&two);
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(test_boundary_null_and_bad_arguments)
{
    tl_scope_push();
    RopeSpec rope = attn_rope(FX_D);
    GQAConfig cfg = {.hidden = 16, .n_heads = 4, .n_kv_heads = 2, .head_dim = FX_D};
    GQAttention a;
    assert_fails(gqa_init(NULL, &cfg, &rope, NULL) == -1, "gqa_init", "NULL");
    assert_fails(gqa_init(&a, NULL, &rope, NULL) == -1, "gqa_init", "NULL");
    assert_fails(gqa_init(&a, &cfg, NULL, NULL) == -1, "gqa_init", "NULL");
    GQAConfig zero = cfg;
    zero.hidden = 0;
    assert_fails(gqa_init(&a, &zero, &rope, NULL) == -1, "gqa_init", "hidden");
    KVCache c;
    assert_fails(kv_cache_init(NULL, 1, 1, 1, 1, 1, 1) == -1, "kv_cache_init", "NULL");
    assert_fails(kv_cache_init(&c, 0, 1, 1, 1, 1, 1) == -1, "kv_cache_init", "n_layers");
    assert_fails(kv_cache_init(&c, 1, 1, 1, 8, 8, 0) == -1, "kv_cache_init", "max_len");
    kv_cache_free(&c);      /* safe after a failed init */
    kv_cache_free(NULL);
    kv_cache_reset(NULL);
    assert_fails(gqa_param_count(NULL) == -1, "gqa_param_count", "NULL");
    tl_tensor *qp0, *kp0;
    KVCache cleared = {0};   /* no ops: never initialised */
    assert_fails(kv_cache_positions(&cleared, 0, 1, &qp0, &kp0) == -1, "kv_cache_positions",
                 "ops");

    ck_assert_msg(gqa_init(&a, &cfg, &rope, NULL) == 0, "gqa_init: %s", tl_error());
    ck_assert_int_eq(kv_cache_init(&c, 1, 1, 2, FX_D, FX_D, 4), 0);
    tl_tensor *x = tl_zeros(TL_F32, TL_SHAPE(1, 2, 16));
    assert_fails(gqa_forward(NULL, x, NULL, NULL, NULL, 0) == NULL, "gqa_forward", "NULL");
    assert_fails(gqa_forward(&a, NULL, NULL, NULL, NULL, 0) == NULL, "gqa_forward", "x");
    /* A NULL input keeps the message of the call that failed first. */
    tl_clear_error();
    tl_tensor *bad = tl_reshape(x, TL_SHAPE(5, 5));
    ck_assert_ptr_null(bad);
    char first[1024];
    snprintf(first, sizeof first, "%s", tl_error());
    ck_assert_ptr_null(gqa_forward(&a, bad, NULL, NULL, NULL, 0));
    ck_assert_str_eq(tl_error(), first);
    tl_clear_error();

    tl_tensor *keys, *values, *qp, *kp;
    assert_fails(kv_cache_view(&c, 0, &keys, &values) == -1, "kv_cache_view", "nothing");
    assert_fails(kv_cache_positions(&c, 0, 0, &qp, &kp) == -1, "kv_cache_positions", "n_new");
    assert_fails(kv_cache_update(&c, 0, NULL, NULL, NULL, &(KVCacheUpdate){0}) == -1,
                 "kv_cache_update", "NULL");
    /* A cached forward while gradients are recorded would give wrong
     * gradients: it is refused, and the cache stays empty. */
    ck_assert_msg(tl_grad_enabled(), "tests start with gradients enabled");
    assert_fails(gqa_forward(&a, x, NULL, NULL, &c, 0) == NULL, "gqa_forward",
                 "tl_no_grad_push");
    ck_assert_int_eq(kv_cache_seq_len(&c, 0), 0);
    kv_cache_free(&c);
    gqa_free(&a);
    tl_scope_pop();
}
END_TEST
