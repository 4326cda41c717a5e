/* bench_decode: a SmolLM2-135M decoder written plainly from runtime ops, as a
 * lesson writes it, timed against the machine's read bandwidth
 * (`make bench-decode`).
 *
 *   bench_decode DIR_F32 DIR_BF16      (checkpoints made by make_smollm2)
 *
 * The model is loaded as L7.9 will: a module tree with HF's names made with
 * zero parameters, tl_module_adopt_checkpoint (the weights stay in the mapped
 * file: one copy), tl_linear_fuse for q/k/v and gate/up, a preallocated KV
 * cache, and one scope per decode step. Its forward uses only ops.h: RMSNorm
 * from mean/rsqrt/mul, RoPE from narrow/neg/concat/mul/add, grouped-query
 * attention from matmul over the cache read in place (K transposed, the key
 * heads expanded over their query heads, stride 0), softmax, SiLU.
 *
 * Figures, per dtype (F32, BF16) and thread count (1, 2):
 *   - decode: a 128-token prompt, then 64 greedy tokens; the median step of
 *     each of REPS runs, the median of those; tokens/s; and the ratio of the
 *     bound's time to the step's: the bound is the time to read the bytes of
 *     every weight a step reads (each layer's fused q/k/v, o, fused gate/up,
 *     down, norms; the tied head), measured on the same threads by a read
 *     loop over those very bytes right after each step, the ratio taken pair
 *     by pair (the machine is shared: conditions change from second to
 *     second), so 1.0 means decode runs at memory speed; the layers and the
 *     head are also given apart;
 *   - prefill: the 128-token prompt in one pass (GEMM), tokens/s, and
 *     prefill_vs_gemm: the time the model's projections take as bare GEMMs
 *     (tl_gemm_*_nt at the same shapes, same threads) over the prefill time;
 *   - memory: resident size after the load, after a decode, peak, against
 *     the weight bytes; and, for BF16 on 2 threads, the growth of the
 *     resident size and of the arena over 2,000 tokens against the KV cache
 *     bytes those tokens fill;
 *   - per-op cost at decode sizes (a 576-wide add, the RMSNorm chain, ...).
 * The last lines are `name: value`, one per figure. Speed is never asserted:
 * the bench reports.
 */
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "tinyllm/machine.h"

#include "tinyllm/autograd.h"
#include "tinyllm/kernels.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "tinyllm/safetensors.h"
#include "tinyllm/tensor.h"
#include "read_bound.h"

enum { LAYERS = 30, HIDDEN = 576, HEADS = 9, KV_HEADS = 3, HEAD_DIM = 64, FFN = 1536,
       VOCAB = 49152, PROMPT = 128, NEW_TOKENS = 64, REPS = 5, LONG_RUN = 2000,
       MAX_POS = PROMPT + LONG_RUN + 8 };
static const double EPS = 1e-5, THETA = 100000.0;

/* ---- helpers -------------------------------------------------------------- */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU time of the calling thread: what an op costs, whatever else runs. */
static double thread_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void die(const char *what) {
    fprintf(stderr, "bench_decode: %s: %s\n", what, tl_error() ? tl_error() : "failed");
    exit(1);
}

static double resident_mb(void) {
    long pages = 0, size;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f && fscanf(f, "%ld %ld", &size, &pages) != 2) pages = 0;
    if (f) fclose(f);
    return (double)pages * (double)sysconf(_SC_PAGESIZE) / 1e6;
}

static double peak_mb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1e3;   /* kB */
}

/* The `name: value` lines printed at the end. */
static struct { char name[80]; double value; } results[128];
static int n_results;

static void record(const char *name, double value) {
    if (n_results == 128) return;
    snprintf(results[n_results].name, sizeof results[n_results].name, "%s", name);
    results[n_results++].value = value;
}

/* ---- the model ------------------------------------------------------------ */

typedef struct {
    tl_tensor *qkv, *o, *gate_up, *down, *ln1, *ln2;
} layer;

