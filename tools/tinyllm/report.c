/* report.c: the summary and the JSON report of a generate run (report.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cjson/cJSON.h>

#include "tinyllm/files.h"
#include "tinyllm/kernels.h"
#include "tinyllm/tensor.h"
#include "machine.h"
#include "report.h"
#include "stream.h"

void gen_report_init(gen_report *r, const char *dir, int threads) {
    memset(r, 0, sizeof *r);
    r->dir = dir;
    r->threads = threads;
    r->rss_before_load = machine_rss_bytes();
}

void gen_report_loaded(gen_report *r) { r->rss_after_load = machine_rss_bytes(); }

static const char *end_name(reply_end e) {
    return e == REPLY_STOP_ID ? "stop_id" : e == REPLY_LENGTH ? "length" : "interrupted";
}

static double rate(double n, double seconds) { return seconds > 0 ? n / seconds : 0; }

static int64_t cache_bytes(const generator *g) {
    const KVCache *c = &g->cache;
    return (int64_t)c->n_layers * c->batch * c->n_kv_heads * (c->key_dim + c->value_dim) * 4;
}

void gen_report_print(const gen_report *r, const generator *g, const reply_stats *st,
                      FILE *out) {
    double mb = 1e-6;
    if (st->end == REPLY_INTERRUPTED) fprintf(out, "interrupted (Ctrl-C): the timings so far\n");
    fprintf(out, "load %.2f s (%.1f MB of %s weights); prompt %lld tokens, prefill %.1f ms "
            "(%.1f tok/s); first token after %.1f ms\n", g->load_seconds,
            (double)g->weight_bytes * mb, tl_dtype_name(tl_module_param(g->model.module,
            "model.embed_tokens.weight")->dtype), (long long)st->prompt_tokens,
            st->prefill_seconds * 1e3, rate((double)st->prompt_tokens, st->prefill_seconds),
            st->first_token_seconds * 1e3);
    fprintf(out, "decode %lld tokens in %.1f ms (%.2f tok/s, %.2f ms/token), ended by %s; "
            "%d threads\n", (long long)st->n_steps, st->decode_seconds * 1e3,
            rate((double)st->n_steps, st->decode_seconds),
            st->n_steps ? st->decode_seconds * 1e3 / (double)st->n_steps : 0.0,
            end_name(st->end), r->threads > 0 ? r->threads : tl_num_threads());
    fprintf(out, "resident: after load %.1f MB, after prefill %.1f MB, after decode %.1f MB, "
            "peak %.1f MB\n", (double)r->rss_after_load * mb, (double)st->rss_after_prefill * mb,
            (double)st->rss_after_decode * mb, (double)machine_peak_rss_bytes() * mb);
}

static cJSON *id_array(const int64_t *ids, int64_t n) {
    cJSON *a = cJSON_CreateArray();
    for (int64_t i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)ids[i]));
    return a;
}

/* The reply as text (special tokens dropped), or NULL without a tokenizer. */
static char *reply_text(const tl_tokenizer *tok, const reply_stats *st, bool stopped) {
    if (!tok) return NULL;
    int64_t n = st->n_ids - (stopped ? 1 : 0);
    int32_t *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof *ids);
    if (!ids) return NULL;
    for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)st->ids[i];
    char *text = tl_tokenizer_decode(tok, ids, (size_t)n, stream_decode_flags(tok), NULL);
    free(ids);
    return text;
}

