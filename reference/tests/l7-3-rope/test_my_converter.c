/* My converter tests: the permutation by row index, on heads of 8 rows (for 4
 * rows the two directions coincide), then the round trip. */
#include <check.h>
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rope.h"

START_TEST(my_converter_moves_rows_per_head)
{
    tl_scope_push();
    float rows[16 * 2];
    for (int r = 0; r < 16; r++) rows[2 * r] = rows[2 * r + 1] = (float)r;
    tl_tensor *w = tl_from_f32(rows, TL_SHAPE(16, 2));
    tl_tensor *hf = rope_permute_for_half(w, 2, 8);
    tl_assert_ok(hf);
    /* Per head: evens then odds. */
    const int order[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 8; j++)
            ck_assert_double_eq(tl_item_at(hf, 2 * (8 * h + j)), 8 * h + order[j]);
    tl_assert_close(rope_permute_for_interleaved(hf, 2, 8), w, 0.0, 0.0);
    tl_scope_pop();
}
END_TEST

START_TEST(my_converter_against_the_oracle)
{
    tl_scope_push();
    tl_checkpoint *fx = tl_fixture_load("L7.3/rope.safetensors");
    tl_assert_close(rope_permute_for_half(tl_fixture_tensor(fx, "converter.wk_meta"), 2, 8),
                    tl_fixture_tensor(fx, "converter.wk_hf"), 0.0, 0.0);
    tl_checkpoint_free(fx);
    tl_scope_pop();
}
END_TEST
