/* folder.c: checks on a checkpoint folder before the load (folder.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tinyllm/safetensors.h"
#include "tinyllm/tensor.h"
#include "folder.h"

static bool is_file(const char *dir, const char *name) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool folder_has_tokenizer(const char *dir) { return is_file(dir, "tokenizer.json"); }

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
        rc = tl_fail_status("%s stores %d tensor%s in a dtype tinyllm does not compute with "
                            "(the first: %s, %s in %s); tinyllm runs F32 and BF16 weights (F16 "
                            "widened to F32): %s", dir, odd, odd > 1 ? "s" : "", first->name,
                            name, slash ? slash + 1 : first_file->path,
                            fp8 ? "an FP8 checkpoint needs its block scales applied; pull the "
                                  "model's BF16 release instead"
                                : "a quantized checkpoint (GPTQ, AWQ) needs its own kernels; "
                                  "pull the model's unquantized F32 or BF16 release instead");
    }
    tl_checkpoint_free(ck);
    return rc;
}

int folder_read_config(const char *dir, LlamaConfig *c) {
    struct stat st;
    if (stat(dir, &st) != 0)
        return tl_fail_status("%s: %s; give the folder of a checkpoint (config.json and "
                              "model.safetensors), e.g. one `tinyllm pull` downloaded", dir,
                              strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return tl_fail_status("%s is a file, not a folder; give the checkpoint's folder (the one "
                              "holding config.json and model.safetensors)", dir);
    char files[512];
    some_files(dir, files, sizeof files);
    if (!is_file(dir, "config.json"))
        return tl_fail_status("%s is not a checkpoint folder: it has no config.json (it holds "
                              "%s); a Hugging Face checkpoint folder has config.json and "
                              "model.safetensors (or model.safetensors.index.json and its "
                              "shards)", dir, files);
    if (!is_file(dir, "model.safetensors") && !is_file(dir, "model.safetensors.index.json"))
        return tl_fail_status("%s has a config.json but no weights: neither model.safetensors "
                              "nor model.safetensors.index.json (it holds %s); was the download "
                              "cut short? `tinyllm pull` resumes it", dir, files);
    if (check_weight_dtypes(dir) != 0) return -1;
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return tl_fail_status("cannot open %s: %s", path, strerror(errno));
    size_t cap = 1 << 20;
    char *text = malloc(cap + 1);
    size_t n = text ? fread(text, 1, cap, f) : 0;
    fclose(f);
    if (!text) return tl_fail_status("out of memory");
    text[n] = '\0';
    int rc = llama_config_from_hf(text, c);
    free(text);
    return rc == 0 ? 0 : tl_fail_status("%s: %s", path, tl_error());
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
