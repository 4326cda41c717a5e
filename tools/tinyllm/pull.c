/* pull.c: `tinyllm pull REPO [FILE...]` downloads a model's files from the
 * Hub into the cache with hf_download (L7.9) and prints the folder holding
 * them. Without FILEs it fetches what a model needs: config.json, the
 * tokenizer and generation files when the repo has them, and the weights as
 * model.safetensors or, for a sharded model, the index and every shard it
 * lists. Progress goes to stderr; stdout gets only the folder, so
 *
 *     dir=$(tinyllm pull HuggingFaceTB/SmolLM2-135M-Instruct)
 *
 * works in scripts. Exit status: 0 done, 1 a download failed (the
 * downloader's message on stderr), 2 a usage error.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tinyllm/io/hf.h"
#include "tinyllm/tensor.h"
#include "verbs.h"

#define MAX_SHARDS 4096

static const char USAGE[] =
    "usage: tinyllm pull REPO [FILE...] [--revision R] [--endpoint URL] [--cache DIR]\n";
static const char HELP[] =
    "  Downloads files of the Hugging Face repo REPO (\"org/name\") into\n"
    "  DIR/<org>--<name>/<revision>/ and prints that folder. Each file is resumed\n"
    "  if a .part of it is there, verified (sha256 or git sha1) and renamed into\n"
    "  place; a file already verified is not downloaded again.\n"
    "  Without FILE: config.json, model.safetensors (or model.safetensors.index.json\n"
    "  and its shards), and generation_config.json, tokenizer.json and\n"
    "  tokenizer_config.json when the repo has them.\n"
    "  --revision R    a branch, tag, refs/pr/N or commit (default main)\n"
    "  --endpoint URL  the Hub (default $HF_ENDPOINT, else https://huggingface.co)\n"
    "  --cache DIR     the cache (default $TINYLLM_CACHE, else ~/.cache/tinyllm/hub)\n"
    "  HF_TOKEN is sent to the Hub for private and gated repos; HF_HUB_OFFLINE=1\n"
    "  serves only what is already in the cache.\n";

typedef struct {
    const char *repo, *revision, *endpoint, *cache;
    char *dir;                 /* set by the first successful download */
} pull_ctx;

/* Downloads one file. 0 done, 1 absent (only when optional), -1 failed. */
static int fetch(pull_ctx *p, const char *file, bool optional) {
    const char *names[] = {file};
    char *dir = hf_download(p->repo, names, 1, p->cache, p->revision, p->endpoint, NULL, 60.0);
    if (!dir) {
        const char *e = tl_error() ? tl_error() : "unknown error";
        bool absent = strstr(e, "EntryNotFound") || strstr(e, "HF_HUB_OFFLINE");
        if (optional && absent) {
            fprintf(stderr, "  %-32s %s, skipped\n", file,
                    strstr(e, "EntryNotFound") ? "not in the repo" : "not in the cache (offline)");
            tl_clear_error();
            return 1;
        }
        fprintf(stderr, "tinyllm pull: %s\n", e);
        return -1;
    }
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (stat(path, &st) == 0) fprintf(stderr, "  %-32s %lld bytes\n", file, (long long)st.st_size);
    if (!p->dir) p->dir = dir;
    else free(dir);
    return 0;
}

/* The shard names of a model.safetensors.index.json, each once, validated.
 * Returns how many, or -1 with a message on stderr. */