int gen_report_write(const gen_report *r, const generator *g, const reply_stats *st,
                     const char *path, const char *rendered, const int64_t *prompt, int64_t n,
                     const tl_tokenizer *tok) {
    cJSON *root = cJSON_CreateObject();
    char cpu[256];
    machine_cpu_model(cpu, sizeof cpu);
    cJSON_AddStringToObject(root, "model", r->dir);
    tl_tensor *embed = tl_module_param(g->model.module, "model.embed_tokens.weight");
    cJSON_AddStringToObject(root, "dtype", embed && embed->dtype == TL_BF16 ? "bf16" : "f32");
    cJSON_AddBoolToObject(root, "kv_cache", g->cached);
    cJSON_AddNumberToObject(root, "threads", r->threads > 0 ? r->threads : tl_num_threads());
    cJSON *machine = cJSON_AddObjectToObject(root, "machine");
    cJSON_AddStringToObject(machine, "cpu", cpu);
    cJSON_AddNumberToObject(machine, "cores", machine_cores());
    cJSON_AddNumberToObject(machine, "load_average_1min", machine_load());
    cJSON_AddStringToObject(machine, "blas_kernels", tl_blas_prepare());
    cJSON_AddStringToObject(machine, "gemm_kernels", tl_gemm_kernels());

    cJSON *p = cJSON_AddObjectToObject(root, "prompt");
    if (rendered) cJSON_AddStringToObject(p, "rendered", rendered);
    else cJSON_AddNullToObject(p, "rendered");
    cJSON_AddItemToObject(p, "ids", id_array(prompt, n));

    cJSON *out = cJSON_AddObjectToObject(root, "generated");
    cJSON_AddItemToObject(out, "ids", id_array(st->ids, st->n_ids));
    char *text = reply_text(tok, st, st->end == REPLY_STOP_ID);
    if (text) cJSON_AddStringToObject(out, "text", text);
    else cJSON_AddNullToObject(out, "text");
    free(text);
    cJSON_AddStringToObject(out, "ended_by", end_name(st->end));

    cJSON *t = cJSON_AddObjectToObject(root, "timings");
    cJSON_AddNumberToObject(t, "load_s", g->load_seconds);
    cJSON_AddNumberToObject(t, "tokenize_s", r->tokenize_seconds);
    cJSON_AddNumberToObject(t, "prefill_s", st->prefill_seconds);
    cJSON_AddNumberToObject(t, "time_to_first_token_s", st->first_token_seconds);
    cJSON *steps = cJSON_AddArrayToObject(t, "decode_step_s");
    for (int64_t s = 0; s < st->n_steps; s++)
        cJSON_AddItemToArray(steps, cJSON_CreateNumber(st->step_seconds[s]));
    cJSON_AddNumberToObject(t, "decode_s", st->decode_seconds);
    cJSON_AddNumberToObject(t, "total_s", r->total_seconds);
    cJSON_AddNumberToObject(t, "prefill_tok_s", rate((double)st->prompt_tokens,
                                                     st->prefill_seconds));
    cJSON_AddNumberToObject(t, "decode_tok_s", rate((double)st->n_steps, st->decode_seconds));

    cJSON *m = cJSON_AddObjectToObject(root, "memory");
    cJSON_AddNumberToObject(m, "weight_bytes", (double)g->weight_bytes);
    cJSON_AddNumberToObject(m, "kv_cache_bytes_per_token", g->cached ? (double)cache_bytes(g) : 0);
    cJSON_AddNumberToObject(m, "rss_before_load_bytes", (double)r->rss_before_load);
    cJSON_AddNumberToObject(m, "rss_after_load_bytes", (double)r->rss_after_load);
    cJSON_AddNumberToObject(m, "rss_after_prefill_bytes", (double)st->rss_after_prefill);
    cJSON_AddNumberToObject(m, "rss_after_decode_bytes", (double)st->rss_after_decode);
    cJSON_AddNumberToObject(m, "peak_rss_bytes", (double)machine_peak_rss_bytes());

    char *json = cJSON_Print(root);
    cJSON_Delete(root);
    if (!json) return tl_fail_status("out of memory for the JSON report");
    char tmp[4200];
    FILE *f = tl_create_temp_beside(path, tmp, sizeof tmp);
    bool ok = f && fputs(json, f) >= 0 && fputc('\n', f) != EOF;
    ok = f && fclose(f) == 0 && ok;
    free(json);
    if (!ok || rename(tmp, path) != 0) {
        int err = errno;
        if (f) unlink(tmp);
        return tl_fail_status("--json %s: cannot write it: %s", path, strerror(err));
    }
    return 0;
}
