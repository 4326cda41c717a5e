/* My cache tests: decoding through the cache equals the full forward. */
#include "my_attn.h"

static tl_tensor *decode(GQAttention *a, tl_tensor *x, tl_tensor *positions, KVCache *c,
                         const int *chunks, int n) {
    tl_tensor *parts[6];
    int64_t start = 0;
    tl_no_grad_push();
    for (int i = 0; i < n; i++) {
        tl_tensor *p = positions ? tl_narrow(positions, 1, start, chunks[i]) : NULL;
        parts[i] = gqa_forward(a, tl_narrow(x, 1, start, chunks[i]), p, NULL, c, 0);
        ck_assert_msg(parts[i] != NULL, "chunk %d: %s", i, tl_error());
        start += chunks[i];
    }
    tl_no_grad_pop();
    return tl_concat(parts, n, 1);
}

START_TEST(my_decode_equals_full_forward)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    double rt = my_tol("test_cached_decode_one_token_at_a_time", "rtol");
    double at = my_tol("test_cached_decode_one_token_at_a_time", "atol");
    GQAttention a;
    my_layer(&a, fx, "gqa", 6, 2, false, false);
    tl_tensor *x = tl_fixture_tensor(fx, "x");
    const int ones[6] = {1, 1, 1, 1, 1, 1}, uneven[3] = {2, 3, 1};
    KVCache c;
    ck_assert_int_eq(kv_cache_init(&c, 1, 2, 2, 8, 8, 6), 0);
    /* positions NULL: they must continue from the cache */
    tl_tensor *full = gqa_forward(&a, x, NULL, NULL, NULL, 0);
    tl_assert_close(decode(&a, x, NULL, &c, ones, 6), full, rt, at);
    kv_cache_reset(&c);
    tl_assert_close(decode(&a, x, NULL, &c, uneven, 3), full, rt, at);
    /* explicit positions, vs the oracle's own chunked run */
    kv_cache_reset(&c);
    tl_assert_close(decode(&a, x, my_positions(fx), &c, uneven, 3),
                    tl_fixture_tensor(fx, "gqa.y"), rt, at);
    kv_cache_free(&c);
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

START_TEST(my_cache_holds_rotated_keys_and_counts)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    GQAttention a;
    my_layer(&a, fx, "gqa", 6, 2, false, false);
    KVCache c;
    ck_assert_int_eq(kv_cache_init(&c, 1, 2, 2, 8, 8, 7), 0);
    tl_no_grad_push();
    tl_assert_ok(gqa_forward(&a, tl_fixture_tensor(fx, "x"), my_positions(fx), NULL, &c, 0));
    tl_no_grad_pop();
    tl_tensor *k, *v;
    ck_assert_int_eq(kv_cache_view(&c, 0, &k, &v), 0);
    tl_assert_close(k, tl_fixture_tensor(fx, "gqa.k_rot"),
                    my_tol("test_keys_cached_after_rope", "rtol"),
                    my_tol("test_keys_cached_after_rope", "atol"));
    ck_assert_int_eq(kv_cache_seq_len(&c, 0), 6);
    tl_tensor *qp, *kp;
    ck_assert_int_eq(kv_cache_positions(&c, 0, 1, &qp, &kp), 0);
    ck_assert_int_eq((int)tl_item_at(qp, 0), 6);
    ck_assert_int_eq(tl_numel(kp), 7);
    /* 2 more do not fit in 7: an error that says so, and the cache is unchanged */
    ck_assert_int_eq(kv_cache_positions(&c, 0, 2, &qp, &kp), -1);
    ck_assert_msg(strstr(tl_error(), "max_len 7") != NULL, "%s", tl_error());
    tl_clear_error();
    ck_assert_int_eq(kv_cache_seq_len(&c, 0), 6);
    kv_cache_free(&c);
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST

/* One cache serves every layer: two layers fed in turn each keep their own length. */
START_TEST(my_two_layers_share_one_cache)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load(MY_ST);
    double rt = my_tol("test_cached_decode_one_token_at_a_time", "rtol");
    double at = my_tol("test_cached_decode_one_token_at_a_time", "atol");
    GQAttention a;
    my_layer(&a, fx, "gqa", 6, 2, false, false);
    tl_tensor *x = tl_fixture_tensor(fx, "x");
    KVCache c;
    ck_assert_int_eq(kv_cache_init(&c, 2, 2, 2, 8, 8, 6), 0);
    tl_tensor *parts[2][3];
    const int chunks[3] = {2, 3, 1};
    int64_t start = 0;
    tl_no_grad_push();
    for (int i = 0; i < 3; i++)
        for (int layer = 0; layer < 2; layer++) {
            parts[layer][i] = gqa_forward(&a, tl_narrow(x, 1, start, chunks[i]), NULL, NULL,
                                          &c, layer);
            ck_assert_msg(parts[layer][i] != NULL, "layer %d chunk %d: %s", layer, i, tl_error());
            if (layer == 1) start += chunks[i];
        }
    tl_no_grad_pop();
    tl_tensor *full = gqa_forward(&a, x, NULL, NULL, NULL, 0);
    for (int layer = 0; layer < 2; layer++) {
        tl_assert_close(tl_concat(parts[layer], 3, 1), full, rt, at);
        ck_assert_int_eq(kv_cache_seq_len(&c, layer), 6);
    }
    kv_cache_free(&c);
    gqa_free(&a);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
