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

#endif
