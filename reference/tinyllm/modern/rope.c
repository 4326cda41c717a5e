/* Rotary position embedding (L7.3): the reference.
 *
 * The tables follow HF's LlamaRotaryEmbedding.forward (angles as one float32
 * product, cat((freqs, freqs)), cos and sin times attention_scaling) and the
 * rotation follows apply_rotary_pos_emb: y = x * cos + rotate(x) * sin. Both
 * are composed from recorded ops, so autograd differentiates rope_apply.
 */
#include <math.h>
#include <string.h>
#include "tinyllm/ops.h"
#include "tinyllm/modern/rope.h"

/* 0 when rotary_dim fits a head of head_dim, else -1 with fn's error. */
static int check_dims(const char *fn, int64_t head_dim, int64_t rotary_dim) {
    if (rotary_dim < 2 || rotary_dim % 2 != 0 || rotary_dim > head_dim)
        return tl_fail_status("%s: rotary_dim is %lld but head_dim is %lld; rotary_dim must be "
                              "even, at least 2 and at most head_dim (int(head_dim * "
                              "partial_rotary_factor))", fn, (long long)rotary_dim,
                              (long long)head_dim);
    if (rotary_dim / 2 > TL_ROPE_MAX_FREQS)
        return tl_fail_status("%s: rotary_dim %lld needs %lld frequencies; a RopeSpec holds at "
                              "most %d", fn, (long long)rotary_dim, (long long)(rotary_dim / 2),
                              TL_ROPE_MAX_FREQS);
    return 0;
}

/* The fields are public, so every entry point re-checks the spec. */
static int check_spec(const char *fn, const RopeSpec *spec) {
    if (!spec)
        return tl_fail_status("%s: the RopeSpec is NULL (fill one with rope_spec_init)", fn);
    if (spec->head_dim < 2)
        return tl_fail_status("%s: head_dim is %lld; a head needs at least 2 features", fn,
                              (long long)spec->head_dim);
    if (check_dims(fn, spec->head_dim, spec->rotary_dim) != 0) return -1;
    if (spec->pairing != ROPE_HALF && spec->pairing != ROPE_INTERLEAVED)
        return tl_fail_status("%s: pairing %d is neither ROPE_HALF nor ROPE_INTERLEAVED", fn,
                              (int)spec->pairing);
    if (!isfinite(spec->attention_scaling))
        return tl_fail_status("%s: attention_scaling is %g; it must be finite (1 unless "
                              "scaled)", fn, spec->attention_scaling);
    return 0;
}

int rope_spec_init(RopeSpec *spec, int64_t head_dim, int64_t rotary_dim, double theta,
                   rope_pairing pairing) {
    if (!spec) return tl_fail_status("rope_spec_init: the RopeSpec pointer is NULL");
    memset(spec, 0, sizeof *spec);
    if (head_dim < 2)
        return tl_fail_status("rope_spec_init: head_dim is %lld; a head needs at least 2 "
                              "features", (long long)head_dim);
    if (check_dims("rope_spec_init", head_dim, rotary_dim) != 0) return -1;
    if (!(isfinite(theta) && theta > 1))
        return tl_fail_status("rope_spec_init: theta is %g; it must be a finite number > 1 "
                              "(HF's rope_theta, e.g. 10000)", theta);
    if (pairing != ROPE_HALF && pairing != ROPE_INTERLEAVED)
        return tl_fail_status("rope_spec_init: pairing %d is neither ROPE_HALF nor "
                              "ROPE_INTERLEAVED", (int)pairing);
    spec->head_dim = head_dim;
    spec->rotary_dim = rotary_dim;
    spec->theta = theta;
    spec->pairing = pairing;
    spec->attention_scaling = 1.0;
    /* All float32, as HF: arange(0, d, 2).float() / d, then base ** that. */
    float base = (float)theta;
    for (int64_t i = 0; i < rotary_dim / 2; i++) {
        float exponent = (float)(2 * i) / (float)rotary_dim;
        spec->inv_freq[i] = 1.0f / powf(base, exponent);
    }
    return 0;
}

