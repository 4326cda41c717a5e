/* Hugging Face checkpoint folders (L7.9): llama_from_pretrained and
 * llama_save_pretrained, the reference.
 *
 * Loading is strict and by name. The checkpoint's tensors are adopted in place
 * (nn.h), so the model holds one copy of the weights: the mapped file's.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tinyllm/files.h"
#include "tinyllm/nn.h"
#include "tinyllm/safetensors.h"
#include "tinyllm/modern/llama.h"

#define LOAD "llama_from_pretrained"
#define CONFIG_MAX_BYTES (16 << 20)

/* The whole of a small text file, NUL-terminated (malloc'd), or NULL with an
 * error naming it. L0's reader: a FIFO is refused, never waited on (fopen
 * blocks on one until a writer comes), and so are a folder and a device. */
static char *read_text(const char *path) {
    char *text = tl_read_whole_file(path, CONFIG_MAX_BYTES, NULL);
    return text ? text : tl_fail(LOAD ": %s", tl_error());
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Keys a checkpoint may hold that are not the model's: a tied model's stored
 * copy of the head, the rotary buffers of old checkpoints, and DeepSeek-V3's
 * multi-token-prediction layers past num_hidden_layers. */
static bool dropped(const LlamaConfig *c, const char *key) {
    if (c->tie_word_embeddings && strcmp(key, "lm_head.weight") == 0) return true;
    if (ends_with(key, "rotary_emb.inv_freq")) return true;
    long long layer;
    int used = 0;
    if (c->model_type == LLAMA_MODEL_DEEPSEEK_V3 &&
        sscanf(key, "model.layers.%lld.%n", &layer, &used) == 1 && used > 0)
        return layer >= c->num_hidden_layers;
    return false;
}

/* The file a checkpoint key is stored in (a path inside c), or NULL. */
static const tl_st_entry *entry_of(const tl_checkpoint *c, const char *key, const char **file) {
    for (int s = 0; s < c->file_count; s++)
        for (int i = 0; i < c->files[s]->count; i++)
            if (strcmp(c->files[s]->entries[i].name, key) == 0) {
                *file = c->files[s]->path;
                return &c->files[s]->entries[i];
            }
    return NULL;
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static void shape_text(int ndim, const int64_t *shape, char *buf, size_t size) {
    size_t o = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndim && o < size; d++)
        o += (size_t)snprintf(buf + o, size - o, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (o < size) snprintf(buf + o, size - o, "]");
}

/* A name read from the checkpoint, as a message shows it: no byte of it can
 * drive the terminal the error is printed on (control characters, DEL and C1
 * controls as UTF-8 escaped, as tinyllm inspect shows them). */
static const char *shown(const char *name, char *buf, size_t size) {
    size_t o = 0;
    const unsigned char *p = (const unsigned char *)name;
    for (; *p && o + 8 < size; p++) {
        if (*p < 0x20 || *p == 0x7F) o += (size_t)snprintf(buf + o, size - o, "\\x%02x", *p);
        else if (*p == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F)
            o += (size_t)snprintf(buf + o, size - o, "\\u%04x", *++p);
        else buf[o++] = (char)*p;
    }
    snprintf(buf + o, size - o, "%s", *p ? "..." : "");
    return buf;
}

/* One problem list for the error: the first few names, then how many more. */
typedef struct {
    char text[640];
    int count;
} problems;

static void note(problems *p, const char *item) {
    if (p->count++ >= 3) return;
    size_t o = strlen(p->text);
    snprintf(p->text + o, sizeof p->text - o, "%s%s", o ? "; " : "", item);
}

/* Strict: every key of the model is in the checkpoint with the model's shape,
 * as a float, and the checkpoint has nothing else but what is dropped. */
static int check_keys(const LlamaForCausalLM *m, const tl_checkpoint *ck, const char *dir) {
    tl_state_dict sd = tl_module_state_dict(m->module);
    if (!sd.items) return -1;
    problems wrong = {"", 0}, missing = {"", 0}, extra = {"", 0};
    char item[400], want[96], got[96];
    for (int i = 0; i < sd.count; i++) {
        const char *key = sd.items[i].name, *file = NULL;
        shape_text(sd.items[i].tensor->ndim, sd.items[i].tensor->shape, want, sizeof want);
        const tl_st_entry *e = entry_of(ck, key, &file);
        if (!e) {
            snprintf(item, sizeof item, "%s (the config gives %s)", key, want);
            note(&missing, item);
            continue;
        }
        shape_text(e->ndim, e->shape, got, sizeof got);
        if (strcmp(want, got) != 0) {
            snprintf(item, sizeof item, "%s has shape %s in %s; the config gives %s", key, got,
                     base_name(file), want);
            note(&wrong, item);
        } else if (e->dtype != TL_ST_F32 && e->dtype != TL_ST_BF16 && e->dtype != TL_ST_F16) {
            snprintf(item, sizeof item, "%s is %s in %s (weights are F32, BF16 or F16)", key,
                     tl_st_dtype_name(e->dtype), base_name(file));
            note(&wrong, item);
        }
    }
    for (int s = 0; s < ck->file_count; s++)
        for (int i = 0; i < ck->files[s]->count; i++) {
            const char *key = ck->files[s]->entries[i].name;
            bool known = dropped(&m->config, key);
            for (int k = 0; !known && k < sd.count; k++) known = strcmp(sd.items[k].name, key) == 0;
            if (known) continue;
            char name[200];
            snprintf(item, sizeof item, "%s (in %s)", shown(key, name, sizeof name),
                     base_name(ck->files[s]->path));
            note(&extra, item);
        }
    tl_state_dict_free(&sd);
    if (wrong.count + missing.count + extra.count == 0) return 0;
    problems *first = wrong.count ? &wrong : missing.count ? &missing : &extra;
    const char *what = wrong.count ? "tensors do not fit the config" : missing.count ?
                       "keys the model needs are missing" : "keys no part of the model has";
    return tl_fail_status(LOAD ": %s: %d %s: %s%s (%d missing, %d unexpected, %d of the wrong "
                          "shape or dtype; is config.json this checkpoint's?); nothing was "
                          "loaded", dir, first->count, what, first->text,
                          first->count > 3 ? "; ..." : "", missing.count, extra.count,
                          wrong.count);
}

/* The dtype the parameters get: the one asked, or (-1) the checkpoint's own:
 * BF16 when every weight the model keeps is stored BF16, else F32. */
static int pick_dtype(const LlamaConfig *c, const tl_checkpoint *probe, int dtype,
                      bool *rounded) {
    bool all_bf16 = true, any_wide = false;
    for (int s = 0; s < probe->file_count; s++)
        for (int i = 0; i < probe->files[s]->count; i++) {
            const tl_st_entry *e = &probe->files[s]->entries[i];
            if (e->dtype != TL_ST_BF16) any_wide = true;   /* rounding needed for BF16 */
            if (!dropped(c, e->name) && e->dtype != TL_ST_BF16) all_bf16 = false;
        }
    int want = dtype >= 0 ? dtype : all_bf16 ? TL_BF16 : TL_F32;
    *rounded = want == TL_BF16 && any_wide;
    return want;
}

int llama_from_pretrained(LlamaForCausalLM *m, const char *dir, int dtype) {
    if (!m) return tl_fail_status(LOAD ": the LlamaForCausalLM pointer is NULL");
    memset(m, 0, sizeof *m);
    if (!dir) return tl_fail_status(LOAD ": the folder is NULL");
    if (dtype != -1 && dtype != TL_F32 && dtype != TL_BF16)
        return tl_fail_status(LOAD ": dtype %d must be TL_F32, TL_BF16 or -1 (the checkpoint's "
                              "own)", dtype);
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *json = read_text(path);
    if (!json) return -1;
    LlamaConfig cfg;
    int rc = llama_config_from_hf(json, &cfg);
    free(json);
    if (rc != 0) return tl_fail_status(LOAD ": %s: %s", path, tl_error());

    tl_checkpoint *probe = tl_checkpoint_open(dir), *ck = NULL;
    if (!probe) return tl_fail_status(LOAD ": %s: %s", dir, tl_error());
    bool rounded;
    int want = pick_dtype(&cfg, probe, dtype, &rounded);
    rc = llama_init(m, &cfg, NULL);
    if (rc == 0) rc = check_keys(m, probe, dir);
    if (rc == 0) {
        ck = rounded ? tl_checkpoint_load_rounded(dir, TL_BF16)
                     : tl_checkpoint_load(dir, (tl_dtype)want);
        if (!ck) rc = tl_fail_status(LOAD ": %s: %s", dir, tl_error());
    }
    /* Strict was checked above, with the dropped keys left out. */
    if (rc == 0 && tl_module_adopt_checkpoint(m->module, ck, false) != 0)
        rc = tl_fail_status(LOAD ": %s: %s", dir, tl_error());
    tl_checkpoint_free(ck);     /* the module keeps its own reference */
    tl_checkpoint_free(probe);
    if (rc != 0) llama_free(m);
    return rc;
}

/* ---- saving ------------------------------------------------------------------------- */

#define SAVE "llama_save_pretrained"

static int write_atomic(const char *dir, const char *name, const char *text) {
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = tl_create_temp_beside(path, tmp, sizeof tmp);
    if (!f) return tl_fail_status(SAVE ": cannot create a file beside %s: %s", path,
                                  strerror(errno));
    size_t n = strlen(text);
    bool ok = fwrite(text, 1, n, f) == n && fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        int err = errno;
        unlink(tmp);
        return tl_fail_status(SAVE ": writing %s failed: %s (is the disk full?)", path,
                              strerror(err));
    }
    return 0;
}

static char *generation_config(const LlamaConfig *c) {
    char eos[LLAMA_MAX_EOS * 24 + 8] = "null";
    size_t o = 0;
    if (c->n_eos == 1) snprintf(eos, sizeof eos, "%lld", (long long)c->eos_token_id[0]);
    for (int i = 0; c->n_eos > 1 && i < c->n_eos; i++)
        o += (size_t)snprintf(eos + o, sizeof eos - o, "%s%lld%s", i ? ", " : "[",
                              (long long)c->eos_token_id[i], i == c->n_eos - 1 ? "]" : "");
    char *out = malloc(512);
    if (!out) return NULL;
    char bos[24] = "null", pad[24] = "null";
    if (c->bos_token_id >= 0) snprintf(bos, sizeof bos, "%lld", (long long)c->bos_token_id);
    if (c->pad_token_id >= 0) snprintf(pad, sizeof pad, "%lld", (long long)c->pad_token_id);
    snprintf(out, 512, "{\n  \"bos_token_id\": %s,\n  \"eos_token_id\": %s,\n"
             "  \"pad_token_id\": %s\n}\n", bos, eos, pad);
    return out;
}

int llama_save_pretrained(const LlamaForCausalLM *m, const char *dir, tl_dtype dtype,
                          size_t max_shard_bytes) {
    if (!m || !m->module || !dir)
        return tl_fail_status(SAVE ": the model (with a module) and the folder must be given");
    if (dtype != TL_F32 && dtype != TL_BF16)
        return tl_fail_status(SAVE ": dtype %s: checkpoints are saved as TL_F32 or TL_BF16",
                              tl_dtype_name(dtype));
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return tl_fail_status(SAVE ": cannot create the folder %s: %s", dir, strerror(errno));
    LlamaConfig c = m->config;
    snprintf(c.torch_dtype, sizeof c.torch_dtype, "%s", dtype == TL_BF16 ? "bfloat16" : "float32");
    char *config = llama_config_to_hf(&c), *generation = generation_config(&c);
    int rc = config && generation ? 0 : tl_fail_status(SAVE ": out of memory");
    if (rc == 0) rc = write_atomic(dir, "config.json", config);
    if (rc == 0) rc = write_atomic(dir, "generation_config.json", generation);
    free(config);
    free(generation);
    if (rc != 0) return -1;
    /* HF's order; the tied head is one tensor, written once under its first name. */
    tl_state_dict sd = tl_module_state_dict(m->module);
    if (!sd.items) return tl_fail_status(SAVE ": %s", tl_error());
    rc = tl_st_save_sharded(dir, &sd, dtype, max_shard_bytes > 0 ? max_shard_bytes : SIZE_MAX);
    tl_state_dict_free(&sd);
    return rc == 0 ? 0 : tl_fail_status(SAVE ": %s", tl_error());
}