typedef struct {
    tl_module *root;
    tl_tensor *embed, *norm;
    layer l[LAYERS];
    tl_tensor *qkv_parts[LAYERS], *gate_up_parts[LAYERS];   /* fused weights to free */
    tl_tensor *k_cache[LAYERS], *v_cache[LAYERS];
    tl_tensor *cos, *sin;                                   /* [MAX_POS, HEAD_DIM] */
    int64_t weight_bytes, layer_bytes, head_bytes;
} model;

static tl_tensor *param(tl_module *root, const char *fmt, int i) {
    char name[160];
    snprintf(name, sizeof name, fmt, i);
    tl_tensor *t = tl_module_param(root, name);
    if (!t) die(name);
    return t;
}

/* HF's module tree with zero parameters (nothing resident), then the
 * checkpoint adopted and the projections fused. */
static void model_load(model *m, const char *dir, tl_dtype dt) {
    memset(m, 0, sizeof *m);
    tl_module *root = m->root = tl_module_new("LlamaForCausalLM");
    tl_module *mm = tl_module_add(root, "model", tl_module_new("LlamaModel"));
    tl_module_add(mm, "embed_tokens", tl_embedding_new(VOCAB, HIDDEN, NULL));
    tl_module *layers = tl_module_add(mm, "layers", tl_module_list_new());
    for (int i = 0; i < LAYERS; i++) {
        tl_module *l = tl_module_list_append(layers, tl_module_new("LlamaDecoderLayer"));
        tl_module *a = tl_module_add(l, "self_attn", tl_module_new("LlamaAttention"));
        tl_module_add(a, "q_proj", tl_linear_new(HIDDEN, HIDDEN, false, NULL));
        tl_module_add(a, "k_proj", tl_linear_new(HIDDEN, KV_HEADS * HEAD_DIM, false, NULL));
        tl_module_add(a, "v_proj", tl_linear_new(HIDDEN, KV_HEADS * HEAD_DIM, false, NULL));
        tl_module_add(a, "o_proj", tl_linear_new(HIDDEN, HIDDEN, false, NULL));
        tl_module *mlp = tl_module_add(l, "mlp", tl_module_new("LlamaMLP"));
        tl_module_add(mlp, "gate_proj", tl_linear_new(HIDDEN, FFN, false, NULL));
        tl_module_add(mlp, "up_proj", tl_linear_new(HIDDEN, FFN, false, NULL));
        tl_module_add(mlp, "down_proj", tl_linear_new(FFN, HIDDEN, false, NULL));
        tl_module *n1 = tl_module_add(l, "input_layernorm", tl_module_new("LlamaRMSNorm"));
        tl_module *n2 = tl_module_add(l, "post_attention_layernorm", tl_module_new("LlamaRMSNorm"));
        tl_module_param_new(n1, "weight", TL_SHAPE(HIDDEN));
        tl_module_param_new(n2, "weight", TL_SHAPE(HIDDEN));
    }
    tl_module *norm = tl_module_add(mm, "norm", tl_module_new("LlamaRMSNorm"));
    tl_module_param_new(norm, "weight", TL_SHAPE(HIDDEN));
    m->embed = param(root, "model.embed_tokens.weight", 0);
    tl_module *head = tl_module_add(root, "lm_head", tl_module_new("Linear"));
    tl_module_param_share(head, "weight", m->embed);   /* tied */

    tl_checkpoint *ck = tl_checkpoint_load(dir, dt);
    if (!ck || tl_module_adopt_checkpoint(root, ck, true) != 0) die("loading the checkpoint");
    tl_checkpoint_free(ck);   /* the module keeps its reference */

    m->norm = param(root, "model.norm.weight", 0);
    size_t es = tl_dtype_size(dt);
    for (int i = 0; i < LAYERS; i++) {
        layer *L = &m->l[i];
        const char *a = "model.layers.%d.self_attn.", *f = "model.layers.%d.mlp.";
        char q[96], k[96], v[96], g[96], u[96];
        snprintf(q, sizeof q, "%sq_proj.weight", a);
        snprintf(k, sizeof k, "%sk_proj.weight", a);
        snprintf(v, sizeof v, "%sv_proj.weight", a);
        snprintf(g, sizeof g, "%sgate_proj.weight", f);
        snprintf(u, sizeof u, "%sup_proj.weight", f);
        L->qkv = tl_linear_fuse((tl_tensor *[]){param(root, q, i), param(root, k, i),
                                                param(root, v, i)}, 3);
        L->gate_up = tl_linear_fuse((tl_tensor *[]){param(root, g, i), param(root, u, i)}, 2);
        if (!L->qkv || !L->gate_up) die("fusing");
        L->o = param(root, "model.layers.%d.self_attn.o_proj.weight", i);
        L->down = param(root, "model.layers.%d.mlp.down_proj.weight", i);
        L->ln1 = param(root, "model.layers.%d.input_layernorm.weight", i);
        L->ln2 = param(root, "model.layers.%d.post_attention_layernorm.weight", i);
        m->qkv_parts[i] = L->qkv;
        m->gate_up_parts[i] = L->gate_up;
        int64_t n = tl_numel(L->qkv) + tl_numel(L->o) + tl_numel(L->gate_up) +
                    tl_numel(L->down) + tl_numel(L->ln1) + tl_numel(L->ln2);
        m->layer_bytes += n * (int64_t)es;
        m->k_cache[i] = tl_tensor_new_owned(TL_F32, TL_SHAPE(1, KV_HEADS, MAX_POS, HEAD_DIM));
        m->v_cache[i] = tl_tensor_new_owned(TL_F32, TL_SHAPE(1, KV_HEADS, MAX_POS, HEAD_DIM));
        if (!m->k_cache[i] || !m->v_cache[i]) die("the KV cache");
    }
    m->head_bytes = (tl_numel(m->embed) + tl_numel(m->norm)) * (int64_t)es;
    m->weight_bytes = m->layer_bytes + m->head_bytes;

    /* RoPE tables as HF's LlamaRotaryEmbedding: cat(freqs, freqs). */
    m->cos = tl_tensor_new_owned(TL_F32, TL_SHAPE(MAX_POS, HEAD_DIM));
    m->sin = tl_tensor_new_owned(TL_F32, TL_SHAPE(MAX_POS, HEAD_DIM));
    float *c = tl_data(m->cos), *s = tl_data(m->sin);
    for (int p = 0; p < MAX_POS; p++)
        for (int j = 0; j < HEAD_DIM; j++) {
            double inv = pow(THETA, -(double)(2 * (j % (HEAD_DIM / 2))) / HEAD_DIM);
            c[p * HEAD_DIM + j] = (float)cos(p * inv);
            s[p * HEAD_DIM + j] = (float)sin(p * inv);
        }
}

