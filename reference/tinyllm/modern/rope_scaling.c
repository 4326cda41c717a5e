/* RoPE scaling, the formula half (L7.4): the reference.
 *
 * One function per rope type of transformers 5's modeling_rope_utils.py
 * (_compute_*_parameters), in float32 where HF's tensors are float32 and in double
 * where HF computes with Python numbers; plus HF's dynamic_rope_update rule.
 */
#include <math.h>
#include <string.h>
#include "tinyllm/modern/rope_scaling.h"

#define FN "rope_inv_freq_scaled"

/* p_i = fp32(base)^(fp32(2i) / fp32(dim)): HF's base ** (arange(0, dim, 2).float() / dim). */
static float base_power(double base, int64_t i, int64_t dim) {
    return powf((float)base, (float)(2 * i) / (float)dim);
}

static void default_freqs(double base, int64_t dim, float *inv) {
    for (int64_t i = 0; i < dim / 2; i++) inv[i] = 1.0f / base_power(base, i, dim);
}

/* theta' of dynamic NTK. HF's __init__ passes seq_len = None, so Python floats; its
 * forward passes a tensor seq_len beyond max_position_embeddings, so float32 (torch's
 * power of a float32 scalar by a Python float rounds the double result). */
static double dynamic_base(const RopeConfig *c, int64_t dim, double theta, int64_t seq_len) {
    double max_pos = (double)c->max_position_embeddings, f = c->factor;
    double exponent = (double)dim / (double)(dim - 2);
    if (seq_len <= c->max_position_embeddings)
        return theta * pow(f * max_pos / max_pos - (f - 1), exponent);
    float r = (float)f * (float)seq_len / (float)max_pos - (float)(f - 1);
    return (double)((float)theta * (float)pow((double)r, exponent));
}

/* YaRN's g(s, m): the attention temperature of a scale s. */
static double yarn_mscale(double scale, double m) {
    return scale <= 1 ? 1.0 : 0.1 * m * log(scale) + 1.0;
}

static double yarn_factor(const RopeConfig *c) {
    return isnan(c->factor)
               ? (double)c->max_position_embeddings / (double)c->original_max_position_embeddings
               : c->factor;
}

/* find_correction_dim: the pair that turns num_rotations times over orig positions. */
static double correction_dim(double num_rotations, int64_t dim, double base, double orig) {
    return ((double)dim * log(orig / (num_rotations * 2 * M_PI))) / (2 * log(base));
}

static void yarn_range(const RopeConfig *c, int64_t dim, double theta, double *low,
                       double *high) {
    double orig = (double)c->original_max_position_embeddings;
    double lo = correction_dim(c->beta_fast, dim, theta, orig);
    double hi = correction_dim(c->beta_slow, dim, theta, orig);
    if (c->truncate) {
        lo = floor(lo);
        hi = ceil(hi);
    }
    *low = fmax(lo, 0);
    *high = fmin(hi, (double)(dim - 1));
}

static double yarn(const RopeConfig *c, int64_t dim, double theta, float *inv) {
    double f = yarn_factor(c);
    double low, high;
    yarn_range(c, dim, theta, &low, &high);
    if (low == high) high += 0.001;                          /* no singular ramp */
    for (int64_t i = 0; i < dim / 2; i++) {
        float p = base_power(theta, i, dim);
        float extrapolation = 1.0f / p, interpolation = 1.0f / ((float)f * p);
        float ramp = ((float)i - (float)low) / (float)(high - low);
        ramp = fminf(fmaxf(ramp, 0.0f), 1.0f);
        float keep = 1.0f - ramp;            /* HF's inv_freq_extrapolation_factor */
        inv[i] = interpolation * (1.0f - keep) + extrapolation * keep;
    }
    if (!isnan(c->attention_factor)) return c->attention_factor;
    if (c->mscale != 0 && c->mscale_all_dim != 0)
        return yarn_mscale(f, c->mscale) / yarn_mscale(f, c->mscale_all_dim);
    return yarn_mscale(f, 1.0);
}

