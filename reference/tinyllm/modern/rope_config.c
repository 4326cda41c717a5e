/* RoPE scaling, the config half (L7.4): the reference.
 *
 * Reads a config.json in either form and standardises it the way transformers 5's
 * RotaryEmbeddingConfigMixin (convert_rope_params_to_dict, standardize_rope_params)
 * does, then checks what HF's _check_received_keys refuses (a missing required key)
 * and what would make a formula meaningless.
 */
#include <math.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "tinyllm/modern/rope_scaling.h"

static const char *const TYPE_NAMES[] = {"default", "linear", "dynamic", "yarn", "longrope",
                                         "llama3"};
#define N_TYPES ((int)(sizeof TYPE_NAMES / sizeof TYPE_NAMES[0]))
#define FN "rope_config_from_json"

const char *rope_type_name(rope_type type) {
    return (int)type >= 0 && (int)type < N_TYPES ? TYPE_NAMES[type] : "?";
}

/* An object's member, NULL when absent (JSON null counts as present). */
static const cJSON *member(const cJSON *obj, const char *key) {
    return obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

/* A number member into *out: 1 when read, 0 when absent or null (*out untouched), -1 on
 * a value that is not a finite number. */
static int number(const cJSON *obj, const char *key, const char *type, double *out) {
    const cJSON *v = member(obj, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return tl_fail_status(FN ": '%s' (rope_type '%s') must be a finite number", key, type);
    *out = v->valuedouble;
    return 1;
}

/* A positive whole number (a length), 0 when absent. */
static int length(const cJSON *obj, const char *key, const char *type, int64_t *out) {
    double v = 0;
    int got = number(obj, key, type, &v);
    if (got <= 0) return got;
    if (v < 1 || v != floor(v) || v > 1e15)
        return tl_fail_status(FN ": '%s' is %g (rope_type '%s'); it must be a whole number >= 1",
                              key, v, type);
    *out = (int64_t)v;
    return 1;
}

static int need(const cJSON *dict, const char *key, const char *type) {
    if (member(dict, key)) return 0;
    return tl_fail_status(FN ": rope_type '%s' needs the key '%s' in rope_scaling / "
                          "rope_parameters (HF: Missing required keys), and it is absent",
                          type, key);
}

/* short_factor or long_factor: an array of numbers, stored as float32. */
static int factor_list(const cJSON *dict, const char *key, float *out, int *n) {
    const cJSON *list = member(dict, key);
    if (!cJSON_IsArray(list))
        return tl_fail_status(FN ": '%s' (rope_type 'longrope') must be a list of numbers, one "
                              "per rotated pair", key);
    int count = cJSON_GetArraySize(list);
    if (count < 1 || count > TL_ROPE_MAX_FREQS)
        return tl_fail_status(FN ": '%s' (rope_type 'longrope') has %d numbers; it needs 1 to "
                              "%d", key, count, TL_ROPE_MAX_FREQS);
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, list) {
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
            return tl_fail_status(FN ": '%s'[%d] (rope_type 'longrope') is not a finite number",
                                  key, i);
        out[i++] = (float)v->valuedouble;
    }
    *n = count;
    return 0;
}

/* Which rope_scaling / rope_parameters dict applies: rope_scaling when it is a
 * non-empty object (HF's `rope_scaling or rope_parameters`), else rope_parameters. */
static int pick_dict(const cJSON *root, const cJSON **dict) {
    const char *keys[2] = {"rope_scaling", "rope_parameters"}, *picked = "";
    *dict = NULL;
    for (int k = 0; k < 2; k++) {
        const cJSON *d = member(root, keys[k]);
        if (!d || cJSON_IsNull(d)) continue;
        if (!cJSON_IsObject(d))
            return tl_fail_status(FN ": '%s' must be an object or null", keys[k]);
        if (!*dict && d->child) {
            *dict = d;
            picked = keys[k];
        }
    }
    /* transformers 5 nests one dict per layer type (Gemma 3): refused, never read as default. */
    for (const cJSON *v = *dict ? (*dict)->child : NULL; v; v = v->next)
        if (cJSON_IsObject(v))
            return tl_fail_status(FN ": '%s' in %s is a dict of its own: one rope per layer "
                                  "type is not supported; give the dict of the layer type you "
                                  "build as rope_parameters", v->string, picked);
    return 0;
}

static int parse_type(const cJSON *root, const cJSON *dict, rope_type *type) {
    const cJSON *v = member(dict, "rope_type");
    if (!v || cJSON_IsNull(v)) v = member(dict, "type");      /* 4.x */
    *type = ROPE_TYPE_DEFAULT;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsString(v))
        return tl_fail_status(FN ": the rope type ('rope_type' or 'type') must be a string");
    /* Phi3Config's backward compatibility: early Phi-3 files say "su" or "yarn". */
    const cJSON *model_type = member(root, "model_type");
    if (cJSON_IsString(model_type) && strcmp(model_type->valuestring, "phi3") == 0 &&
        (strcmp(v->valuestring, "su") == 0 || strcmp(v->valuestring, "yarn") == 0)) {
        *type = ROPE_TYPE_LONGROPE;
        return 0;
    }
    for (int t = 0; t < N_TYPES; t++)
        if (strcmp(v->valuestring, TYPE_NAMES[t]) == 0) {
            *type = (rope_type)t;
            return 0;
        }
    return tl_fail_status(FN ": unknown rope type '%.60s'; known: default, linear, dynamic, "
                          "yarn, longrope, llama3", v->valuestring);
}