static void model_free(model *m) {
    for (int i = 0; i < LAYERS; i++) {
        tl_tensor_free(m->qkv_parts[i]);
        tl_tensor_free(m->gate_up_parts[i]);
        tl_tensor_free(m->k_cache[i]);
        tl_tensor_free(m->v_cache[i]);
    }
    tl_tensor_free(m->cos);
    tl_tensor_free(m->sin);
    tl_module_free(m->root);
}

/* ---- the forward, from ops ------------------------------------------------ */

static tl_tensor *rmsnorm(tl_tensor *x, tl_tensor *w) {
    tl_tensor *ms = tl_mean(tl_square(x), -1, true);
    return tl_mul(tl_mul(x, tl_rsqrt(tl_add_scalar(ms, EPS))), w);
}

/* x [1, heads, T, 64] rotated at the positions of cos, sin [1, 1, T, 64]. */
static tl_tensor *rope(tl_tensor *x, tl_tensor *cos, tl_tensor *sin) {
    tl_tensor *x1 = tl_narrow(x, -1, 0, HEAD_DIM / 2), *x2 = tl_narrow(x, -1, HEAD_DIM / 2,
                                                                    HEAD_DIM / 2);
    tl_tensor *rotated = tl_concat((tl_tensor *[]){tl_neg(x2), x1}, 2, -1);
    return tl_add(tl_mul(x, cos), tl_mul(rotated, sin));
}