static int read_shards(const char *index_path, char **shards) {
    FILE *f = fopen(index_path, "rb");
    char *text = NULL;
    long size = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (text = malloc((size_t)size + 1)) && fread(text, 1, (size_t)size, f) == (size_t)size)
        text[size] = 0;
    else {
        free(text);
        text = NULL;
    }
    if (f) fclose(f);
    cJSON *json = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(json, "weight_map");
    if (!cJSON_IsObject(map)) {
        fprintf(stderr, "tinyllm pull: %s is not a safetensors index: expected JSON with a "
                        "\"weight_map\" object\n", index_path);
        cJSON_Delete(json);
        return -1;
    }
    int n = 0;
    bool bad = false;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, map) {
        const char *name = cJSON_GetStringValue(entry);
        if (!name || hf_validate_filename(name) != 0) {
            fprintf(stderr, "tinyllm pull: %s: tensor '%s' names the shard '%s': %s\n", index_path,
                    entry->string, name ? name : "(not a string)",
                    name ? tl_error() : "expected a file name");
            tl_clear_error();
            bad = true;
            break;
        }
        bool seen = false;
        for (int i = 0; i < n && !seen; i++) seen = !strcmp(shards[i], name);
        if (seen) continue;
        if (n == MAX_SHARDS) {
            fprintf(stderr, "tinyllm pull: %s lists more than %d shards\n", index_path, MAX_SHARDS);
            bad = true;
            break;
        }
        shards[n++] = strdup(name);
    }
    cJSON_Delete(json);
    if (!bad) return n;
    for (int i = 0; i < n; i++) free(shards[i]);
    return -1;
}

/* The weights: model.safetensors, else the index and its shards. */
static int fetch_weights(pull_ctx *p) {
    int rc = fetch(p, "model.safetensors", true);
    if (rc <= 0) return rc;
    rc = fetch(p, "model.safetensors.index.json", true);
    if (rc < 0) return -1;
    if (rc == 1) {
        fprintf(stderr, "tinyllm pull: %s at %s has neither model.safetensors nor "
                        "model.safetensors.index.json: is it a safetensors model?\n",
                p->repo, p->revision);
        return -1;
    }
    char index[4096];
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", p->dir);
    char **shards = calloc(MAX_SHARDS, sizeof *shards);
    int n = shards ? read_shards(index, shards) : -1;
    rc = n < 0 ? -1 : 0;
    for (int i = 0; i < n && rc == 0; i++) rc = fetch(p, shards[i], false);
    for (int i = 0; i < n; i++) free(shards[i]);
    free(shards);
    return rc;
}

int tinyllm_pull(int argc, char **argv) {
    pull_ctx p = {.revision = "main"};
    const char **files = calloc((size_t)argc, sizeof *files);
    int nfiles = 0;
    if (!files) return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **opt = !strcmp(a, "--revision") ? &p.revision
                           : !strcmp(a, "--endpoint") ? &p.endpoint
                           : !strcmp(a, "--cache") ? &p.cache : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("%s%s", USAGE, HELP);
            free(files);
            return 0;
        }
        if (opt && i + 1 < argc) *opt = argv[++i];
        else if (opt || (a[0] == '-' && a[1])) {
            fprintf(stderr, "tinyllm pull: %s %s\n%s", a,
                    opt ? "needs a value" : "is not an option", USAGE);
            free(files);
            return 2;
        } else if (!p.repo) p.repo = a;
        else files[nfiles++] = a;
    }
    if (!p.repo) {
        fprintf(stderr, "tinyllm pull: which repo? give REPO as org/name\n%s", USAGE);
        free(files);
        return 2;
    }
    char cache[4096];
    if (!p.cache) p.cache = getenv("TINYLLM_CACHE");
    if (!p.cache || !*p.cache) {
        const char *home = getenv("HOME");
        snprintf(cache, sizeof cache, "%s/.cache/tinyllm/hub", home && *home ? home : ".");
        p.cache = cache;
    }

    fprintf(stderr, "pulling %s at %s into %s\n", p.repo, p.revision, p.cache);
    int rc = 0;
    if (nfiles > 0) {
        for (int i = 0; i < nfiles && rc == 0; i++) rc = fetch(&p, files[i], false);
    } else {
        static const char *const optional[] = {"generation_config.json", "tokenizer.json",
                                               "tokenizer_config.json"};
        rc = fetch(&p, "config.json", false);
        for (int i = 0; i < 3 && rc >= 0; i++) rc = fetch(&p, optional[i], true) < 0 ? -1 : 0;
        if (rc == 0) rc = fetch_weights(&p);
    }
    if (rc == 0 && p.dir) printf("%s\n", p.dir);
    free(p.dir);
    free(files);
    return rc == 0 ? 0 : 1;
}
