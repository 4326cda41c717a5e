/* safetensors_write.c: write a state dict as HF writes it (L0.6).
 *
 * Byte for byte what the Rust library produces (safetensors/src/tensor.rs,
 * `prepare`): tensors sorted by dtype rank descending, then by name; offsets
 * contiguous from 0; compact JSON with "__metadata__" first; the header
 * padded with spaces to a multiple of 8 so every tensor's data is aligned.
 * A file is written under a new name beside path (tl_create_temp_beside),
 * synced, then renamed: a crash leaves the old file or the new one, never
 * half of one.
 */
#include "safetensors_internal.h"
#include "tinyllm/files.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tinyllm/bf16.h"

/* ---- a growing string, for the JSON header ------------------------------ */

typedef struct {
    char *buf;
    size_t len, cap;
    bool failed;   /* out of memory: checked once, at the end */
} strbuf;

static void sb_put(strbuf *sb, const char *s, size_t n) {
    if (sb->failed) return;
    if (sb->len + n + 1 > sb->cap) {
        size_t cap = sb->cap ? sb->cap : 256;
        while (cap < sb->len + n + 1) cap *= 2;
        char *grown = realloc(sb->buf, cap);
        if (!grown) {
            sb->failed = true;
            return;
        }
        sb->buf = grown;
        sb->cap = cap;
    }
    memcpy(sb->buf + sb->len, s, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

static void sb_puts(strbuf *sb, const char *s) { sb_put(sb, s, strlen(s)); }

static void sb_u64(strbuf *sb, uint64_t v) {
    char tmp[24];
    sb_put(sb, tmp, (size_t)snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v));
}

/* A JSON string as serde_json writes it: only '"', '\\' and control bytes
 * are escaped; UTF-8 passes through. */
static void sb_json_string(strbuf *sb, const char *s) {
    sb_put(sb, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        const char *esc = NULL;
        char tmp[8];
        switch (*p) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        default:
            if (*p < 0x20) {
                snprintf(tmp, sizeof tmp, "\\u%04x", *p);
                esc = tmp;
            }
        }
        if (esc) sb_puts(sb, esc);
        else sb_put(sb, (const char *)p, 1);
    }
    sb_put(sb, "\"", 1);
}

/* ---- what gets written -------------------------------------------------- */

/* Rank of a dtype in the Rust enum (declared in increasing alignment); the
 * writer sorts by it, descending. */
static int dtype_rank(tl_st_dtype dt) {
    switch (dt) {
    case TL_ST_BOOL: return 0;
    case TL_ST_U8: return 1;
    case TL_ST_I8: return 2;
    case TL_ST_F8_E5M2: return 3;
    case TL_ST_F8_E4M3: return 4;
    case TL_ST_I16: return 5;
    case TL_ST_U16: return 6;
    case TL_ST_F16: return 7;
    case TL_ST_BF16: return 8;
    case TL_ST_I32: return 9;
    case TL_ST_U32: return 10;
    case TL_ST_F32: return 11;
    case TL_ST_F64: return 12;
    case TL_ST_I64: return 13;
    case TL_ST_U64: return 14;
    }
    return -1;
}

static tl_st_dtype stored_dtype(tl_dtype dt) {
    switch (dt) {
    case TL_F32: return TL_ST_F32;
    case TL_BF16: return TL_ST_BF16;
    case TL_I32: return TL_ST_I32;
    case TL_I64: return TL_ST_I64;
    case TL_BOOL: return TL_ST_BOOL;
    }
    return TL_ST_F32;
}

typedef struct {
    const char *name;
    const tl_tensor *tensor;
    tl_dtype out;        /* the dtype written */
    uint64_t nbytes;
} planned;

static int compare_planned(const void *pa, const void *pb) {
    const planned *a = pa, *b = pb;
    int ra = dtype_rank(stored_dtype(a->out)), rb = dtype_rank(stored_dtype(b->out));
    if (ra != rb) return rb - ra;
    return strcmp(a->name, b->name);
}

