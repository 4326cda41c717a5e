/* nn_adopt.c: tl_module_adopt_checkpoint, loading a checkpoint by making the
 * module's parameters its tensors, in place (nn.h).
 *
 * Loading by copy holds the weights twice for a moment and once in the
 * module's own heap after; adopting holds them once, where the checkpoint
 * keeps them: a tensor stored in the dtype asked for is a read-only view of
 * the mapped file, so the parameter reads the file's pages (the kernel's page
 * cache: one copy, shared by every process reading the file). Each
 * parameter keeps its tl_tensor (structs pointing at it stay valid) and
 * takes the checkpoint tensor's dtype and storage; its own zero storage,
 * never written if the model was made with rng NULL, is released. The module
 * holds a reference to the checkpoint, so the caller may free its own at
 * once. All or nothing: every check happens before the first change.
 */
#include <stdlib.h>

#include "internal.h"
#include "nn_internal.h"
#include "tinyllm/nn.h"
#include "tinyllm/safetensors.h"

static void release_checkpoint(void *c) { tl_checkpoint_free(c); }

int tl_module_adopt_checkpoint(tl_module *m, tl_checkpoint *c, bool strict) {
    if (!c) return tl_propagate_status("tl_module_adopt_checkpoint: the checkpoint is NULL");
    tl_state_dict mine;
    int *source;
    if (tl_load_plan(m, &c->dict, strict, "tl_module_adopt_checkpoint", &mine, &source) != 0)
        return -1;
    int rc = tl_module_keep(m, c, release_checkpoint);
    if (rc == 0) {
        c->refs++;
        for (int i = 0; i < mine.count; i++) {
            if (source[i] < 0) continue;
            tl_tensor *param = mine.items[i].tensor, *src = c->dict.items[source[i]].tensor;
            if (param == src) continue;
            param->dtype = src->dtype;
            tl_tensor_repoint(param, src->storage, src->offset);
        }
    }
    free(source);
    tl_state_dict_free(&mine);
    return rc;
}
