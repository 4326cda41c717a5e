/* generator.c: load, prefill and decode for generate and chat (generator.h). */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>

#include "tinyllm/autograd.h"
#include "tinyllm/files.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"
#include "generator.h"

double generator_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A token id: a whole number >= 0 (JSON gives every number as a double). */
static bool is_token_id(const cJSON *v) {
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9e15 &&
           v->valuedouble == (double)(int64_t)v->valuedouble;
}

/* generation_config.json's eos_token_id (a number or a list); 0 when the file
 * or the key is missing (or null, or an empty list), -1 when the file is
 * there but is not a JSON object, or the key is something else: HF's generate
 * fails on such a stop id too, and ignoring it would stop where config.json says. */
static int read_generation_stops(const char *dir, int64_t *stops, int max) {
    char path[4200];
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    if (!tl_path_present(path)) return 0;
    char *text = tl_read_whole_file(path, (size_t)64 << 20, NULL);
    if (!text) return -1;
    cJSON *root = cJSON_Parse(text);
    long at = root || !cJSON_GetErrorPtr() ? 0 : (long)(cJSON_GetErrorPtr() - text);
    free(text);
    if (!root) return tl_fail_status("%s is not JSON (near byte %ld): fix or remove it", path, at);
    if (!cJSON_IsObject(root)) {   /* HF's GenerationConfig.from_dict fails on one too */
        cJSON_Delete(root);
        return tl_fail_status("%s is not a JSON object of generation settings: fix or remove it",
                              path);
    }
    cJSON *eos = cJSON_GetObjectItemCaseSensitive(root, "eos_token_id");
    const cJSON *list = cJSON_IsArray(eos) ? eos : NULL, *item;
    bool valid = !eos || cJSON_IsNull(eos) || is_token_id(eos) || list;
    cJSON_ArrayForEach(item, list) valid = valid && is_token_id(item);
    if (!valid) {
        char *shown = cJSON_PrintUnformatted(eos);
        tl_fail("%s: eos_token_id is %.60s; it must be a token id (a whole number >= 0) or a "
                "list of them: fix it, or remove the key to stop at config.json's", path,
                shown ? shown : "not a token id");
        free(shown);
        cJSON_Delete(root);
        return -1;
    }
    int count = 0;
    if (is_token_id(eos)) stops[count++] = (int64_t)eos->valuedouble;
    cJSON_ArrayForEach(item, list) {
        int64_t id = (int64_t)item->valuedouble;
        bool known = false;
        for (int i = 0; i < count; i++) known = known || stops[i] == id;
        if (known) continue;
        if (count == max) {   /* dropping the rest would run past a stop id HF stops at */
            tl_fail("%s: eos_token_id lists more than %d distinct stop ids, the most tinyllm "
                    "keeps: leave in the list only the ids that end a reply", path, max);
            cJSON_Delete(root);
            return -1;
        }
        stops[count++] = id;
    }
    cJSON_Delete(root);
    return count;
}

/* The bytes of the model's weights, a tied one counted once. */
static int64_t weight_bytes(tl_module *root) {
    tl_state_dict sd = tl_module_state_dict(root);
    int64_t total = 0;
    for (int i = 0; i < sd.count; i++) {
        const tl_tensor *t = sd.items[i].tensor;
        if (!sd.items[i].shared) total += tl_numel(t) * (int64_t)tl_dtype_size(t->dtype);
    }
    tl_state_dict_free(&sd);
    return total;
}

/* Touches every page of every weight, so the load is over when this returns
 * (a mapped checkpoint is otherwise read on first use, inside the first
 * token's time). */
static void page_in(tl_module *root, int64_t total, generator_progress progress, void *ctx) {
    tl_state_dict sd = tl_module_state_dict(root);
    int64_t done = 0;
    volatile unsigned char sink = 0;
    int64_t reported = 0;
    for (int i = 0; i < sd.count; i++) {
        const tl_tensor *t = sd.items[i].tensor;
        if (sd.items[i].shared) continue;
        const unsigned char *p = tl_data(t);
        int64_t bytes = tl_numel(t) * (int64_t)tl_dtype_size(t->dtype);
        for (int64_t at = 0; p && at < bytes; at += 4096) sink ^= p[at];
        done += bytes;
        if (progress && (done - reported > total / 50 || done == total)) {
            progress(done, total, ctx);
            reported = done;
        }
    }
    (void)sink;
    tl_state_dict_free(&sd);
}

/* The groups fused after the load: sibling projections by their last name. */
static const char *const FUSE_GROUPS[][3] = {{"q_proj", "k_proj", "v_proj"},
                                             {"gate_proj", "up_proj", NULL}};

/* The weight called prefix + name + ".weight" in sd, or NULL. */
static tl_tensor *find_weight(const tl_state_dict *sd, const char *prefix, size_t len,
                              const char *name) {
    char key[512];
    if (snprintf(key, sizeof key, "%.*s%s.weight", (int)len, prefix, name) >= (int)sizeof key)
        return NULL;
    for (int i = 0; i < sd->count; i++)
        if (strcmp(sd->items[i].name, key) == 0) return sd->items[i].tensor;
    return NULL;
}

