/* tinyllm/safetensors.h: read and write .safetensors files (L0.6).
 *
 * Reading maps the file read-only and checks every rule of the format (see
 * docs: header size, JSON, duplicate keys, contiguous offsets, byte counts,
 * dtypes); each violation has its own message naming the file and the
 * tensor. Tensors stored in the asked dtype are zero-copy views of the map.
 */
#ifndef TINYLLM_SAFETENSORS_H
#define TINYLLM_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include "tinyllm/nn.h"
#include "tinyllm/tensor.h"

/* Stored dtypes the reader knows. Values the runtime computes with map to
 * tl_dtype; the others are readable through tl_st_file only. */
typedef enum {
    TL_ST_BOOL, TL_ST_U8, TL_ST_I8, TL_ST_I16, TL_ST_U16, TL_ST_F16, TL_ST_BF16,
    TL_ST_I32, TL_ST_U32, TL_ST_F32, TL_ST_F64, TL_ST_I64, TL_ST_U64,
    TL_ST_F8_E4M3, TL_ST_F8_E5M2
} tl_st_dtype;

typedef struct {
    char *name;
    tl_st_dtype dtype;
    int ndim;
    int64_t shape[TL_MAX_DIMS];
    size_t begin, end;          /* byte offsets into the data section */
} tl_st_entry;

typedef struct {
    char *path;
    const unsigned char *map;   /* the whole file, read-only */
    size_t map_size;
    size_t data_start;          /* 8 + header length */
    tl_st_entry *entries;       /* in file (offset) order */
    int count;
    char **meta_keys, **meta_values;   /* __metadata__ */
    int meta_count;
} tl_st_file;

/* Opens and validates; NULL with an error naming path and the broken rule. */
tl_st_file *tl_st_open(const char *path);
void tl_st_close(tl_st_file *f);
const tl_st_entry *tl_st_find(const tl_st_file *f, const char *name);
const char *tl_st_dtype_name(tl_st_dtype dt);
/* The entry as a tensor: a zero-copy view of the map (owned struct, free with
 * tl_tensor_free, valid while f is open) when the stored dtype is `want`,
 * else an owned converted copy (BF16 and F16 to F32 exactly). */
tl_tensor *tl_st_tensor(const tl_st_file *f, const tl_st_entry *e, tl_dtype want);

/* A loaded checkpoint: one file, or every shard of an index, as one dict.
 * Tensors are owned by the checkpoint and freed with it. A module that
 * adopts it (nn.h: tl_module_adopt_checkpoint) holds a reference of its own,
 * so the checkpoint lives until both tl_checkpoint_free and tl_module_free
 * have run. */
typedef struct tl_checkpoint {
    tl_state_dict dict;          /* names in file order (shards in index order) */
    tl_st_file **files;
    int file_count;
    char **meta_keys, **meta_values;
    int meta_count;
    int refs;                    /* references: 1 from the load, 1 per adopting module */
} tl_checkpoint;

/* path: a .safetensors file, a model.safetensors.index.json, or a folder
 * holding either (model.safetensors first, as transformers does). want: the
 * dtype float tensors are returned in (F32 converts exactly; BF16 only
 * shares BF16 data); integer and bool tensors keep their own dtype. meta:
 * a single file's __metadata__, or the index's "metadata" then the shards'.
 * Only regular files are read. An index names each shard by a plain file
 * name in its folder, once; a shard that is a symlink must resolve inside
 * that folder (or, in the Hugging Face cache, the repo's blobs folder). */
tl_checkpoint *tl_checkpoint_load(const char *path, tl_dtype want);
/* The same files and checks without making any tensor (dict is empty): for
 * tools that list what a checkpoint holds. Free with tl_checkpoint_free. */
tl_checkpoint *tl_checkpoint_open(const char *path);
void tl_checkpoint_free(tl_checkpoint *c);
tl_tensor *tl_checkpoint_get(const tl_checkpoint *c, const char *name);

/* Writes tensors in HF's order (dtype size descending, then name), header
 * padded with spaces to a multiple of 8, metadata {"format": "pt"} plus the
 * given pairs. save_dtype: TL_F32 or TL_BF16 (floats converted RNE) or the
 * tensor's own when -1. Written to path.tmp and renamed: never partial. */
int tl_st_save(const char *path, const tl_state_dict *sd, int save_dtype,
               const char *const *meta_keys, const char *const *meta_values, int meta_count);
/* Sharded save into dir: model-0000k-of-0000n.safetensors files of at most
 * max_shard_bytes each (a larger tensor gets a shard of its own) and
 * model.safetensors.index.json; a single model.safetensors when it fits.
 * The other layout's entry file, left by an earlier save, is removed. */
int tl_st_save_sharded(const char *dir, const tl_state_dict *sd, int save_dtype,
                       size_t max_shard_bytes);

#endif
