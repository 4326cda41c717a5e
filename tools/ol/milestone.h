/* milestone: a milestone as course/<ID>/milestone.json describes it
 * (course/FORMAT.md), and the checks `ol milestone` runs on the student's
 * `tinyllm` command line. Each check is one line: a name, pass or fail, and
 * what was measured (deviations as multiples of the tolerance). */
#ifndef OL_MILESTONE_H
#define OL_MILESTONE_H

#include <stdbool.h>

#include "util.h"
#include "workspace.h"

typedef struct {
    char *id, *title;
    strlist needs;
    /* --smoke: the committed tiny checkpoints and their goldens */
    char *golden, *golden_tensors, *checkpoints_dir, *logits_tolerance_key;
    strlist checkpoints;
    char *pull_checkpoint, *pull_repo;
    double smoke_timeout;
    /* without --smoke: a real checkpoint from the cache */
    char *repo, *prompt;
    long long param_count;
    int new_tokens;
    strlist logits_ids;
    double full_atol, full_rtol, full_timeout;
} milestone;

/* Reads course/<id>/milestone.json. 0, or -1 with the problem printed. */
int milestone_load(const char *root, const char *id, milestone *m);
void milestone_free(milestone *m);

typedef struct {
    char *name;       /* "generate llama-gqa (KV cache)" */
    bool passed;
    char *detail;     /* what was measured, or what went wrong and what to do */
    double seconds;
} milestone_check;

typedef struct {
    milestone_check *v;
    int n, cap;
} milestone_results;

void milestone_results_free(milestone_results *r);

/* Runs the smoke checks with the program bin (the student's tinyllm),
 * printing each line as it ends. 0, or 130 when interrupted. */
int milestone_run_smoke(ol_ctx *ctx, const milestone *m, const char *bin, milestone_results *r);

/* The folder of m->repo in the tinyllm cache ($TINYLLM_CACHE, else
 * ~/.cache/tinyllm/hub), or NULL when it is not there whole (malloc'd). */
char *milestone_cached_checkpoint(const milestone *m);

/* Runs the full checks on the checkpoint folder model: the student's bin against the
 * reference's ref_bin on the same checkpoint. 0, or 130. */
int milestone_run_full(ol_ctx *ctx, const milestone *m, const char *bin, const char *ref_bin,
                       const char *model, milestone_results *r);

#endif
