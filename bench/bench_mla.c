/* bench_mla: one decode step of L7.6's MLAttention through the latent cache,
 * on the naive and the absorbed path, beside what reading its bytes costs
 * (`make bench-mla`). DeepSeek-V2-Lite's attention shapes (hidden 2048, 16
 * heads, dn 128, dr 64, dv 128, kv_lora_rank 512, no q_lora: 13,763,072 F32
 * weights, 55 MB a layer), LAYERS layers so the weights come from memory.
 *
 * A decode step must read the layer's weights once and its cache once:
 * S * (512 + 64) floats at S cached tokens. The absorbed path does about
 * that; the naive path also pushes every cached latent through kv_b_proj
 * again (S * 512 * 4096 multiply-adds per layer and token), which grows with
 * S. The bound is a read-only sum over exactly those bytes, in the same run.
 * Reported per layer and token, medians of REPS steps. Speed is never a test;
 * the last lines are `name: value`, one per figure, for scripts.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tinyllm/autograd.h"
#include "tinyllm/kernels.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/testing.h"
#include "tinyllm/modern/mla.h"

#define LAYERS 2
#define REPS 5

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
    fprintf(stderr, "bench_mla: %s: %s\n", what, tl_error() ? tl_error() : "failed");
    exit(1);
}

static double read_floats(const float *p, int64_t n, int threads) {
    double s = 0;
#pragma omp parallel for simd reduction(+ : s) num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; i++) s += p[i];
    return s;
}

static MLAttention layers[LAYERS];

/* Every byte one decode step must read in layer l: weights, then the cache. */
static double read_layer(const KVCache *c, int l, int threads) {
    tl_state_dict sd = tl_module_state_dict(layers[l].module);
    double s = 0;
    for (int i = 0; i < sd.count; i++)
        s += read_floats(tl_f32(sd.items[i].tensor), tl_numel(sd.items[i].tensor), threads);
    tl_state_dict_free(&sd);
    s += read_floats(tl_f32(c->keys[l]), c->held[l] * c->key_dim, threads);
    s += read_floats(tl_f32(c->values[l]), c->held[l] * c->value_dim, threads);
    return s;
}

int main(void) {
    int threads = tl_num_threads();
    tl_pcg32 rng;
    tl_pcg32_seed(&rng, 20240706, 1);
    MLAConfig cfg = {.hidden = 2048, .n_heads = 16, .q_lora_rank = 0, .kv_lora_rank = 512,
                     .qk_nope_head_dim = 128, .qk_rope_head_dim = 64, .v_head_dim = 128};
    RopeSpec rope;
    if (rope_spec_init(&rope, 64, 64, 10000.0, ROPE_INTERLEAVED) != 0) die("rope");
    for (int l = 0; l < LAYERS; l++)
        if (mla_init(&layers[l], &cfg, &rope, &rng) != 0) die("mla_init");
    printf("== MLA decode step (bench/bench_mla.c): DeepSeek-V2-Lite attention shapes, %d "
           "layers, F32 weights, %d thread%s ==\n", LAYERS, threads, threads == 1 ? "" : "s");
    printf("per layer and token, medians of %d steps:\n", REPS);
    printf("%6s %12s %12s %11s %11s %9s %9s\n", "S", "naive us", "absorbed us", "bytes",
           "bound us", "abs/bd", "naive/abs");
    const int64_t lengths[3] = {128, 1024, 4096};
    tl_no_grad_push();
    for (int li = 0; li < 3; li++) {
        int64_t len = lengths[li];
        KVCache cache;
        if (mla_cache_init(&cache, &cfg, LAYERS, 1, len + 1) != 0) die("mla_cache_init");
        /* A prefill of len tokens, in chunks, on the naive path. */
        for (int l = 0; l < LAYERS; l++) layers[l].path = MLA_PATH_NAIVE;
        for (int64_t done = 0; done < len; done += 128) {
            tl_scope_push();
            tl_tensor *x = tl_rand_uniform(&rng, -1, 1, TL_SHAPE(1, 128, 2048));
            for (int l = 0; l < LAYERS; l++)
                if (!mla_forward(&layers[l], x, NULL, NULL, &cache, l)) die("prefill");
            tl_scope_pop();
        }
        double t[2][REPS], bound[REPS], sink = 0;
        for (int r = 0; r < REPS; r++) {
            tl_scope_push();
            tl_tensor *x = tl_rand_uniform(&rng, -1, 1, TL_SHAPE(1, 1, 2048));
            for (int p = 0; p < 2; p++) {
                for (int l = 0; l < LAYERS; l++)
                    layers[l].path = p ? MLA_PATH_ABSORBED : MLA_PATH_NAIVE;
                double t0 = now_seconds();
                for (int l = 0; l < LAYERS; l++)
                    if (!mla_forward(&layers[l], x, NULL, NULL, &cache, l)) die("decode");
                t[p][r] = now_seconds() - t0;
                kv_cache_reset(&cache);           /* forget the step: S stays len */
                for (int l = 0; l < LAYERS; l++) cache.held[l] = cache.seen[l] = len;
            }
            double t0 = now_seconds();
            for (int l = 0; l < LAYERS; l++) sink += read_layer(&cache, l, threads);
            bound[r] = now_seconds() - t0;
            tl_scope_pop();
        }
        double naive = 1e6 * median(t[0], REPS) / LAYERS;
        double absorbed = 1e6 * median(t[1], REPS) / LAYERS;
        double b_us = 1e6 * median(bound, REPS) / LAYERS;
        double bytes = 4.0 * (13763072.0 + (double)len * (512 + 64));
        printf("%6lld %12.1f %12.1f %11.0f %11.1f %9.2f %9.2f%s\n", (long long)len, naive,
               absorbed, bytes, b_us, absorbed / b_us, naive / absorbed,
               sink == 12345.0 ? " " : "");
        printf("mla_naive_us_S%lld: %.1f\n", (long long)len, naive);
        printf("mla_absorbed_us_S%lld: %.1f\n", (long long)len, absorbed);
        printf("mla_absorbed_vs_bound_S%lld: %.2f\n", (long long)len, absorbed / b_us);
        kv_cache_free(&cache);
    }
    tl_no_grad_pop();
    for (int l = 0; l < LAYERS; l++) mla_free(&layers[l]);
    tl_shutdown();
    return 0;
}
