/* RoPE scaling, the formula half (L7.4): your implementation.
 *
 * The contract is contracts/tinyllm/modern/rope_scaling.h; each formula is in section 2
 * of the chapter (course/L7.4/README.md), and section 3 works Llama-3.1's by hand. Plain
 * C over float arrays: these are constants of the model, no tensors or autograd. Compute
 * in float (powf, float products) where HF's tensors are float32, and in double where HF
 * uses Python numbers. Replace each tl_fail below, then run `ol tests L7.4`.
 */
#include "tinyllm/modern/rope_scaling.h"

int rope_inv_freq_scaled(const RopeConfig *cfg, int64_t dim, double theta, int64_t seq_len,
                         float *out_inv_freq, double *out_attention_factor) {
    /* Check the arguments, then one branch per cfg->type (section 2.2 to 2.6). */
    (void)cfg; (void)dim; (void)theta; (void)seq_len; (void)out_inv_freq;
    (void)out_attention_factor;
    return tl_fail_status("not implemented: rope_inv_freq_scaled (L7.4)");
}

int rope_yarn_correction_range(const RopeConfig *cfg, int64_t dim, double theta, double *low,
                               double *high) {
    /* find_correction_dim for beta_fast and beta_slow at the original length (double),
     * floor and ceil when truncate, then clamp to [0, dim - 1] (section 2.4). */
    (void)cfg; (void)dim; (void)theta; (void)low; (void)high;
    return tl_fail_status("not implemented: rope_yarn_correction_range (L7.4)");
}

int rope_spec_from_config(RopeSpec *spec, const RopeConfig *cfg, int64_t head_dim,
                          rope_pairing pairing, int64_t seq_len) {
    /* rope_spec_init (L7.3) with rotary_dim = int(head_dim * partial_rotary_factor), then
     * overwrite inv_freq and attention_scaling with rope_inv_freq_scaled's. */
    (void)spec; (void)cfg; (void)head_dim; (void)pairing; (void)seq_len;
    return tl_fail_status("not implemented: rope_spec_from_config (L7.4)");
}

int64_t rope_update_seq_len(const RopeConfig *cfg, int64_t seq_len, int64_t *max_seq_len_cached) {
    /* HF's dynamic_rope_update (section 2.3): grow, reset, or keep; longrope compares
     * with the original length; every other type returns 0. */
    (void)cfg; (void)seq_len; (void)max_seq_len_cached;
    return tl_fail_status("not implemented: rope_update_seq_len (L7.4)");
}
