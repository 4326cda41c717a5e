/* bench_generate: the speed of `tinyllm generate`'s path (tools/tinyllm's
 * generator on the course's LlamaForCausalLM, the reference lessons), each
 * figure a ratio against a bound measured in the same run on the same
 * threads (`make bench-generate`).
 *
 *   bench_generate DIR_F32 DIR_BF16     (SmolLM2-135M-shaped, make_smollm2)
 *
 * Per dtype (the folder's own: f32, bf16) and thread count (1, 2), REPS runs
 * after one warm-up, the four configurations interleaved run by run (both
 * models resident; a change of the machine's load falls on all four), each
 * run recording the load average at its start: a 128-token prompt in one
 * prefill, then 63 decode steps (64 new tokens, the first from the prefill),
 * exactly as generate runs them (generator_feed: a scope per step, no_grad,
 * llama_forward through the KV cache). Figures, medians over the runs of
 * per-run medians:
 *   decode_<dt>_vs_bound_<t>t  the time to read every weight byte a step reads
 *       (bytes of all parameters, the tied head once) by a plain read loop on
 *       the same threads in a step's order (the head last), right after each
 *       step, over that step's time, pair by pair (conditions on a shared
 *       machine change by the second): 1.0 is
 *       decode at the speed of memory; the KV cache's reads and every op that
 *       is not a weight read count against it;
 *   prefill_<dt>_vs_gemm_<t>t  the time of the model's own products as bare
 *       GEMMs (tl_gemm_*_nt on the model's weight arrays: q, k, v, o, gate,
 *       up, down per layer at the prefill's 128 rows, and the head at the
 *       last row alone, as generate multiplies them) over the prefill's time: the ratio of
 *       FLOP/s at the same FLOPs (both printed; the prefill's attention
 *       products, a few percent at 128 tokens, count against it);
 *   prefill_<dt>_tok_s_<t>t, decode_<dt>_tok_s_<t>t and their ratio;
 *   ttft_<dt>_ms_<t>t  the prefill's time to its first token;
 *   load_rss_vs_weights_<dt>  the resident size after generator_open (the
 *       weights paged in) over the weight bytes: the process and everything,
 *       in a fresh process per checkpoint, forked before any thread starts;
 *   long_run_*: 2,000 tokens (BF16, 2 threads): the growth of the resident
 *       size from token 64 to 2,000 against the KV cache bytes those tokens
 *       fill (F32 keys and values), and of the scope arena (should be 0).
 * The last lines are `name: value`. Speed is never asserted: the bench reports.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tinyllm/kernels.h"
#include "tinyllm/nn.h"
#include "tinyllm/tensor.h"
#include "read_bound.h"
#include "tinyllm/generator.h"
#include "tinyllm/machine.h"

enum { PROMPT = 128, NEW_TOKENS = 64, REPS = 5, LONG_RUN = 2000, LONG_WARM = 64 };

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void die(const char *what) {
    fprintf(stderr, "bench_generate: %s: %s\n", what, tl_error() ? tl_error() : "failed");
    exit(1);
}

static struct { char name[80]; double value; } results[96];
static int n_results;

static void record_name(const char *name, double value) {
    if (n_results == 96) return;
    snprintf(results[n_results].name, sizeof results[n_results].name, "%s", name);
    results[n_results++].value = value;
}

/* fmt has a %s for the dtype and a %d for the threads. */
#define record(fmt, dt, threads, value)                         \
    do {                                                        \
        char name_[80];                                         \
        snprintf(name_, sizeof name_, fmt, dt, threads);        \
        record_name(name_, value);                              \
    } while (0)

static void prompt_ids(int64_t *ids, int64_t vocab) {
    for (int i = 0; i < PROMPT; i++) ids[i] = (i * 7919 + 13) % vocab;
}

