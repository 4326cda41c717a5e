/* chat_template.c: `tinyllm chat-template PATH --messages FILE.json
 * [--add-generation-prompt] [--template NAME] [--tools FILE.json]
 * [--vars JSON]` prints the prompt the model's chat template renders for a
 * conversation, as transformers' apply_chat_template(messages,
 * tokenize=False) gives it. Encode it with `tinyllm tokenize PATH --file -
 * --no-special` (the prompt holds its own special tokens). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tinyllm/chat_template.h"
#include "tinyllm/tensor.h"
#include "tinyllm/tokenizer.h"
#include "output.h"
#include "verbs.h"

static const char usage[] =
    "usage: tinyllm chat-template PATH --messages FILE.json [--add-generation-prompt]\n"
    "                             [--template NAME] [--tools FILE.json] [--vars JSON]\n"
    "  PATH                     a tokenizer.json, or a model folder holding one and its\n"
    "                           tokenizer_config.json (which holds the chat_template)\n"
    "  --messages FILE.json     the conversation: [{\"role\": \"user\", \"content\": \"...\"}, "
    "...]\n"
    "                           ('-' reads standard input)\n"
    "  --add-generation-prompt  end with the start of an assistant turn\n"
    "  --template NAME          one of a list of named templates (default: \"default\")\n"
    "  --tools FILE.json        a list of tool definitions, passed as `tools`\n"
    "  --vars JSON              more variables, e.g. '{\"enable_thinking\": false}'\n"
    "prints the rendered prompt exactly (no newline is added)\n";

static char *read_text(const char *path) {
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) return NULL;
    size_t cap = 4096, n = 0, got;
    char *s = malloc(cap);
    while (s && (got = fread(s + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *bigger = realloc(s, cap * 2);
            if (!bigger) {
                free(s);
                s = NULL;
                break;
            }
            s = bigger;
            cap *= 2;
        }
    }
    if (f != stdin) fclose(f);
    if (s) s[n] = '\0';
    return s;
}

int tinyllm_chat_template(int argc, char **argv) {
    const char *path = NULL, *messages = NULL, *tools = NULL, *vars = NULL, *name = NULL;
    bool generation = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--messages") && i + 1 < argc) {
            messages = argv[++i];
        } else if (!strcmp(argv[i], "--tools") && i + 1 < argc) {
            tools = argv[++i];
        } else if (!strcmp(argv[i], "--vars") && i + 1 < argc) {
            vars = argv[++i];
        } else if (!strcmp(argv[i], "--template") && i + 1 < argc) {
            name = argv[++i];
        } else if (!strcmp(argv[i], "--add-generation-prompt")) {
            generation = true;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "tinyllm chat-template: unknown option or missing value: %s\n\n%s",
                    argv[i], usage);
            return 2;
        } else if (!path) {
            path = argv[i];
        } else {
            fprintf(stderr, "tinyllm chat-template: one PATH only (got '%s' too)\n\n%s",
                    argv[i], usage);
            return 2;
        }
    }
    if (!path || !messages) {
        fprintf(stderr, "tinyllm chat-template: give PATH and --messages\n\n%s", usage);
        return 2;
    }
    cJSON *parsed = vars ? cJSON_Parse(vars) : NULL;
    bool object = cJSON_IsObject(parsed);
    cJSON_Delete(parsed);
    if (vars && !object) {   /* a usage error, said as one */
        fprintf(stderr, "tinyllm chat-template: --vars '%.200s' is not a JSON object; give one, "
                "e.g. --vars '{\"enable_thinking\": false}'\n", vars);
        return 2;
    }
    char *messages_json = read_text(messages), *tools_json = tools ? read_text(tools) : NULL;
    if (!messages_json || (tools && !tools_json)) {
        fprintf(stderr, "tinyllm chat-template: cannot read %s\n",
                !messages_json ? messages : tools);
        free(messages_json);
        free(tools_json);
        return 1;
    }
    tl_clear_error();
    tl_tokenizer *t = tl_tokenizer_load(path);
    tl_chat_request req = {.messages_json = messages_json, .add_generation_prompt = generation,
                           .tools_json = tools_json, .variables_json = vars,
                           .template_name = name};
    size_t len = 0;
    char *prompt = t ? tl_chat_template_apply(t, &req, &len) : NULL;
    int status = 0;
    if (!prompt) {
        print_failure("chat-template", "failed");
        status = 1;
    } else {
        fwrite(prompt, 1, len, stdout);
    }
    free(prompt);
    free(messages_json);
    free(tools_json);
    tl_tokenizer_free(t);
    return status;
}