/* Two slots under one name would make a header with a duplicate key. */
static int compare_name_ptrs(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int check_unique_names(const char *path, const planned *p, int n) {
    const char **names = malloc(((size_t)n + 1) * sizeof *names);
    if (!names) {
        return tl_fail_status("safetensors: %s: out of memory", path);
    }
    for (int i = 0; i < n; i++) names[i] = p[i].name;
    qsort(names, (size_t)n, sizeof *names, compare_name_ptrs);
    int rc = 0;
    for (int i = 1; i < n && rc == 0; i++)
        if (strcmp(names[i - 1], names[i]) == 0) {
            char nb[128];
            tl_fail("safetensors: %s: the state dict names \"%s\" twice (mark the second slot "
                    "shared if it is a tied tensor)", path, tl_st_shown(names[i], nb, sizeof nb));
            rc = -1;
        }
    free(names);
    return rc;
}

/* The dtype a tensor is written in: floats in save_dtype unless it is -1,
 * integers and bools as they are. */
static tl_dtype output_dtype(const tl_tensor *t, int save_dtype) {
    return save_dtype >= 0 && tl_dtype_is_float(t->dtype) ? (tl_dtype)save_dtype : t->dtype;
}

/* The slots to write, in file order (a shared slot is the second name of a
 * tensor already listed: written once, under its first name). */
static planned *plan(const char *path, const tl_state_dict *sd, int save_dtype, int *count) {
    planned *p = calloc((size_t)sd->count + 1, sizeof *p);
    if (!p) return tl_fail("safetensors: %s: out of memory", path);
    int n = 0;
    for (int i = 0; i < sd->count; i++) {
        const tl_named_tensor *it = &sd->items[i];
        if (it->shared) continue;
        if (!it->name || !it->tensor) {
            free(p);
            return tl_fail("safetensors: %s: state dict slot %d has a NULL %s", path, i,
                           it->name ? "tensor" : "name");
        }
        p[n].name = it->name;
        p[n].tensor = it->tensor;
        p[n].out = output_dtype(it->tensor, save_dtype);
        p[n].nbytes = (uint64_t)tl_numel(it->tensor) * tl_dtype_size(p[n].out);
        n++;
    }
    if (check_unique_names(path, p, n) != 0) {
        free(p);
        return NULL;
    }
    qsort(p, (size_t)n, sizeof *p, compare_planned);
    *count = n;
    return p;
}

static void header_json(strbuf *sb, const planned *p, int n, const char *const *keys,
                        const char *const *values, int meta_count) {
    const char *format = "pt";
    for (int i = 0; i < meta_count; i++)
        if (strcmp(keys[i], "format") == 0) format = values[i];   /* the caller's wins */
    sb_puts(sb, "{\"__metadata__\":{\"format\":");
    sb_json_string(sb, format);
    for (int i = 0; i < meta_count; i++) {
        if (strcmp(keys[i], "format") == 0) continue;
        sb_puts(sb, ",");
        sb_json_string(sb, keys[i]);
        sb_puts(sb, ":");
        sb_json_string(sb, values[i]);
    }
    sb_puts(sb, "}");
    uint64_t offset = 0;
    for (int i = 0; i < n; i++) {
        const tl_tensor *t = p[i].tensor;
        sb_puts(sb, ",");
        sb_json_string(sb, p[i].name);
        sb_puts(sb, ":{\"dtype\":\"");
        sb_puts(sb, tl_st_dtype_name(stored_dtype(p[i].out)));
        sb_puts(sb, "\",\"shape\":[");
        for (int d = 0; d < t->ndim; d++) {
            if (d) sb_puts(sb, ",");
            sb_u64(sb, (uint64_t)t->shape[d]);
        }
        sb_puts(sb, "],\"data_offsets\":[");
        sb_u64(sb, offset);
        sb_puts(sb, ",");
        sb_u64(sb, offset + p[i].nbytes);
        sb_puts(sb, "]}");
        offset += p[i].nbytes;
    }
    sb_puts(sb, "}");
    while (sb->len % 8) sb_puts(sb, " ");
}

/* Writes one tensor's values in dtype out, converting in chunks. */
static int write_tensor(FILE *fp, const planned *p) {
    const tl_tensor *t = p->tensor;
    tl_tensor *dense = NULL;
    if (!tl_is_contiguous(t)) {
        dense = tl_tensor_copy_owned(t);
        if (!dense) return -1;
        t = dense;
    }
    size_t n = (size_t)tl_numel(t);
    int rc = 0;
    if (n > 0) {
        const void *data = tl_data(t);
        if (t->dtype == p->out) {
            rc = fwrite(data, tl_dtype_size(t->dtype), n, fp) == n ? 0 : -1;
        } else {   /* F32 <-> BF16, the only float pair */
            enum { CHUNK = 4096 };
            union { float f[CHUNK]; uint16_t h[CHUNK]; } buf;
            for (size_t i = 0; i < n && rc == 0; i += CHUNK) {
                size_t k = n - i < CHUNK ? n - i : CHUNK;
                if (p->out == TL_BF16) {
                    tl_f32_to_bf16_n((const float *)data + i, buf.h, k);
                    rc = fwrite(buf.h, 2, k, fp) == k ? 0 : -1;
                } else {
                    tl_bf16_to_f32_n((const uint16_t *)data + i, buf.f, k);
                    rc = fwrite(buf.f, 4, k, fp) == k ? 0 : -1;
                }
            }
        }
    }
    tl_tensor_free(dense);
    return rc;
}

/* Writes bytes (header and tensors) to a new file beside path, syncs, renames. */
static int write_atomically(const char *path, const strbuf *header, const planned *p, int n) {
    size_t tmp_size = strlen(path) + 16;
    char *tmp = malloc(tmp_size);
    if (!tmp) {
        return tl_fail_status("safetensors: %s: out of memory", path);
    }
    FILE *fp = tl_create_temp_beside(path, tmp, tmp_size);
    if (!fp) {
        tl_fail("safetensors: cannot create a file beside %s: %s (does the folder exist and is "
                "it writable?)", path, strerror(errno));
        free(tmp);
        return -1;
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)header->len >> (8 * i));
    bool ok = fwrite(len8, 1, 8, fp) == 8 && fwrite(header->buf, 1, header->len, fp) == header->len;
    for (int i = 0; i < n && ok; i++) ok = write_tensor(fp, &p[i]) == 0;
    if (ok && fflush(fp) != 0) ok = false;
    if (ok && fsync(fileno(fp)) != 0) ok = false;
    int err = ok ? 0 : errno;
    if (fclose(fp) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        tl_fail("safetensors: cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        free(tmp);
        return -1;
    }
    if (!ok) {
        tl_fail("safetensors: writing %s failed: %s (is the disk full?); nothing was written "
                "under that name", path, strerror(err ? err : EIO));
        unlink(tmp);
    }
    free(tmp);
    return ok ? 0 : -1;
}

int tl_st_save(const char *path, const tl_state_dict *sd, int save_dtype,
               const char *const *meta_keys, const char *const *meta_values, int meta_count) {
    if (!path || !sd || (sd->count > 0 && !sd->items)) {
        return tl_fail_status("tl_st_save: path or state dict is NULL");
    }
    if (save_dtype != -1 && save_dtype != TL_F32 && save_dtype != TL_BF16) {
        return tl_fail_status("safetensors: %s: save_dtype is %d; use TL_F32, TL_BF16, or -1 for "
                              "each tensor's own dtype", path, save_dtype);
    }
    if (meta_count < 0 || (meta_count > 0 && (!meta_keys || !meta_values))) {
        return tl_fail_status("safetensors: %s: %d metadata pairs but no keys or values", path,
                              meta_count);
    }
    for (int i = 0; i < meta_count; i++) {
        if (!meta_keys[i] || !meta_values[i]) {
            return tl_fail_status("safetensors: %s: metadata pair %d has a NULL key or value",
                                  path, i);
        }
        for (int j = 0; j < i; j++)
            if (strcmp(meta_keys[i], meta_keys[j]) == 0) {
                char kb[128];
                return tl_fail_status("safetensors: %s: metadata key \"%s\" given twice", path,
                                      tl_st_shown(meta_keys[i], kb, sizeof kb));
            }
    }

    int n = 0;
    planned *p = plan(path, sd, save_dtype, &n);
    if (!p) return -1;
    int rc = -1;
    strbuf header = {0};
    header_json(&header, p, n, meta_keys, meta_values, meta_count);
    if (header.failed) {
        tl_fail("safetensors: %s: out of memory building the header", path);
        goto done;
    }
    rc = write_atomically(path, &header, p, n);
done:
    free(header.buf);
    free(p);
    return rc;
}

/* ---- shards ------------------------------------------------------------- */

static char *join_path(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *s = malloc(a + b + 2);
    if (!s) return tl_fail("safetensors: out of memory");
    memcpy(s, dir, a);
    s[a] = '/';
    memcpy(s + a + 1, name, b + 1);
    return s;
}

typedef struct {
    const char *name;
    int shard;
} name_shard;

static int compare_name_shard(const void *a, const void *b) {
    return strcmp(((const name_shard *)a)->name, ((const name_shard *)b)->name);
}

/* model.safetensors.index.json as transformers writes it (indent 2, keys
 * sorted): {"metadata": {"total_size": N}, "weight_map": {name: file}}. */
static int write_index(const char *dir, name_shard *map, int n, int n_shards, uint64_t total) {
    qsort(map, (size_t)n, sizeof *map, compare_name_shard);
    strbuf sb = {0};
    sb_puts(&sb, "{\n  \"metadata\": {\n    \"total_size\": ");
    sb_u64(&sb, total);
    sb_puts(&sb, "\n  },\n  \"weight_map\": {");
    for (int i = 0; i < n; i++) {
        char file[64];
        snprintf(file, sizeof file, "model-%05d-of-%05d.safetensors", map[i].shard + 1, n_shards);
        sb_puts(&sb, i ? ",\n    " : "\n    ");
        sb_json_string(&sb, map[i].name);
        sb_puts(&sb, ": ");
        sb_json_string(&sb, file);
    }
    sb_puts(&sb, "\n  }\n}\n");

    char *path = join_path(dir, "model.safetensors.index.json");
    size_t tmp_size = path ? strlen(path) + 16 : 0;
    char *tmp = path ? malloc(tmp_size) : NULL;
    int rc = -1;
    if (sb.failed || !tmp) {
        tl_fail("safetensors: %s: out of memory writing the index", dir);
        goto done;
    }
    FILE *fp = tl_create_temp_beside(path, tmp, tmp_size);
    if (!fp) {
        tl_fail("safetensors: cannot create a file beside %s: %s", path, strerror(errno));
        goto done;
    }
    bool ok = fwrite(sb.buf, 1, sb.len, fp) == sb.len && fflush(fp) == 0 && fsync(fileno(fp)) == 0;
    ok = (fclose(fp) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        tl_fail("safetensors: writing %s failed: %s", path, strerror(errno));
        unlink(tmp);
        goto done;
    }
    rc = 0;
done:
    free(sb.buf);
    free(path);
    free(tmp);
    return rc;
}

/* A folder holds one checkpoint: the other layout's entry file, left by an
 * earlier save, would be loaded instead of (or beside) the new one. */
static void remove_stale(const char *dir, const char *name) {
    char *path = join_path(dir, name);
    if (path) unlink(path);
    free(path);
}

int tl_st_save_sharded(const char *dir, const tl_state_dict *sd, int save_dtype,
                       size_t max_shard_bytes) {
    if (!dir || !sd || (sd->count > 0 && !sd->items)) {
        return tl_fail_status("tl_st_save_sharded: folder or state dict is NULL");
    }
    if (max_shard_bytes == 0) {
        return tl_fail_status("safetensors: %s: max_shard_bytes is 0; give the largest shard size "
                              "in bytes", dir);
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        return tl_fail_status("safetensors: cannot create the folder %s: %s", dir, strerror(errno));
    }

    /* Shards follow the state dict's order, as huggingface_hub splits them:
     * a shard closes when the next tensor would overflow it, and a tensor
     * larger than the limit gets a shard of its own. */
    int n = 0;
    planned *p = plan(dir, sd, save_dtype, &n);
    if (!p) return -1;
    free(p);   /* only plan()'s checks are wanted: shards keep the state dict's order */

    name_shard *map = calloc((size_t)sd->count + 1, sizeof *map);
    tl_named_tensor *items = calloc((size_t)sd->count + 1, sizeof *items);
    int rc = -1, n_shards = 0, m = 0;
    uint64_t total = 0, in_shard = 0;
    if (!map || !items) {
        tl_fail("safetensors: %s: out of memory", dir);
        goto done;
    }
    for (int i = 0; i < sd->count; i++) {
        const tl_named_tensor *it = &sd->items[i];
        if (it->shared) continue;
        uint64_t bytes = (uint64_t)tl_numel(it->tensor) *
                         tl_dtype_size(output_dtype(it->tensor, save_dtype));
        if (m == 0 || (in_shard > 0 && in_shard + bytes > max_shard_bytes)) {
            n_shards++;
            in_shard = 0;
        }
        map[m].name = it->name;
        map[m].shard = n_shards - 1;
        m++;
        in_shard += bytes;
        total += bytes;
        if (bytes > max_shard_bytes) in_shard = max_shard_bytes;   /* nothing joins it */
    }
    if (n_shards > 99999) {
        tl_fail("safetensors: %s: %d shards; raise max_shard_bytes", dir, n_shards);
        goto done;
    }

    if (n_shards <= 1) {
        char *path = join_path(dir, "model.safetensors");
        rc = path ? tl_st_save(path, sd, save_dtype, NULL, NULL, 0) : -1;
        free(path);
        if (rc == 0) remove_stale(dir, "model.safetensors.index.json");
        goto done;
    }
    for (int s = 0; s < n_shards; s++) {
        tl_state_dict part = {items, 0};
        int k = 0;
        for (int i = 0; i < sd->count; i++) {
            if (sd->items[i].shared) continue;
            if (map[k++].shard == s) items[part.count++] = sd->items[i];
        }
        char file[64];
        snprintf(file, sizeof file, "model-%05d-of-%05d.safetensors", s + 1, n_shards);
        char *path = join_path(dir, file);
        int bad = !path || tl_st_save(path, &part, save_dtype, NULL, NULL, 0) != 0;
        free(path);
        if (bad) goto done;
    }
    rc = write_index(dir, map, m, n_shards, total);
    if (rc == 0) remove_stale(dir, "model.safetensors");
done:
    free(map);
    free(items);
    return rc;
}