/* The weight arrays a step reads, for the bound: every parameter once, in
 * the order a step reads them, the head (the tied embedding, first in the
 * state dict) last. Read first, right after a step that ended on it, the
 * head's last tens of MB came from the L3 the step had just filled: the bound
 * ran 5-9% faster than memory (both orders alternated in one run, README 4.10). */
static int weight_regions(generator *g, read_region *r, int max) {
    tl_state_dict sd = tl_module_state_dict(g->model.module);
    const void *head = tl_data(g->model.head_weight);
    int n = 0;
    for (int last = 0; last < 2; last++)
        for (int i = 0; i < sd.count && n < max; i++) {
            const tl_tensor *t = sd.items[i].tensor;
            if (sd.items[i].shared || (tl_data(t) == head) != last) continue;
            r[n++] = (read_region){tl_data(t), (size_t)tl_numel(t) * tl_dtype_size(t->dtype)};
        }
    tl_state_dict_free(&sd);
    return n;
}

/* The rows of weight w's product in a prefill of t tokens: the head's logits
 * are wanted at the last position only (generator.c), every layer's at all. */
static int64_t product_rows(const generator *g, const tl_tensor *w, int64_t t) {
    return tl_data(w) == tl_data(g->model.head_weight) ? 1 : t;
}

/* The model's products in a prefill of T tokens as bare GEMMs (the head's
 * one row as the GEMV tl_linear gives it), on the model's own weight arrays
 * (linear weights are the rank-2 parameters but the embedding; the head is
 * the embedding when tied, else lm_head). */
static double gemm_seconds(generator *g, int64_t t) {
    tl_state_dict sd = tl_module_state_dict(g->model.module);
    int64_t widest = 0;
    for (int i = 0; i < sd.count; i++)
        if (sd.items[i].tensor->ndim == 2) {
            int64_t n = sd.items[i].tensor->shape[0], k = sd.items[i].tensor->shape[1];
            if (n > widest) widest = n;
            if (k > widest) widest = k;
        }
    float *a = calloc((size_t)(t * widest), sizeof *a), *c = calloc((size_t)(t * widest), 4);
    if (!a || !c) die("memory for the GEMM check");
    for (int64_t i = 0; i < t * widest; i++) a[i] = 0.01f * (float)(i % 17);
    double t0 = generator_now();
    for (int i = 0; i < sd.count; i++) {
        const tl_tensor *w = sd.items[i].tensor;
        bool embed = strcmp(sd.items[i].name, "model.embed_tokens.weight") == 0;
        if (w->ndim != 2 || (embed && !g->model.config.tie_word_embeddings)) continue;
        int64_t n = w->shape[0], k = w->shape[1], rows = product_rows(g, w, t);
        if (rows == 1 && w->dtype == TL_F32)   /* one row: the GEMV tl_linear runs */
            tl_gemv_f32(tl_data(w), a, c, n, k);
        else if (rows == 1)
            tl_gemv_bf16(tl_data(w), a, c, n, k);
        else if (w->dtype == TL_F32)
            tl_gemm_f32_nt(a, tl_data(w), c, rows, n, k);
        else
            tl_gemm_bf16_nt(a, tl_data(w), c, rows, n, k);
    }
    double seconds = generator_now() - t0;
    tl_state_dict_free(&sd);
    free(a);
    free(c);
    return seconds;
}

static void set_threads(int threads) {
    char text[8];
    snprintf(text, sizeof text, "%d", threads);
    setenv("TINYLLM_THREADS", text, 1);
}

/* Multiply-adds of the model's products at t rows, as gemm_seconds runs
 * them, times 2: the FLOPs both the prefill's products and the bare GEMMs do. */
static double linear_flops(generator *g, int64_t t) {
    tl_state_dict sd = tl_module_state_dict(g->model.module);
    double flops = 0;
    for (int i = 0; i < sd.count; i++) {
        const tl_tensor *w = sd.items[i].tensor;
        bool embed = strcmp(sd.items[i].name, "model.embed_tokens.weight") == 0;
        if (w->ndim != 2 || (embed && !g->model.config.tie_word_embeddings)) continue;
        flops += 2.0 * (double)product_rows(g, w, t) * (double)w->shape[0] * (double)w->shape[1];
    }
    tl_state_dict_free(&sd);
    return flops;
}

