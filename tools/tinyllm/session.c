/* session.c: opening a checkpoint for a run of generate or chat (session.h). */
#include <stdio.h>
#include <unistd.h>

#include "folder.h"
#include "session.h"

static void show_load_progress(int64_t done, int64_t total, void *ctx) {
    fprintf(stderr, "\rtinyllm: loading %s: %3d%% of %.1f MB", (const char *)ctx,
            (int)(100.0 * (double)done / (double)(total > 0 ? total : 1)), (double)total / 1e6);
    if (done == total) fputc('\n', stderr);
}

/* Loads the folder for a run of n prompt tokens and up to *max_new more.
 * Returns 0, 1 (failed) or 2 (the prompt does not fit the model). */
int open_for_run(generator *g, const gen_options *o, int64_t n, int64_t *max_new,
                 const char *verb) {
    LlamaConfig cfg;
    if (folder_read_config(o->dir, &cfg) != 0) return 1;
    int64_t positions = folder_plan_positions(&cfg, n, max_new, verb);
    if (positions < 0) return 2;
    bool progress = isatty(STDERR_FILENO);
    if (generator_open(g, o->dir, o->dtype, positions, !o->no_cache,
                       progress ? show_load_progress : NULL, (void *)o->dir) != 0) {
        folder_explain_load_failure(o->dir);
        return 1;
    }
    return 0;
}

int open_whole_context(generator *g, const gen_options *o) {
    LlamaConfig cfg;
    if (folder_read_config(o->dir, &cfg) != 0) return 1;
    bool progress = isatty(STDERR_FILENO);
    if (generator_open(g, o->dir, o->dtype, cfg.max_position_embeddings, !o->no_cache,
                       progress ? show_load_progress : NULL, (void *)o->dir) != 0) {
        folder_explain_load_failure(o->dir);
        return 1;
    }
    return 0;
}