static double longrope(const RopeConfig *c, int64_t dim, double theta, int64_t seq_len,
                       float *inv) {
    double orig = (double)c->original_max_position_embeddings;
    const float *ext = seq_len > c->original_max_position_embeddings ? c->long_factor
                                                                      : c->short_factor;
    for (int64_t i = 0; i < dim / 2; i++) inv[i] = 1.0f / (ext[i] * base_power(theta, i, dim));
    double f = isnan(c->factor) ? (double)c->max_position_embeddings / orig : c->factor;
    if (!isnan(c->attention_factor)) return c->attention_factor;
    return f <= 1 ? 1.0 : sqrt(1 + log(f) / log(orig));
}

/* Three bands by wavelength, in float32 as HF's tensors (a Python number divided by a
 * tensor is torch's reciprocal times the number; comparisons round the bound to float). */
static void llama3(const RopeConfig *c, int64_t dim, double theta, float *inv) {
    double orig = (double)c->original_max_position_embeddings;
    double lff = c->low_freq_factor, hff = c->high_freq_factor;
    float low_wavelen = (float)(orig / lff), high_wavelen = (float)(orig / hff);
    float factor = (float)c->factor;
    default_freqs(theta, dim, inv);
    for (int64_t i = 0; i < dim / 2; i++) {
        float wavelen = (1.0f / inv[i]) * (float)(2 * M_PI);
        if (wavelen > low_wavelen) {                         /* slow pairs: interpolate */
            inv[i] = inv[i] / factor;
        } else if (wavelen >= high_wavelen) {                /* between: blend, inclusive */
            float s = ((1.0f / wavelen) * (float)orig - (float)lff) / (float)(hff - lff);
            inv[i] = (1.0f - s) * inv[i] / factor + s * inv[i];
        }                                                    /* fast pairs: unchanged */
    }
}

/* What rope_config_from_json guarantees, re-checked: the fields are public. */
static int check_config(const char *fn, const RopeConfig *c, int64_t dim, double theta) {
    const char *type = rope_type_name(c->type);
    if (dim < 2 || dim % 2 != 0 || dim / 2 > TL_ROPE_MAX_FREQS)
        return tl_fail_status("%s: dim is %lld; the rotary dimension must be even, >= 2 and "
                              "at most %d", fn, (long long)dim, 2 * TL_ROPE_MAX_FREQS);
    if (!(isfinite(theta) && theta > 1))
        return tl_fail_status("%s: theta is %g; it must be a finite number > 1", fn, theta);
    if ((int)c->type < 0 || (int)c->type > ROPE_TYPE_LLAMA3)
        return tl_fail_status("%s: rope type %d is unknown", fn, (int)c->type);
    bool needs_factor = c->type == ROPE_TYPE_LINEAR || c->type == ROPE_TYPE_DYNAMIC ||
                        c->type == ROPE_TYPE_LLAMA3;
    if (needs_factor && !(c->factor >= 1))
        return tl_fail_status("%s: factor is %g (rope_type '%s'); it must be a number >= 1",
                              fn, c->factor, type);
    bool needs_orig = c->type == ROPE_TYPE_YARN || c->type == ROPE_TYPE_LONGROPE ||
                      c->type == ROPE_TYPE_LLAMA3;
    if (needs_orig && c->original_max_position_embeddings < 1)
        return tl_fail_status("%s: rope_type '%s' needs original_max_position_embeddings >= 1",
                              fn, type);
    bool derives = (c->type == ROPE_TYPE_YARN || c->type == ROPE_TYPE_LONGROPE) &&
                   isnan(c->factor);
    if ((c->type == ROPE_TYPE_DYNAMIC || derives) && c->max_position_embeddings < 1)
        return tl_fail_status("%s: rope_type '%s' needs max_position_embeddings >= 1 here", fn,
                              type);
    if (c->type == ROPE_TYPE_LONGROPE && c->n_factors != dim / 2)
        return tl_fail_status("%s: short_factor and long_factor have %d numbers but dim %lld "
                              "rotates %lld pairs (rope_type 'longrope')", fn, c->n_factors,
                              (long long)dim, (long long)(dim / 2));
    if (c->type == ROPE_TYPE_LLAMA3 && !(c->high_freq_factor > c->low_freq_factor))
        return tl_fail_status("%s: high_freq_factor %g must exceed low_freq_factor %g", fn,
                              c->high_freq_factor, c->low_freq_factor);
    return 0;
}

