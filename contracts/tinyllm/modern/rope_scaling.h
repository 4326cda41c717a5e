/* tinyllm/modern/rope_scaling.h: long-context RoPE scaling (L7.4).
 *
 * A model trained on L tokens rotates its queries and keys with L7.3's default
 * frequencies, inv[i] = 1 / theta^(2i/d). To read more than L tokens, published
 * checkpoints change those frequencies (and sometimes scale cos and sin by an
 * attention factor a), and say how in config.json. Everything below follows
 * transformers 5's modeling_rope_utils.py, in float32 where HF computes in float32
 * (e_i = fp32(2i) / fp32(d); p_i = fp32(theta)^e_i):
 *
 *   default   inv_i = 1 / p_i                                          a = 1
 *   linear    inv_i = (1 / p_i) / factor                               a = 1
 *   dynamic   (NTK) with L = max(seq_len, max_position_embeddings):
 *             theta' = theta * (factor * L / max_pos - (factor - 1))^(d / (d - 2)),
 *             inv_i = 1 / theta'^e_i                                   a = 1
 *   yarn      orig = original_max_position_embeddings; factor (null: max_pos / orig);
 *             g(s, m) = 1 if s <= 1, else 0.1 m ln(s) + 1;
 *             a = attention_factor, else g(f, mscale) / g(f, mscale_all_dim) when both
 *             are set (non-zero), else g(f, 1);
 *             cd(r) = d ln(orig / (2 pi r)) / (2 ln theta); low = cd(beta_fast = 32),
 *             high = cd(beta_slow = 1), floored and ceiled when truncate (default true),
 *             then low = max(low, 0), high = min(high, d - 1), high += 0.001 if equal;
 *             ramp_i = clamp((i - low) / (high - low), 0, 1); ef_i = 1 - ramp_i;
 *             inv_i = (1 / (f p_i)) (1 - ef_i) + (1 / p_i) ef_i
 *   longrope  ext = short_factor, or long_factor when seq_len > orig;
 *             inv_i = 1 / (ext_i p_i);  f = factor, else max_pos / orig;
 *             a = attention_factor, else 1 if f <= 1, else sqrt(1 + ln f / ln orig)
 *   llama3    from default; wl = 2 pi / inv; lo_wl = orig / low_freq_factor,
 *             hi_wl = orig / high_freq_factor; wl > lo_wl: inv / factor;
 *             hi_wl <= wl <= lo_wl: s = (orig / wl - lff) / (hff - lff),
 *             inv' = (1 - s) inv / factor + s inv; else inv (unchanged)   a = 1
 *
 * Two config forms carry the same information and give identical results:
 *   4.x: top-level "rope_theta", and "rope_scaling": null or {"type" or "rope_type", ...}
 *   5.x: "rope_parameters": {"rope_type", "rope_theta", ...}
 * Standardisation (RotaryEmbeddingConfigMixin): the dict is rope_scaling when it is a
 * non-empty object, else rope_parameters; its rope_theta wins over the top-level one
 * (else 10000, or 1e6 for model_type "mixtral"); rope_type = "rope_type", else "type",
 * else "default" (model_type "phi3": "su" and "yarn" mean longrope, as Phi3Config's
 * backward compatibility says); for llama3, yarn and longrope, original_max_position_embeddings is
 * the TOP-LEVEL key when present (Phi-3), else the dict's, else max_position_embeddings;
 * a top-level partial_rotary_factor wins over the dict's (default 1).
 *
 * Dynamic and longrope depend on the sequence length, L = max(position) + 1, which a
 * model knows only at each forward: rope_update_seq_len is HF's dynamic_rope_update
 * rule, and rope_spec_from_config fills L7.3's RopeSpec for the result.
 *
 * Errors: a function that fails returns -1 (or NULL) with a message from tl_error()
 * naming the function, the key and the rope type, and what to do.
 */
#ifndef TINYLLM_MODERN_ROPE_SCALING_H
#define TINYLLM_MODERN_ROPE_SCALING_H

#include <stdbool.h>
#include <stdint.h>
#include "tinyllm/modern/rope.h"

typedef enum {
    ROPE_TYPE_DEFAULT,
    ROPE_TYPE_LINEAR,
    ROPE_TYPE_DYNAMIC,
    ROPE_TYPE_YARN,
    ROPE_TYPE_LONGROPE,
    ROPE_TYPE_LLAMA3
} rope_type;

/* A standardised rope configuration. A plain value (fixed arrays, no pointers).
 * "Absent" numbers are NAN (factor, attention_factor) or 0 (the rest), as noted. */
typedef struct {
    rope_type type;
    double theta;                       /* rope_theta, standardised (never absent) */
    int64_t max_position_embeddings;    /* top-level; 0 when the config has none */
    int64_t original_max_position_embeddings; /* llama3, yarn, longrope (standardised); else 0 */
    int64_t head_dim;                   /* head_dim, else hidden_size / num_attention_heads; 0 */
    double partial_rotary_factor;       /* 1 when absent */
    double factor;                      /* NAN when absent or null */
    double attention_factor;            /* yarn, longrope: NAN when absent or null */
    double beta_fast, beta_slow;        /* yarn: 32 and 1 when absent, null or 0 (HF's `or`) */
    double mscale, mscale_all_dim;      /* yarn: 0 when absent or null */
    bool truncate;                      /* yarn: true unless the key is false or null */
    double low_freq_factor, high_freq_factor;   /* llama3 */
    int n_factors;                      /* longrope: the length of both lists */
    float short_factor[TL_ROPE_MAX_FREQS];      /* longrope: float32, as HF's torch.tensor */
    float long_factor[TL_ROPE_MAX_FREQS];
} RopeConfig;

