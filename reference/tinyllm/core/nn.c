/* nn.c: the module tree, its state dict and parameter count (L0.4).
 *
 * A module is a type name, a list of parameter slots and a list of named
 * children, both in registration order. Walking the tree depth first (own
 * parameters, then each child) gives PyTorch's state_dict order, so a model
 * registered in HF's order has HF's keys in HF's order.
 *
 * A slot either owns its tensor (tl_module_param_new) or borrows one owned by
 * another slot (tl_module_param_share: a tied head). The tensor is the
 * parameter; slots are only names for it. So a shared tensor is counted once,
 * gets one gradient (autograd adds the contributions of every use into the
 * same .grad), and is freed once, by its owner.
 */
#include "tinyllm/nn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"
#include "tinyllm/autograd.h"

typedef struct {
    char *name;
    tl_tensor *tensor;
    bool owned;
} param_slot;

typedef struct {
    char *name;
    tl_module *module;
} child_slot;

/* Something the module's parameters point into (an adopted checkpoint),
 * released when the module is freed. */
typedef struct {
    void *object;
    void (*release)(void *object);
} kept_object;

struct tl_module {
    char *type;
    tl_module *parent;          /* NULL for a root */
    param_slot *params;
    int n_params;
    child_slot *children;
    int n_children;
    kept_object *kept;
    int n_kept;
};

#define MODULE_LIST_TYPE "ModuleList"

/* ---- names and paths -------------------------------------------------- */

/* The dotted path of m from its root ("layers.0.self_attn"), or "(root)". */
static const char *module_path(const tl_module *m, char *buf, size_t size) {
    const char *parts[64];
    int n = 0;
    for (const tl_module *at = m; at->parent && n < 64; at = at->parent) {
        const tl_module *p = at->parent;
        for (int i = 0; i < p->n_children; i++)
            if (p->children[i].module == at) parts[n++] = p->children[i].name;
    }
    if (n == 0) return "(root)";
    size_t len = 0;
    buf[0] = '\0';
    for (int i = n - 1; i >= 0 && len < size; i--)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", parts[i], i ? "." : "");
    return buf;
}

static param_slot *find_param(const tl_module *m, const char *name) {
    for (int i = 0; i < m->n_params; i++)
        if (strcmp(m->params[i].name, name) == 0) return &m->params[i];
    return NULL;
}

static tl_module *find_child(const tl_module *m, const char *name) {
    for (int i = 0; i < m->n_children; i++)
        if (strcmp(m->children[i].name, name) == 0) return m->children[i].module;
    return NULL;
}

/* A new name must be non-empty, free of '.', and unused by m's parameters
 * and children (PyTorch refuses the same). */
static int check_new_name(const tl_module *m, const char *fn, const char *name) {
    char path[256];
    if (!name || !*name) {
        return tl_fail_status("%s: the name is %s; give every parameter and child a name", fn,
                              name ? "empty" : "NULL");
    }
    if (strchr(name, '.')) {
        return tl_fail_status("%s: the name '%s' contains '.', which separates the parts of a "
                              "dotted path; register a child module instead", fn, name);
    }
    if (find_param(m, name) || find_child(m, name)) {
        return tl_fail_status("%s: %s '%s' already has a %s named '%s'; names must be unique", fn,
                              m->type, module_path(m, path, sizeof path),
                              find_param(m, name) ? "parameter" : "child", name);
    }
    return 0;
}

static char *copy_string(const char *s) {
    char *c = strdup(s);
    if (!c) tl_fail("nn: out of memory copying the name '%s'", s);
    return c;
}

/* ---- the tree --------------------------------------------------------- */

tl_module *tl_module_new(const char *type_name) {
    tl_module *m = calloc(1, sizeof *m);
    if (!m) return tl_fail("tl_module_new: out of memory");
    m->type = copy_string(type_name && *type_name ? type_name : "Module");
    if (!m->type) {
        free(m);
        return NULL;
    }
    return m;
}

