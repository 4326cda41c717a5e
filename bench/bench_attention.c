/* bench_attention: one decode step of L7.5's GQAttention on a SmolLM2-135M
 * shaped stack (hidden 576, 9 heads, 3 kv heads, head_dim 64, 30 layers, F32
 * weights), beside what reading its bytes costs (`make bench-attention`).
 *
 * A decode step must read every weight of the layer once (q, k, v, o:
 * 884,736 floats, 3.5 MB) and every cached key and value once
 * (2 * 3 * S * 64 floats at S cached tokens). The bound is measured in the
 * same run, on the same threads: a read-only sum over exactly those bytes (the
 * layers' weight tensors and their cache views), layer after layer, as decode
 * walks them. 30 layers of weights (106 MB) do not fit in the last-level
 * cache, so each step reads them from memory, as a real model does.
 *
 * Reported per layer and token, medians of REPS steps: the whole gqa_forward,
 * the four projections alone (tl_linear_forward on the same row), the rest
 * (RoPE, the cache append, scores, softmax, P.V, the reshapes: what attention
 * costs beside its weights), the bytes a step must read, and step / bound.
 * Threads: TINYLLM_THREADS (the runtime's default otherwise). Speed is never a
 * test; the last lines are `name: value`, one per figure, for scripts.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tinyllm/autograd.h"
#include "tinyllm/kernels.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"
#include "tinyllm/modern/attention.h"

#define LAYERS 30
#define HIDDEN 576
#define HEADS 9
#define KV_HEADS 3
#define HEAD_DIM 64
#define WARMUP 2
#define REPS 7

static double now_seconds(void) {
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

static void die(const char *what) {
    fprintf(stderr, "bench_attention: %s: %s\n", what, tl_error() ? tl_error() : "failed");
    exit(1);
}

/* Read-only sum over a float array, on the runtime's threads. */
static double read_floats(const float *p, int64_t n, int threads) {
    double s = 0;
#pragma omp parallel for simd reduction(+ : s) num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; i++) s += p[i];
    return s;
}

static GQAttention layers[LAYERS];

/* Sum of every byte one decode step reads in layer l at S cached tokens. */
static double read_layer(const KVCache *c, int l, int threads) {
    const char *names[4] = {"q_proj", "k_proj", "v_proj", "o_proj"};
    double s = 0;
    for (int i = 0; i < 4; i++) {
        tl_tensor *w = tl_module_param(tl_module_child(layers[l].module, names[i]), "weight");
        s += read_floats(tl_f32(w), tl_numel(w), threads);
    }
    /* The layer's K and V: [1, Hkv, held, D] views of [1, Hkv, capacity, D]. */
    for (int64_t h = 0; h < KV_HEADS; h++) {
        int64_t off = h * c->capacity * HEAD_DIM, n = c->held[l] * HEAD_DIM;
        s += read_floats(tl_f32(c->keys[l]) + off, n, threads);
        s += read_floats(tl_f32(c->values[l]) + off, n, threads);
    }
    return s;
}

/* Fills every layer of c with `len` random keys and values (no attention). */
static void fill_cache(KVCache *c, int64_t len, tl_pcg32 *rng) {
    for (int l = 0; l < LAYERS; l++)
        for (int64_t done = 0; done < len; done += 256) {
            int64_t n = len - done < 256 ? len - done : 256;
            tl_scope_push();
            tl_tensor *k = tl_rand_uniform(rng, -1, 1, TL_SHAPE(1, KV_HEADS, n, HEAD_DIM));
            tl_tensor *v = tl_rand_uniform(rng, -1, 1, TL_SHAPE(1, KV_HEADS, n, HEAD_DIM));
            KVCacheUpdate u;
            if (kv_cache_update(c, l, k, v, NULL, &u) != 0) die("kv_cache_update");
            tl_scope_pop();
        }
}