/* One dtype on one thread count: the runs' per-run figures. */
typedef struct {
    generator *g;
    const char *dt, *dir;
    int threads;
    read_region regions[1024];
    int n_regions;
    double ratio_med[REPS], step_med[REPS], bound_med[REPS], prefill[REPS];
    double gemm_ratio[REPS], gemm_abs[REPS], load[REPS];
} config_runs;

/* One run (rep < 0: the warm-up, not kept): the prefill, then each decode
 * step followed by its bound; the bare GEMMs right after the prefill, as the
 * machine's speed drifts over seconds on a shared host. */
static void run_once(config_runs *c, int rep) {
    set_threads(c->threads);
    generator *g = c->g;
    int64_t ids[PROMPT];
    prompt_ids(ids, g->model.config.vocab_size);
    double load = machine_load();
    generator_reset(g);
    double t0 = generator_now();
    int64_t next;
    if (generator_feed(g, ids, PROMPT, &next) != 0) die("the prefill");
    double pre = generator_now() - t0;
    double gemm = gemm_seconds(g, PROMPT);   /* next to the prefill: the same machine */
    double step[NEW_TOKENS], ratio[NEW_TOKENS], bound[NEW_TOKENS];
    for (int s = 0; s < NEW_TOKENS - 1; s++) {
        int64_t last = next;
        double s0 = generator_now();
        if (generator_feed(g, &last, 1, &next) != 0) die("a decode step");
        double s1 = generator_now();
        read_regions(c->regions, c->n_regions, c->threads);
        double s2 = generator_now();
        step[s] = s1 - s0;
        bound[s] = s2 - s1;
        ratio[s] = bound[s] / step[s];
    }
    if (rep < 0) return;
    c->ratio_med[rep] = median(ratio, NEW_TOKENS - 1);
    c->step_med[rep] = median(step, NEW_TOKENS - 1);
    c->bound_med[rep] = median(bound, NEW_TOKENS - 1);
    c->prefill[rep] = pre;
    c->gemm_ratio[rep] = gemm / pre;
    c->gemm_abs[rep] = gemm;
    c->load[rep] = load;
}

static void report_config(config_runs *c) {
    generator *g = c->g;
    const char *dt = c->dt;
    int threads = c->threads;
    double lo = c->load[0], hi = c->load[0];
    for (int i = 1; i < REPS; i++) {
        if (c->load[i] < lo) lo = c->load[i];
        if (c->load[i] > hi) hi = c->load[i];
    }
    double vs_bound = median(c->ratio_med, REPS), step = median(c->step_med, REPS);
    double bound = median(c->bound_med, REPS), pre = median(c->prefill, REPS);
    double vs_gemm = median(c->gemm_ratio, REPS), gemm = median(c->gemm_abs, REPS);
    double decode_tok_s = 1.0 / step, prefill_tok_s = PROMPT / pre;
    double flops = linear_flops(g, PROMPT);
    printf("  %s, %d thread%s, load average %.1f-%.1f over the runs\n"
           "    (tinyllm generate %s --ids <128 ids> -n %d --ignore-eos --threads %d)\n", dt,
           threads, threads > 1 ? "s" : "", lo, hi, c->dir, NEW_TOKENS, threads);
    printf("    bound: %.1f MB of weights read in %.2f ms = %.2f GB/s (%s)\n",
           (double)g->weight_bytes * 1e-6, bound * 1e3, (double)g->weight_bytes / bound * 1e-9,
           read_loop_name(threads));
    printf("    decode  %7.2f ms/token %8.1f tok/s   decode_%s_vs_bound %.3f\n", step * 1e3,
           decode_tok_s, dt, vs_bound);
    printf("    prefill %7.1f ms/%d tok %6.1f tok/s   prefill_vs_gemm %.3f (%.1f GFLOP/s; bare "
           "GEMMs %.1f ms, %.1f GFLOP/s)\n", pre * 1e3, PROMPT, prefill_tok_s, vs_gemm,
           flops / pre * 1e-9, gemm * 1e3, flops / gemm * 1e-9);
    printf("    prefill/decode throughput %.1fx; time to first token %.1f ms\n",
           prefill_tok_s / decode_tok_s, pre * 1e3);
    record("decode_%s_vs_bound_%dt", dt, threads, vs_bound);
    record("decode_%s_tok_s_%dt", dt, threads, decode_tok_s);
    record("prefill_%s_tok_s_%dt", dt, threads, prefill_tok_s);
    record("prefill_%s_vs_gemm_%dt", dt, threads, vs_gemm);
    record("prefill_vs_decode_%s_%dt", dt, threads, prefill_tok_s / decode_tok_s);
    record("ttft_%s_ms_%dt", dt, threads, pre * 1e3);
    record("read_bandwidth_%s_gbs_%dt", dt, threads, (double)g->weight_bytes / bound * 1e-9);
    record("load_average_max_%s_%dt", dt, threads, hi);
}