/* Shared by rope_cos_sin and rope_apply, which name themselves in errors. */
static int cos_sin_tables(const char *fn, const RopeSpec *spec, tl_tensor *positions,
                          tl_tensor **cos_out, tl_tensor **sin_out) {
    if (!cos_out || !sin_out)
        return tl_fail_status("%s: the cos and sin output pointers must not be NULL", fn);
    *cos_out = *sin_out = NULL;
    if (check_spec(fn, spec) != 0) return -1;
    if (!positions) return tl_propagate_status("%s: positions is NULL", fn);
    char ps[64];
    if ((positions->dtype != TL_I64 && positions->dtype != TL_I32) ||
        positions->ndim < 1 || positions->ndim > 2)
        return tl_fail_status("%s: positions %s are %s; they must be I64 (or I32) of shape [T] "
                              "or [B, T]", fn, tl_shape_str(positions, ps, sizeof ps),
                              tl_dtype_name(positions->dtype));
    int64_t half = spec->rotary_dim / 2;
    int nd = positions->ndim + 1;                     /* the table: positions' shape + [d] */
    int64_t shape[3] = {positions->shape[0], positions->shape[1], 0};
    shape[nd - 1] = spec->rotary_dim;
    tl_tensor *inv_freq = tl_from_f32(spec->inv_freq, 1, &half);             /* [d/2] */
    tl_tensor *pos = tl_unsqueeze(tl_cast(positions, TL_F32), -1);           /* [.., T, 1] */
    tl_tensor *freqs = tl_mul(pos, inv_freq);                   /* [.., T, d/2]: one product */
    tl_tensor *angles;
    if (spec->pairing == ROPE_HALF) {
        tl_tensor *both[2] = {freqs, freqs};
        angles = tl_concat(both, 2, -1);                                     /* [f, f] */
    } else {
        tl_tensor *f = tl_unsqueeze(freqs, -1);
        tl_tensor *both[2] = {f, f};
        angles = tl_reshape(tl_concat(both, 2, -1), nd, shape);              /* [f0, f0, ..] */
    }
    tl_tensor *c = tl_mul_scalar(tl_cos(angles), spec->attention_scaling);
    tl_tensor *s = tl_mul_scalar(tl_sin(angles), spec->attention_scaling);
    if (!c || !s) return -1;
    *cos_out = c;
    *sin_out = s;
    return 0;
}

int rope_cos_sin(const RopeSpec *spec, tl_tensor *positions, tl_tensor **cos_out,
                 tl_tensor **sin_out) {
    return cos_sin_tables("rope_cos_sin", spec, positions, cos_out, sin_out);
}

/* The partner of each feature, signed: half [-x2, x1], interleaved [-x1, x0, ...]. */
static tl_tensor *rotate(tl_tensor *x, rope_pairing pairing) {
    int64_t d = x->shape[3], half = d / 2;
    if (pairing == ROPE_HALF) {
        tl_tensor *parts[2] = {tl_neg(tl_narrow(x, 3, half, half)), tl_narrow(x, 3, 0, half)};
        return tl_concat(parts, 2, 3);
    }
    int64_t n0 = x->shape[0], n1 = x->shape[1], n2 = x->shape[2];   /* B, T, H or B, H, T */
    tl_tensor *pairs = tl_reshape(x, TL_SHAPE(n0, n1, n2, half, 2));
    tl_tensor *parts[2] = {tl_neg(tl_narrow(pairs, 4, 1, 1)), tl_narrow(pairs, 4, 0, 1)};
    return tl_reshape(tl_concat(parts, 2, 4), TL_SHAPE(n0, n1, n2, d));
}

static tl_tensor *apply_tables(const char *fn, const RopeSpec *spec, tl_tensor *x,
                               tl_tensor *cos_table, tl_tensor *sin_table, rope_layout layout) {
    if (check_spec(fn, spec) != 0) return NULL;
    if (!x || !cos_table || !sin_table) return tl_propagate("%s: x, cos or sin is NULL", fn);
    if (layout != ROPE_BTHD && layout != ROPE_BHTD)
        return tl_fail("%s: layout %d is neither ROPE_BTHD nor ROPE_BHTD", fn, (int)layout);
    char xs[64], cs[64], ss[64];
    const char *names = layout == ROPE_BTHD ? "[B, T, H, head_dim]" : "[B, H, T, head_dim]";
    if (x->ndim != 4 || x->shape[3] != spec->head_dim)
        return tl_fail("%s: x has shape %s but must be %s with head_dim %lld", fn,
                       tl_shape_str(x, xs, sizeof xs), names, (long long)spec->head_dim);
    int t_axis = layout == ROPE_BTHD ? 1 : 2;
    int64_t b = x->shape[0], t = x->shape[t_axis], d = spec->rotary_dim;
    const tl_tensor *ct = cos_table;
    int64_t tb = ct->ndim == 3 ? ct->shape[0] : 1;
    if (!tl_same_shape(ct, sin_table) || ct->ndim < 2 || ct->ndim > 3 ||
        ct->shape[ct->ndim - 1] != d || ct->shape[ct->ndim - 2] != t || (tb != 1 && tb != b))
        return tl_fail("%s: cos %s and sin %s do not fit x %s: they must both be [T, %lld] "
                       "or [B, T, %lld] with T = %lld and B = 1 or %lld (make them with "
                       "rope_cos_sin from the same positions)", fn,
                       tl_shape_str(ct, cs, sizeof cs), tl_shape_str(sin_table, ss, sizeof ss),
                       tl_shape_str(x, xs, sizeof xs), (long long)d, (long long)d,
                       (long long)t, (long long)b);
    /* Broadcast the tables over the heads axis. */
    int64_t table_shape[4] = {tb, layout == ROPE_BTHD ? t : 1, layout == ROPE_BTHD ? 1 : t, d};
    tl_tensor *c = tl_reshape(cos_table, 4, table_shape);
    tl_tensor *s = tl_reshape(sin_table, 4, table_shape);

    bool partial = d < spec->head_dim;
    tl_tensor *rot = partial ? tl_narrow(x, 3, 0, d) : x;
    tl_tensor *y = tl_add(tl_mul(rot, c), tl_mul(rotate(rot, spec->pairing), s));
    if (!partial) return y;
    tl_tensor *pass = tl_cast(tl_narrow(x, 3, d, spec->head_dim - d), TL_F32);
    tl_tensor *parts[2] = {y, pass};                    /* the features past d pass through */
    return tl_concat(parts, 2, 3);
}

