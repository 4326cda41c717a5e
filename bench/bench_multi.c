/* bench_multi: a few rows against one matrix, the multi-row GEMVs against
 * the paths they replace, in the same run (`make bench-multi`).
 *
 * (a) Prefill of M = 1..64 rows through SmolLM2-135M's seven projections of
 *     one layer (q, k, v, o [576 in], gate, up [1536 out], down [1536 in]),
 *     LAYERS copies back to back so every pass reads from memory, as a
 *     prefill walks its layers. Per M and dtype: the multi-row GEMV
 *     (tl_gemv_multi_*), the GEMM (tl_gemm_*_nt, what tl_linear ran before
 *     for M > 1), their ratio, and the multi-row time in units of one GEMV
 *     pass (M = 1) over the same bytes: 1.0 is the memory bound. The
 *     crossovers in ops_linalg.c come from these figures.
 * (b) Attention's scores and mix at decode over a cache of S positions:
 *     q [1, 3, 3, 64] @ K^T and p [1, 3, 3, S] @ V for SmolLM2's 3 key heads
 *     of 3 query heads each (M = 3), through tl_matmul on the cache views
 *     (narrowed, transposed), over LAYERS caches; beside the old paths (three
 *     GEMVs per head, or sgemm on the view, per what ops_linalg.c chose) and
 *     the bound: a read loop over the same cache bytes, same threads.
 * The paths of one figure run in turn, REPS times; times and ratios (taken
 * pass by pass) are medians. 1 and 2 threads. Speed is reported, never
 * asserted.
 * The last lines are `name: value`.
 */
#include <cblas.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tinyllm/autograd.h"
#include "tinyllm/bf16.h"
#include "tinyllm/kernels.h"
#include "tinyllm/ops.h"
#include "tinyllm/tensor.h"

enum { LAYERS = 8, HIDDEN = 576, KV_DIM = 192, FFN = 1536, REPS = 7, KV_HEADS = 3, GROUP = 3,
       HEAD_DIM = 64, CACHE_LAYERS = 30, MAX_M = 64 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes);
    if (!p) {
        fprintf(stderr, "bench_multi: out of memory for %zu bytes\n", bytes);
        exit(1);
    }
    return p;
}

static float noise(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*state >> 40) & 0xffff) / 65536.0f - 0.5f;
}

/* ---- (a) projections of a layer ------------------------------------------ */

typedef struct { int64_t out, in; } shape2;
static const shape2 PROJ[] = {{HIDDEN, HIDDEN}, {KV_DIM, HIDDEN}, {KV_DIM, HIDDEN},
                              {HIDDEN, HIDDEN}, {FFN, HIDDEN},    {FFN, HIDDEN},
                              {HIDDEN, FFN}};
#define N_PROJ (int)(sizeof PROJ / sizeof PROJ[0])

typedef struct {
    float *f32;
    uint16_t *bf16;
    int64_t per_layer;   /* weights */
} weights;

static weights make_weights(void) {
    weights w = {NULL, NULL, 0};
    for (int i = 0; i < N_PROJ; i++) w.per_layer += PROJ[i].out * PROJ[i].in;
    size_t n = (size_t)(w.per_layer * LAYERS);
    w.f32 = xmalloc(n * sizeof *w.f32);
    w.bf16 = xmalloc(n * sizeof *w.bf16);
    uint64_t s = 42;
    for (size_t i = 0; i < n; i++) w.f32[i] = noise(&s);
    tl_f32_to_bf16_n(w.f32, w.bf16, n);
    return w;
}

typedef enum { PATH_MULTI, PATH_GEMM } path;

/* One pass: every projection of every layer, M rows of x. */
static double prefill_pass(const weights *w, bool bf16, path how, const float *x, float *y,
                           int64_t M) {
    double t0 = now();
    int64_t off = 0;
    for (int l = 0; l < LAYERS; l++)
        for (int i = 0; i < N_PROJ; i++) {
            int64_t out = PROJ[i].out, in = PROJ[i].in;
            if (bf16 && how == PATH_MULTI)
                tl_gemv_multi_bf16(w->bf16 + off, in, x, in, y, M, out, in);
            else if (bf16)
                tl_gemm_bf16_nt(x, w->bf16 + off, y, M, out, in);
            else if (how == PATH_MULTI)
                tl_gemv_multi_f32(w->f32 + off, in, x, in, y, M, out, in);
            else
                tl_gemm_f32_nt(x, w->f32 + off, y, M, out, in);
            off += out * in;
        }
    return now() - t0;
}