/* RSS growth over LONG_RUN tokens against the KV cache they fill. */
static void long_run(const char *dir, int threads) {
    set_threads(threads);
    generator g;
    if (generator_open(&g, dir, -1, PROMPT + LONG_RUN + 1, true, NULL, NULL) != 0)
        die("loading for the long run");
    int64_t ids[PROMPT], next;
    prompt_ids(ids, g.model.config.vocab_size);
    if (generator_feed(&g, ids, PROMPT, &next) != 0) die("the long run's prefill");
    double rss0 = 0, arena0 = 0, t0 = generator_now();
    for (int s = 0; s < LONG_RUN; s++) {
        if (s == LONG_WARM) {
            rss0 = (double)machine_rss_bytes();
            arena0 = (double)tl_scope_bytes();
        }
        int64_t last = next;
        if (generator_feed(&g, &last, 1, &next) != 0) die("a long-run step");
    }
    double secs = generator_now() - t0, rss1 = (double)machine_rss_bytes();
    double arena1 = (double)tl_scope_bytes();
    const KVCache *c = &g.cache;
    double per_token = (double)c->n_layers * (double)c->n_kv_heads *
                       (double)(c->key_dim + c->value_dim) * 4;
    double cache_mb = (LONG_RUN - LONG_WARM) * per_token / 1e6;
    printf("  load average %.1f: ", machine_load());
    printf("%d tokens (%s, %d threads, %.1f tok/s): resident +%.1f MB from token %d to %d; "
           "the KV cache those tokens fill: %.1f MB; scope arena %+.2f MB\n", LONG_RUN, dir,
           threads, LONG_RUN / secs, (rss1 - rss0) / 1e6, LONG_WARM, LONG_RUN, cache_mb,
           (arena1 - arena0) / 1e6);
    record_name("long_run_rss_growth_mb", (rss1 - rss0) / 1e6);
    record_name("long_run_kv_cache_mb", cache_mb);
    record_name("long_run_rss_growth_vs_kv_cache", (rss1 - rss0) / 1e6 / cache_mb);
    record_name("long_run_arena_growth_mb", (arena1 - arena0) / 1e6);
    generator_close(&g);
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The resident size right after generator_open, in a fresh process (a second
 * load in one process finds the allocator shaped by the first): written to
 * out as "weights rss seconds". */
static void measure_load(const char *dir, double out[3]) {
    int fds[2];
    if (pipe(fds) != 0) die("a pipe for the load check");
    pid_t pid = fork();
    if (pid < 0) die("fork for the load check");
    if (pid == 0) {
        close(fds[0]);
        generator g;
        double v[3] = {0, 0, 0};
        if (generator_open(&g, dir, -1, PROMPT + NEW_TOKENS, true, NULL, NULL) == 0)
            v[0] = (double)g.weight_bytes, v[1] = (double)machine_rss_bytes(),
            v[2] = g.load_seconds;
        ssize_t wrote = write(fds[1], v, sizeof v);
        _exit(wrote == (ssize_t)sizeof v && v[0] > 0 ? 0 : 1);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], out, 3 * sizeof *out);
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    if (got != (ssize_t)(3 * sizeof *out) || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die(dir);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 3) {
        fprintf(stderr, "usage: bench_generate DIR_F32 DIR_BF16 (made by make_smollm2)\n");
        return 2;
    }
    const char *dirs[] = {argv[1], argv[2]}, *names[] = {"f32", "bf16"};
    double loads[2][3];
    double before = (double)machine_rss_bytes();
    for (int d = 0; d < 2; d++) measure_load(dirs[d], loads[d]);   /* before any thread */

    char cpu[256];
    machine_cpu_model(cpu, sizeof cpu);
    printf("bench_generate: %s, %d cores, load average %.2f at the start; GEMMs on %s\n", cpu,
           machine_cores(), machine_load(), tl_gemm_kernels());
    printf("command: %s %s %s\n", argv[0], argv[1], argv[2]);
    printf("tinyllm generate's path (generator.c, llama_forward of the reference lessons), "
           "SmolLM2-135M shape, random weights;\na %d-token prompt, %d new tokens; medians of "
           "%d runs after one warm-up, the four configurations interleaved run by run\n\n",
           PROMPT, NEW_TOKENS, REPS);
    for (int d = 0; d < 2; d++) {
        printf("%s: %s: %.1f MB of weights; resident %.1f MB after the load in a fresh "
               "process (%.1f MB before; %.2f s): load_rss_vs_weights %.3f\n", names[d],
               dirs[d], loads[d][0] * 1e-6, loads[d][1] * 1e-6, before * 1e-6, loads[d][2],
               loads[d][1] / loads[d][0]);
        char name[80];
        snprintf(name, sizeof name, "load_rss_vs_weights_%s", names[d]);
        record_name(name, loads[d][1] / loads[d][0]);
    }
    printf("\n");

    double wall0 = generator_now(), cpu0 = cpu_seconds();
    generator g[2];
    static config_runs runs[4];
    for (int d = 0; d < 2; d++) {
        if (generator_open(&g[d], dirs[d], -1, PROMPT + NEW_TOKENS, true, NULL, NULL) != 0)
            die(dirs[d]);
        for (int threads = 1; threads <= 2; threads++) {
            config_runs *c = &runs[2 * d + threads - 1];
            c->g = &g[d], c->dt = names[d], c->dir = dirs[d], c->threads = threads;
            c->n_regions = weight_regions(&g[d], c->regions, 1024);
        }
    }
    for (int rep = -1; rep < REPS; rep++) {   /* interleaved: a change of load hits all four */
        printf("  %s (load average %.1f) ...\n", rep < 0 ? "the warm-up run" : "a run",
               machine_load());
        for (int i = 0; i < 4; i++) run_once(&runs[i], rep);
    }
    printf("\n");
    for (int i = 0; i < 4; i++) report_config(&runs[i]);
    for (int d = 0; d < 2; d++) generator_close(&g[d]);
    printf("\n");
    long_run(dirs[1], 2);
    double share = (cpu_seconds() - cpu0) / ((generator_now() - wall0) * 1.5);
    printf("\nload average %.2f at the end; the bench's threads had a core about %.0f%% of the "
           "time%s\n\n", machine_load(), 100.0 * share,
           share < 0.85 ? ": other processes took the rest (measure on a quieter machine)" : "");
    for (int i = 0; i < n_results; i++) printf("%s: %.4g\n", results[i].name, results[i].value);
    tl_shutdown();
    return 0;
}