/* [1, T, heads * 64] -> [1, heads, T, 64] */
static tl_tensor *split_heads(tl_tensor *x, int64_t T, int64_t heads) {
    return tl_transpose(tl_reshape(x, TL_SHAPE(1, T, heads, HEAD_DIM)), 1, 2);
}

static tl_tensor *attention(model *m, int i, tl_tensor *x, int64_t pos, int64_t T,
                            tl_tensor *mask) {
    layer *L = &m->l[i];
    tl_tensor *qkv = tl_linear(x, L->qkv, NULL), *part[3];
    if (tl_split(qkv, -1, (const int64_t[]){HIDDEN, KV_HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM},
                 3, part) != 0)
        return NULL;
    tl_tensor *cos = tl_reshape(tl_narrow(m->cos, 0, pos, T), TL_SHAPE(1, 1, T, HEAD_DIM));
    tl_tensor *sin = tl_reshape(tl_narrow(m->sin, 0, pos, T), TL_SHAPE(1, 1, T, HEAD_DIM));
    tl_tensor *q = rope(split_heads(part[0], T, HEADS), cos, sin);
    tl_tensor *k = rope(split_heads(part[1], T, KV_HEADS), cos, sin);
    tl_tensor *v = split_heads(part[2], T, KV_HEADS);
    if (!q || !k || !v) return NULL;
    if (tl_copy_into(tl_narrow(m->k_cache[i], 2, pos, T), k) != 0 ||
        tl_copy_into(tl_narrow(m->v_cache[i], 2, pos, T), v) != 0)
        return NULL;
    int64_t S = pos + T, G = HEADS / KV_HEADS;
    tl_tensor *keys = tl_expand(tl_unsqueeze(tl_narrow(m->k_cache[i], 2, 0, S), 2),
                                TL_SHAPE(1, KV_HEADS, G, S, HEAD_DIM));
    tl_tensor *values = tl_expand(tl_unsqueeze(tl_narrow(m->v_cache[i], 2, 0, S), 2),
                                  TL_SHAPE(1, KV_HEADS, G, S, HEAD_DIM));
    tl_tensor *q5 = tl_reshape(q, TL_SHAPE(1, KV_HEADS, G, T, HEAD_DIM));
    tl_tensor *scores = tl_mul_scalar(tl_matmul(q5, tl_transpose(keys, -1, -2)),
                                      1.0 / sqrt((double)HEAD_DIM));
    if (mask) scores = tl_masked_fill(scores, mask, -1e9);
    tl_tensor *out = tl_matmul(tl_softmax(scores, -1), values);   /* [1, 3, 3, T, 64] */
    out = tl_reshape(tl_transpose(tl_reshape(out, TL_SHAPE(1, HEADS, T, HEAD_DIM)), 1, 2),
                     TL_SHAPE(1, T, HIDDEN));
    return tl_linear(out, L->o, NULL);
}

static tl_tensor *mlp(layer *L, tl_tensor *x) {
    tl_tensor *gu = tl_linear(x, L->gate_up, NULL), *part[2];
    if (tl_split(gu, -1, (const int64_t[]){FFN, FFN}, 2, part) != 0) return NULL;
    return tl_linear(tl_mul(tl_silu(part[0]), part[1]), L->down, NULL);
}

/* The next token after ids [T] at positions pos.., with the layers' and the
 * head's times added to *t_layers, *t_head. */