/* Everything but the type-specific checks. */
static int parse_common(const cJSON *root, const cJSON *dict, RopeConfig *c) {
    const char *type = rope_type_name(c->type);
    const cJSON *model_type = member(root, "model_type");
    bool mixtral = cJSON_IsString(model_type) && strcmp(model_type->valuestring, "mixtral") == 0;
    c->theta = mixtral ? 1e6 : 10000.0;                       /* the config class's default */
    if (number(root, "rope_theta", type, &c->theta) < 0) return -1;
    if (number(dict, "rope_theta", type, &c->theta) < 0) return -1;   /* the dict's wins */
    if (!(c->theta > 1))
        return tl_fail_status(FN ": rope_theta is %g; it must be > 1", c->theta);
    if (length(root, "max_position_embeddings", type, &c->max_position_embeddings) < 0)
        return -1;

    c->partial_rotary_factor = 1.0;
    if (number(dict, "partial_rotary_factor", type, &c->partial_rotary_factor) < 0) return -1;
    if (number(root, "partial_rotary_factor", type, &c->partial_rotary_factor) < 0) return -1;
    if (!(c->partial_rotary_factor > 0 && c->partial_rotary_factor <= 1))
        return tl_fail_status(FN ": partial_rotary_factor is %g; it must be in (0, 1]",
                              c->partial_rotary_factor);
    if (length(root, "head_dim", type, &c->head_dim) < 0) return -1;
    int64_t hidden = 0, heads = 0;
    if (length(root, "hidden_size", type, &hidden) < 0) return -1;
    if (length(root, "num_attention_heads", type, &heads) < 0) return -1;
    if (c->head_dim == 0 && hidden > 0 && heads > 0) c->head_dim = hidden / heads;

    c->factor = c->attention_factor = NAN;
    if (number(dict, "factor", type, &c->factor) < 0) return -1;
    if (number(dict, "attention_factor", type, &c->attention_factor) < 0) return -1;
    if (c->type != ROPE_TYPE_DEFAULT && !isnan(c->factor) && c->factor < 1)
        return tl_fail_status(FN ": factor is %g (rope_type '%s'); it must be >= 1 (HF warns "
                              "and computes; a factor below 1 shrinks the context)",
                              c->factor, type);
    if (!isnan(c->attention_factor) && c->attention_factor < 0)
        return tl_fail_status(FN ": attention_factor is %g (rope_type '%s'); it must be >= 0",
                              c->attention_factor, type);

    /* Phi-3 keeps the pretraining length at the top level: it wins over the dict's. */
    if (c->type == ROPE_TYPE_LLAMA3 || c->type == ROPE_TYPE_YARN ||
        c->type == ROPE_TYPE_LONGROPE) {
        int got = length(root, "original_max_position_embeddings", type,
                         &c->original_max_position_embeddings);
        if (got == 0) got = length(dict, "original_max_position_embeddings", type,
                                   &c->original_max_position_embeddings);
        if (got < 0) return -1;
        if (got == 0) c->original_max_position_embeddings = c->max_position_embeddings;
        if (c->original_max_position_embeddings < 1)
            return tl_fail_status(FN ": rope_type '%s' needs original_max_position_embeddings "
                                  "or max_position_embeddings; the config has neither", type);
    }
    return 0;
}