/* Removes m from its parent's children. A ModuleList renumbers the children
 * after it, as PyTorch's `del list[i]` does, so its names stay 0..n-1 (a
 * smaller number never needs more digits: it fits the old name's buffer). */
static void detach_from_parent(tl_module *m) {
    tl_module *p = m->parent;
    if (!p) return;
    for (int i = 0; i < p->n_children; i++) {
        if (p->children[i].module != m) continue;
        free(p->children[i].name);
        memmove(&p->children[i], &p->children[i + 1],
                (size_t)(p->n_children - i - 1) * sizeof p->children[0]);
        p->n_children--;
        if (strcmp(p->type, MODULE_LIST_TYPE) == 0)
            for (int j = i; j < p->n_children; j++) sprintf(p->children[j].name, "%d", j);
        break;
    }
    m->parent = NULL;
}

/* Frees m, its owned parameters and its children. A module freed on its own
 * is first removed from its parent, so the parent never holds a dangling
 * child. Borrowed (shared) tensors are left to their owner. */
void tl_module_free(tl_module *m) {
    if (!m) return;
    detach_from_parent(m);
    for (int i = 0; i < m->n_children; i++) {
        m->children[i].module->parent = NULL;
        tl_module_free(m->children[i].module);
        free(m->children[i].name);
    }
    for (int i = 0; i < m->n_params; i++) {
        if (m->params[i].owned) tl_tensor_free(m->params[i].tensor);
        free(m->params[i].name);
    }
    for (int i = 0; i < m->n_kept; i++) m->kept[i].release(m->kept[i].object);
    free(m->kept);
    free(m->children);
    free(m->params);
    free(m->type);
    free(m);
}

int tl_module_keep(tl_module *m, void *object, void (*release)(void *object)) {
    kept_object *grown = realloc(m->kept, (size_t)(m->n_kept + 1) * sizeof *grown);
    if (!grown) return tl_fail_status("nn: out of memory keeping a reference for %s", m->type);
    m->kept = grown;
    m->kept[m->n_kept++] = (kept_object){object, release};
    return 0;
}

const char *tl_module_type(const tl_module *m) {
    return m ? m->type : NULL;
}

static bool is_ancestor(const tl_module *a, const tl_module *m) {
    for (; m; m = m->parent)
        if (m == a) return true;
    return false;
}

/* m takes ownership of child, also on failure: a fresh child that cannot be
 * added is freed, so `tl_module_add(m, "q", tl_linear_new(...))` never leaks.
 * A child already in a tree (m's own ancestor, or another module's child) is
 * refused and left where it is. */
tl_module *tl_module_add(tl_module *m, const char *name, tl_module *child) {
    if (!child) return tl_propagate("tl_module_add: child '%s' is NULL", name ? name : "?");
    if (child->parent || is_ancestor(child, m)) {
        char path[256];
        return tl_fail("tl_module_add: %s '%s' is already part of a module tree; a module "
                       "has one parent", child->type, module_path(child, path, sizeof path));
    }
    if (!m) {
        tl_module_free(child);
        return tl_propagate("tl_module_add: parent module is NULL (adding '%s')",
                            name ? name : "?");
    }
    if (check_new_name(m, "tl_module_add", name) != 0) {
        tl_module_free(child);
        return NULL;
    }
    char *copy = copy_string(name);
    child_slot *grown = copy ? realloc(m->children, (size_t)(m->n_children + 1) * sizeof *grown)
                             : NULL;
    if (!grown) {
        free(copy);
        tl_module_free(child);
        return tl_fail("tl_module_add: out of memory adding '%s'", name);
    }
    m->children = grown;
    m->children[m->n_children++] = (child_slot){copy, child};
    child->parent = m;
    return child;
}

/* Follows a dotted path of child names ("layers.0.self_attn"). */
static tl_module *walk(const tl_module *m, const char *path, size_t len) {
    const tl_module *at = m;
    while (at && len > 0) {
        const char *dot = memchr(path, '.', len);
        size_t part = dot ? (size_t)(dot - path) : len;
        const tl_module *next = NULL;
        for (int i = 0; i < at->n_children && !next; i++)
            if (strlen(at->children[i].name) == part &&
                memcmp(at->children[i].name, path, part) == 0)
                next = at->children[i].module;
        at = next;
        path += part + (dot ? 1 : 0);
        len -= part + (dot ? 1 : 0);
    }
    return (tl_module *)at;
}