static int64_t forward(model *m, const int64_t *ids, int64_t T, int64_t pos, double *t_layers,
                       double *t_head) {
    double t0 = now();
    tl_tensor *h = tl_embedding(m->embed, tl_from_i64(ids, TL_SHAPE(1, T)));
    tl_tensor *mask = NULL;
    if (T > 1) {   /* causal: query i sees keys 0..pos+i */
        mask = tl_zeros(TL_BOOL, TL_SHAPE(T, pos + T));
        uint8_t *mk = tl_data(mask);
        for (int64_t i = 0; i < T; i++)
            for (int64_t j = 0; j < pos + T; j++) mk[i * (pos + T) + j] = j > pos + i;
    }
    for (int i = 0; i < LAYERS && h; i++) {
        h = tl_add(h, attention(m, i, rmsnorm(h, m->l[i].ln1), pos, T, mask));
        h = tl_add(h, mlp(&m->l[i], rmsnorm(h, m->l[i].ln2)));
    }
    double t1 = now();
    tl_tensor *last = tl_narrow(h, 1, T - 1, 1);
    tl_tensor *logits = tl_linear(rmsnorm(last, m->norm), m->embed, NULL);   /* tied head */
    tl_tensor *next = tl_argmax(logits, -1, false);
    if (!next) die("the forward");
    int64_t id = (int64_t)tl_item(next);
    *t_layers += t1 - t0;
    *t_head += now() - t1;
    return id;
}

/* ---- the bound: reading the weights' own bytes ---------------------------- */

typedef read_region region;

static volatile uint64_t sink;

static region region_of(const tl_tensor *t) {
    return (region){tl_data(t), (size_t)tl_numel(t) * tl_dtype_size(t->dtype)};
}

/* The regions a decode step reads, in its order. */
static int weight_regions(const model *m, region *r) {
    int n = 0;
    for (int i = 0; i < LAYERS; i++) {
        const layer *L = &m->l[i];
        const tl_tensor *ts[] = {L->ln1, L->qkv, L->o, L->ln2, L->gate_up, L->down};
        for (int k = 0; k < 6; k++) r[n++] = region_of(ts[k]);
    }
    r[n++] = region_of(m->norm);
    r[n++] = region_of(m->embed);
    return n;
}

/* ---- one configuration ---------------------------------------------------- */

typedef struct {
    double step, layers, head, bound, prefill, gemm;
} timings;

static void prompt_ids(int64_t *ids) {
    for (int i = 0; i < PROMPT; i++) ids[i] = (i * 7919 + 13) % VOCAB;
}

/* The model's projections as bare GEMMs at a T-row prompt: the same shapes
 * and dtype as the prefill's tl_linear calls, through tl_gemm_*_nt. */
static double gemm_time(const model *m, int64_t T) {
    static float A[PROMPT * FFN], C[PROMPT * VOCAB];
    for (int64_t i = 0; i < T * FFN; i++) A[i] = 0.01f * (float)(i % 17);
    double t0 = now();
    for (int i = 0; i < LAYERS; i++) {
        const layer *L = &m->l[i];
        const tl_tensor *w[] = {L->qkv, L->o, L->gate_up, L->down};
        for (int k = 0; k < 4; k++) {
            int64_t N = w[k]->shape[0], K = w[k]->shape[1];
            if (w[k]->dtype == TL_F32) tl_gemm_f32_nt(A, tl_data(w[k]), C, T, N, K);
            else tl_gemm_bf16_nt(A, tl_data(w[k]), C, T, N, K);
        }
    }
    return now() - t0;
}

