/* nn_layers.c: Linear and Embedding, PyTorch's two parameterised layers
 * (L0.4), with PyTorch's default initialisation drawn from PCG32.
 *
 * With rng NULL a layer is allocated (zeros) without drawing a number: a
 * model about to load a checkpoint would otherwise spend 135 million
 * Box-Muller draws on SmolLM2 only to overwrite them.
 */
#include <math.h>
#include <string.h>

#include "nn_internal.h"
#include "tinyllm/nn.h"
#include "tinyllm/ops.h"

/* Fills t with U(-bound, bound) in C order: -bound + 2 bound u, u in [0, 1). */
static void fill_uniform(tl_tensor *t, double bound, tl_pcg32 *rng) {
    float *x = tl_f32(t);
    for (int64_t i = 0, n = tl_numel(t); i < n; i++)
        x[i] = (float)(bound * (2.0 * tl_pcg32_uniform(rng) - 1.0));
}

static void fill_normal(tl_tensor *t, tl_pcg32 *rng) {
    float *x = tl_f32(t);
    for (int64_t i = 0, n = tl_numel(t); i < n; i++) x[i] = (float)tl_pcg32_normal(rng);
}

/* Linear's kaiming_uniform_(a = sqrt 5) works out to a bound of 1/sqrt(in),
 * the same as its bias: weight first, then bias, as reset_parameters does. */
tl_module *tl_linear_new(int64_t in_features, int64_t out_features, bool bias, tl_pcg32 *rng) {
    if (in_features <= 0 || out_features <= 0)
        return tl_fail("tl_linear_new: in_features and out_features must be positive, got "
                       "%lld and %lld", (long long)in_features, (long long)out_features);
    tl_module *m = tl_module_new("Linear");
    tl_tensor *w = tl_module_param_new(m, "weight", TL_SHAPE(out_features, in_features));
    tl_tensor *b = bias ? tl_module_param_new(m, "bias", TL_SHAPE(out_features)) : NULL;
    if (!w || (bias && !b)) {
        tl_module_free(m);
        return NULL;
    }
    if (rng) {
        double bound = 1.0 / sqrt((double)in_features);
        fill_uniform(w, bound, rng);
        if (b) fill_uniform(b, bound, rng);
    }
    return m;
}

/* The module's parameter, or NULL with an error naming what was expected. */
static tl_tensor *layer_param(const tl_module *m, const char *fn, const char *type,
                              const char *name) {
    if (!m) return tl_propagate("%s: module is NULL", fn);
    if (strcmp(tl_module_type(m), type) != 0)
        return tl_fail("%s: expected %s %s module, got %s", fn,
                       strchr("AEIOU", type[0]) ? "an" : "a",
                       type, tl_module_type(m));
    return tl_module_param(m, name);
}

tl_tensor *tl_linear_forward(const tl_module *linear, tl_tensor *x) {
    tl_tensor *w = layer_param(linear, "tl_linear_forward", "Linear", "weight");
    return w ? tl_linear(x, w, tl_module_find_param(linear, "bias")) : NULL;
}

/* PyTorch's nn.Embedding draws its weight from N(0, 1). */
tl_module *tl_embedding_new(int64_t num_embeddings, int64_t dim, tl_pcg32 *rng) {
    if (num_embeddings <= 0 || dim <= 0)
        return tl_fail("tl_embedding_new: num_embeddings and dim must be positive, got "
                       "%lld and %lld", (long long)num_embeddings, (long long)dim);
    tl_module *m = tl_module_new("Embedding");
    tl_tensor *w = tl_module_param_new(m, "weight", TL_SHAPE(num_embeddings, dim));
    if (!w) {
        tl_module_free(m);
        return NULL;
    }
    if (rng) fill_normal(w, rng);
    return m;
}

tl_tensor *tl_embedding_forward(const tl_module *embedding, tl_tensor *ids) {
    tl_tensor *w = layer_param(embedding, "tl_embedding_forward", "Embedding", "weight");
    return w ? tl_embedding(w, ids) : NULL;
}
