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
 * Parameters are owned tensors (tensor.h): F32 when made here; a checkpoint
 * adopted in place may make them BF16 and read-only (below), so code that
 * uses a module reads its parameters and never writes into them.
 *
 * Errors follow tensor.h: NULL or -1 with a message; a NULL module or tensor
 * argument keeps the cause of the call that made it.
 *
 * Loading a checkpoint for inference, in L7.9's words:
 *
 *     tl_checkpoint *ck = tl_checkpoint_load(dir, TL_BF16);   // mapped, BF16 kept
 *     LlamaForCausalLM_init(&model, &config, NULL);          // zero parameters
 *     if (!ck || tl_module_adopt_checkpoint(model.module, ck, true) != 0) ...
 *     tl_checkpoint_free(ck);           // the model keeps its own reference
 *     attn->qkv = tl_linear_fuse((tl_tensor *[]){q->weight, k->weight, v->weight}, 3);
 *     mlp->gate_up = tl_linear_fuse((tl_tensor *[]){gate->weight, up->weight}, 2);
 *     ...
 *     tl_tensor_free(attn->qkv);       // the parts before the whole
 *     tl_module_free(model.module);
 */
#ifndef TINYLLM_NN_H
#define TINYLLM_NN_H

#include "tinyllm/pcg32.h"
#include "tinyllm/tensor.h"

typedef struct tl_module tl_module;
typedef struct tl_checkpoint tl_checkpoint;   /* safetensors.h */

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

/* A new empty root module of the given type name (NULL or "" is "Module"),
 * owned by the caller. Errors: memory ("tl_module_new: out of memory"). */
tl_module *tl_module_new(const char *type_name);
/* Frees m, its owned parameters and its children, after removing it from its
 * parent (a ModuleList renumbers the children after it); releases the
 * checkpoints it adopted. NULL is a no-op. Shared (borrowed) tensors are left
 * to their owner. */
void tl_module_free(tl_module *m);
const char *tl_module_type(const tl_module *m);   /* NULL for NULL */
/* Adds child under name; m takes ownership, also on failure (a fresh child
 * that cannot be added is freed, so tl_module_add(m, "q", tl_linear_new(...))
 * never leaks). Returns child, or NULL: child NULL (its cause kept, else
 * "tl_module_add: child 'q' is NULL"); child already in a tree, left where it
 * is ("tl_module_add: Linear 'q' is already part of a module tree; a module
 * has one parent"); m NULL ("tl_module_add: parent module is NULL (adding
 * 'q')"); a bad name: NULL or empty ("tl_module_add: the name is empty; give
 * every parameter and child a name"), with a dot ("tl_module_add: the name
 * 'a.b' contains '.', which separates the parts of a dotted path"), taken
 * ("tl_module_add: Module '(root)' already has a child named 'q'; names must
 * be unique"). */
tl_module *tl_module_add(tl_module *m, const char *name, tl_module *child);
/* The child at a dotted path of child names ("layers.0.self_attn"), owned by
 * m. Errors: m or name NULL ("tl_module_child: module is NULL"); no such
 * child ("tl_module_child: Module '(root)' has no child 'x'"). */
tl_module *tl_module_child(const tl_module *m, const char *name);
/* A new owned F32 parameter of the given shape, zero-filled (a large one is
 * not resident until written), requiring a gradient, registered under name.
 * Errors: m NULL ("tl_module_param_new: module is NULL (parameter 'w')");
 * the name rules of tl_module_add (naming tl_module_param_new); a bad shape
 * ("tl_module_param_new: parameter 'w' of Module '(root)': tensor: size -1 at
 * axis 0 is negative"). */
tl_tensor *tl_module_param_new(tl_module *m, const char *name, int ndim, const int64_t *shape);
/* Registers an existing owned tensor (another module's parameter) under
 * name, not owned by m. Returns 0 or -1: m or t NULL
 * ("tl_module_param_share: tensor is NULL (sharing as 'w')"); t of a scope
 * ("tl_module_param_share: the tensor shared as 'w' lives in a scope and
 * would be freed under the module"); the name rules. */
int tl_module_param_share(tl_module *m, const char *name, tl_tensor *t);
/* The parameter called name, or at a dotted path ("layers.0.q.weight").
 * Errors: NULL arguments ("tl_module_param: name is NULL"); none there
 * ("tl_module_param: Module '(root)' has no parameter 'x'"). */
tl_tensor *tl_module_param(const tl_module *m, const char *name);

/* Every slot, in registration order (own parameters, then children's). The
 * list is the caller's (tl_state_dict_free); the tensors stay the module's.
 * Errors (an empty dict): m NULL ("tl_module_state_dict: module is NULL");
 * memory. */