static timings run_config(model *m, const char *dtype_name, int threads) {
    char env[8];
    snprintf(env, sizeof env, "%d", threads);
    setenv("TINYLLM_THREADS", env, 1);
    timings t = {0};
    int64_t ids[PROMPT];
    prompt_ids(ids);
    region r[LAYERS * 6 + 2];
    int nr = weight_regions(m, r);
    double steps[REPS], prefills[REPS], bounds[REPS], bl[REPS], bh[REPS], gemms[REPS];
    double layer_med[REPS], head_med[REPS], bound_time[REPS], gemm_abs[REPS];
    tl_no_grad_push();
    for (int rep = -1; rep < REPS; rep++) {   /* rep -1 warms the caches and page tables */
        double tl = 0, th = 0, t0 = now();
        tl_scope_push();
        int64_t next = forward(m, ids, PROMPT, 0, &tl, &th);
        tl_scope_pop();
        double prefill = now() - t0;
        /* Each step is followed by a read of the same weights, so step and
         * bound are measured under the same conditions (the machine is
         * shared): the ratios are taken pair by pair. */
        double step[NEW_TOKENS], lay[NEW_TOKENS], hd[NEW_TOKENS];
        double ratio[NEW_TOKENS], ratio_l[NEW_TOKENS], ratio_h[NEW_TOKENS], bound[NEW_TOKENS];
        for (int s = 0; s < NEW_TOKENS; s++) {
            double a = 0, b = 0, s0 = now();
            tl_scope_push();
            next = forward(m, &next, 1, PROMPT + s, &a, &b);
            tl_scope_pop();
            step[s] = now() - s0;
            lay[s] = a;
            hd[s] = b;
            double b0 = now();
            sink = read_regions(r, nr - 2, threads);
            double b1 = now();
            sink = read_regions(r + nr - 2, 2, threads);
            double b2 = now();
            bound[s] = b2 - b0;
            ratio[s] = bound[s] / step[s];
            ratio_l[s] = (b1 - b0) / a;
            ratio_h[s] = (b2 - b1) / b;
        }
        double g = gemm_time(m, PROMPT);
        if (rep < 0) continue;
        steps[rep] = median(step, NEW_TOKENS);
        layer_med[rep] = median(lay, NEW_TOKENS);
        head_med[rep] = median(hd, NEW_TOKENS);
        prefills[rep] = prefill;
        bounds[rep] = median(ratio, NEW_TOKENS);
        bl[rep] = median(ratio_l, NEW_TOKENS);
        bh[rep] = median(ratio_h, NEW_TOKENS);
        bound_time[rep] = median(bound, NEW_TOKENS);
        gemms[rep] = g / prefill;
        gemm_abs[rep] = g;
    }
    tl_no_grad_pop();
    t.step = median(steps, REPS);
    t.layers = median(layer_med, REPS);
    t.head = median(head_med, REPS);
    t.prefill = median(prefills, REPS);
    double vs_bound = median(bounds, REPS), vs_layers = median(bl, REPS);
    double vs_head = median(bh, REPS), vs_gemm = median(gemms, REPS);
    t.bound = median(bound_time, REPS);
    t.gemm = median(gemm_abs, REPS);

    double gbs = (double)m->weight_bytes / t.bound * 1e-9;
    printf("  %s, %d thread%s: bound %.2f GB/s (%.1f MB read in %.2f ms; %s)\n", dtype_name,
           threads, threads > 1 ? "s" : "", gbs, (double)m->weight_bytes * 1e-6, t.bound * 1e3,
           read_loop_name(threads));
    printf("    decode  %7.2f ms/token  %7.1f tok/s   decode_vs_bound %.3f  (layers %.3f, head "
           "%.3f)\n", t.step * 1e3, 1.0 / t.step, vs_bound, vs_layers, vs_head);
    printf("    prefill %7.1f ms / %d tokens  %7.1f tok/s  prefill_vs_gemm %.3f  (bare GEMMs "
           "%.1f ms); prefill / decode %.1fx\n", t.prefill * 1e3, PROMPT, PROMPT / t.prefill,
           vs_gemm, t.gemm * 1e3, (PROMPT / t.prefill) * t.step);
    char name[80];
#define FIG(fmt, value) do { snprintf(name, sizeof name, fmt, dtype_name, threads); \
                             record(name, value); } while (0)
    FIG("decode_%s_vs_bound_%dt", vs_bound);
    FIG("decode_layers_%s_vs_bound_%dt", vs_layers);
    FIG("decode_head_%s_vs_bound_%dt", vs_head);
    FIG("decode_%s_tok_s_%dt", 1.0 / t.step);
    FIG("prefill_%s_tok_s_%dt", PROMPT / t.prefill);
    FIG("prefill_%s_vs_gemm_%dt", vs_gemm);
    FIG("read_bandwidth_%s_gbs_%dt", gbs);