/* The three passes of one M in turn, REPS times (after a warm-up), each
 * ratio taken pass by pair: the machine is shared and its load changes from
 * second to second. Medians of the times and of the ratios. */
typedef struct { double one, multi, gemm, gemm_over_multi, multi_over_one; } prefill_figures;

static prefill_figures time_prefill(const weights *w, bool bf16, const float *x, float *y,
                                    int64_t M) {
    double one[REPS], multi[REPS], gemm[REPS], ratio[REPS], passes[REPS];
    prefill_pass(w, bf16, PATH_MULTI, x, y, M);
    prefill_pass(w, bf16, PATH_GEMM, x, y, M);
    for (int r = 0; r < REPS; r++) {
        one[r] = prefill_pass(w, bf16, PATH_MULTI, x, y, 1);
        multi[r] = prefill_pass(w, bf16, PATH_MULTI, x, y, M);
        gemm[r] = prefill_pass(w, bf16, PATH_GEMM, x, y, M);
        ratio[r] = gemm[r] / multi[r];
        passes[r] = multi[r] / one[r];
    }
    return (prefill_figures){median(one, REPS), median(multi, REPS), median(gemm, REPS),
                             median(ratio, REPS), median(passes, REPS)};
}

static void bench_prefill(const weights *w, int threads) {
    static const int64_t MS[] = {2, 3, 4, 8, 12, 16, 32, 48, 64};
    float *x = xmalloc(MAX_M * FFN * sizeof *x), *y = xmalloc(MAX_M * FFN * sizeof *y);
    uint64_t s = 7;
    for (int i = 0; i < MAX_M * FFN; i++) x[i] = noise(&s);
    for (int d = 0; d < 2; d++) {
        bool bf16 = d == 1;
        const char *dt = bf16 ? "bf16" : "f32";
        printf("  %s, %d thread(s), %.1f MB of weights:\n", dt, threads,
               (double)(w->per_layer * LAYERS) * (bf16 ? 2 : 4) / 1e6);
        for (size_t i = 0; i < sizeof MS / sizeof MS[0]; i++) {
            int64_t M = MS[i];
            prefill_figures f = time_prefill(w, bf16, x, y, M);
            printf("    M=%2lld  one GEMV pass %6.2f ms  multi %7.2f ms (%.2f GEMV passes)  "
                   "gemm %7.2f ms  gemm/multi %.2f\n", (long long)M, f.one * 1e3,
                   f.multi * 1e3, f.multi_over_one, f.gemm * 1e3, f.gemm_over_multi);
            printf("@ prefill_%s_M%lld_gemm_over_multi_%dt: %.3f\n", dt, (long long)M, threads,
                   f.gemm_over_multi);
            printf("@ prefill_%s_M%lld_multi_in_gemv_passes_%dt: %.3f\n", dt, (long long)M,
                   threads, f.multi_over_one);
        }
    }
    free(x);
    free(y);
}

/* ---- (b) attention over a cache ------------------------------------------ */

static volatile float sink;

typedef struct { const float *p; int64_t n; float *sums; } read_job;

static void read_chunk(void *ctx, int64_t c) {
    read_job *j = ctx;
    int64_t per = (j->n + 63) / 64, b = c * per, e = b + per < j->n ? b + per : j->n;
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t i = b;
    for (; i + 4 <= e; i += 4) {
        s0 += j->p[i];
        s1 += j->p[i + 1];
        s2 += j->p[i + 2];
        s3 += j->p[i + 3];
    }
    for (; i < e; i++) s0 += j->p[i];
    j->sums[c] = s0 + s1 + s2 + s3;
}

/* The read bound: every byte the products read, summed as floats. */
static double read_pass(const float *p, int64_t n, int threads) {
    float sums[64];
    read_job j = {p, n, sums};
    double t0 = now();
    tl_parallel_chunks(threads, 64, read_chunk, &j);
    double t = now() - t0;
    sink = sums[0];
    return t;
}

typedef enum { ATT_MATMUL, ATT_OLD } att_path;

/* The old paths at M = 3: three GEMVs per head while K (or V) of a head fit
 * 256 KB, else sgemm on the view (a BF16 head widened whole first). */
