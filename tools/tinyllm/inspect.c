/* inspect.c: `tinyllm inspect PATH` lists what a checkpoint holds: every
 * tensor's name, stored dtype, shape and size, and the metadata. PATH is a
 * .safetensors file, a model.safetensors.index.json, or a folder holding
 * either. The checkpoint is validated (every rule of the format, every shard
 * of an index) but no tensor is loaded, so a large model lists instantly.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tinyllm/safetensors.h"
#include "output.h"
#include "verbs.h"

static void shape_string(const tl_st_entry *e, char *buf, size_t size) {
    size_t o = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < e->ndim && o < size; d++)
        o += (size_t)snprintf(buf + o, size - o, "%s%" PRId64, d ? ", " : "", e->shape[d]);
    if (o < size) snprintf(buf + o, size - o, "]");
}

static void print_checkpoint(const char *path, const tl_checkpoint *c) {
    int tensors = 0, name_width = 4;
    uint64_t values = 0, bytes = 0;
    for (int s = 0; s < c->file_count; s++)
        for (int i = 0; i < c->files[s]->count; i++) {
            const tl_st_entry *e = &c->files[s]->entries[i];
            uint64_t n = 1;
            for (int d = 0; d < e->ndim; d++) n *= (uint64_t)e->shape[d];
            values += n;
            bytes += e->end - e->begin;
            tensors++;
            int w = print_clean(NULL, e->name);
            if (w > name_width) name_width = w < 60 ? w : 60;
        }

    print_clean(stdout, path);
    printf(": %d tensor%s in %d file%s, %" PRIu64 " values, %" PRIu64 " bytes of data\n", tensors,
           tensors == 1 ? "" : "s", c->file_count, c->file_count == 1 ? "" : "s", values, bytes);
    if (c->meta_count > 0) {
        printf("metadata:\n");
        for (int i = 0; i < c->meta_count; i++) {
            printf("  ");
            print_clean(stdout, c->meta_keys[i]);
            printf(": ");
            print_clean(stdout, c->meta_values[i]);
            printf("\n");
        }
    }
    for (int s = 0; s < c->file_count; s++) {
        const tl_st_file *f = c->files[s];
        if (c->file_count > 1) {
            printf("file ");
            print_clean(stdout, f->path);
            printf(":\n");
        } else {
            printf("tensors:\n");
        }
        printf("  %-*s  %-7s  %-20s  %s\n", name_width, "NAME", "DTYPE", "SHAPE", "BYTES");
        for (int i = 0; i < f->count; i++) {
            const tl_st_entry *e = &f->entries[i];
            char shape[160];
            shape_string(e, shape, sizeof shape);
            printf("  ");
            int w = print_clean(stdout, e->name);
            printf("%*s  %-7s  %-20s  %zu\n", w < name_width ? name_width - w : 0, "",
                   tl_st_dtype_name(e->dtype), shape, e->end - e->begin);
        }
    }
}

int tinyllm_inspect(int argc, char **argv) {
    static const char usage[] =
        "usage: tinyllm inspect PATH\n"
        "  PATH  a .safetensors file, a model.safetensors.index.json, or a folder holding either\n";
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage, stdout);
        return 0;
    }
    if (argc != 2) {
        fputs(usage, stderr);
        return 2;
    }
    tl_clear_error();
    tl_checkpoint *c = tl_checkpoint_open(argv[1]);
    if (!c) {
        fprintf(stderr, "tinyllm inspect: ");
        print_clean(stderr, tl_error() ? tl_error() : "cannot read the checkpoint");
        fprintf(stderr, "\n");
        return 1;
    }
    print_checkpoint(argv[1], c);
    tl_checkpoint_free(c);
    return 0;
}
