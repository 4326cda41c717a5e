/* bench_llama_load: the resident memory of llama_from_pretrained (L7.9) on a
 * SmolLM2-135M-shaped checkpoint, against the checkpoint's weight bytes: the
 * loader adopts the mapped file in place, so after a forward has touched every
 * weight the process holds one copy of them (the file's pages) and little else.
 *
 *   bench_llama_load DIR...      (folders made by make_smollm2: F32, BF16; one per
 *                                process gives the figure of a fresh program)
 *
 * Prints, per folder, VmRSS (and its file-backed and anonymous parts, from
 * /proc/self/status) before the load, after it, and after a forward of 16
 * tokens, and `load_rss_vs_weights` = RSS after the forward / weight bytes
 * (goal <= 1.1). A measurement, never a test: the figures depend on the machine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"
#include "tinyllm/safetensors.h"
#include "tinyllm/modern/llama.h"

typedef struct {
    long rss, file, anon;   /* kB */
} rss_kb;

static rss_kb rss_now(void) {
    rss_kb r = {0, 0, 0};
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        sscanf(line, "VmRSS: %ld", &r.rss);
        sscanf(line, "RssFile: %ld", &r.file);
        sscanf(line, "RssAnon: %ld", &r.anon);
    }
    if (f) fclose(f);
    return r;
}

static void show(const char *when, rss_kb r) {
    printf("  %-22s RSS %8.1f MB (file %7.1f MB, anonymous %7.1f MB)\n", when, r.rss / 1024.0,
           r.file / 1024.0, r.anon / 1024.0);
}

static int run(const char *dir) {
    tl_checkpoint *c = tl_checkpoint_open(dir);
    if (!c) {
        fprintf(stderr, "bench_llama_load: %s\n", tl_error());
        return 1;
    }
    double weights = 0;
    for (int s = 0; s < c->file_count; s++)
        for (int i = 0; i < c->files[s]->count; i++)
            weights += (double)(c->files[s]->entries[i].end - c->files[s]->entries[i].begin);
    tl_checkpoint_free(c);
    printf("%s: %.1f MB of weights\n", dir, weights / 1048576.0);
    rss_kb before = rss_now();
    show("before the load", before);
    LlamaForCausalLM m;
    if (llama_from_pretrained(&m, dir, -1) != 0) {
        fprintf(stderr, "bench_llama_load: %s\n", tl_error());
        return 1;
    }
    show("after the load", rss_now());
    int64_t ids[16];
    for (int i = 0; i < 16; i++) ids[i] = 100 + 37 * i;
    tl_scope_push();
    tl_no_grad_push();
    tl_tensor *logits = llama_forward(&m, tl_from_i64(ids, TL_SHAPE(1, 16)), NULL, NULL);
    tl_no_grad_pop();
    rss_kb after = rss_now();
    tl_scope_pop();
    if (!logits) {
        fprintf(stderr, "bench_llama_load: %s\n", tl_error());
        return 1;
    }
    show("after a 16-token forward", after);
    printf("  weights stay %s; load_rss_vs_weights: %.3f (RSS after the forward / weight bytes;"
           " goal <= 1.1); file-backed RSS / weights: %.3f\n",
           tl_dtype_name(m.head_weight->dtype), after.rss * 1024.0 / weights,
           after.file * 1024.0 / weights);
    llama_free(&m);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_llama_load DIR...\n");
        return 2;
    }
    for (int i = 1; i < argc; i++)
        if (run(argv[i]) != 0) return 1;
    tl_shutdown();
    return 0;
}