#undef FIG
    return t;
}

/* ---- memory over a long generation ----------------------------------------- */

static void long_run(model *m, int threads) {
    char env[8];
    snprintf(env, sizeof env, "%d", threads);
    setenv("TINYLLM_THREADS", env, 1);
    int64_t ids[PROMPT];
    prompt_ids(ids);
    tl_no_grad_push();
    double a = 0, b = 0;
    tl_scope_push();
    int64_t next = forward(m, ids, PROMPT, 0, &a, &b);
    tl_scope_pop();
    double rss0 = 0, arena0 = 0, t0 = now();
    const int warm = 64;
    for (int s = 0; s < LONG_RUN; s++) {
        if (s == warm) {
            rss0 = resident_mb();
            arena0 = (double)tl_scope_bytes() / 1e6;
        }
        tl_scope_push();
        next = forward(m, &next, 1, PROMPT + s, &a, &b);
        tl_scope_pop();
    }
    double secs = now() - t0, rss1 = resident_mb(), arena1 = (double)tl_scope_bytes() / 1e6;
    tl_no_grad_pop();
    double cache_mb = (double)(LONG_RUN - warm) * LAYERS * 2 * KV_HEADS * HEAD_DIM * 4 / 1e6;
    printf("  %d tokens (BF16, %d threads, %.1f tok/s): resident +%.1f MB from token %d to %d, "
           "the KV cache they fill %.1f MB; arena %.2f -> %.2f MB\n", LONG_RUN, threads,
           LONG_RUN / secs, rss1 - rss0, warm, LONG_RUN, cache_mb, arena0, arena1);
    record("long_run_rss_growth_mb", rss1 - rss0);
    record("long_run_kv_cache_mb", cache_mb);
    record("long_run_rss_growth_vs_kv_cache", (rss1 - rss0) / cache_mb);
    record("long_run_arena_growth_mb", arena1 - arena0);
}

/* ---- per-op cost at decode sizes ------------------------------------------ */

typedef tl_tensor *(*op_fn)(tl_tensor *a, tl_tensor *b);
static tl_tensor *op_add(tl_tensor *a, tl_tensor *b) { return tl_add(a, b); }
static tl_tensor *op_mul(tl_tensor *a, tl_tensor *b) { return tl_mul(a, b); }
static tl_tensor *op_silu(tl_tensor *a, tl_tensor *b) { (void)b; return tl_silu(a); }
static tl_tensor *op_rmsnorm(tl_tensor *a, tl_tensor *b) { return rmsnorm(a, b); }
static tl_tensor *op_softmax(tl_tensor *a, tl_tensor *b) { (void)b; return tl_softmax(a, -1); }
static tl_tensor *op_view(tl_tensor *a, tl_tensor *b) {
    (void)b;
    return tl_transpose(tl_reshape(a, TL_SHAPE(1, 1, 9, 64)), 1, 2);
}