tl_tensor *rope_apply_cos_sin(const RopeSpec *spec, tl_tensor *x, tl_tensor *cos_table,
                              tl_tensor *sin_table, rope_layout layout) {
    return apply_tables("rope_apply_cos_sin", spec, x, cos_table, sin_table, layout);
}

tl_tensor *rope_apply(const RopeSpec *spec, tl_tensor *x, tl_tensor *positions) {
    if (check_spec("rope_apply", spec) != 0) return NULL;
    if (!x) return tl_propagate("rope_apply: x is NULL");
    char xs[64], ps[64];
    if (x->ndim != 4 || x->shape[3] != spec->head_dim)
        return tl_fail("rope_apply: x has shape %s but must be [B, T, H, head_dim] with "
                       "head_dim %lld", tl_shape_str(x, xs, sizeof xs), (long long)spec->head_dim);
    if (positions && (positions->ndim == 1 || positions->ndim == 2)) {
        int64_t pt = positions->shape[positions->ndim - 1];
        int64_t pb = positions->ndim == 2 ? positions->shape[0] : 1;
        if (pt != x->shape[1] || (pb != 1 && pb != x->shape[0]))
            return tl_fail("rope_apply: positions %s do not fit x %s: they must be [T] or "
                           "[B, T] (B may be 1) with x's B and T (x is [B, T, H, head_dim])",
                           tl_shape_str(positions, ps, sizeof ps), tl_shape_str(x, xs, sizeof xs));
    }
    tl_tensor *cos_table, *sin_table;
    if (cos_sin_tables("rope_apply", spec, positions, &cos_table, &sin_table) != 0) return NULL;
    return apply_tables("rope_apply", spec, x, cos_table, sin_table, ROPE_BTHD);
}

/* Within each head, the first rotary_dim rows as [d/2, 2] <-> [2, d/2]. */
static tl_tensor *permute_rows(const char *fn, tl_tensor *w, int64_t n_heads,
                               int64_t rotary_dim, bool to_half) {
    if (!w) return tl_propagate("%s: w is NULL", fn);
    char ws[64];
    if (w->ndim < 1 || w->ndim > 2)
        return tl_fail("%s: w has shape %s; it must be a weight [rows, in] or a bias [rows]",
                       fn, tl_shape_str(w, ws, sizeof ws));
    int64_t rows = w->shape[0], in = w->ndim == 2 ? w->shape[1] : 1;
    if (n_heads < 1 || rows % n_heads != 0)
        return tl_fail("%s: w has %lld rows, which %lld heads do not divide; rows must be "
                       "n_heads * head_dim", fn, (long long)rows, (long long)n_heads);
    int64_t head_dim = rows / n_heads, half = rotary_dim / 2;
    if (check_dims(fn, head_dim, rotary_dim) != 0) return NULL;

    tl_tensor *heads = tl_reshape(tl_cast(w, TL_F32), TL_SHAPE(n_heads, head_dim, in));
    tl_tensor *rot = tl_narrow(heads, 1, 0, rotary_dim);
    tl_tensor *grid = to_half ? tl_reshape(rot, TL_SHAPE(n_heads, half, 2, in))
                              : tl_reshape(rot, TL_SHAPE(n_heads, 2, half, in));
    tl_tensor *moved = tl_reshape(tl_transpose(grid, 1, 2), TL_SHAPE(n_heads, rotary_dim, in));
    if (rotary_dim < head_dim) {
        tl_tensor *parts[2] = {moved, tl_narrow(heads, 1, rotary_dim, head_dim - rotary_dim)};
        moved = tl_concat(parts, 2, 1);
    }
    return tl_reshape(moved, w->ndim, w->shape);
}

tl_tensor *rope_permute_for_half(tl_tensor *w, int64_t n_heads, int64_t rotary_dim) {
    return permute_rows("rope_permute_for_half", w, n_heads, rotary_dim, true);
}

tl_tensor *rope_permute_for_interleaved(tl_tensor *w, int64_t n_heads, int64_t rotary_dim) {
    return permute_rows("rope_permute_for_interleaved", w, n_heads, rotary_dim, false);
}