tl_state_dict tl_module_state_dict(const tl_module *m);
void tl_state_dict_free(tl_state_dict *sd);   /* frees the list and names; NULL ok */
/* Parameters counted once each (a shared slot is not counted again). -1 with
 * an error when m is NULL ("tl_module_param_count: module is NULL"). */
int64_t tl_module_param_count(const tl_module *m);

/* Copies values by name from sd into m's parameters (casting dtypes; a BF16
 * or read-only parameter keeps its dtype). Strict: every missing and every
 * unexpected key is listed in one error. A shared slot may be absent when its
 * first name is present. Everything is checked before the first copy.
 * Returns 0 or -1: NULL arguments ("load_state_dict: the module is NULL");
 * "load_state_dict: 2 missing keys: a.weight, b.bias; 1 unexpected key:
 * c.weight; nothing was loaded"; a tensor NULL in the dict ("x is NULL in the
 * state dict"), not a float ("x is I64 in the checkpoint; a parameter needs a
 * float dtype") or of another shape ("size mismatch for x: the checkpoint has
 * shape [3], the module [4]"); a copy that fails ("load_state_dict: copying
 * x: tl_copy_into: tensor is read-only ..."). */
int tl_module_load_state_dict(tl_module *m, const tl_state_dict *sd, bool strict);

/* ---- adopting a checkpoint in place (inference) ---------------------------- */
/* Loads c into m without copying: each parameter keeps its tl_tensor pointer
 * (structs that point at it stay valid) but takes the checkpoint tensor's
 * dtype and storage, and releases its own. A tensor that c maps in the dtype
 * it was loaded with (tl_checkpoint_load's want) is read in place from the
 * mapped file, read-only; one c converted is shared with c. So BF16 weights
 * stay BF16, and there is one resident copy of the weights. The keys are
 * matched and checked exactly as tl_module_load_state_dict does (strict
 * lists, tied slots), all before the first change.
 * Ownership: m (the module passed, usually the root) holds a reference to c
 * until tl_module_free(m): the caller may tl_checkpoint_free(c) at once.
 * Adopted parameters refuse writes (tl_set, tl_copy_into: "tensor is
 * read-only"): adopt for inference; train on a copy-loaded model.
 * Returns 0 or -1: c NULL (its cause kept, else "tl_module_adopt_checkpoint:
 * the checkpoint is NULL"); m NULL; the key, dtype and shape errors of
 * tl_module_load_state_dict, naming tl_module_adopt_checkpoint
 * ("tl_module_adopt_checkpoint: 1 missing key: lm_head.weight; nothing was
 * loaded"). */
int tl_module_adopt_checkpoint(tl_module *m, tl_checkpoint *c, bool strict);

/* ---- fusing projections after the load ----------------------------------- */
/* One weight for n projections that read the same input (q/k/v, gate/up):
 * returns an owned tensor [sum of out_k, in] (or [sum of out_k] for biases)
 * holding the parts' rows in order, and makes each part a view of its own
 * block of it. The parts keep their tl_tensor, names and values, so the state
 * dict is unchanged; the model calls tl_linear(x, fused, NULL) once and
 * splits the output (tl_split, last axis, the parts' sizes).
 * Memory: parts that already lie back to back (fused before, or written one
 * after the other in a mapped checkpoint, as HF writes gate_proj, up_proj)
 * are not copied; otherwise their rows are copied once into the fused
 * weight and the parts' old storage is released (a mapped checkpoint's pages
 * are handed back to the kernel), so one copy remains. Parameters adopted
 * from tensors the checkpoint converted keep that converted copy too, until
 * the module is freed: adopt in the file's dtype to fuse without it.
 * Ownership: the caller frees the fused tensor (tl_tensor_free), in any order
 * with the module (the storage goes with the last of them); it is a plain
 * leaf without gradient (fuse for inference: gradients of training go to
 * the parts). Every part must be an owned contiguous float tensor, all of one
 * dtype and rank (1 or 2) and, for weights, one input width.
 * Errors (NULL): n < 1 or parts NULL ("tl_linear_fuse: needs n >= 1 parts (got
 * n=0)"); a NULL part (its cause kept, else "tl_linear_fuse: part 1 of 3 is
 * NULL"); a part of a scope ("tl_linear_fuse: part 0 [4, 3] lives in a scope;
 * fuse parameters (owned tensors)"); a part of rank 3, integer or strided
 * ("tl_linear_fuse: part 1 is F32 [2, 3, 4]; parts are contiguous float
 * weights [out, in] or biases [out]"); parts that differ in dtype, rank or
 * width ("tl_linear_fuse: part 1 BF16 [4, 3] does not match part 0 F32
 * [4, 3]: parts share the dtype and the input width"); memory. */