static void per_op_costs(void) {
    setenv("TINYLLM_THREADS", "1", 1);
    tl_tensor *x = tl_tensor_new_owned(TL_F32, TL_SHAPE(1, 1, HIDDEN));
    tl_tensor *w = tl_tensor_new_owned(TL_F32, TL_SHAPE(HIDDEN));
    tl_tensor *wide = tl_tensor_new_owned(TL_F32, TL_SHAPE(1, 1, FFN));
    tl_tensor *scores = tl_tensor_new_owned(TL_F32, TL_SHAPE(1, 3, 3, 1, 192));
    tl_copy_into(w, tl_ones(TL_F32, TL_SHAPE(HIDDEN)));
    struct { const char *name; op_fn f; tl_tensor *a, *b; int ops; } cases[] = {
        {"add [1, 1, 576]", op_add, x, x, 1},
        {"mul [1, 1, 576] by [576]", op_mul, x, w, 1},
        {"silu [1, 1, 1536]", op_silu, wide, NULL, 1},
        {"softmax [1, 3, 3, 1, 192]", op_softmax, scores, NULL, 1},
        {"reshape + transpose (views)", op_view, x, NULL, 2},
        {"RMSNorm chain (5 ops)", op_rmsnorm, x, w, 5},
    };
    printf("\nper-op cost at decode sizes (the thread's CPU time, 1 thread, no_grad, a scope "
           "per 100 ops; median of %d runs):\n", REPS);
    tl_no_grad_push();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        double runs[REPS];
        for (int rep = 0; rep < REPS; rep++) {
            double t0 = thread_cpu();
            for (int k = 0; k < 100; k++) {
                tl_scope_push();
                for (int i = 0; i < 100; i++) cases[c].f(cases[c].a, cases[c].b);
                tl_scope_pop();
            }
            runs[rep] = (thread_cpu() - t0) / 1e4;
        }
        double t = median(runs, REPS);
        printf("  %-32s %7.0f ns per call (%.0f ns per op)\n", cases[c].name, t * 1e9,
               t * 1e9 / cases[c].ops);
        char name[80];
        snprintf(name, sizeof name, "op_ns_%zu", c);
        record(name, t * 1e9);
    }
    tl_no_grad_pop();
    tl_tensor_free(x);
    tl_tensor_free(w);
    tl_tensor_free(wide);
    tl_tensor_free(scores);
}

/* ---- main ------------------------------------------------------------------- */

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);   /* progress shows as it runs */
    if (argc != 3) {
        fprintf(stderr, "usage: bench_decode DIR_F32 DIR_BF16 (made by make_smollm2)\n");
        return 2;
    }
    char cpu[256];
    machine_cpu_model(cpu, sizeof cpu);
    printf("bench_decode: %s, %d cores; OpenBLAS %s kernels\n", cpu, omp_get_num_procs(),
           tl_blas_prepare());
    printf("SmolLM2-135M shape, random weights; a %d-token prompt, then %d tokens; medians of "
           "%d runs\n\n", PROMPT, NEW_TOKENS, REPS);
    const char *dirs[] = {argv[1], argv[2]};
    const tl_dtype dts[] = {TL_F32, TL_BF16};
    const char *names[] = {"f32", "bf16"};
    double wall0 = now(), cpu0 = cpu_seconds();
    for (int d = 0; d < 2; d++) {
        model m;
        double rss_before = resident_mb();
        model_load(&m, dirs[d], dts[d]);
        double rss_load = resident_mb();
        printf("%s: %s, %.1f MB of weights a step reads; resident after the load %.1f MB\n",
               names[d], dirs[d], (double)m.weight_bytes * 1e-6, rss_load);
        for (int threads = 1; threads <= 2; threads++) run_config(&m, names[d], threads);
        double rss_decode = resident_mb();
        printf("  resident after decoding %.1f MB = %.3f x the weights (%.1f MB before the "
               "load); peak %.1f MB\n", rss_decode, rss_decode / ((double)m.weight_bytes * 1e-6),
               rss_before, peak_mb());
        char name[80];
        snprintf(name, sizeof name, "load_rss_%s_mb", names[d]);
        record(name, rss_load);
        snprintf(name, sizeof name, "rss_after_decode_vs_weights_%s", names[d]);
        record(name, rss_decode / ((double)m.weight_bytes * 1e-6));
        if (dts[d] == TL_BF16) long_run(&m, 2);
        model_free(&m);
        printf("\n");
    }
    double share = (cpu_seconds() - cpu0) / ((now() - wall0) * 1.5);
    printf("the bench's threads were on a core about %.0f%% of the time (1 and 2 threads "
           "averaged)%s\n", 100.0 * share,
           share < 0.85 ? ": other processes took the rest; measure on a quiet machine" : "");
    per_op_costs();
    printf("\n");
    for (int i = 0; i < n_results; i++) printf("%s: %.4g\n", results[i].name, results[i].value);
    tl_shutdown();
    return 0;
}