/* "default", "linear", "dynamic", "yarn", "longrope", "llama3" ("?" otherwise). */
const char *rope_type_name(rope_type type);

/* Parses a whole config.json (a JSON object, as text) into *out, standardised as the
 * header comment says. Returns 0, or -1 with an error naming rope_config_from_json (and
 * *out zeroed) when: json is NULL or not a JSON object (the message gives the position of
 * a syntax error); rope_scaling or rope_parameters is neither an object nor null, or nests
 * one dict per layer type (transformers 5's form for Gemma 3: {"full_attention": {...},
 * ...}; the message names the first key); the rope type is unknown (the message lists the
 * known ones) or not a string; a key the type requires is missing (HF's KeyError): factor
 * (linear, dynamic, yarn, llama3), low_freq_factor and high_freq_factor (llama3),
 * short_factor and long_factor (longrope); a number is not a finite number; factor is null
 * where it cannot be derived (linear, dynamic, llama3) or below 1 (HF only warns; the
 * course refuses: a factor below 1 shrinks the context); high_freq_factor <=
 * low_freq_factor; max_position_embeddings is missing where a formula needs it (dynamic;
 * yarn and longrope without factor; an original_max_position_embeddings to default); a
 * longrope list is not an array of numbers, the two lists differ in length, hold more than
 * TL_ROPE_MAX_FREQS, or (when head_dim is known) are not int(head_dim *
 * partial_rotary_factor) / 2 long (the message gives both lengths). Every message names
 * the key and the rope type. */
int rope_config_from_json(const char *json, RopeConfig *out);

/* The inverse frequencies and the attention factor of cfg for a rotary dimension dim
 * (even, 2 <= dim <= 2 * TL_ROPE_MAX_FREQS) and base theta (normally cfg->theta), at
 * sequence length seq_len: 0 means "at initialisation" (HF's seq_len=None), as does
 * any seq_len <= max_position_embeddings for dynamic and <= orig for longrope.
 *   out_inv_freq: dim / 2 floats written; out_attention_factor: a (1 unless yarn or
 *   longrope).
 * Dynamic beyond max_position_embeddings computes theta' in float32, as HF's forward
 * does (its seq_len is then a tensor); at or below it, in double, as HF's __init__.
 * Returns 0, or -1 with an error naming rope_inv_freq_scaled: cfg or an output NULL;
 * dim odd, < 2 or too large; theta not finite and > 1; seq_len < 0; a longrope config
 * whose lists are not dim / 2 long; a config that rope_config_from_json would refuse
 * (e.g. a missing factor or max_position_embeddings). */
int rope_inv_freq_scaled(const RopeConfig *cfg, int64_t dim, double theta, int64_t seq_len,
                         float *out_inv_freq, double *out_attention_factor);

/* YaRN's correction range [low, high] for dim and theta: find_correction_range of
 * beta_fast and beta_slow at original_max_position_embeddings, truncated (floor, ceil)
 * when cfg->truncate, clamped to [0, dim - 1], before the 0.001 that separates equal
 * bounds. DeepSeek-V3 (dim 64, theta 10000, orig 4096): raw 10.47 and 22.51, so low 10,
 * high 23. Returns 0, or -1 with an error naming rope_yarn_correction_range: cfg, low or
 * high NULL; cfg not yarn; dim or theta as rope_inv_freq_scaled refuses them. */
int rope_yarn_correction_range(const RopeConfig *cfg, int64_t dim, double theta, double *low,
                               double *high);

/* Fills *spec (L7.3) for a model with heads of head_dim: rotary_dim =
 * int(head_dim * cfg->partial_rotary_factor), theta = cfg->theta, the pairing given,
 * inv_freq and attention_scaling from rope_inv_freq_scaled at seq_len (0 at init; the
 * result of rope_update_seq_len before each forward). Returns 0, or -1 with an error
 * naming rope_spec_from_config (and *spec zeroed): spec or cfg NULL; the errors of
 * rope_spec_init (e.g. an odd rotary_dim) and of rope_inv_freq_scaled. */
int rope_spec_from_config(RopeSpec *spec, const RopeConfig *cfg, int64_t head_dim,
                          rope_pairing pairing, int64_t seq_len);

/* HF's dynamic_rope_update, called before each forward with seq_len = max(position) + 1.
 * Returns the seq_len to pass to rope_spec_from_config (0: the frequencies of
 * initialisation), or -1 with an error (cfg or max_seq_len_cached NULL; seq_len < 1).
 *   dynamic: *max_seq_len_cached is the model's state (start it at 0, or at
 *     max_position_embeddings). It grows to seq_len whenever seq_len exceeds it (the
 *     frequencies are recomputed for that length); when seq_len < max_position_embeddings
 *     (strictly) while it is above, it resets to max_position_embeddings (the original
 *     frequencies come back). Returns it when above max_position_embeddings, else 0.
 *     Keys already in a cache are not re-rotated: HF does not either.
 *   longrope: seq_len when seq_len > original_max_position_embeddings (long factors),
 *     else 0 (short factors); the state is not used.
 *   every other type: 0 (the frequencies never change). */
int64_t rope_update_seq_len(const RopeConfig *cfg, int64_t seq_len, int64_t *max_seq_len_cached);

#endif
