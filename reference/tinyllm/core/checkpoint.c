/* checkpoint.c: a model's weights as one dict, from a single .safetensors
 * file or from the shards an index lists (L0.6).
 *
 * A sharded checkpoint is model.safetensors.index.json, {"metadata":
 * {"total_size": bytes}, "weight_map": {tensor: shard file}}, next to the
 * shards. Every shard is opened once and must hold exactly the tensors the
 * map gives it: a tensor in the wrong shard, in no shard, or in two is an
 * error, not a silent surprise at load time.
 */
#include "internal.h"
#include "safetensors_internal.h"
#include "tinyllm/bf16.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define INDEX_NAME "model.safetensors.index.json"
#define SINGLE_NAME "model.safetensors"

/* Whether path names anything; a dangling symlink counts, so that opening
 * it reports the symlink rather than the folder looking empty. */
static bool has_entry(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Fails with why stat(path) failed: missing, a dangling symlink, a loop. */
static void fail_stat(const char *path, int err) {
    struct stat st;
    if (err == ENOENT && lstat(path, &st) == 0)
        tl_fail("checkpoint: %s is a symlink to a file that does not exist", path);
    else if (err == ENOENT)
        tl_fail("checkpoint: %s does not exist", path);
    else if (err == ELOOP)
        tl_fail("checkpoint: %s cannot be opened: a loop of symlinks", path);
    else
        tl_fail("checkpoint: %s cannot be opened: %s", path, strerror(err));
}

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static char *join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *s = malloc(a + b + 2);
    if (!s) return tl_fail("checkpoint: out of memory");
    memcpy(s, dir, a);
    s[a] = '/';
    memcpy(s + a + 1, name, b + 1);
    return s;
}

/* The folder part of a file path ("." when there is none). */
static char *folder_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

static int add_meta(tl_checkpoint *c, const char *key, const char *value) {
    for (int i = 0; i < c->meta_count; i++)
        if (strcmp(c->meta_keys[i], key) == 0) return 0;   /* the first source wins */
    char **k = realloc(c->meta_keys, ((size_t)c->meta_count + 1) * sizeof *k);
    if (k) c->meta_keys = k;
    char **v = realloc(c->meta_values, ((size_t)c->meta_count + 1) * sizeof *v);
    if (v) c->meta_values = v;
    if (!k || !v) {
        return tl_fail_status("checkpoint: out of memory");
    }
    k[c->meta_count] = strdup(key);
    v[c->meta_count] = strdup(value);
    c->meta_count++;
    if (!k[c->meta_count - 1] || !v[c->meta_count - 1]) {
        return tl_fail_status("checkpoint: out of memory");
    }
    return 0;
}

static int add_file(tl_checkpoint *c, const char *path) {
    tl_st_file *f = tl_st_open(path);
    if (!f) return -1;
    tl_st_file **grown = realloc(c->files, ((size_t)c->file_count + 1) * sizeof *grown);
    if (!grown) {
        tl_st_close(f);
        return tl_fail_status("checkpoint: out of memory");
    }
    c->files = grown;
    c->files[c->file_count++] = f;
    return 0;
}

/* ---- the index ---------------------------------------------------------- */

/* The index's text, NUL-terminated; NULL with an error. A FIFO or a device
 * is refused before any read, so none can hang or flood the loader. */
static char *read_text(const char *path, size_t *len) {
    struct stat st;
    char why[256];
    int fd = tl_open_regular(path, &st, why, sizeof why);
    if (fd < 0) return tl_fail("checkpoint: %s: %s", path, why);
    char *text = NULL;
    if (st.st_size == 0)
        tl_fail("checkpoint: %s is empty (an interrupted download? fetch the index again)", path);
    else if ((uint64_t)st.st_size > TL_ST_MAX_HEADER)
        tl_fail("checkpoint: %s is %lld bytes, over the %llu-byte limit of an index: not a "
                "safetensors index", path, (long long)st.st_size, TL_ST_MAX_HEADER);
    else if (!(text = malloc((size_t)st.st_size + 1)))
        tl_fail("checkpoint: out of memory reading %s", path);
    size_t n = 0, want = text ? (size_t)st.st_size : 0;
    while (n < want) {
        ssize_t got = read(fd, text + n, want - n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            tl_fail("checkpoint: cannot read %s: %s", path,
                    got < 0 ? strerror(errno) : "the file shrank while it was read");
            free(text);
            text = NULL;
            break;
        }
        n += (size_t)got;
    }
    close(fd);
    if (text) {
        text[n] = '\0';
        *len = n;
    }
    return text;
}

