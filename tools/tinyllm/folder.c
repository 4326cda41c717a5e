/* folder.c: checks on a checkpoint folder before the load (folder.h). */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cjson/cJSON.h>

#include "tinyllm/files.h"
#include "tinyllm/json_keys.h"
#include "tinyllm/safetensors.h"
#include "tinyllm/tensor.h"
#include "folder.h"

/* The largest JSON file of a folder read whole: real ones are at most a few MB. */
#define MAX_JSON_BYTES ((size_t)256 << 20)

/* Whether dir/name is there at all: a folder, a FIFO or a dangling symlink
 * under the name counts, so that reading it says what it is rather than
 * calling the file missing. */
static bool has(const char *dir, const char *name) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return tl_path_present(path);
}

bool folder_has_tokenizer(const char *dir) { return has(dir, "tokenizer.json"); }

/* A few of the folder's file names, for a message. */
static void some_files(const char *dir, char *out, size_t size) {
    DIR *d = opendir(dir);
    size_t o = 0;
    int shown = 0, total = 0;
    out[0] = '\0';
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        total++;
        if (shown < 5 && o < size)
            o += (size_t)snprintf(out + o, size - o, "%s%s", shown++ ? ", " : "", e->d_name);
    }
    if (d) closedir(d);
    if (total > shown && o < size) snprintf(out + o, size - o, ", ... (%d files)", total);
    if (total == 0) snprintf(out, size, "nothing");
}

/* The stored dtypes tinyllm computes with: F32 and BF16 as they are, F16
 * widened to F32 exactly. Anything else (FP8 with its scale tensors, the
 * integers of a GPTQ or AWQ quantization, F64) is said before the load, with
 * how many tensors, the first one and its file. */
static int check_weight_dtypes(const char *dir) {
    tl_checkpoint *ck = tl_checkpoint_open(dir);
    if (!ck) return tl_fail_status("%s: %s", dir, tl_error());
    int odd = 0;
    const tl_st_file *first_file = NULL;
    const tl_st_entry *first = NULL;
    for (int i = 0; i < ck->file_count; i++)
        for (int j = 0; j < ck->files[i]->count; j++) {
            tl_st_dtype dt = ck->files[i]->entries[j].dtype;
            if (dt == TL_ST_F32 || dt == TL_ST_BF16 || dt == TL_ST_F16) continue;
            if (odd++ == 0) {
                first_file = ck->files[i];
                first = &ck->files[i]->entries[j];
            }
        }
    int rc = 0;
    if (odd > 0) {
        const char *name = tl_st_dtype_name(first->dtype), *slash = strrchr(first_file->path, '/');
        bool fp8 = first->dtype == TL_ST_F8_E4M3 || first->dtype == TL_ST_F8_E5M2;
        bool f64 = first->dtype == TL_ST_F64;
        rc = tl_fail_status("%s stores %d tensor%s in a dtype tinyllm does not compute with "
                            "(the first: %s, %s in %s); tinyllm runs F32 and BF16 weights (F16 "
                            "widened to F32): %s", dir, odd, odd > 1 ? "s" : "", first->name,
                            name, slash ? slash + 1 : first_file->path,
                            fp8 ? "an FP8 checkpoint needs its block scales applied; pull the "
                                  "model's BF16 release instead"
                            : f64 ? "convert it to F32 (in transformers: model.float(), then "
                                    "save_pretrained)"
                                  : "a quantized checkpoint (GPTQ, AWQ) needs its own kernels; "
                                    "pull the model's unquantized F32 or BF16 release instead");
    }
    tl_checkpoint_free(ck);
    return rc;
}

/* The whole of a regular file, NUL-terminated (malloc'd); NULL with an error
 * that names what the path is when it is not a file (a FIFO is never waited on). */
static char *read_file(const char *path) { return tl_read_whole_file(path, MAX_JSON_BYTES, NULL); }

