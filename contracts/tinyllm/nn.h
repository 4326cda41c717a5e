/* tinyllm/nn.h: modules with named parameters (L0.4).
 *
 * A tl_module is a node of a tree: it holds parameters and child modules, each
 * under a name, in registration order. A parameter's full name is the dotted
 * path from the root ("model.layers.0.self_attn.q_proj.weight"), so a model
 * registered in HF's order has exactly HF's state_dict keys, in HF's order.
 *
 * Ownership: a module owns the parameters registered on it with
 * tl_module_param_new and frees them (and its children) in tl_module_free.
 * tl_module_param_share registers a tensor owned elsewhere under a second name
 * (a tied head): it is one parameter, counted once, with one gradient.
 */
#ifndef TINYLLM_NN_H
#define TINYLLM_NN_H

#include "tinyllm/pcg32.h"
#include "tinyllm/tensor.h"

typedef struct tl_module tl_module;

/* A parameter slot as the state dict lists it. */
typedef struct {
    char *name;            /* the full dotted name, owned by the list */
    tl_tensor *tensor;
    bool shared;           /* a second slot of a tensor already listed */
} tl_named_tensor;

typedef struct {
    tl_named_tensor *items;
    int count;
} tl_state_dict;

/* ---- the module tree ------------------------------------------------- */
tl_module *tl_module_new(const char *type_name);
void tl_module_free(tl_module *m);             /* children and owned params too */
const char *tl_module_type(const tl_module *m);
/* Adds child under name; m takes ownership. Returns child (NULL on error). */
tl_module *tl_module_add(tl_module *m, const char *name, tl_module *child);
tl_module *tl_module_child(const tl_module *m, const char *name);
/* A new owned F32 parameter (requires_grad) of the given shape, zero-filled,
 * registered under name. */
tl_tensor *tl_module_param_new(tl_module *m, const char *name, int ndim, const int64_t *shape);
/* Registers an existing parameter under another name, not owned. */
int tl_module_param_share(tl_module *m, const char *name, tl_tensor *t);
tl_tensor *tl_module_param(const tl_module *m, const char *name);

/* Every slot, in registration order (own parameters, then children's). The
 * result is owned by the caller: tl_state_dict_free. */
tl_state_dict tl_module_state_dict(const tl_module *m);
void tl_state_dict_free(tl_state_dict *sd);
/* Parameters counted once each (a shared slot is not counted again). */
int64_t tl_module_param_count(const tl_module *m);

/* Copies values by name from sd into m's parameters (casting dtypes). Strict:
 * every missing and every unexpected key is listed in one error. A shared slot
 * may be absent when its first name is present. Returns 0 or -1. */
int tl_module_load_state_dict(tl_module *m, const tl_state_dict *sd, bool strict);

/* ---- ModuleList: children named "0", "1", ... --------------------------- */
tl_module *tl_module_list_new(void);
tl_module *tl_module_list_append(tl_module *list, tl_module *child);
int tl_module_list_len(const tl_module *list);
tl_module *tl_module_list_at(const tl_module *list, int i);

/* ---- Linear: weight [out, in] as HF stores it, optional bias [out] -------- */
/* With rng, weight and bias ~ U(-1/sqrt(in), 1/sqrt(in)) (PyTorch's default);
 * with rng NULL the parameters are zero and no number is drawn. */
tl_module *tl_linear_new(int64_t in_features, int64_t out_features, bool bias, tl_pcg32 *rng);
tl_tensor *tl_linear_forward(const tl_module *linear, tl_tensor *x);

/* ---- Embedding: weight [num, dim] ---------------------------------------- */
/* With rng, weight ~ N(0, 1) (PyTorch's default); with rng NULL, zeros. */
tl_module *tl_embedding_new(int64_t num_embeddings, int64_t dim, tl_pcg32 *rng);
tl_tensor *tl_embedding_forward(const tl_module *embedding, tl_tensor *ids);

#endif
