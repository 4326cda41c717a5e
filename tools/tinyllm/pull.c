/* pull.c: `tinyllm pull REPO [FILE...]` downloads a model's files from the
 * Hub into the cache with hf_download (L7.9) and prints the folder holding
 * them. Without FILEs it lists the repo through the Hub's API, as
 * snapshot_download does (repo_listing.c), and fetches what a model needs
 * among the files listed: config.json, the generation and tokenizer files,
 * and the weights as model.safetensors or, for a sharded model, the index
 * and every shard it names. --include/--exclude GLOB choose files of the
 * listing instead, as `hf download` does. Progress goes to stderr; stdout
 * gets only the folder, so
 *
 *     dir=$(tinyllm pull HuggingFaceTB/SmolLM2-135M-Instruct)
 *
 * works in scripts. Exit status: 0 done, 1 a download failed (the
 * downloader's message on stderr) or the branch moved during the pull (its
 * commit, asked again at the end, is not the listing's), 2 a usage error.
 */
#include <cjson/cJSON.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "tinyllm/io/hf.h"
#include "output.h"
#include "repo_listing.h"
#include "tinyllm/tensor.h"
#include "verbs.h"

#define MAX_SHARDS 4096
#define MAX_INDEX_BYTES (64L << 20)   /* DeepSeek-V3's, 91k tensors, is 9 MB */

static const char USAGE[] =
    "usage: tinyllm pull REPO [FILE...] [--include GLOB]... [--exclude GLOB]... [--revision R]\n"
    "                    [--endpoint URL] [--cache DIR]\n";
static const char HELP[] =
    "  Downloads files of the Hugging Face repo REPO (\"org/name\") into\n"
    "  DIR/<org>--<name>/<revision>/ and prints that folder. Each file is resumed\n"
    "  if a .part of it is there, verified (sha256 or git sha1) and renamed into\n"
    "  place; a file already verified is not downloaded again.\n"
    "  Without FILE, the repo is listed through the Hub's API and the model's files\n"
    "  it has are fetched: config.json, model.safetensors (or\n"
    "  model.safetensors.index.json and every shard it names), and the generation\n"
    "  and tokenizer files (generation_config.json, tokenizer.json, ...).\n"
    "  --include GLOB  fetch the listed files matching GLOB instead (repeatable;\n"
    "                  '*' matches '/' too, a GLOB ending in '/' a whole folder)\n"
    "  --exclude GLOB  leave out the files matching GLOB (repeatable)\n"
    "  --revision R    a branch, tag, refs/pr/N or commit (default main)\n"
    "  --endpoint URL  the Hub (default $HF_ENDPOINT, else https://huggingface.co)\n"
    "  --cache DIR     the cache (default $TINYLLM_CACHE, else ~/.cache/tinyllm/hub)\n"
    "  HF_TOKEN is sent to the Hub for private and gated repos; HF_HUB_OFFLINE=1\n"
    "  lists and serves only what is already in the cache. HF_HUB_ETAG_TIMEOUT (the\n"
    "  API's answers) and HF_HUB_DOWNLOAD_TIMEOUT (the files) are the seconds a\n"
    "  connection may stay silent before it is tried again (10 each, as the hf tool).\n";

/* The files a model needs besides its weights, fetched when listed. */
static const char *const MODEL_FILES[] = {
    "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
    "special_tokens_map.json", "added_tokens.json", "vocab.json", "merges.txt",
    "tokenizer.model", "chat_template.jinja", "chat_template.json"};

typedef struct {
    const char *repo, *revision, *endpoint, *cache;
    char *dir;                 /* set by the first successful download */
    const char **include, **exclude;
    int ninclude, nexclude;
    repo_listing listing;
    double api_timeout, file_timeout;   /* seconds of silence, as huggingface_hub's */
} pull_ctx;

/* Prints "tinyllm pull: <message>" for a message that quotes what a server
 * sent (a listed name, a header, an index's tensor) through print_clean, as
 * every verb's errors: no escape sequence reaches the terminal. */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...) {
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fputs("tinyllm pull: ", stderr);
    print_clean(stderr, msg);
    fputc('\n', stderr);
}

static bool offline(void) {
    const char *v = getenv("HF_HUB_OFFLINE");
    return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
                 !strcasecmp(v, "on"));   /* as huggingface_hub reads it */
}

