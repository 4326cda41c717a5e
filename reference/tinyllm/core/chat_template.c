/* chat_template.c: transformers' apply_chat_template (chat_template.h) on
 * the Jinja renderer of jinja*.c.
 *
 * The variables are those transformers passes (tokenization_utils_base.py,
 * utils/chat_template_utils.py, transformers 4.4x-5.x): messages, tools and
 * documents (None unless given), add_generation_prompt, and the special
 * tokens the tokenizer has (bos_token, eos_token; a token the config leaves
 * out stays undefined), then the caller's extra variables.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jinja_internal.h"
#include "tinyllm/chat_template.h"
#include "tinyllm/tensor.h"
#include "tokenizer_internal.h"

/* Adds a prefix to the current error (the Jinja message keeps its line). */
static void *context_error(const char *fmt, const char *a, const char *b) {
    char inner[1024];
    snprintf(inner, sizeof inner, "%s", tl_error() ? tl_error() : "failed");
    const char *cut = strncmp(inner, "tl_jinja_render: ", 17) ? inner : inner + 17;
    char prefix[600];
    snprintf(prefix, sizeof prefix, fmt, a ? a : "", b ? b : "");
    tl_set_error("%s: %s", prefix, cut);
    return NULL;
}

char *tl_jinja_render(const char *source, const char *variables_json, size_t *len) {
    if (!source) return tl_propagate("tl_jinja_render: the template is NULL");
    jarena arena = {0};
    jv vars = jv_new_dict(&arena);
    char *result = NULL, why[300];
    if (variables_json &&
        (!jv_from_json(&arena, variables_json, &vars, why, sizeof why) || vars.kind != JV_DICT))
        tl_fail("tl_jinja_render: the variables are not a JSON object%s%s", why[0] ? ": " : "",
                why);
    else
        result = jinja_render_value(source, vars, &arena, len);
    ja_free(&arena);
    return result;
}

/* The template's source (malloc'd) by name, from the chat_template value. */
static char *find_template(const tl_tokenizer *t, const char *name) {
    cJSON *v = t->chat_template_json ? cJSON_Parse(t->chat_template_json) : NULL;
    char *source = NULL;
    if (cJSON_IsString(v)) {
        if (!name || !strcmp(name, "default")) source = strdup(v->valuestring);
    } else if (cJSON_IsArray(v)) {
        const cJSON *e, *only = cJSON_GetArraySize(v) == 1 ? v->child : NULL;
        cJSON_ArrayForEach(e, v) {
            const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(e, "template");
            if (cJSON_IsString(n) && cJSON_IsString(s) &&
                (!strcmp(n->valuestring, name ? name : "default") || (!name && e == only)))
                source = strdup(s->valuestring);
        }
    }
    cJSON_Delete(v);
    return source;
}

bool tl_chat_template_exists(const tl_tokenizer *t, const char *name) {
    if (!t || !t->chat_template_json) return false;
    char *s = find_template(t, name);
    free(s);
    return s != NULL;
}

/* Sets vars[key] to the JSON text json, which must be of kind want; else
 * fails with what (and what in the text cannot be held, if that is why). */
static bool add_json(jarena *a, jdict *vars, const char *key, const char *json, jv_kind want,
                     const char *what) {
    jv v;
    char why[300];
    if (!jv_from_json(a, json, &v, why, sizeof why) || v.kind != want) {
        tl_fail("tl_chat_template_apply: %s_json is not %s%s%s", key, what, why[0] ? ": " : "",
                why);
        return false;
    }
    jd_set(a, vars, jv_cstring(key), v);
    return true;
}

char *tl_chat_template_apply(const tl_tokenizer *t, const tl_chat_request *req, size_t *len) {
    if (!t || !req || !req->messages_json)
        return tl_propagate("tl_chat_template_apply: %s is NULL",
                       !t ? "the tokenizer" : !req ? "the request" : "messages_json");
    if (!t->chat_template_json)
        return tl_fail("tl_chat_template_apply: %s has no chat_template (tokenizer_config.json "
                       "lacks one); give a model whose tokenizer_config.json has it",
                       t->dir[0] ? t->dir : t->origin);
    /* The template's own file, not tokenizer.json: the one to open and fix. */
    const char *from = t->template_origin ? t->template_origin : t->origin;
    char *source = find_template(t, req->template_name);
    if (!source)
        return tl_fail("tl_chat_template_apply: %s has no chat template named '%s'", from,
                       req->template_name ? req->template_name : "default");
    jarena arena = {0};
    jv vars = jv_new_dict(&arena);
    char *result = NULL;
    jdict *d = vars.u.dict;
    if (!d) {
        tl_fail("tl_chat_template_apply: out of memory");
        goto done;
    }
    if (!add_json(&arena, d, "messages", req->messages_json, JV_LIST, "a JSON list of messages"))
        goto done;
    jd_set(&arena, d, jv_cstring("tools"), jv_none());
    jd_set(&arena, d, jv_cstring("documents"), jv_none());
    if (req->tools_json &&
        !add_json(&arena, d, "tools", req->tools_json, JV_LIST, "a JSON list of tool definitions"))
        goto done;
    jd_set(&arena, d, jv_cstring("add_generation_prompt"), jv_bool(req->add_generation_prompt));
    if (t->bos_token) jd_set(&arena, d, jv_cstring("bos_token"), jv_cstring(t->bos_token));
    if (t->eos_token) jd_set(&arena, d, jv_cstring("eos_token"), jv_cstring(t->eos_token));
    if (req->variables_json) {
        jv extra;
        char why[300];
        if (!jv_from_json(&arena, req->variables_json, &extra, why, sizeof why) ||
            extra.kind != JV_DICT) {
            tl_fail("tl_chat_template_apply: variables_json is not a JSON object%s%s",
                    why[0] ? ": " : "", why);
            goto done;
        }
        for (size_t i = 0; i < extra.u.dict->count; i++)
            jd_set(&arena, d, extra.u.dict->keys[i], extra.u.dict->values[i]);
    }
    result = jinja_render_value(source, vars, &arena, len);
    if (!result)
        context_error("tl_chat_template_apply: the chat template of %s%s", from,
                      req->template_name ? " (named)" : "");
done:
    ja_free(&arena);
    free(source);
    return result;
}