tl_module *tl_module_child(const tl_module *m, const char *name) {
    if (!m || !name) return tl_propagate("tl_module_child: %s is NULL", m ? "name" : "module");
    tl_module *c = walk(m, name, strlen(name));
    if (!c || c == m) {
        char path[256];
        return tl_fail("tl_module_child: %s '%s' has no child '%s'", m->type,
                       module_path(m, path, sizeof path), name);
    }
    return c;
}

static int add_slot(tl_module *m, const char *name, tl_tensor *t, bool owned) {
    char *copy = copy_string(name);
    param_slot *grown = copy ? realloc(m->params, (size_t)(m->n_params + 1) * sizeof *grown)
                             : NULL;
    if (!grown) {
        free(copy);
        return tl_fail_status("nn: out of memory registering the parameter '%s'", name);
    }
    m->params = grown;
    m->params[m->n_params++] = (param_slot){copy, t, owned};
    return 0;
}

tl_tensor *tl_module_param_new(tl_module *m, const char *name, int ndim, const int64_t *shape) {
    if (!m) return tl_propagate("tl_module_param_new: module is NULL (parameter '%s')",
                           name ? name : "?");
    if (check_new_name(m, "tl_module_param_new", name) != 0) return NULL;
    tl_tensor *t = tl_tensor_new_owned(TL_F32, ndim, shape);
    if (!t) {
        char lower[512], path[256];
        snprintf(lower, sizeof lower, "%s", tl_error() ? tl_error() : "allocation failed");
        return tl_fail("tl_module_param_new: parameter '%s' of %s '%s': %s", name, m->type,
                       module_path(m, path, sizeof path), lower);
    }
    tl_requires_grad(t, true);   /* already zero: large ones stay unbacked until written */
    if (add_slot(m, name, t, true) != 0) {
        tl_tensor_free(t);
        return NULL;
    }
    return t;
}

/* Only long-lived tensors can be parameters: a scoped one would vanish at
 * the next tl_scope_pop while the module still points at it. */
int tl_module_param_share(tl_module *m, const char *name, tl_tensor *t) {
    if (!m || !t) {
        return tl_propagate_status("tl_module_param_share: %s is NULL (sharing as '%s')",
                              m ? "tensor" : "module", name ? name : "?");
    }
    if (!t->owned) {
        return tl_fail_status("tl_module_param_share: the tensor shared as '%s' lives in a scope "
                              "and would be freed under the module; share a parameter "
                              "(tl_module_param_new)", name);
    }
    if (check_new_name(m, "tl_module_param_share", name) != 0) return -1;
    return add_slot(m, name, t, false);
}

tl_tensor *tl_module_find_param(const tl_module *m, const char *name) {
    param_slot *slot = m && name ? find_param(m, name) : NULL;
    return slot ? slot->tensor : NULL;
}

/* name is a parameter of m or a dotted path to one ("layers.0.q.weight"). */
tl_tensor *tl_module_param(const tl_module *m, const char *name) {
    if (!m || !name) return tl_propagate("tl_module_param: %s is NULL", m ? "name" : "module");
    const char *last = strrchr(name, '.');
    const tl_module *owner = last ? walk(m, name, (size_t)(last - name)) : m;
    param_slot *slot = owner ? find_param(owner, last ? last + 1 : name) : NULL;
    if (!slot) {
        char path[256];
        return tl_fail("tl_module_param: %s '%s' has no parameter '%s'", m->type,
                       module_path(m, path, sizeof path), name);
    }
    return slot->tensor;
}

/* ---- state dict --------------------------------------------------------- */

typedef struct {
    tl_named_tensor *items;
    int count, cap;
} slot_list;

