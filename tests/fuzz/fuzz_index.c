/* fuzz_index.c: libFuzzer harness for sharded checkpoints.
 *
 * The input is model.safetensors.index.json in a folder with two valid
 * shards and two symlinks (see fuzz_model_dir.h); the folder is loaded with
 * tl_checkpoint_load. The harness aborts when the loader fails without a
 * message, or succeeds having opened a file outside the folder or without
 * making every tensor. Build and run: `make fuzz` (see mk/fuzz.mk).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tinyllm/safetensors.h"
#include "fuzz_model_dir.h"

#define require(cond)                                                  \
    do {                                                               \
        if (!(cond)) {                                                 \
            fprintf(stderr, "fuzz_index: broken promise: %s\n", #cond); \
            abort();                                                   \
        }                                                              \
    } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    model_dir_make();
    atexit(model_dir_remove);   /* -max_total_time and -runs end with exit() */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    model_dir_write_index(data, size);
    tl_clear_error();
    tl_checkpoint *c = tl_checkpoint_load(model_dir, TL_F32);
    if (!c) {
        require(tl_error() != NULL);
        tl_clear_error();
        return 0;
    }
    int tensors = 0;
    for (int s = 0; s < c->file_count; s++) {
        require(model_dir_contains(c->files[s]->path));
        struct stat a, b;
        require(stat(c->files[s]->path, &a) == 0);
        for (int t = 0; t < s; t++)   /* each shard once, under one name */
            require(stat(c->files[t]->path, &b) == 0 &&
                    (a.st_dev != b.st_dev || a.st_ino != b.st_ino));
        tensors += c->files[s]->count;
    }
    require(c->dict.count == tensors);
    for (int i = 0; i < c->dict.count; i++) require(c->dict.items[i].tensor != NULL);
    tl_checkpoint_free(c);
    tl_clear_error();
    return 0;
}