/* dir/name is JSON with no key given twice and no \u0000 in a string, which
 * cJSON cuts the string at (json_keys.h), when it is there or required.
 * Python's json.load, which transformers reads these files with, keeps the
 * last of a repeated key and cJSON the first: such a file is refused, as the
 * safetensors reader refuses one, rather than read otherwise than HF reads
 * it. 0, or -1 with an error naming the file. */
static int check_json_file(const char *dir, const char *name, bool required) {
    if (!required && !has(dir, name)) return 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *text = read_file(path);
    if (!text) return -1;
    bool empty = text[strspn(text, " \t\r\n")] == '\0';
    const char *end = NULL;
    cJSON *root = empty ? NULL : cJSON_ParseWithOpts(text, &end, true);
    long at = end ? (long)(end - text) : 0, nul = root ? tl_json_nul_escape(text) : -1;
    free(text);
    if (empty)
        return tl_fail_status("%s is empty; was the download cut short? `tinyllm pull` fetches "
                              "it again", path);
    if (!root)
        return tl_fail_status("%s is not valid JSON (syntax error at byte %ld): fix it%s", path,
                              at, required ? ", or `tinyllm pull` the model again"
                                           : " or remove it");
    if (nul >= 0) {
        cJSON_Delete(root);
        return tl_fail_status("%s holds \\u0000 in a string (byte %ld), which transformers' "
                              "json.load keeps and tinyllm's JSON reader cuts the string at: "
                              "remove it", path, nul);
    }
    char where[512] = "";
    int found = tl_json_repeated_key(root, where, sizeof where);
    cJSON_Delete(root);
    if (found < 0) return tl_fail_status("out of memory reading %s", path);
    if (found)
        return tl_fail_status("%s gives the key %s twice (transformers' json.load would "
                              "take the last one, tinyllm does not guess): delete the wrong one",
                              path, where);
    return 0;
}

/* Every shard model.safetensors.index.json lists is in dir. An index that
 * cannot be read is left to the loader, which says what is wrong with it. */
static int check_shards(const char *dir) {
    /* The loader reads model.safetensors when it is there, as transformers does. */
    if (has(dir, "model.safetensors") || !has(dir, "model.safetensors.index.json")) return 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    char *text = read_file(path);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    tl_clear_error();
    const cJSON *shard;
    int rc = 0;
    cJSON_ArrayForEach(shard, cJSON_GetObjectItemCaseSensitive(root, "weight_map")) {
        const char *name = cJSON_IsString(shard) ? shard->valuestring : NULL;
        if (!name || strchr(name, '/') || has(dir, name)) continue;
        char part[300];
        snprintf(part, sizeof part, "%.250s.part", name);
        bool partial = has(dir, part);
        rc = tl_fail_status("%s: the shard %s is missing%s (model.safetensors.index.json lists "
                            "it); %s `tinyllm pull` resumes it", dir, name,
                            partial ? ", only its .part is there" : "",
                            partial ? "the download was cut short:" : "was the download cut "
                            "short?");
        break;
    }
    cJSON_Delete(root);
    return rc;
}