static void old_scores(const tl_tensor *k, const float *q, float *out, int64_t S, bool bf16) {
    const char *base = tl_data(k);
    size_t es = bf16 ? 2 : 4;
    for (int h = 0; h < KV_HEADS; h++) {
        const char *kh = base + (size_t)(h * k->strides[1]) * es;
        const float *qh = q + h * GROUP * HEAD_DIM;
        float *oh = out + h * GROUP * S;
        if (S * HEAD_DIM * (int64_t)es <= 256 << 10) {
            for (int g = 0; g < GROUP; g++) {
                if (bf16) tl_gemv_bf16((const uint16_t *)kh, qh + g * HEAD_DIM, oh + g * S, S,
                                       HEAD_DIM);
                else tl_gemv_f32((const float *)kh, qh + g * HEAD_DIM, oh + g * S, S, HEAD_DIM);
            }
        } else if (bf16) {
            float *wide = xmalloc((size_t)(S * HEAD_DIM) * sizeof *wide);
            tl_bf16_to_f32_n((const uint16_t *)kh, wide, (size_t)(S * HEAD_DIM));
            tl_gemm_f32_nt(qh, wide, oh, GROUP, S, HEAD_DIM);
            free(wide);
        } else {
            tl_gemm_f32_nt(qh, (const float *)kh, oh, GROUP, S, HEAD_DIM);
        }
    }
}

static void old_mix(const tl_tensor *v, const float *p, float *out, int64_t S, bool bf16) {
    const char *base = tl_data(v);
    size_t es = bf16 ? 2 : 4;
    for (int h = 0; h < KV_HEADS; h++) {
        const char *vh = base + (size_t)(h * v->strides[1]) * es;
        const float *ph = p + h * GROUP * S;
        float *oh = out + h * GROUP * HEAD_DIM;
        if (S * HEAD_DIM * (int64_t)es <= 256 << 10) {
            for (int g = 0; g < GROUP; g++) {
                if (bf16) tl_gemv_t_bf16((const uint16_t *)vh, ph + g * S, oh + g * HEAD_DIM, S,
                                         HEAD_DIM);
                else tl_gemv_t_f32((const float *)vh, ph + g * S, oh + g * HEAD_DIM, S, HEAD_DIM);
            }
        } else {
            float *wide = NULL;
            const float *vf = (const float *)vh;
            if (bf16) {
                wide = xmalloc((size_t)(S * HEAD_DIM) * sizeof *wide);
                tl_bf16_to_f32_n((const uint16_t *)vh, wide, (size_t)(S * HEAD_DIM));
                vf = wide;
            }
            tl_blas_prepare();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, GROUP, HEAD_DIM, (int)S, 1.0f,
                        ph, (int)S, vf, HEAD_DIM, 0.0f, oh, HEAD_DIM);
            free(wide);
        }
    }
}

/* One decode step's attention products over every layer's cache. */
static double attention_pass(tl_tensor **kc, tl_tensor **vc, tl_tensor *q, tl_tensor *p,
                             int64_t S, att_path how, float *scratch) {
    double t0 = now();
    for (int l = 0; l < CACHE_LAYERS; l++) {
        tl_scope_push();
        tl_tensor *k = tl_narrow(kc[l], 2, 0, S), *v = tl_narrow(vc[l], 2, 0, S);
        bool bf16 = kc[l]->dtype == TL_BF16;
        if (how == ATT_MATMUL) {
            tl_tensor *s = tl_matmul(q, tl_transpose(k, -1, -2)), *o = tl_matmul(p, v);
            if (!s || !o) {
                fprintf(stderr, "bench_multi: %s\n", tl_error());
                exit(1);
            }
        } else {
            old_scores(k, tl_data(q), scratch, S, bf16);
            old_mix(v, tl_data(p), scratch, S, bf16);
        }
        tl_scope_pop();
    }
    return now() - t0;
}