/* What to do when a file the model needs is missing: offline, the cache lacks it. */
static const char *next_step(const char *advice) {
    return offline() ? "an earlier pull did not finish? unset HF_HUB_OFFLINE to download it"
                     : advice;
}

/* Downloads one file. 0 done, -1 failed (the message on stderr). */
static int fetch(pull_ctx *p, const char *file) {
    size_t len = strlen(file);
    if (len > 5 && !strcmp(file + len - 5, ".part")) {   /* the cache's own suffix */
        fprintf(stderr, "  %-32s skipped: the cache keeps a download in progress as "
                "NAME.part, so a file of the repository named so would be taken for one\n",
                file);
        return 0;
    }
    const char *names[] = {file};
    char *dir = hf_download(p->repo, names, 1, p->cache, p->revision, p->endpoint, NULL,
                            p->file_timeout);
    if (!dir) {
        say("%s", tl_error() ? tl_error() : "unknown error");
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
    if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > MAX_INDEX_BYTES) {
        /* parsed, it would take ~5 times its size in memory */
        fprintf(stderr, "tinyllm pull: %s has %ld bytes, more than a safetensors index needs "
                "(%ld MB at most): not reading it (is the repo's index broken, or HF_ENDPOINT "
                "not a Hub?)\n", index_path, size, MAX_INDEX_BYTES >> 20);
        fclose(f);
        return -1;
    }
    if (f && size >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
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
            say("%s: tensor '%.200s' names the shard '%.300s': %s", index_path, entry->string,
                name ? name : "(not a string)", name ? tl_error() : "expected a file name");
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

/* hf download's patterns: fnmatch without FNM_PATHNAME ('*' crosses '/'),
 * and a pattern ending in "/" meaning everything below that folder. */
static bool matches(const char *path, const char *const *globs, int n) {
    char glob[1024];
    for (int i = 0; i < n; i++) {
        size_t len = strlen(globs[i]);
        snprintf(glob, sizeof glob, "%s%s", globs[i], len && globs[i][len - 1] == '/' ? "*" : "");
        if (fnmatch(glob, path, 0) == 0) return true;
    }
    return false;
}

static bool wanted(const pull_ctx *p, const char *path) {
    return !matches(path, p->exclude, p->nexclude);
}

/* The weights: model.safetensors, else the index and every shard it names
 * (each must be in the listing). */
static int fetch_weights(pull_ctx *p) {
    const repo_listing *l = &p->listing;
    if (repo_listing_has(l, "model.safetensors") && wanted(p, "model.safetensors"))
        return fetch(p, "model.safetensors");
    if (!repo_listing_has(l, "model.safetensors.index.json") ||
        !wanted(p, "model.safetensors.index.json")) {
        fprintf(stderr, "tinyllm pull: %s at %s%s no safetensors weights (neither "
                        "model.safetensors nor model.safetensors.index.json%s): %s\n", p->repo,
                p->revision, offline() ? ": the cache holds" : " lists",
                p->nexclude ? ", or --exclude left them out" : "", next_step(
                "is it a safetensors model?"));
        return -1;
    }
    if (fetch(p, "model.safetensors.index.json") != 0) return -1;
    char index[4096];
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", p->dir);
    char **shards = calloc(MAX_SHARDS, sizeof *shards);
    int n = shards ? read_shards(index, shards) : -1;
    int rc = n < 0 ? -1 : 0;
    for (int i = 0; i < n && rc == 0; i++) {
        if (!repo_listing_has(l, shards[i])) {
            fprintf(stderr, "tinyllm pull: %s names the shard %s, which %s at %s%s: %s\n",
                    index, shards[i], p->repo, p->revision,
                    offline() ? " does not have in the cache" : " does not have",
                    next_step("the checkpoint is incomplete"));
            rc = -1;
        } else {
            rc = fetch(p, shards[i]);
        }
    }
    for (int i = 0; i < n; i++) free(shards[i]);
    free(shards);
    return rc;
}

static const char *endpoint_of(const pull_ctx *p) {
    const char *endpoint = p->endpoint && *p->endpoint ? p->endpoint : getenv("HF_ENDPOINT");
    return endpoint && *endpoint ? endpoint : "https://huggingface.co";
}

static const char *token(void) {
    const char *t = getenv("HF_TOKEN");
    return t && *t ? t : NULL;
}

/* Lists the repo: through the API, or offline from the cache. */
static int list_repo(pull_ctx *p) {
    char err[1024];
    if (offline()) {
        char dir[4096];
        const char *slash = strchr(p->repo, '/');
        snprintf(dir, sizeof dir, "%s/%.*s%s%s/%s", p->cache, slash ? (int)(slash - p->repo) : 0,
                 p->repo, slash ? "--" : "", slash ? slash + 1 : p->repo, p->revision);
        if (repo_list_cached(dir, &p->listing, err, sizeof err) == 0) return 0;
    } else {
        if (repo_list_remote(endpoint_of(p), p->repo, p->revision, token(), p->api_timeout,
                             &p->listing, err, sizeof err) == 0) {
            fprintf(stderr, "  %d files at %s\n", p->listing.n,
                    *p->listing.commit ? p->listing.commit : p->revision);
            return 0;
        }
    }
    say("cannot list %s at %s: %s", p->repo, p->revision, err);
    return -1;
}

/* Without FILEs: what the listing offers, chosen by --include or as a model. */
static int fetch_listed(pull_ctx *p) {
    if (list_repo(p) != 0) return -1;
    const repo_listing *l = &p->listing;
    int rc = 0, fetched = 0;
    if (p->ninclude) {
        for (int i = 0; i < l->n && rc == 0; i++)
            if (matches(l->paths[i], p->include, p->ninclude) && wanted(p, l->paths[i])) {
                rc = fetch(p, l->paths[i]);
                fetched++;
            }
        if (rc == 0 && fetched == 0) {
            fprintf(stderr, "tinyllm pull: no file of %s at %s matches --include (%d files "
                            "listed)\n", p->repo, p->revision, l->n);
            rc = -1;
        }
        return rc;
    }
    if (!repo_listing_has(l, "config.json")) {
        fprintf(stderr, "tinyllm pull: %s at %s%s no config.json: %s\n", p->repo, p->revision,
                offline() ? ": the cache holds" : " lists",
                next_step("is it a transformers model?"));
        return -1;
    }
    for (size_t i = 0; i < sizeof MODEL_FILES / sizeof *MODEL_FILES && rc == 0; i++)
        if (repo_listing_has(l, MODEL_FILES[i]) && wanted(p, MODEL_FILES[i]))
            rc = fetch(p, MODEL_FILES[i]);
    return rc == 0 ? fetch_weights(p) : rc;
}

/* Each file was asked for at the revision, one after the other: when a
 * branch moved meanwhile (a push during the pull), the folder may mix two
 * commits, each file verified but the model not coherent. The listing's
 * commit, asked again at the end, tells. */
static int check_unmoved(const pull_ctx *p) {
    char now[41], err[1024];
    if (offline() || !*p->listing.commit || !strcmp(p->revision, p->listing.commit)) return 0;
    if (repo_commit_remote(endpoint_of(p), p->repo, p->revision, token(), p->api_timeout, now,
                           err, sizeof err) != 0) {
        say("cannot check that %s is still at %s: %s; run the pull again", p->revision,
            p->listing.commit, err);
        return -1;
    }
    if (!strcmp(now, p->listing.commit)) return 0;
    fprintf(stderr, "tinyllm pull: %s moved from %s to %s during the pull: the files in %s may "
                    "come from both commits; run the pull again\n", p->revision,
            p->listing.commit, *now ? now : "(unknown)", p->dir ? p->dir : p->cache);
    return -1;
}

static int fetch_all_listed(pull_ctx *p) {
    int rc = fetch_listed(p);
    return rc == 0 ? check_unmoved(p) : rc;
}

/* FILEs named on the command line: no listing, so the revision's commit is
 * asked before the first and checked after the last, as for a listed pull.
 * A server that does not answer the API (a mirror of files only) still
 * serves them, each verified; only the check is left out, and said so. */
static int fetch_named(pull_ctx *p, const char **files, int nfiles) {
    char err[1024];
    bool commit = hf_validate_commit(p->revision) == 0;   /* a commit cannot move */
    if (!offline() && !commit && repo_commit_remote(endpoint_of(p), p->repo, p->revision, token(),
                                         p->api_timeout, p->listing.commit, err,
                                         sizeof err) != 0) {
        p->listing.commit[0] = 0;
        fprintf(stderr, "  (not checking that %s stays at one commit: ", p->revision);
        print_clean(stderr, err);
        fputs(")\n", stderr);
    }
    int rc = 0;
    for (int i = 0; i < nfiles && rc == 0; i++) rc = fetch(p, files[i]);
    return rc == 0 ? check_unmoved(p) : rc;
}

/* Seconds from HF_HUB_ETAG_TIMEOUT or HF_HUB_DOWNLOAD_TIMEOUT, 10 when unset
 * (huggingface_hub's default and meaning: how long a connection may be
 * silent). -1 with a message for a value that is not a number of seconds. */
static double timeout_from_env(const char *name) {
    const char *v = getenv(name);
    if (!v || !*v) return 10.0;
    char *end;
    double t = strtod(v, &end);
    if (end != v && *end == 0 && t > 0 && t <= 3600) return t;
    fprintf(stderr, "tinyllm pull: %s='", name);
    print_clean(stderr, v);
    fprintf(stderr, "' is not a number of seconds from 0 to 3600 (e.g. 30); set it so, or "
                    "unset it for 10\n");
    return -1;
}

int tinyllm_pull(int argc, char **argv) {
    pull_ctx p = {.revision = "main"};
    const char **files = calloc((size_t)argc, sizeof *files);
    p.include = calloc((size_t)argc, sizeof *p.include);
    p.exclude = calloc((size_t)argc, sizeof *p.exclude);
    int nfiles = 0, status = 2;
    if (!files || !p.include || !p.exclude) goto out;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **opt = !strcmp(a, "--revision") ? &p.revision
                           : !strcmp(a, "--endpoint") ? &p.endpoint
                           : !strcmp(a, "--cache") ? &p.cache
                           : !strcmp(a, "--include") ? &p.include[p.ninclude]
                           : !strcmp(a, "--exclude") ? &p.exclude[p.nexclude] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("%s%s", USAGE, HELP);
            status = 0;
            goto out;
        }
        if (opt && i + 1 < argc) {
            *opt = argv[++i];
            p.ninclude += opt == &p.include[p.ninclude];
            p.nexclude += opt == &p.exclude[p.nexclude];
        } else if (opt || (a[0] == '-' && a[1])) {
            fprintf(stderr, "tinyllm pull: %s %s\n%s", a,
                    opt ? "needs a value" : "is not an option", USAGE);
            goto out;
        } else if (!p.repo) p.repo = a;
        else files[nfiles++] = a;
    }
    if (!p.repo) {
        fprintf(stderr, "tinyllm pull: which repo? give REPO as org/name\n%s", USAGE);
        goto out;
    }
    if (nfiles > 0 && (p.ninclude || p.nexclude)) {
        fprintf(stderr, "tinyllm pull: give FILEs or --include/--exclude, not both\n%s", USAGE);
        goto out;
    }
    if (hf_validate_repo_id(p.repo) != 0 || hf_validate_revision(p.revision) != 0) {
        fprintf(stderr, "tinyllm pull: %s\n", tl_error());
        status = 1;
        goto out;
    }
    char cache[4096];
    if (!p.cache) p.cache = getenv("TINYLLM_CACHE");
    if (!p.cache || !*p.cache) {
        const char *home = getenv("HOME");
        snprintf(cache, sizeof cache, "%s/.cache/tinyllm/hub", home && *home ? home : ".");
        p.cache = cache;
    }

    p.api_timeout = timeout_from_env("HF_HUB_ETAG_TIMEOUT");
    p.file_timeout = timeout_from_env("HF_HUB_DOWNLOAD_TIMEOUT");
    if (p.api_timeout < 0 || p.file_timeout < 0) goto out;

    fprintf(stderr, "pulling %s at %s into %s\n", p.repo, p.revision, p.cache);
    int rc = nfiles > 0 ? fetch_named(&p, files, nfiles) : fetch_all_listed(&p);
    if (rc == 0 && p.dir) printf("%s\n", p.dir);
    status = rc == 0 ? 0 : 1;
out:
    repo_listing_free(&p.listing);
    free(p.dir);
    free(files);
    free(p.include);
    free(p.exclude);
    return status;
}