int folder_check(const char *dir, bool weights) {
    struct stat st;
    if (stat(dir, &st) != 0 && errno == ENOENT)
        return tl_fail_status("%s does not exist; give the folder of a checkpoint (config.json "
                              "and model.safetensors), e.g. one `tinyllm pull` downloaded", dir);
    if (stat(dir, &st) != 0)
        return tl_fail_status("cannot read %s: %s; give the folder of a checkpoint (config.json "
                              "and model.safetensors)", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return tl_fail_status("%s is a file, not a folder; give the checkpoint's folder (the one "
                              "holding config.json and model.safetensors)", dir);
    char files[512];
    some_files(dir, files, sizeof files);
    if (!has(dir, "config.json"))
        return tl_fail_status("%s is not a checkpoint folder: it has no config.json (it holds "
                              "%s); a Hugging Face checkpoint folder has config.json and "
                              "model.safetensors (or model.safetensors.index.json and its "
                              "shards)", dir, files);
    if (check_json_file(dir, "config.json", true) != 0) return -1;
    bool present = has(dir, "model.safetensors") || has(dir, "model.safetensors.index.json");
    if (weights && !present)
        return tl_fail_status("%s has a config.json but no weights: neither model.safetensors "
                              "nor model.safetensors.index.json (it holds %s); was the download "
                              "cut short? `tinyllm pull` resumes it", dir, files);
    if (!present) return 0;
    return check_shards(dir) != 0 ? -1 : check_weight_dtypes(dir);
}

int folder_parse_config(const char *dir, LlamaConfig *c) {
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *text = read_file(path);
    if (!text) return -1;
    int rc = llama_config_from_hf(text, c);
    free(text);
    return rc == 0 ? 0 : tl_fail_status("%s: %s", path, tl_error());
}

/* Values the folder's tensors hold, from their headers; -1 when the weights
 * do not open (the loader says why, later). */
static int64_t stored_values(const char *dir) {
    tl_checkpoint *cp = tl_checkpoint_open(dir);
    if (!cp) {
        tl_clear_error();
        return -1;
    }
    int64_t total = 0;
    for (int f = 0; f < cp->file_count; f++)
        for (int i = 0; i < cp->files[f]->count; i++) {
            const tl_st_entry *e = &cp->files[f]->entries[i];
            int64_t n = 1;   /* capped at INT64_MAX / 2: a header cannot overflow this */
            for (int d = 0; d < e->ndim; d++)
                n = e->shape[d] > 0 && n > INT64_MAX / 2 / e->shape[d] ? INT64_MAX / 2
                                                                        : n * e->shape[d];
            total = total > INT64_MAX / 2 - n ? INT64_MAX / 2 : total + n;
        }
    tl_checkpoint_free(cp);
    return total;
}

int folder_explain_load_failure(const char *dir) {
    char cause[1024];
    snprintf(cause, sizeof cause, "%s", tl_error() ? tl_error() : "unknown error");
    LlamaConfig c;
    int64_t wanted = folder_parse_config(dir, &c) == 0 ? llama_config_param_count(&c) : -1;
    int64_t stored = wanted > 0 ? stored_values(dir) : -1;
    if (stored < 0 || wanted / 2 <= stored + 512) {   /* not that: the loader's words stand */
        if (strstr(cause, "llama_init: could not build the model"))   /* the config's values */
            return tl_fail_status("%s (the sizes come from %s/config.json: fix the value it "
                                  "names there, or fetch the file again with tinyllm pull)",
                                  cause, dir);
        tl_fail("%s", cause);
        return -1;
    }
    return tl_fail_status("%s/config.json describes a model of %lld parameters (as "
                          "llama_config_param_count counts them), but the weights hold %lld "
                          "values: the config belongs to another model, or the weights are cut "
                          "short; fetch both again from the same repo (tinyllm pull). The load "
                          "said: %s", dir, (long long)wanted, (long long)stored, cause);
}

int folder_read_config(const char *dir, LlamaConfig *c) {
    if (folder_check(dir, true) != 0 || check_json_file(dir, "generation_config.json", false) ||
        check_json_file(dir, "tokenizer_config.json", false))
        return -1;
    return folder_parse_config(dir, c);
}

int64_t folder_plan_positions(const LlamaConfig *c, int64_t n, int64_t *max_new,
                              const char *verb) {
    int64_t context = c->max_position_embeddings;
    bool rescales = c->rope.type == ROPE_TYPE_DYNAMIC || c->rope.type == ROPE_TYPE_LONGROPE;
    if (!rescales && n >= context)
        return tl_fail_status("the prompt is %lld tokens, but the model's context is %lld "
                              "positions (max_position_embeddings in config.json), and a reply "
                              "needs at least one more: shorten the prompt", (long long)n,
                              (long long)context);
    if (!rescales && n + *max_new > context) {
        fprintf(stderr, "tinyllm %s: note: the prompt's %lld tokens and -n %lld exceed the "
                "context of %lld positions; generating at most %lld tokens\n", verb,
                (long long)n, (long long)*max_new, (long long)context,
                (long long)(context - n));
        *max_new = context - n;
    }
    return n + *max_new;
}