static int push_slot(slot_list *l, const char *prefix, const char *name, tl_tensor *t) {
    if (l->count == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        tl_named_tensor *grown = realloc(l->items, (size_t)cap * sizeof *grown);
        if (!grown) return -1;
        l->items = grown;
        l->cap = cap;
    }
    char *full = NULL;
    if (asprintf(&full, "%s%s", prefix, name) < 0) return -1;
    l->items[l->count++] = (tl_named_tensor){full, t, false};
    return 0;
}

/* Own parameters first, then each child under "prefix + name + '.'". */
static int collect(const tl_module *m, const char *prefix, slot_list *out) {
    for (int i = 0; i < m->n_params; i++)
        if (push_slot(out, prefix, m->params[i].name, m->params[i].tensor) != 0) return -1;
    for (int i = 0; i < m->n_children; i++) {
        char *child_prefix = NULL;
        if (asprintf(&child_prefix, "%s%s.", prefix, m->children[i].name) < 0) return -1;
        int rc = collect(m->children[i].module, child_prefix, out);
        free(child_prefix);
        if (rc != 0) return -1;
    }
    return 0;
}

int tl_module_slots(const tl_module *m, tl_state_dict *out) {
    slot_list l = {NULL, 0, 0};
    int rc = collect(m, "", &l);
    *out = (tl_state_dict){l.items, l.count};
    if (rc != 0) {
        tl_state_dict_free(out);
        return tl_fail_status("tl_module_state_dict: out of memory listing the parameters of %s",
                              m->type);
    }
    /* A slot is shared when its tensor was listed before (a model has a few
     * hundred slots: the quadratic scan costs nothing). */
    for (int i = 0; i < out->count; i++)
        for (int j = 0; j < i && !out->items[i].shared; j++)
            out->items[i].shared = out->items[j].tensor == out->items[i].tensor;
    return 0;
}

tl_state_dict tl_module_state_dict(const tl_module *m) {
    tl_state_dict sd = {NULL, 0};
    if (!m)
        tl_propagate("tl_module_state_dict: module is NULL");
    else
        tl_module_slots(m, &sd);
    return sd;
}

void tl_state_dict_free(tl_state_dict *sd) {
    if (!sd) return;
    for (int i = 0; i < sd->count; i++) free(sd->items[i].name);
    free(sd->items);
    sd->items = NULL;
    sd->count = 0;
}

int64_t tl_module_param_count(const tl_module *m) {
    tl_state_dict sd;
    if (!m) {
        return tl_propagate_status("tl_module_param_count: module is NULL");
    }
    if (tl_module_slots(m, &sd) != 0) return -1;
    int64_t n = 0;
    for (int i = 0; i < sd.count; i++)
        if (!sd.items[i].shared) n += tl_numel(sd.items[i].tensor);
    tl_state_dict_free(&sd);
    return n;
}

/* ---- ModuleList --------------------------------------------------------- */

tl_module *tl_module_list_new(void) {
    return tl_module_new(MODULE_LIST_TYPE);
}

static bool is_list(const tl_module *m, const char *fn) {
    if (m && strcmp(m->type, MODULE_LIST_TYPE) == 0) return true;
    tl_fail("%s: expected a ModuleList, got %s", fn, m ? m->type : "NULL");
    return false;
}

tl_module *tl_module_list_append(tl_module *list, tl_module *child) {
    if (list && !is_list(list, "tl_module_list_append")) {
        if (child && !child->parent) tl_module_free(child);
        return NULL;
    }
    char name[16];
    snprintf(name, sizeof name, "%d", list ? list->n_children : 0);
    return tl_module_add(list, name, child);
}

int tl_module_list_len(const tl_module *list) {
    return is_list(list, "tl_module_list_len") ? list->n_children : -1;
}

tl_module *tl_module_list_at(const tl_module *list, int i) {
    if (!is_list(list, "tl_module_list_at")) return NULL;
    if (i < 0 || i >= list->n_children)
        return tl_fail("tl_module_list_at: index %d out of range for a ModuleList of length %d",
                       i, list->n_children);
    return list->children[i].module;
}
