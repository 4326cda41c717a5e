/* fuzz_inspect.c: libFuzzer harness for `tinyllm inspect` (tools/tinyllm/
 * inspect.c), which opens checkpoints with tl_checkpoint_open and prints
 * what the reader accepted: shapes, sizes, names, metadata.
 *
 * The first input byte picks the mode: even, the rest is a .safetensors file
 * inspected by path; odd, the rest is model.safetensors.index.json in the
 * folder of fuzz_model_dir.h, inspected by folder. The verb must exit 0 or
 * 1. Run with -close_fd_mask=3 (as `make fuzz` does) to keep its output
 * quiet. Build and run: `make fuzz` (see mk/fuzz.mk).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_model_dir.h"
#include "../../tools/tinyllm/verbs.h"

static char file_path[sizeof model_root + 32];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    model_dir_make();
    atexit(model_dir_remove);   /* -max_total_time and -runs end with exit() */
    snprintf(file_path, sizeof file_path, "%s/fuzzed.safetensors", model_root);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    char *argv[] = {"inspect", model_dir, NULL};
    if (data[0] % 2 == 0) {
        FILE *fp = fopen(file_path, "wb");
        if (!fp || fwrite(data + 1, 1, size - 1, fp) != size - 1) abort();
        fclose(fp);
        argv[1] = file_path;
    } else {
        model_dir_write_index(data + 1, size - 1);
    }
    int status = tinyllm_inspect(2, argv);
    if (status != 0 && status != 1) {
        fprintf(stderr, "fuzz_inspect: exit status %d, expected 0 or 1\n", status);
        abort();
    }
    return 0;
}