static int parse_specific(const cJSON *dict, RopeConfig *c) {
    const char *type = rope_type_name(c->type);
    switch (c->type) {
    case ROPE_TYPE_DEFAULT:
        return 0;
    case ROPE_TYPE_LINEAR:
    case ROPE_TYPE_DYNAMIC:
    case ROPE_TYPE_LLAMA3:
        if (need(dict, "factor", type) != 0) return -1;
        if (isnan(c->factor))
            return tl_fail_status(FN ": factor is null (rope_type '%s'); it must be a number "
                                  ">= 1", type);
        if (c->type == ROPE_TYPE_DYNAMIC && c->max_position_embeddings < 1)
            return tl_fail_status(FN ": rope_type 'dynamic' needs max_position_embeddings, "
                                  "and the config has none");
        if (c->type != ROPE_TYPE_LLAMA3) return 0;
        if (need(dict, "low_freq_factor", type) || need(dict, "high_freq_factor", type))
            return -1;
        if (number(dict, "low_freq_factor", type, &c->low_freq_factor) != 1 ||
            number(dict, "high_freq_factor", type, &c->high_freq_factor) != 1)
            return tl_fail_status(FN ": low_freq_factor and high_freq_factor (rope_type "
                                  "'llama3') must be numbers");
        if (!(c->high_freq_factor > c->low_freq_factor && c->low_freq_factor > 0))
            return tl_fail_status(FN ": high_freq_factor %g must exceed low_freq_factor %g > 0 "
                                  "(rope_type 'llama3')", c->high_freq_factor, c->low_freq_factor);
        return 0;
    case ROPE_TYPE_YARN: {
        if (need(dict, "factor", type) != 0) return -1;
        if (isnan(c->factor) && c->max_position_embeddings < 1)
            return tl_fail_status(FN ": factor is null (rope_type 'yarn') and there is no "
                                  "max_position_embeddings to derive it from");
        c->beta_fast = 32;
        c->beta_slow = 1;
        double v = 0;
        if (number(dict, "beta_fast", type, &v) < 0) return -1;
        if (v != 0) c->beta_fast = v;                          /* HF: get(...) or 32 */
        v = 0;
        if (number(dict, "beta_slow", type, &v) < 0) return -1;
        if (v != 0) c->beta_slow = v;
        if (!(c->beta_fast > 0 && c->beta_slow > 0))
            return tl_fail_status(FN ": beta_fast %g and beta_slow %g (rope_type 'yarn') must "
                                  "be > 0", c->beta_fast, c->beta_slow);
        if (number(dict, "mscale", type, &c->mscale) < 0) return -1;
        if (number(dict, "mscale_all_dim", type, &c->mscale_all_dim) < 0) return -1;
        const cJSON *t = member(dict, "truncate");
        c->truncate = !t || cJSON_IsTrue(t);                  /* get("truncate", True) */
        if (t && !cJSON_IsBool(t) && !cJSON_IsNull(t))
            return tl_fail_status(FN ": truncate (rope_type 'yarn') must be true or false");
        return 0;
    }
    case ROPE_TYPE_LONGROPE: {
        if (need(dict, "short_factor", type) || need(dict, "long_factor", type)) return -1;
        int n_short = 0, n_long = 0;
        if (factor_list(dict, "short_factor", c->short_factor, &n_short) ||
            factor_list(dict, "long_factor", c->long_factor, &n_long))
            return -1;
        if (n_short != n_long)
            return tl_fail_status(FN ": short_factor has %d numbers and long_factor %d "
                                  "(rope_type 'longrope'); both need one per rotated pair",
                                  n_short, n_long);
        int64_t rotary = (int64_t)((double)c->head_dim * c->partial_rotary_factor);
        if (c->head_dim > 0 && n_short != rotary / 2)
            return tl_fail_status(FN ": short_factor and long_factor have %d numbers, but the "
                                  "heads rotate %lld features: they need %lld (rope_type "
                                  "'longrope')", n_short, (long long)rotary,
                                  (long long)(rotary / 2));
        if (isnan(c->factor) && c->max_position_embeddings < 1)
            return tl_fail_status(FN ": rope_type 'longrope' without factor needs "
                                  "max_position_embeddings to derive it");
        c->n_factors = n_short;
        return 0;
    }
    }
    return 0;
}

int rope_config_from_json(const char *json, RopeConfig *out) {
    if (!out) return tl_fail_status(FN ": the RopeConfig pointer is NULL");
    memset(out, 0, sizeof *out);
    if (!json) return tl_fail_status(FN ": the config text is NULL");
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &end, true);
    if (!root)
        return tl_fail_status(FN ": the config is not valid JSON (syntax error at byte %ld); "
                              "pass config.json's text", end ? (long)(end - json) : 0L);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return tl_fail_status(FN ": the config is JSON but not an object; pass config.json's "
                              "text, which is one {...}");
    }
    const cJSON *dict = NULL;
    int rc = pick_dict(root, &dict);
    if (rc == 0) rc = parse_type(root, dict, &out->type);
    if (rc == 0) rc = parse_common(root, dict, out);
    if (rc == 0) rc = parse_specific(dict, out);
    cJSON_Delete(root);
    if (rc != 0) memset(out, 0, sizeof *out);
    return rc;
}