int main(void) {
    int threads = tl_num_threads();
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 20240705, 1);
    RopeSpec rope;
    if (rope_spec_init(&rope, HEAD_DIM, HEAD_DIM, 100000.0, ROPE_HALF) != 0) die("rope");
    GQAConfig cfg = {.hidden = HIDDEN, .n_heads = HEADS, .n_kv_heads = KV_HEADS,
                     .head_dim = HEAD_DIM};
    for (int l = 0; l < LAYERS; l++)
        if (gqa_init(&layers[l], &cfg, &rope, &rng) != 0) die("gqa_init");
    printf("== attention decode step (bench/bench_attention.c): SmolLM2-135M shapes, %d layers, "
           "F32 weights, %d thread%s ==\n", LAYERS, threads, threads == 1 ? "" : "s");
    printf("per layer and token, medians of %d steps:\n", REPS);
    printf("%6s %11s %11s %11s %11s %11s %8s\n", "S", "step us", "proj us", "rest us",
           "bytes", "bound us", "step/bd");

    const int64_t lengths[3] = {128, 1024, 4096};
    tl_no_grad_push();
    for (int li = 0; li < 3; li++) {
        int64_t len = lengths[li];
        KVCache cache;
        if (kv_cache_init(&cache, LAYERS, 1, KV_HEADS, HEAD_DIM, HEAD_DIM,
                          len + WARMUP + REPS) != 0)
            die("kv_cache_init");
        fill_cache(&cache, len, &rng);
        double step[REPS], proj[REPS], bound[REPS], sink = 0;
        for (int r = 0; r < WARMUP + REPS; r++) {
            tl_scope_push();
            tl_tensor *x = tl_rand_uniform(&rng, -1, 1, TL_SHAPE(1, 1, HIDDEN));
            double t0 = now_seconds();
            for (int l = 0; l < LAYERS; l++)
                if (!gqa_forward(&layers[l], x, NULL, NULL, &cache, l)) die("gqa_forward");
            double t1 = now_seconds();
            double projections = 0;
            for (int l = 0; l < LAYERS; l++) {
                tl_tensor *o_in = tl_rand_uniform(&rng, -1, 1, TL_SHAPE(1, 1, HEADS * HEAD_DIM));
                double u0 = now_seconds();   /* the draw of o_in stays out of the timing */
                tl_linear_forward(layers[l].q_proj, x);
                tl_linear_forward(layers[l].k_proj, x);
                tl_linear_forward(layers[l].v_proj, x);
                tl_linear_forward(layers[l].o_proj, o_in);
                projections += now_seconds() - u0;
            }
            double t2 = now_seconds();
            for (int l = 0; l < LAYERS; l++) sink += read_layer(&cache, l, threads);
            double t3 = now_seconds();
            if (r >= WARMUP) {
                step[r - WARMUP] = t1 - t0;
                proj[r - WARMUP] = projections;
                bound[r - WARMUP] = t3 - t2;
            }
            tl_scope_pop();
        }
        double weights = 2.0 * HIDDEN * HEADS * HEAD_DIM + 2.0 * HIDDEN * KV_HEADS * HEAD_DIM;
        double bytes = 4.0 * (weights + 2.0 * KV_HEADS * (double)cache.held[0] * HEAD_DIM);
        double s_us = 1e6 * median(step, REPS) / LAYERS, p_us = 1e6 * median(proj, REPS) / LAYERS;
        double b_us = 1e6 * median(bound, REPS) / LAYERS;
        printf("%6lld %11.1f %11.1f %11.1f %11.0f %11.1f %8.2f%s\n", (long long)len, s_us, p_us,
               s_us - p_us, bytes, b_us, s_us / b_us, sink == 12345.0 ? " " : "");
        char name[64];
        snprintf(name, sizeof name, "attention_step_us_S%lld", (long long)len);
        printf("%s: %.1f\n", name, s_us);
        snprintf(name, sizeof name, "attention_rest_us_S%lld", (long long)len);
        printf("%s: %.1f\n", name, s_us - p_us);
        snprintf(name, sizeof name, "attention_step_vs_bound_S%lld", (long long)len);
        printf("%s: %.2f\n", name, s_us / b_us);
        kv_cache_free(&cache);
    }
    tl_no_grad_pop();
    for (int l = 0; l < LAYERS; l++) gqa_free(&layers[l]);
    tl_shutdown();
    return 0;
}
