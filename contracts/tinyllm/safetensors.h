/* tinyllm/safetensors.h: read and write .safetensors files (L0.6).
 *
 * Reading maps the file read-only and checks every rule of the format before
 * any tensor is made: at least 8 bytes; a header length of at most 100 MB
 * that fits the file; a header of valid UTF-8 JSON (no NUL, no \u0000, at
 * most 127 levels deep, numbers as JSON allows) that is an object; no
 * duplicate key; every entry an object with "dtype" (a known name), "shape"
 * (at most 6 whole non-negative sizes whose product fits) and
 * "data_offsets" (two whole numbers, begin <= end); entries tiling the data
 * section from 0 without gap or overlap, each exactly numel * element size
 * bytes, the last ending at the end of the file; "__metadata__", when
 * present, an object of strings. Each violation has its own message,
 * "safetensors: <path>: <what is wrong, naming the tensor>" (the rules and
 * their messages are pinned one by one in tests/core/test_safetensors.c).
 * Tensors stored in the asked dtype are zero-copy, read-only views of the
 * map. Errors follow tensor.h.
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

/* Opens path (a regular file) and validates it as above. Returns the file,
 * owned by the caller (tl_st_close), or NULL: path NULL ("tl_st_open: path
 * is NULL"); a path that is missing, a folder, a FIFO, a device or a broken
 * link ("safetensors: <path>: ..." saying which); any broken rule; memory. */
tl_st_file *tl_st_open(const char *path);
void tl_st_close(tl_st_file *f);   /* unmaps and frees; NULL is a no-op */
/* The entry named name (owned by f). Errors: f NULL (its cause kept, else
 * "tl_st_find: file is NULL"); name NULL ("tl_st_find: name is NULL"); no
 * such tensor ("safetensors: <path>: no tensor named \"x\" (the file holds
 * 3)"). */
const tl_st_entry *tl_st_find(const tl_st_file *f, const char *name);
const char *tl_st_dtype_name(tl_st_dtype dt);   /* "F32", "BF16", ..., "F8_E5M2" */
/* The entry as a tensor of dtype want: a zero-copy read-only view of the map
 * (an owned header: tl_tensor_free; valid while f is open) when it is stored
 * as want and aligned for it; else an owned converted copy, when the
 * conversion is exact (BF16 and F16 to F32; narrower integers to I64 or
 * I32). Errors: f or e NULL ("tl_st_tensor: file or entry is NULL"); want not
 * a dtype ("tl_st_tensor: want is 9, not a tl_dtype"); a lossy conversion
 * ("safetensors: <path>: tensor \"w\" is stored as F32, which cannot become
 * BF16 without losing information (floats load as F32, integers as I64)"). */
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

/* Loads a checkpoint, validated as tl_st_open does each file. path: a
 * .safetensors file, a model.safetensors.index.json, or a folder holding
 * either (model.safetensors first, as transformers does). want: the dtype
 * float tensors are returned in: TL_F32 (views of F32 data, exact copies of
 * BF16 and F16) or TL_BF16 (views of BF16 data; F32 refused as lossy);
 * integer and bool tensors keep their own dtype (narrow integers as I64).
 * A converted tensor is the only resident copy: the map's pages it was read
 * from are handed back to the kernel. meta: a single file's __metadata__, or
 * the index's "metadata" then the shards'. Only regular files are read. An
 * index names each shard by a plain file name in its folder, once; a shard
 * that is a symlink must resolve inside that folder (or, in the Hugging Face
 * cache, the repo's blobs folder). Returns the checkpoint, owned by the
 * caller (tl_checkpoint_free), or NULL: want not a float dtype
 * ("tl_checkpoint_load: want is I64; floats load as TL_F32 or TL_BF16");
 * each file's errors (tl_st_open, tl_st_tensor); the folder's and index's
 * ("checkpoint: the folder <dir> holds neither model.safetensors nor
 * model.safetensors.index.json ...", "checkpoint: <index> has no
 * \"weight_map\" ...", a tensor in the wrong shard, a shard linking out of
 * the folder, each naming the file and the tensor). */
tl_checkpoint *tl_checkpoint_load(const char *path, tl_dtype want);
/* As tl_checkpoint_load, but with want TL_BF16 the F32 and F16 floats are
 * rounded to BF16, nearest with ties to even (torch's .to(torch.bfloat16)):
 * for running a wider checkpoint in BF16. Errors as tl_checkpoint_load's,
 * naming tl_checkpoint_load_rounded. */
tl_checkpoint *tl_checkpoint_load_rounded(const char *path, tl_dtype want);
/* The same files and checks without making any tensor (dict is empty): for
 * tools that list what a checkpoint holds. Errors as tl_checkpoint_load's
 * (path NULL: "tl_checkpoint_open: path is NULL"). Free with
 * tl_checkpoint_free. */
tl_checkpoint *tl_checkpoint_open(const char *path);
/* Releases the caller's reference: the checkpoint, its tensors and maps are
 * freed when no module that adopted it is left (nn.h). NULL is a no-op. */
void tl_checkpoint_free(tl_checkpoint *c);
/* The tensor called name, owned by c. Errors: c NULL (its cause kept, else
 * "tl_checkpoint_get: checkpoint is NULL"); name NULL ("tl_checkpoint_get:
 * name is NULL"); absent ("checkpoint: no tensor named \"x\" among its 3
 * (from <path>)"). */
tl_tensor *tl_checkpoint_get(const tl_checkpoint *c, const char *name);

/* Writes the state dict's tensors (any strides; a shared slot is skipped, as HF
 * saves a tied head once) in HF's order (dtype size descending, then name), the
 * header padded with spaces to a multiple of 8, metadata {"format": "pt"} plus
 * the given pairs. save_dtype: TL_F32 or TL_BF16 (floats converted, BF16
 * round-to-nearest-even) or -1 for each tensor's own. Written to a new file
 * beside path (path.tmp.XXXXXX, tinyllm/files.h), synced and renamed: a failed
 * save leaves no file under path. Returns 0 or -1: path or sd NULL
 * ("tl_st_save: path or state dict is NULL"); a bad save_dtype ("safetensors:
 * <path>: save_dtype is 9; use TL_F32, TL_BF16, or -1 ..."); metadata counts
 * without arrays, a NULL or repeated key ("safetensors: <path>: metadata key
 * \"k\" given twice"); a name given twice ("safetensors: <path>: the state dict
 * names \"w\" twice"); a NULL slot ("safetensors: <path>: state dict slot 2 has
 * a NULL tensor"); the file system ("safetensors: cannot create a file beside
 * <path>: ...", "safetensors: writing <path> failed: ... (is the disk full?)"). */
int tl_st_save(const char *path, const tl_state_dict *sd, int save_dtype,
               const char *const *meta_keys, const char *const *meta_values, int meta_count);
/* Sharded save into dir (created if missing): model-0000k-of-0000n.safetensors
 * files of at most max_shard_bytes each (a larger tensor gets a shard of its
 * own) and model.safetensors.index.json, or a single model.safetensors when
 * everything fits. The other layout's entry file, left by an earlier save, is
 * removed. Returns 0 or -1: dir or sd NULL ("tl_st_save_sharded: folder or
 * state dict is NULL"); max_shard_bytes 0 ("safetensors: <dir>:
 * max_shard_bytes is 0; ..."); a folder that cannot be made ("safetensors:
 * cannot create the folder <dir>: ..."); more than 99999 shards; the errors
 * of tl_st_save. */
int tl_st_save_sharded(const char *dir, const tl_state_dict *sd, int save_dtype,
                       size_t max_shard_bytes);

#endif