/* Shard names must stay inside the index's folder: a plain name, no '/'. */
static bool plain_file_name(const char *s) {
    return s[0] && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

/* Where the files of an index may really live: its folder, links resolved,
 * and in the Hugging Face cache (models--org--name/snapshots/REV/, whose files
 * are symlinks to ../../blobs/HASH) that repo's blobs folder. A shard name
 * has no '/', but a symlink in the folder could still lead anywhere. */
typedef struct {
    char *folder, *blobs;   /* realpaths; blobs NULL outside the HF cache */
} shard_home;

static bool is_under(const char *real, const char *folder) {
    size_t n = strlen(folder);
    if (n == 1) return true;   /* the folder is "/" */
    return strncmp(real, folder, n) == 0 && real[n] == '/';
}

static int shard_home_init(shard_home *h, const char *dir) {
    *h = (shard_home){realpath(dir, NULL), NULL};
    if (!h->folder) {
        return tl_fail_status("checkpoint: cannot resolve the folder %s: %s", dir, strerror(errno));
    }
    char *snapshots = folder_of(h->folder);
    const char *base = snapshots ? strrchr(snapshots, '/') : NULL;
    if (base && strcmp(base, "/snapshots") == 0) {
        char *repo = folder_of(snapshots), *blobs = repo ? join(repo, "blobs") : NULL;
        h->blobs = blobs ? realpath(blobs, NULL) : NULL;   /* NULL when absent: fine */
        free(blobs);
        free(repo);
    }
    free(snapshots);
    return 0;
}

static void shard_home_free(shard_home *h) {
    free(h->folder);
    free(h->blobs);
}

/* A shard file seen through the index: its name, and the file it really is. */
typedef struct {
    const char *name;
    dev_t dev;
    ino_t ino;
} shard_id;

static int compare_shard_id(const void *pa, const void *pb) {
    const shard_id *a = pa, *b = pb;
    if (a->dev != b->dev) return a->dev < b->dev ? -1 : 1;
    if (a->ino != b->ino) return a->ino < b->ino ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* Before any shard is read: each must resolve inside its home, and no file
 * may be listed under two names (a link and its target). */
static int check_shards(const char *index, const char *dir, const char **files, int n_files) {
    shard_home home;
    if (shard_home_init(&home, dir) != 0) return -1;
    shard_id *ids = calloc((size_t)n_files + 1, sizeof *ids);
    int rc = ids ? 0 : -1, n_ids = 0;
    if (!ids) tl_fail("checkpoint: out of memory");
    char nb[128], rb[PATH_MAX + 8];
    for (int s = 0; s < n_files && rc == 0; s++) {
        char *path = join(dir, files[s]);
        char *real = path ? realpath(path, NULL) : NULL;
        struct stat st;
        if (!path) rc = -1;
        else if (!real || stat(real, &st) != 0) {
            /* Missing or unreadable: tl_st_open names the reason later. */
        } else if (!is_under(real, home.folder) && !(home.blobs && is_under(real, home.blobs))) {
            tl_fail("checkpoint: %s: shard %s is a symlink to %s, outside the model folder %s: "
                    "refusing to read it (copy the file into the folder if it belongs there)",
                    index, tl_st_shown(files[s], nb, sizeof nb),
                    tl_st_shown(real, rb, sizeof rb), home.folder);
            rc = -1;
        } else {
            ids[n_ids++] = (shard_id){files[s], st.st_dev, st.st_ino};
        }
        free(real);
        free(path);
    }
    if (rc == 0) {
        qsort(ids, (size_t)n_ids, sizeof *ids, compare_shard_id);
        for (int i = 1; i < n_ids && rc == 0; i++)
            if (ids[i].dev == ids[i - 1].dev && ids[i].ino == ids[i - 1].ino) {
                tl_fail("checkpoint: %s lists %s and %s, which are the same file (one links to "
                        "the other): list each shard under one name", index,
                        tl_st_shown(ids[i - 1].name, nb, sizeof nb),
                        tl_st_shown(ids[i].name, rb, sizeof rb));
                rc = -1;
            }
    }
    free(ids);
    shard_home_free(&home);
    return rc;
}

typedef struct {
    const char *tensor;
    const char *file;
    int shard;       /* index into the sorted distinct file names */
    bool seen;
} mapping;

static int compare_mapping(const void *a, const void *b) {
    return strcmp(((const mapping *)a)->tensor, ((const mapping *)b)->tensor);
}

static int compare_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Index metadata values as strings: numbers in full, strings as they are. */
static int add_index_meta(tl_checkpoint *c, const char *path, const cJSON *meta) {
    if (!meta || cJSON_IsNull(meta)) return 0;
    if (!cJSON_IsObject(meta)) {
        char vb[64];
        return tl_fail_status("checkpoint: %s: \"metadata\" is %s, not an object", path,
                              tl_json_shown(meta, vb, sizeof vb));
    }
    const char *dup;
    int d = tl_json_duplicate_key(meta, &dup);
    if (d != 0) {
        char nb[128];
        if (d < 0) tl_fail("checkpoint: out of memory");
        else tl_fail("checkpoint: %s: key \"%s\" appears twice in \"metadata\"", path,
                     tl_st_shown(dup, nb, sizeof nb));
        return -1;
    }
    const cJSON *total = cJSON_GetObjectItemCaseSensitive(meta, "total_size");
    /* transformers does not check total_size against the shards, so neither
     * do we; but it must be a byte count. */
    if (total && (!cJSON_IsNumber(total) || !(total->valuedouble >= 0) ||
                  total->valuedouble > 9007199254740992.0 ||
                  total->valuedouble != floor(total->valuedouble))) {
        return tl_fail_status("checkpoint: %s: metadata.total_size is not a non-negative integer",
                              path);
    }
    for (const cJSON *m = meta->child; m; m = m->next) {
        char num[32];
        const char *value;
        char *printed = NULL;
        if (cJSON_IsString(m)) value = m->valuestring;
        else if (cJSON_IsNumber(m) && fabs(m->valuedouble) <= 9007199254740992.0 &&
                 m->valuedouble == floor(m->valuedouble)) {
            snprintf(num, sizeof num, "%lld", (long long)m->valuedouble);
            value = num;
        } else if (cJSON_IsNumber(m)) {
            snprintf(num, sizeof num, "%.17g", m->valuedouble);
            value = num;
        } else {
            value = printed = cJSON_PrintUnformatted(m);
            if (!value) {
                return tl_fail_status("checkpoint: out of memory");
            }
        }
        int rc = add_meta(c, m->string, value);
        cJSON_free(printed);
        if (rc) return -1;
    }
    return 0;
}

/* Opens every shard the index names, checking the map against the shards. */
static int open_index(tl_checkpoint *c, const char *path) {
    size_t len = 0, at = 0;
    char *text = read_text(path, &len);
    if (!text) return -1;
    int rc = -1;
    cJSON *root = NULL;
    mapping *map = NULL;
    const char **files = NULL;
    char *dir = NULL;
    char nb[128], fb[128];

    const char *problem = tl_json_text_problem((const unsigned char *)text, len, &at);
    if (problem) {
        tl_fail("checkpoint: %s %s (at byte %zu)", path, problem, at);
        goto done;
    }
    if (!(root = tl_json_parse(text, &at))) {
        tl_fail("checkpoint: %s is not valid JSON (error at byte %zu)", path, at);
        goto done;
    }
    char vb[64];
    if (!cJSON_IsObject(root)) {
        tl_fail("checkpoint: %s is %s, not a JSON object (is it a safetensors index?)", path,
                tl_json_shown(root, vb, sizeof vb));
        goto done;
    }
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!wm) {
        tl_fail("checkpoint: %s has no \"weight_map\" (is it a safetensors index?)", path);
        goto done;
    }
    if (!cJSON_IsObject(wm)) {
        tl_fail("checkpoint: %s: \"weight_map\" is %s, not an object mapping tensor names to "
                "shard files", path, tl_json_shown(wm, vb, sizeof vb));
        goto done;
    }
    if (!wm->child) {
        tl_fail("checkpoint: %s: \"weight_map\" is empty, so the index lists no tensor (a "
                "damaged download? fetch the index again)", path);
        goto done;
    }
    const char *dup;
    int d = tl_json_duplicate_key(root, &dup);
    if (d == 0) d = tl_json_duplicate_key(wm, &dup);
    if (d != 0) {
        if (d < 0) tl_fail("checkpoint: out of memory");
        else tl_fail("checkpoint: %s: key \"%s\" appears twice", path,
                     tl_st_shown(dup, nb, sizeof nb));
        goto done;
    }
    if (add_index_meta(c, path, cJSON_GetObjectItemCaseSensitive(root, "metadata")) != 0)
        goto done;

    int n = cJSON_GetArraySize(wm), n_files = 0;
    map = calloc((size_t)n + 1, sizeof *map);
    files = calloc((size_t)n + 1, sizeof *files);
    dir = folder_of(path);
    if (!map || !files || !dir) {
        tl_fail("checkpoint: out of memory");
        goto done;
    }
    int i = 0;
    for (const cJSON *e = wm->child; e; e = e->next, i++) {
        if (!cJSON_IsString(e) || !plain_file_name(e->valuestring)) {
            tl_fail("checkpoint: %s: weight_map[\"%s\"] must be the name of a shard file in the "
                    "index's folder (no '/', not \"..\"), not %s%s%s", path,
                    tl_st_shown(e->string, nb, sizeof nb), cJSON_IsString(e) ? "\"" : "",
                    cJSON_IsString(e) ? tl_st_shown(e->valuestring, fb, sizeof fb)
                                      : tl_json_shown(e, vb, sizeof vb),
                    cJSON_IsString(e) ? "\"" : "");
            goto done;
        }
        map[i] = (mapping){e->string, e->valuestring, -1, false};
        files[i] = e->valuestring;
    }
    /* Distinct shard names, sorted: model-00001-of-... first. */
    qsort(files, (size_t)n, sizeof *files, compare_str);
    for (i = 0; i < n; i++)
        if (i == 0 || strcmp(files[i], files[n_files - 1]) != 0) files[n_files++] = files[i];
    for (i = 0; i < n; i++) {
        const char **hit =
            bsearch(&map[i].file, files, (size_t)n_files, sizeof *files, compare_str);
        map[i].shard = (int)(hit - files);
    }
    qsort(map, (size_t)n, sizeof *map, compare_mapping);
    if (check_shards(path, dir, files, n_files) != 0) goto done;

    for (int s = 0; s < n_files; s++) {
        char *shard_path = join(dir, files[s]);
        int bad = !shard_path || add_file(c, shard_path) != 0;
        free(shard_path);
        if (bad) goto done;
        const tl_st_file *f = c->files[s];
        for (int k = 0; k < f->count; k++) {
            mapping key = {.tensor = f->entries[k].name};
            mapping *m = bsearch(&key, map, (size_t)n, sizeof *map, compare_mapping);
            if (!m) {
                tl_fail("checkpoint: %s holds tensor \"%s\", which %s's weight_map does not list",
                        f->path, tl_st_shown(key.tensor, nb, sizeof nb), path);
                goto done;
            }
            if (m->shard != s) {
                tl_fail("checkpoint: tensor \"%s\" is in %s but %s maps it to %s (a tensor "
                        "must live in exactly the shard the index names)",
                        tl_st_shown(key.tensor, nb, sizeof nb), f->path, path,
                        tl_st_shown(m->file, fb, sizeof fb));
                goto done;
            }
            m->seen = true;
        }
    }
    for (i = 0; i < n; i++)
        if (!map[i].seen) {
            tl_fail("checkpoint: %s maps tensor \"%s\" to %s, but that shard does not hold it",
                    path, tl_st_shown(map[i].tensor, nb, sizeof nb),
                    tl_st_shown(map[i].file, fb, sizeof fb));
            goto done;
        }
    /* The shards' own metadata (format) after the index's. */
    for (int s = 0; s < c->file_count; s++)
        for (int k = 0; k < c->files[s]->meta_count; k++)
            if (add_meta(c, c->files[s]->meta_keys[k], c->files[s]->meta_values[k]) != 0)
                goto done;
    rc = 0;
done:
    free(dir);
    free(files);
    free(map);
    cJSON_Delete(root);
    free(text);
    return rc;
}

/* ---- the public calls --------------------------------------------------- */

/* A .safetensors file in dir (other than SINGLE_NAME), for a hint; NULL when
 * there is none or the folder cannot be listed. */
static char *any_safetensors_in(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return NULL;
    char *found = NULL;
    for (struct dirent *e; !found && (e = readdir(d));)
        if (ends_with(e->d_name, ".safetensors")) found = strdup(e->d_name);
    closedir(d);
    return found;
}

/* The file a model folder's checkpoint starts from: transformers' order, the
 * single file before the index. NULL with an error when there is neither. */
static char *entry_file_of(const char *dir) {
    char *single = join(dir, SINGLE_NAME);
    if (!single || has_entry(single)) return single;
    free(single);
    char *index = join(dir, INDEX_NAME);
    if (!index || has_entry(index)) return index;
    free(index);
    char *other = any_safetensors_in(dir), nb[128];
    if (other)
        tl_fail("checkpoint: the folder %s holds neither " SINGLE_NAME " nor " INDEX_NAME
                " but does hold %s: pass that file itself", dir,
                tl_st_shown(other, nb, sizeof nb));
    else
        tl_fail("checkpoint: the folder %s holds neither " SINGLE_NAME " nor " INDEX_NAME
                ", nor any .safetensors file (download the weights first, e.g. with "
                "`tinyllm pull REPO`)", dir);
    free(other);
    return NULL;
}

tl_checkpoint *tl_checkpoint_open(const char *path) {
    if (!path) return tl_fail("tl_checkpoint_open: path is NULL");
    tl_checkpoint *c = calloc(1, sizeof *c);
    if (!c) return tl_fail("checkpoint: out of memory");
    c->refs = 1;
    char *resolved = NULL;
    int rc = -1;
    struct stat st;
    if (stat(path, &st) != 0) {
        fail_stat(path, errno);
        goto done;
    }
    if (S_ISDIR(st.st_mode) && !(resolved = entry_file_of(path))) goto done;
    const char *p = resolved ? resolved : path;
    if (ends_with(p, ".json")) rc = open_index(c, p);
    else if ((rc = add_file(c, p)) == 0)
        for (int k = 0; k < c->files[0]->meta_count && rc == 0; k++)
            rc = add_meta(c, c->files[0]->meta_keys[k], c->files[0]->meta_values[k]);
done:
    free(resolved);
    if (rc != 0) {
        tl_checkpoint_free(c);
        return NULL;
    }
    return c;
}

/* The dtype an entry loads as: floats in want, integers and bools as they
 * are (the narrow ones widened to I64, which the runtime has). */
static tl_dtype load_dtype(tl_st_dtype stored, tl_dtype want) {
    switch (stored) {
    case TL_ST_BOOL: return TL_BOOL;
    case TL_ST_I32: return TL_I32;
    case TL_ST_I64: case TL_ST_U64: case TL_ST_U32: case TL_ST_I16: case TL_ST_U16:
    case TL_ST_I8: case TL_ST_U8:
        return TL_I64;
    default: return want;
    }
}

/* Entry e of f as a tensor of dtype dt: a view of the map when stored so,
 * else a converted copy (F32 and F16 rounded to BF16 when round_bf16), after
 * which the map's pages of e are handed back: the copy is the one resident. */
static tl_tensor *entry_tensor(const tl_st_file *f, const tl_st_entry *e, tl_dtype dt,
                               bool round_bf16) {
    const unsigned char *bytes = f->map + f->data_start + e->begin;
    size_t nbytes = e->end - e->begin;
    if (dt == TL_BF16 && round_bf16 && (e->dtype == TL_ST_F32 || e->dtype == TL_ST_F16)) {
        tl_tensor *wide = tl_st_tensor(f, e, TL_F32);
        tl_tensor *t = wide ? tl_tensor_new_owned(TL_BF16, e->ndim, e->shape) : NULL;
        if (t) tl_f32_to_bf16_n(tl_data(wide), tl_data(t), (size_t)tl_numel(t));
        tl_tensor_free(wide);
        if (t) tl_drop_file_pages(bytes, nbytes);
        return t;
    }
    tl_tensor *t = tl_st_tensor(f, e, dt);
    if (t && !t->storage->file_backed) tl_drop_file_pages(bytes, nbytes);
    return t;
}

static tl_checkpoint *load(const char *path, tl_dtype want, bool round_bf16, const char *fn) {
    if (want != TL_F32 && want != TL_BF16)
        return tl_fail("%s: want is %s; floats load as TL_F32 or TL_BF16", fn,
                       tl_dtype_name(want));
    tl_checkpoint *c = tl_checkpoint_open(path);
    if (!c) return NULL;
    int total = 0;
    for (int s = 0; s < c->file_count; s++) total += c->files[s]->count;
    c->dict.items = calloc((size_t)total + 1, sizeof *c->dict.items);
    if (!c->dict.items) {
        tl_checkpoint_free(c);
        return tl_fail("checkpoint: out of memory");
    }
    for (int s = 0; s < c->file_count; s++) {
        const tl_st_file *f = c->files[s];
        for (int k = 0; k < f->count; k++) {
            const tl_st_entry *e = &f->entries[k];
            tl_named_tensor *it = &c->dict.items[c->dict.count];
            it->tensor = entry_tensor(f, e, load_dtype(e->dtype, want), round_bf16);
            it->name = strdup(e->name);
            if (it->tensor || it->name) c->dict.count++;   /* so free() sees it */
            if (!it->tensor || !it->name) {
                if (it->tensor) tl_fail("checkpoint: out of memory");
                tl_checkpoint_free(c);
                return NULL;
            }
        }
    }
    return c;
}

tl_checkpoint *tl_checkpoint_load(const char *path, tl_dtype want) {
    return load(path, want, false, "tl_checkpoint_load");
}

tl_checkpoint *tl_checkpoint_load_rounded(const char *path, tl_dtype want) {
    return load(path, want, true, "tl_checkpoint_load_rounded");
}

void tl_checkpoint_free(tl_checkpoint *c) {
    if (!c || --c->refs > 0) return;   /* an adopting module still uses it */
    for (int i = 0; i < c->dict.count; i++) {
        free(c->dict.items[i].name);
        tl_tensor_free(c->dict.items[i].tensor);   /* views first, then their maps */
    }
    free(c->dict.items);
    for (int s = 0; s < c->file_count; s++) tl_st_close(c->files[s]);
    free(c->files);
    for (int i = 0; i < c->meta_count; i++) {
        free(c->meta_keys[i]);
        free(c->meta_values[i]);
    }
    free(c->meta_keys);
    free(c->meta_values);
    free(c);
}

tl_tensor *tl_checkpoint_get(const tl_checkpoint *c, const char *name) {
    if (!c) return tl_propagate("tl_checkpoint_get: checkpoint is NULL");
    if (!name) return tl_fail("tl_checkpoint_get: name is NULL");
    for (int i = 0; i < c->dict.count; i++)
        if (strcmp(c->dict.items[i].name, name) == 0) return c->dict.items[i].tensor;
    char nb[128];
    return tl_fail("checkpoint: no tensor named \"%s\" among its %d (from %s)",
                   tl_st_shown(name, nb, sizeof nb), c->dict.count,
                   c->file_count ? c->files[0]->path : "no file");
}
