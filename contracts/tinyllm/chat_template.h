/* tinyllm/chat_template.h: chat templates, as transformers' apply_chat_template
 * renders them (L1.2, read by L7.9).
 *
 * tokenizer_config.json's "chat_template" is a Jinja2 template (or a list of
 * {"name", "template"}, "default" used unless another is named). It is
 * rendered with:
 *     messages               the conversation: [{"role": ..., "content": ...}, ...]
 *     add_generation_prompt  true: end with the header of an assistant turn
 *     bos_token, eos_token   tokenizer_config.json's strings ("" when absent)
 *     tools                  when given (a JSON list), else undefined
 *     raise_exception(msg)   fails the render with msg
 *     strftime_now(fmt)      the local time, formatted as by C's strftime
 * plus any variables the caller adds (e.g. {"enable_thinking": false}), in
 * transformers' Jinja environment: trim_blocks and lstrip_blocks on, the
 * loopcontrols extension ({% break %}, {% continue %}), |tojson with
 * Python's json.dumps spacing (", " and ": ", non-ASCII kept).
 * The prompt is then encoded WITHOUT adding special tokens again (the
 * template writes BOS itself): tl_tokenizer_encode(t, p, len, false, &ids).
 *
 * Jinja supported (what the chat templates of Llama, Mistral, Gemma, Qwen,
 * DeepSeek, SmolLM, Phi use): {{ }}, {% %}, {# #}, whitespace control with
 * '-' (and '+'); if/elif/else, for (else, loop.index/index0/first/last/
 * length/revindex/revindex0/previtem/nextitem, a filter `if` clause, unpacking
 * `for k, v in ...`), set (also ns.attr and a block {% set x %}..{% endset %}),
 * macro (positional and keyword arguments, defaults, varargs and kwargs),
 * call blocks ({% call(args) m() %}..{% endcall %}, m's caller()), spread
 * arguments (f(*list, **dict)), break, continue, filter blocks; literals
 * (strings, numbers, lists, dicts, tuples, true/false/none), arithmetic, ~,
 * comparisons, and/or/not, in/not in, is [not] TEST,
 * conditional expressions, slicing [a:b:c], attribute and item access, calls;
 * the filters and methods listed in jinja.c's tables. Anything else (e.g.
 * {% include %}, {% extends %}, a filter this runtime does not have) makes
 * the render fail with an error naming the construct and its line: a
 * template is never rendered wrong.
 *
 * Errors follow tensor.h: NULL with tl_error() naming the function, the
 * template's line and what to do. Returned strings are malloc'd; free them.
 */
#ifndef TINYLLM_CHAT_TEMPLATE_H
#define TINYLLM_CHAT_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>

#include "tinyllm/tokenizer.h"

typedef struct {
    const char *messages_json;    /* required: a JSON list of message objects */
    bool add_generation_prompt;
    const char *tools_json;       /* NULL, or a JSON list of tool definitions */
    const char *variables_json;   /* NULL, or a JSON object of more variables */
    const char *template_name;    /* NULL: "default" (or the only template) */
} tl_chat_request;

/* Renders the tokenizer's chat template for req; *len (when len is not NULL)
 * gets the length. Returns NULL with an error when the tokenizer has no
 * chat_template (tokenizer_config.json lacks one), the named template does not
 * exist, messages_json is not a JSON list (or tools_json / variables_json are
 * not what they should be), the template calls raise_exception (its message
 * is kept), or the template uses something unsupported (named). */
char *tl_chat_template_apply(const tl_tokenizer *t, const tl_chat_request *req, size_t *len);

/* Whether the tokenizer has a chat template (of that name; NULL: any). */
bool tl_chat_template_exists(const tl_tokenizer *t, const char *name);

/* Renders a Jinja template with the variables of a JSON object (NULL: none)
 * in the same environment (raise_exception and strftime_now included). */
char *tl_jinja_render(const char *source, const char *variables_json, size_t *len);

#endif