/* Fuses every group of FUSE_GROUPS whose weights are all there (HF's names:
 * "....self_attn.q_proj.weight" beside k_proj and v_proj). Only for a model
 * that adopted its checkpoint in the file's own dtype (dtype < 0), where
 * fusing keeps one copy of the weights: a converted checkpoint keeps its
 * converted tensors alive, and a copy into the fused weight would double
 * them. Fusing is an optimisation: a group that cannot be fused (tied
 * weights, another layout) stays as it is, and its error is cleared. */
static int fuse_projections(generator *g, int dtype) {
    const char *env = getenv("TINYLLM_FUSE");
    if (dtype >= 0 || (env && strcmp(env, "0") == 0)) return 0;
    tl_state_dict sd = tl_module_state_dict(g->model.module);
    int groups = sizeof FUSE_GROUPS / sizeof FUSE_GROUPS[0];
    g->fused = calloc((size_t)(sd.count + 1), sizeof *g->fused);
    if (!g->fused) {
        tl_state_dict_free(&sd);
        return tl_fail_status("out of memory for the fused weights' list");
    }
    for (int i = 0; i < sd.count; i++) {
        const char *name = sd.items[i].name;
        for (int k = 0; k < groups; k++) {
            char first[64];
            snprintf(first, sizeof first, "%s.weight", FUSE_GROUPS[k][0]);
            size_t n = strlen(name), m = strlen(first);
            if (n < m || strcmp(name + n - m, first) != 0 || (n > m && name[n - m - 1] != '.'))
                continue;
            tl_tensor *parts[3];
            int count = 0;
            while (count < 3 && FUSE_GROUPS[k][count] &&
                   (parts[count] = find_weight(&sd, name, n - m, FUSE_GROUPS[k][count])))
                count++;
            if (count < 2 || (count < 3 && FUSE_GROUPS[k][count])) continue;   /* one missing */
            tl_tensor *fused = tl_linear_fuse(parts, count);
            if (fused) g->fused[g->n_fused++] = fused;
            else tl_clear_error();
        }
    }
    tl_state_dict_free(&sd);
    return 0;
}

/* Progress of a pack, in the generator's terms. */
typedef struct {
    generator_progress progress;
    void *ctx;
} pack_report;

static void report_pack(size_t done, size_t total, void *ctx) {
    const pack_report *r = ctx;
    r->progress((int64_t)done, (int64_t)total, r->ctx);
}

/* Moves every weight into huge pages (nn.h: tl_weights_pack), after the
 * fuse: one TLB entry per 2 MiB of weights, in anonymous memory (course/
 * MS-L7/README.md 4.12). The copy reads every weight, so it is the load's
 * last pass. Like fusing, an optimisation: false (the weights stay where
 * they are) when it cannot be done, or when TINYLLM_PACK=0 asks (to measure
 * it, or to load a large model faster). */
static bool pack_weights(generator *g, generator_progress progress, void *ctx) {
    const char *env = getenv("TINYLLM_PACK");
    if (env && strcmp(env, "0") == 0) return false;
    tl_state_dict sd = tl_module_state_dict(g->model.module);
    tl_tensor **all = malloc((size_t)(sd.count + g->n_fused + 1) * sizeof *all);
    int n = 0;
    for (int i = 0; all && i < sd.count; i++) all[n++] = sd.items[i].tensor;
    for (int i = 0; all && i < g->n_fused; i++) all[n++] = g->fused[i];
    pack_report report = {progress, ctx};
    bool packed = all && tl_weights_pack(all, n, progress ? report_pack : NULL, &report) == 0;
    if (!packed) tl_clear_error();
    free(all);
    tl_state_dict_free(&sd);
    return packed;
}

int generator_open(generator *g, const char *dir, int dtype, int64_t capacity, bool cached,
                   generator_progress progress, void *ctx) {
    memset(g, 0, sizeof *g);
    /* The stop ids before the load: a generation_config.json to refuse is said at once. */
    int n = read_generation_stops(dir, g->stops, GENERATOR_MAX_STOPS);
    if (n < 0) return -1;
    double t0 = generator_now();
    if (llama_from_pretrained(&g->model, dir, dtype) != 0) return -1;
    if (!g->model.head_weight) {   /* generate applies the head itself */
        generator_close(g);
        return tl_fail_status("%s loaded, but LlamaForCausalLM.head_weight is NULL: llama_init "
                              "must set it (lm_head's weight, or embed_tokens' when tied; L7.9)",
                              dir);
    }
    /* The zero-filled parameters the model was built with were released when
     * it adopted the checkpoint; glibc keeps such heap pages (they were
     * resident: calloc clears reused heap memory) until asked to return them. */
    if (fuse_projections(g, dtype) != 0) {
        generator_close(g);
        return -1;
    }
    malloc_trim(0);
    g->weight_bytes = weight_bytes(g->model.module);
    if (!pack_weights(g, progress, ctx)) page_in(g->model.module, g->weight_bytes, progress, ctx);
    g->load_seconds = generator_now() - t0;

    if (n == 0)   /* generation_config.json has none: config.json's */
        for (int i = 0; i < g->model.config.n_eos && n < GENERATOR_MAX_STOPS; i++)
            g->stops[n++] = g->model.config.eos_token_id[i];
    g->n_stops = n;

    int64_t context = g->model.config.max_position_embeddings;
    g->capacity = capacity > 0 ? capacity : context;
    g->cached = cached;
    g->sequence = malloc((size_t)(g->capacity + 1) * sizeof *g->sequence);
    if (!g->sequence) {
        int64_t want = g->capacity;   /* generator_close clears g */
        generator_close(g);
        return tl_fail_status("out of memory for %lld token ids, the positions this run may use "
                              "(config.json's max_position_embeddings is %lld): check it, or "
                              "give a smaller -n", (long long)want, (long long)context);
    }
    if (cached && llama_cache_init(&g->model, &g->cache, 1, g->capacity) != 0) {
        generator_close(g);
        return -1;
    }
    return 0;
}