static void bench_attention(int threads) {
    static const int64_t SS[] = {192, 1024, 4096};
    int64_t Smax = 4096;
    tl_tensor *kc[CACHE_LAYERS], *vc[CACHE_LAYERS];
    uint64_t s = 9;
    float *scratch = xmalloc((size_t)(KV_HEADS * GROUP * Smax) * sizeof *scratch);
    for (int d = 0; d < 2; d++) {
        tl_dtype dt = d ? TL_BF16 : TL_F32;
        const char *dn = d ? "bf16" : "f32";
        int64_t n = KV_HEADS * Smax * HEAD_DIM;
        float *fill = xmalloc((size_t)n * sizeof *fill);
        for (int l = 0; l < CACHE_LAYERS; l++) {
            for (int64_t i = 0; i < n; i++) fill[i] = noise(&s);
            kc[l] = tl_tensor_new_owned(dt, 4, (const int64_t[]){1, KV_HEADS, Smax, HEAD_DIM});
            vc[l] = tl_tensor_new_owned(dt, 4, (const int64_t[]){1, KV_HEADS, Smax, HEAD_DIM});
            tl_scope_push();
            tl_tensor *src = tl_from_f32(fill, 4, (const int64_t[]){1, KV_HEADS, Smax, HEAD_DIM});
            tl_copy_into(kc[l], src);
            tl_copy_into(vc[l], src);
            tl_scope_pop();
        }
        free(fill);
        for (size_t i = 0; i < sizeof SS / sizeof SS[0]; i++) {
            int64_t S = SS[i];
            tl_scope_push();
            tl_tensor *q = tl_full(TL_F32, 4, (const int64_t[]){1, KV_HEADS, GROUP, HEAD_DIM},
                                   0.125f);
            tl_tensor *p = tl_full(TL_F32, 4, (const int64_t[]){1, KV_HEADS, GROUP, S},
                                   1.0f / (float)S);
            /* The bound: K and V of every layer at S positions, read once. A
             * BF16 cache is half the bytes: read as floats, half the count. */
            int64_t floats = KV_HEADS * S * HEAD_DIM / (d ? 2 : 1);
            double tn[REPS], to[REPS], tb[REPS], speedup[REPS], over_bound[REPS];
            attention_pass(kc, vc, q, p, S, ATT_MATMUL, scratch);
            for (int r = 0; r < REPS; r++) {
                tn[r] = attention_pass(kc, vc, q, p, S, ATT_MATMUL, scratch);
                to[r] = attention_pass(kc, vc, q, p, S, ATT_OLD, scratch);
                double b = 0;
                for (int l = 0; l < CACHE_LAYERS; l++) {
                    b += read_pass(tl_data(kc[l]), floats, threads);
                    b += read_pass(tl_data(vc[l]), floats, threads);
                }
                tb[r] = b;
                speedup[r] = to[r] / tn[r];
                over_bound[r] = tn[r] / b;
            }
            double new_t = median(tn, REPS), old_t = median(to, REPS), bound = median(tb, REPS);
            double old_over_new = median(speedup, REPS), new_over_bound = median(over_bound, REPS);
            printf("    %s S=%4lld: matmul %7.3f ms  old %7.3f ms  read bound %7.3f ms  "
                   "old/new %.2f  new/bound %.2f\n", dn, (long long)S, new_t * 1e3,
                   old_t * 1e3, bound * 1e3, old_over_new, new_over_bound);
            printf("@ attention_%s_S%lld_old_over_new_%dt: %.3f\n", dn, (long long)S, threads,
                   old_over_new);
            printf("@ attention_%s_S%lld_new_over_bound_%dt: %.3f\n", dn, (long long)S, threads,
                   new_over_bound);
            tl_scope_pop();
        }
        for (int l = 0; l < CACHE_LAYERS; l++) {
            tl_tensor_free(kc[l]);
            tl_tensor_free(vc[l]);
        }
    }
    free(scratch);
}

int main(int argc, char **argv) {
    bool prefill = argc < 2 || strcmp(argv[1], "attention") != 0;
    bool attention = argc < 2 || strcmp(argv[1], "prefill") != 0;
    printf("bench_multi: OpenBLAS kernels %s; medians of %d passes\n", tl_blas_prepare(), REPS);
    weights w = {NULL, NULL, 0};
    if (prefill) w = make_weights();
    tl_no_grad_push();
    for (int threads = 1; threads <= 2; threads++) {
        char t[8];
        snprintf(t, sizeof t, "%d", threads);
        setenv("TINYLLM_THREADS", t, 1);
        if (prefill) {
            printf("(a) prefill projections of %d SmolLM2 layers, M rows:\n", LAYERS);
            bench_prefill(&w, threads);
        }
        if (attention) {
            printf("(b) q @ K^T and p @ V at decode (M = %d rows per key head), %d layers, "
                   "%d thread(s):\n", GROUP, CACHE_LAYERS, threads);
            bench_attention(threads);
        }
    }
    tl_no_grad_pop();
    free(w.f32);
    free(w.bf16);
    return 0;
}