int rope_inv_freq_scaled(const RopeConfig *cfg, int64_t dim, double theta, int64_t seq_len,
                         float *out_inv_freq, double *out_attention_factor) {
    if (!cfg || !out_inv_freq || !out_attention_factor)
        return tl_fail_status(FN ": cfg, out_inv_freq and out_attention_factor must not be "
                              "NULL");
    if (seq_len < 0)
        return tl_fail_status(FN ": seq_len is %lld; it is max(position) + 1, or 0 at "
                              "initialisation", (long long)seq_len);
    if (check_config(FN, cfg, dim, theta) != 0) return -1;
    double a = 1.0;
    switch (cfg->type) {
    case ROPE_TYPE_DEFAULT:
        default_freqs(theta, dim, out_inv_freq);
        break;
    case ROPE_TYPE_LINEAR:
        default_freqs(theta, dim, out_inv_freq);
        for (int64_t i = 0; i < dim / 2; i++) out_inv_freq[i] /= (float)cfg->factor;
        break;
    case ROPE_TYPE_DYNAMIC:
        default_freqs(dynamic_base(cfg, dim, theta, seq_len), dim, out_inv_freq);
        break;
    case ROPE_TYPE_YARN:
        a = yarn(cfg, dim, theta, out_inv_freq);
        break;
    case ROPE_TYPE_LONGROPE:
        a = longrope(cfg, dim, theta, seq_len, out_inv_freq);
        break;
    case ROPE_TYPE_LLAMA3:
        llama3(cfg, dim, theta, out_inv_freq);
        break;
    }
    *out_attention_factor = a;
    return 0;
}

int rope_yarn_correction_range(const RopeConfig *cfg, int64_t dim, double theta, double *low,
                               double *high) {
    const char *fn = "rope_yarn_correction_range";
    if (!cfg || !low || !high) return tl_fail_status("%s: cfg, low and high must not be NULL", fn);
    if (cfg->type != ROPE_TYPE_YARN)
        return tl_fail_status("%s: the config's rope_type is '%s', not 'yarn'", fn,
                              rope_type_name(cfg->type));
    if (check_config(fn, cfg, dim, theta) != 0) return -1;
    yarn_range(cfg, dim, theta, low, high);
    return 0;
}

int rope_spec_from_config(RopeSpec *spec, const RopeConfig *cfg, int64_t head_dim,
                          rope_pairing pairing, int64_t seq_len) {
    const char *fn = "rope_spec_from_config";
    if (!spec) return tl_fail_status("%s: the RopeSpec pointer is NULL", fn);
    memset(spec, 0, sizeof *spec);
    if (!cfg) return tl_fail_status("%s: the RopeConfig is NULL", fn);
    int64_t rotary_dim = (int64_t)((double)head_dim * cfg->partial_rotary_factor);
    if (rope_spec_init(spec, head_dim, rotary_dim, cfg->theta, pairing) != 0)
        return tl_fail_status("%s: %s", fn, tl_error());
    double a;
    if (rope_inv_freq_scaled(cfg, rotary_dim, cfg->theta, seq_len, spec->inv_freq, &a) != 0) {
        memset(spec, 0, sizeof *spec);
        return tl_fail_status("%s: %s", fn, tl_error());
    }
    spec->attention_scaling = a;
    return 0;
}

int64_t rope_update_seq_len(const RopeConfig *cfg, int64_t seq_len, int64_t *max_seq_len_cached) {
    const char *fn = "rope_update_seq_len";
    if (!cfg || !max_seq_len_cached)
        return tl_fail_status("%s: cfg and max_seq_len_cached must not be NULL", fn);
    if (seq_len < 1)
        return tl_fail_status("%s: seq_len is %lld; it is max(position) + 1 >= 1", fn,
                              (long long)seq_len);
    if (cfg->type == ROPE_TYPE_LONGROPE)
        return seq_len > cfg->original_max_position_embeddings ? seq_len : 0;
    if (cfg->type != ROPE_TYPE_DYNAMIC) return 0;
    int64_t original = cfg->max_position_embeddings;
    int64_t cached = *max_seq_len_cached < original ? original : *max_seq_len_cached;
    if (seq_len > cached) cached = seq_len;                         /* growth */
    else if (seq_len < original && cached > original) cached = original;   /* reset */
    *max_seq_len_cached = cached;
    return cached > original ? cached : 0;
}
