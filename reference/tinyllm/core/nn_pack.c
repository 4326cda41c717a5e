/* nn_pack.c: tl_weights_pack, a model's weights moved into one region of huge
 * pages after the load (nn.h).
 *
 * Why. Every decode step reads every weight once, and a prefill's GEMMs
 * stream them too. In 4 KiB pages that is a TLB miss every 4 KiB (SmolLM2's
 * 270 MB of BF16 weights are 66,000 pages); and a mapped checkpoint's pages
 * are the kernel's page cache, which on the course's virtual machine read
 * slower than anonymous memory after other memory had been in use: the first
 * pass over the head after a prefill took 8 to 12 ms against 2 (course/MS-L7/
 * README.md 4.12). Copied into anonymous memory aligned to 2 MiB and marked
 * for transparent huge pages, the same bytes are 135 pages.
 *
 * How. Each distinct storage the tensors use is copied once, in the order the
 * tensors come, into one region, 64-byte aligned. Each copy is a storage of
 * its own inside the region (so a fused weight keeps its record of parts,
 * and the region goes when its last tensor does), and every tensor that used
 * the old storage is pointed at the copy: same offset, shape and strides.
 * The old storage is released; pages of a mapped file are handed back.
 * Everything that can fail is done before the first tensor changes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tinyllm/nn.h"

enum { PACK_ALIGN = 64 };

static size_t aligned_size(size_t n) { return (n + PACK_ALIGN - 1) / PACK_ALIGN * PACK_ALIGN; }

/* Why the tensors cannot be packed, into the error; true when they can. */
static bool packable(tl_tensor *const *tensors, int n) {
    if (n < 0 || (n > 0 && !tensors))
        return tl_fail("tl_weights_pack: needs n >= 0 tensors and an array of them (got n=%d%s)",
                       n, tensors ? "" : " and no array"), false;
    for (int i = 0; i < n; i++) {
        const tl_tensor *t = tensors[i];
        char sh[96];
        if (!t) return tl_propagate("tl_weights_pack: tensor %d of %d is NULL", i, n), false;
        if (!t->owned)
            return tl_fail("tl_weights_pack: tensor %d %s lives in a scope; pack owned tensors "
                           "(parameters, fused weights)", i, tl_shape_str(t, sh, sizeof sh)),
                   false;
    }
    return true;
}

/* The distinct storages of the tensors, in the order they first come. */
static int distinct_storages(tl_tensor *const *tensors, int n, tl_storage **out) {
    int count = 0;
    for (int i = 0; i < n; i++) {
        tl_storage *st = tensors[i]->storage;
        bool seen = false;
        for (int j = 0; j < count && !seen; j++) seen = out[j] == st;
        if (!seen) out[count++] = st;
    }
    return count;
}

/* Copies nbytes in pieces, telling progress after each. */
static void copy_reporting(char *to, const char *from, size_t nbytes, size_t *done, size_t total,
                           tl_pack_progress progress, void *ctx) {
    enum { PIECE = 8 << 20 };
    for (size_t at = 0; at < nbytes; at += PIECE) {
        size_t piece = nbytes - at < PIECE ? nbytes - at : PIECE;
        memcpy(to + at, from + at, piece);
        *done += piece;
        if (progress) progress(*done, total, ctx);
    }
}

int tl_weights_pack(tl_tensor *const *tensors, int n, tl_pack_progress progress, void *ctx) {
    if (!packable(tensors, n)) return -1;
    if (n == 0) return 0;
    tl_storage **old = malloc((size_t)n * sizeof *old);
    tl_storage **copy = calloc((size_t)n, sizeof *copy);
    if (!old || !copy) {
        free(old);
        free(copy);
        return tl_fail_status("out of memory: tl_weights_pack cannot list %d tensors", n);
    }
    int count = distinct_storages(tensors, n, old);
    size_t total = 0;
    bool ok = true;
    for (int s = 0; s < count && ok; s++) {
        ok = old[s]->nbytes <= SIZE_MAX - PACK_ALIGN - total;
        if (ok) total += aligned_size(old[s]->nbytes);
    }
    if (ok && total == 0) {   /* only empty tensors: nothing to move */
        free(old);
        free(copy);
        return 0;
    }
    tl_storage *region = ok ? tl_storage_new_huge(total) : NULL;
    if (!ok) tl_fail("the weights' sizes add up to more than memory holds");
    ok = region != NULL;
    size_t at = 0;
    for (int s = 0; ok && s < count; s++) {
        copy[s] = tl_storage_new_within(region, (char *)region->data + at, old[s]->nbytes,
                                        old[s]->readonly);
        ok = copy[s] != NULL;
        at += aligned_size(old[s]->nbytes);
    }
    if (!ok) {   /* nothing has changed: free the headers made, then the region */
        for (int s = 0; s < count && copy[s]; s++) {
            copy[s]->refs = 1;
            tl_storage_release(copy[s]);
        }
        tl_storage_release(region);
        free(old);
        free(copy);
        return tl_fail_status("tl_weights_pack: %s (the weights stay where they were)",
                              tl_error());
    }

    size_t done = 0, bytes = 0;
    for (int s = 0; s < count; s++) bytes += old[s]->nbytes;
    for (int s = 0; s < count; s++) {
        tl_storage *from = old[s], *to = copy[s];
        copy_reporting(to->data, from->data, from->nbytes, &done, bytes, progress, ctx);
        to->fused = from->fused;   /* offsets are the same in the copy */
        from->fused = NULL;
        const void *data = from->data;
        size_t nbytes = from->nbytes;
        bool mapped = from->file_backed;
        int moved = 0;
        for (int i = 0; i < n; i++)
            if (tensors[i]->storage == from) {
                tensors[i]->storage = to;
                to->refs++;
                moved++;
            }
        while (moved-- > 0) tl_storage_release(from);   /* the last one may free it */
        if (mapped) tl_drop_file_pages(data, nbytes);   /* still mapped while the file is */
    }
    tl_storage_release(region);   /* its copies hold it now */
    free(old);
    free(copy);
    return 0;
}
