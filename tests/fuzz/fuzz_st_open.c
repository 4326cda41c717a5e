/* fuzz_st_open.c: libFuzzer harness for the safetensors reader.
 *
 * The input is a whole .safetensors file. It is written to a memfd (no disk
 * traffic) and opened through /proc/self/fd/N, then every tensor is read as
 * F32 (and as each other runtime dtype). Besides the sanitizers' findings, the harness aborts when the reader
 * breaks its own promises: a failure without a message, or an accepted
 * entry whose bytes do not lie inside the file. Build and run: `make fuzz`
 * (see mk/fuzz.mk).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tinyllm/safetensors.h"

/* Aborts with a reason: libFuzzer saves the input that got here. */
#define require(cond)                                                   \
    do {                                                                \
        if (!(cond)) {                                                  \
            fprintf(stderr, "fuzz_st_open: broken promise: %s\n", #cond); \
            abort();                                                    \
        }                                                               \
    } while (0)

static volatile unsigned char sink;   /* keeps the reads below from being optimized out */

/* Reads the entry as every runtime dtype: F32 (the task's case) and the
 * others, so views, conversions and refusals all run. */
static void check_entry(const tl_st_file *f, const tl_st_entry *e) {
    require(e->name != NULL);
    require(e->begin <= e->end && e->end <= f->map_size - f->data_start);
    require(e->ndim >= 0 && e->ndim <= TL_MAX_DIMS);
    static const tl_dtype wants[] = {TL_F32, TL_BF16, TL_I32, TL_I64, TL_BOOL};
    for (size_t w = 0; w < sizeof wants / sizeof wants[0]; w++) {
        tl_clear_error();
        tl_tensor *t = tl_st_tensor(f, e, wants[w]);
        if (!t) {
            require(tl_error() != NULL);
            continue;
        }
        require(t->ndim == e->ndim && t->dtype == wants[w]);
        /* Touch every byte: a view or copy that reaches past the map faults here. */
        const unsigned char *bytes = tl_data(t);
        size_t n = (size_t)tl_numel(t) * tl_dtype_size(t->dtype);
        for (size_t i = 0; i < n; i++) sink ^= bytes[i];
        tl_tensor_free(t);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int fd = memfd_create("fuzz.safetensors", MFD_CLOEXEC);
    if (fd < 0) return 0;
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    tl_clear_error();
    tl_st_file *f = tl_st_open(path);
    if (!f) {
        require(tl_error() != NULL);
    } else {
        require(f->data_start >= 8 && f->data_start <= f->map_size);
        for (int i = 0; i < f->count; i++) check_entry(f, &f->entries[i]);
        for (int i = 0; i < f->meta_count; i++)
            require(f->meta_keys[i] != NULL && f->meta_values[i] != NULL);
        tl_st_close(f);
    }
    close(fd);
    tl_clear_error();
    return 0;
}
