/* nn_internal.h: what nn.c shares with nn_load.c and nn_layers.c. Not a
 * contract: students never include it. */
#ifndef TINYLLM_CORE_NN_INTERNAL_H
#define TINYLLM_CORE_NN_INTERNAL_H

#include "tinyllm/nn.h"

/* tl_module_state_dict with a status: 0, or -1 with an error when memory
 * runs out (an empty module gives 0 and an empty list). */
int tl_module_slots(const tl_module *m, tl_state_dict *out);
/* m's own parameter called name, or NULL without an error (optional ones). */
tl_tensor *tl_module_find_param(const tl_module *m, const char *name);

/* m keeps object alive: release(object) runs when m is freed (after its
 * parameters). 0, or -1 with an error when memory runs out. */
int tl_module_keep(tl_module *m, void *object, void (*release)(void *object));

/* The plan of a load: for each of m's slots (mine, in state-dict order) the
 * index in sd of the tensor that fills it, or -1 (absent, or a later name of
 * a tied tensor). Checks everything first (strict keys, float dtypes,
 * shapes) and fails naming fn, listing every problem: "<fn>: 2 missing keys:
 * a, b; 1 unexpected key: c; nothing was loaded". On success the caller
 * frees *mine (tl_state_dict_free) and *source (free). */
int tl_load_plan(tl_module *m, const tl_state_dict *sd, bool strict, const char *fn,
                 tl_state_dict *mine, int **source);

#endif