void generator_close(generator *g) {
    if (!g) return;
    kv_cache_free(&g->cache);
    llama_free(&g->model);
    for (int i = 0; i < g->n_fused; i++) tl_tensor_free(g->fused[i]);
    free(g->fused);
    free(g->sequence);
    memset(g, 0, sizeof *g);
}

void generator_reset(generator *g) {
    kv_cache_reset(&g->cache);
    g->held = g->sequence_len = 0;
}

void generator_truncate(generator *g, int64_t n) {
    if (n >= g->held) return;
    bool plain = g->cached && g->cache.ops && strcmp(g->cache.ops->kind, "KVCache") == 0;
    if (!plain || n <= 0) {
        generator_reset(g);
        return;
    }
    for (int l = 0; l < g->cache.n_layers; l++) g->cache.held[l] = g->cache.seen[l] = n;
    g->held = g->sequence_len = n;
}

bool generator_is_stop(const generator *g, int64_t id) {
    for (int i = 0; i < g->n_stops; i++)
        if (g->stops[i] == id) return true;
    return false;
}

/* The greedy token of logits [1, 1, V] (ties to the lower id, as torch.argmax). */
static int64_t greedy_token(tl_tensor *logits) {
    const float *x = tl_f32(logits);
    int64_t v = logits->shape[2], best = 0;
    for (int64_t i = 1; i < v; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* A prefill runs in chunks of at most this many tokens, each in its own
 * scope: a forward keeps its activations until its scope ends (about 2.5 MB
 * per token for SmolLM2-135M), so a long prompt in one piece would need
 * gigabytes. Each chunk is still one batched forward (GEMMs). */
#define PREFILL_CHUNK 256

/* One forward of ids [n] after what the cache holds; the greedy next token. */
static int64_t forward_next(generator *g, const int64_t *ids, int64_t n) {
    tl_scope_push();   /* everything this forward makes goes with it */
    tl_no_grad_push();
    tl_tensor *hidden;
    if (g->cached)
        hidden = llama_model_forward(&g->model, tl_from_i64(ids, TL_SHAPE(1, n)), NULL,
                                     &g->cache);
    else   /* no cache: the whole sequence again, as a model without one must */
        hidden = llama_model_forward(&g->model,
                                     tl_from_i64(g->sequence, TL_SHAPE(1, g->sequence_len)),
                                     NULL, NULL);
    /* Only the last position's logits choose the token (HF's logits_to_keep=1):
     * the head, the largest product, runs on one row of a prompt, not all. */
    tl_tensor *last = hidden ? tl_narrow(hidden, 1, hidden->shape[1] - 1, 1) : NULL;
    tl_tensor *logits = last ? tl_linear(last, g->model.head_weight, NULL) : NULL;
    tl_tensor *row = logits ? tl_contiguous(logits) : NULL;
    int64_t next = row ? greedy_token(row) : -1;
    tl_no_grad_pop();
    tl_scope_pop();
    return next;
}

int generator_feed(generator *g, const int64_t *ids, int64_t n, int64_t *next) {
    if (n < 1) return tl_fail_status("generator_feed: no token to run");
    if (g->held + n > g->capacity)
        return tl_fail_status("%lld tokens after %lld do not fit the %lld positions the model "
                              "was opened for", (long long)n, (long long)g->held,
                              (long long)g->capacity);
    memcpy(g->sequence + g->held, ids, (size_t)n * sizeof *ids);
    int64_t done = 0;
    *next = -1;
    while (done < n) {
        if (done > 0 && g->stop_flag && *g->stop_flag) {
            *next = -1;
            return 1;
        }
        int64_t piece = g->cached && n - done > PREFILL_CHUNK ? PREFILL_CHUNK : n - done;
        g->sequence_len = g->held + piece;
        *next = forward_next(g, ids + done, piece);
        if (*next < 0) return -1;
        g->held += piece;
        done += piece;
    }
    return 0;
}