tl_tensor *tl_linear_fuse(tl_tensor *const *parts, int n);

/* ---- packing weights into huge pages after the load ---------------------- */
/* Told, as a pack copies, how many bytes of how many are done. */
typedef void (*tl_pack_progress)(size_t done, size_t total, void *ctx);

/* Moves the data of n owned tensors (a model's parameters and its fused
 * weights) into one region of anonymous memory aligned to 2 MiB and marked
 * for transparent huge pages, so that a forward reads them with one TLB
 * entry per 2 MiB, not per 4 KiB. Each distinct storage is copied once,
 * 64-byte aligned, in the order the tensors come; every listed tensor keeps
 * its tl_tensor pointer, dtype, shape, strides, values and read-only flag,
 * and a fused weight keeps its parts. The old storage is released (pages of
 * a mapped checkpoint are handed back to the kernel, so one resident copy
 * remains; a tensor not listed that shared it keeps it). A tensor listed
 * twice, or sharing a storage with another, is fine. progress (NULL: none)
 * is called with ctx after each piece of at most 8 MiB copied. For inference:
 * pack after adopting and fusing. Memory: the region is the weights' size;
 * while a storage is copied, it is resident twice. The region goes with the
 * last tensor in it.
 * Returns 0 (n == 0 too) or -1, changing nothing: n < 0 or tensors NULL
 * ("tl_weights_pack: needs n >= 0 tensors and an array of them (got n=-1)");
 * a NULL tensor (its cause kept, else "tl_weights_pack: tensor 2 of 5 is
 * NULL"); a tensor of a scope ("tl_weights_pack: tensor 0 [4, 3] lives in a
 * scope; pack owned tensors (parameters, fused weights)"); memory
 * ("tl_weights_pack: out of memory: ... (the weights stay where they were)"). */
int tl_weights_pack(tl_tensor *const *tensors, int n, tl_pack_progress progress, void *ctx);

/* ---- ModuleList: children named "0", "1", ... --------------------------- */
/* A new empty ModuleList (tl_module_new's errors). */
tl_module *tl_module_list_new(void);
/* Adds child under the next index; ownership as tl_module_add (the child is
 * freed on failure). Errors: those of tl_module_add; a list that is not a
 * ModuleList ("tl_module_list_append: expected a ModuleList, got Linear"). */
tl_module *tl_module_list_append(tl_module *list, tl_module *child);
/* The length, or -1 for NULL or another type ("tl_module_list_len: expected
 * a ModuleList, got NULL"). */
int tl_module_list_len(const tl_module *list);
/* Child i, owned by the list. Errors: not a ModuleList (as above); i out of
 * range ("tl_module_list_at: index 3 out of range for a ModuleList of length
 * 2"). */
tl_module *tl_module_list_at(const tl_module *list, int i);

/* ---- Linear: weight [out, in] as HF stores it, optional bias [out] -------- */
/* With rng, weight and bias ~ U(-1/sqrt(in), 1/sqrt(in)) (PyTorch's default,
 * weight drawn first); with rng NULL the parameters are zero and no number is
 * drawn. Errors: sizes not positive ("tl_linear_new: in_features and
 * out_features must be positive, got 0 and 3"); memory. */
tl_module *tl_linear_new(int64_t in_features, int64_t out_features, bool bias, tl_pcg32 *rng);
/* tl_linear(x, weight, bias) (ops.h): F32 [..., out] in the current scope.
 * Errors: linear NULL (cause kept, else "tl_linear_forward: module is NULL");
 * another type ("tl_linear_forward: expected a Linear module, got
 * Embedding"); those of tl_linear. */
tl_tensor *tl_linear_forward(const tl_module *linear, tl_tensor *x);

/* ---- Embedding: weight [num, dim] ---------------------------------------- */
/* With rng, weight ~ N(0, 1) (PyTorch's default); with rng NULL, zeros.
 * Errors: sizes not positive ("tl_embedding_new: num_embeddings and dim must
 * be positive, got 0 and 4"); memory. */
tl_module *tl_embedding_new(int64_t num_embeddings, int64_t dim, tl_pcg32 *rng);
/* tl_embedding(weight, ids) (ops.h): F32 [ids..., dim]. Errors: as
 * tl_linear_forward (naming tl_embedding_forward, "an Embedding module"),
 * then those of tl_embedding. */
tl_tensor *tl_embedding_forward(const tl_module *embedding, tl_tensor *ids);

#endif
