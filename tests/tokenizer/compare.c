/* compare.c: the C tokenizer agrees with the JavaScript oracle, token for token.
 *
 *   compare ORACLE_JSON TOKENIZER_DIR CONVERSATIONS_JSON [JINJA2_JSON]
 *
 * ORACLE_JSON is what oracle/tokenizer/oracle.mjs wrote for one tokenizer
 * (@huggingface/tokenizers and @huggingface/jinja); JINJA2_JSON what
 * oracle/tokenizer/jinja2_oracle.py wrote (Jinja2 itself, in transformers'
 * environment), whose renders are compared too. Property: for every text,
 * the ids with and without special tokens are identical and so is the
 * decoded text with and without skip_special; every oracle id list (invalid
 * UTF-8 byte runs, random ids) decodes to the identical text; every chat
 * template render over every conversation is the identical string (or both
 * refuse it) and encodes to the identical ids. The first difference of each
 * kind is printed in full (the text, the position, both id lists); the
 * closing line counts what was compared. Exit 0 when all agree, 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tinyllm/chat_template.h"
#include "tinyllm/tensor.h"
#include "tinyllm/tokenizer.h"

typedef struct {
    long compared, ids, differ;
} tally;

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}

/* A text with control characters escaped, cut at max bytes. */
static void print_text(const char *label, const char *s, size_t n) {
    printf("    %s (%zu bytes): \"", label, n);
    for (size_t i = 0; i < n && i < 400; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') printf("\\n");
        else if (c == '\t') printf("\\t");
        else if (c == '\r') printf("\\r");
        else if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20 || c == 0x7F) printf("\\x%02x", c);
        else putchar(c);
    }
    printf(n > 400 ? "\"...\n" : "\"\n");
}

static void print_ids(const char *label, const int32_t *ids, long n, long around) {
    long from = around > 8 ? around - 8 : 0, to = n < around + 24 ? n : around + 24;
    printf("    %s (%ld ids)%s: [", label, n, from ? ", from position" : "");
    if (from) printf("%ld ... ", from);
    for (long i = from; i < to; i++) printf("%s%d", i > from ? ", " : "", ids[i]);
    printf(to < n ? ", ...]\n" : "]\n");
}

/* ids of a JSON list into a malloc'd array. */
static long json_ids(const cJSON *list, int32_t **out) {
    long n = cJSON_GetArraySize(list);
    *out = malloc(((size_t)n + 1) * sizeof **out);
    long i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, list)(*out)[i++] = (int32_t)e->valuedouble;
    return n;
}

/* Compares the C ids with the oracle's; prints the first difference. */
static int same_ids(tally *t, const char *what, const char *source, const char *text,
                    const int32_t *mine, long n_mine, const cJSON *theirs_json) {
    int32_t *theirs;
    long n = json_ids(theirs_json, &theirs);
    long at = 0;
    while (at < n && at < n_mine && mine[at] == theirs[at]) at++;
    bool same = at == n && at == n_mine;
    t->compared++;
    t->ids += n;
    if (!same && t->differ++ == 0) {
        printf("  FIRST DIFFERENCE in %s of %s, at id position %ld\n", what, source, at);
        print_text("text", text, strlen(text));
        print_ids("oracle", theirs, n, at);
        print_ids("tinyllm", mine, n_mine, at);
    }
    free(theirs);
    return same;
}

static void same_text(tally *t, const char *what, const char *source, const char *mine,
                      size_t n_mine, const char *theirs, size_t n) {
    size_t at = 0;
    while (at < n && at < n_mine && mine[at] == theirs[at]) at++;
    bool same = at == n && at == n_mine;
    t->compared++;
    if (!same && t->differ++ == 0) {
        printf("  FIRST DIFFERENCE in %s of %s, at byte %zu\n", what, source, at);
        print_text("oracle", theirs, n);
        print_text("tinyllm", mine, n_mine);
    }
}

static const char *str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void decode_and_compare(tl_tokenizer *tok, tally *t, const cJSON *entry,
                               const char *source) {
    int32_t *ids;
    long n = json_ids(cJSON_GetObjectItemCaseSensitive(entry, "ids_special")
                          ? cJSON_GetObjectItemCaseSensitive(entry, "ids_special")
                          : cJSON_GetObjectItemCaseSensitive(entry, "ids"),
                      &ids);
    const char *keys[2] = {"text", "text_skip"};
    const char *enc_keys[2] = {"decoded", "decoded_skip"};
    for (int skip = 0; skip < 2; skip++) {
        /* an encode entry holds its text and the decoded text; a decode entry
         * holds only the decoded text */
        bool is_encode = cJSON_GetObjectItemCaseSensitive(entry, "ids_special") != NULL;
        const char *key = is_encode ? enc_keys[skip] : keys[skip];
        const char *want = str(entry, key);
        if (!want) continue;
        size_t want_len = strlen(want);
        char hex_key[32], *bytes = NULL;
        snprintf(hex_key, sizeof hex_key, "%s_hex", key);
        const char *hex = str(entry, hex_key);
        if (hex) {   /* the text holds NUL: its bytes come as hex */
            want_len = strlen(hex) / 2;
            bytes = malloc(want_len + 1);
            for (size_t i = 0; i < want_len; i++) sscanf(hex + 2 * i, "%2hhx", &bytes[i]);
            bytes[want_len] = '\0';
            want = bytes;
        }
        size_t len;
        char *mine = tl_tokenizer_decode(tok, ids, (size_t)n, skip ? TL_DECODE_SKIP_SPECIAL : 0,
                                         &len);
        if (!mine) {
            printf("  decode of %s failed: %s\n", source, tl_error());
            t->differ++;
            tl_clear_error();
            continue;
        }
        same_text(t, skip ? "decode(skip_special)" : "decode", source, mine, len, want, want_len);
        free(mine);
        free(bytes);
    }
    free(ids);
}

static const cJSON *find_conversation(const cJSON *convs, const char *name) {
    const cJSON *c;
    cJSON_ArrayForEach(c, convs) if (!strcmp(str(c, "name"), name)) return c;
    return NULL;
}

/* Renders every entry of a "chat" list and compares (with the ids of the
 * prompt too when the entry has them). who names the oracle in messages. */
static void compare_chat(tl_tokenizer *tok, tally *chat, const cJSON *list, const cJSON *convs,
                         const char *convs_path, const char *who) {
    const cJSON *e;
    cJSON_ArrayForEach(e, list) {
        const cJSON *conv = find_conversation(convs, str(e, "conversation"));
        char source[300];
        snprintf(source, sizeof source, "%s: template '%s' on \"%s\" (add_generation_prompt %s)",
                 who, str(e, "template"), str(e, "conversation"),
                 cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "add_generation_prompt"))
                     ? "true" : "false");
        if (!conv) {
            printf("  %s: the conversation is not in %s\n", source, convs_path);
            chat->differ++;
            continue;
        }
        char *messages = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(conv, "messages"));
        const cJSON *vars = cJSON_GetObjectItemCaseSensitive(conv, "variables");
        char *variables = vars ? cJSON_PrintUnformatted(vars) : NULL;
        tl_chat_request req = {
            .messages_json = messages,
            .add_generation_prompt =
                cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "add_generation_prompt")),
            .variables_json = variables,
            .template_name = str(e, "template"),
        };
        size_t len;
        char *mine = tl_chat_template_apply(tok, &req, &len);
        const char *want = str(e, "rendered");
        chat->compared++;
        if (!want) {   /* the template raised: so must ours */
            if (mine && chat->differ++ == 0) {
                printf("  FIRST DIFFERENCE in %s: the oracle raised \"%s\"\n", source,
                       str(e, "error"));
                print_text("tinyllm rendered", mine, len);
            }
        } else if (!mine) {
            if (chat->differ++ == 0)
                printf("  FIRST DIFFERENCE in %s: tinyllm failed: %s\n", source, tl_error());
        } else {
            chat->compared--;
            same_text(chat, "chat template", source, mine, len, want, strlen(want));
            int32_t *ids = NULL;
            int64_t n = tl_tokenizer_encode(tok, mine, len, false, &ids);
            if (n >= 0 && cJSON_GetObjectItemCaseSensitive(e, "ids"))
                same_ids(chat, "encode(rendered prompt)", source, mine, ids, n,
                         cJSON_GetObjectItemCaseSensitive(e, "ids"));
            free(ids);
        }
        tl_clear_error();
        free(mine);
        free(messages);
        free(variables);
    }
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: compare ORACLE_JSON TOKENIZER_DIR CONVERSATIONS_JSON "
                        "[JINJA2_JSON]\n");
        return 2;
    }
    char *jinja2_text = argc == 5 ? read_file(argv[4]) : NULL;
    cJSON *jinja2 = jinja2_text ? cJSON_Parse(jinja2_text) : NULL;
    if (argc == 5 && !jinja2) {
        fprintf(stderr, "compare: cannot read %s\n", argv[4]);
        return 2;
    }
    char *oracle_text = read_file(argv[1]), *conv_text = read_file(argv[3]);
    cJSON *oracle = oracle_text ? cJSON_Parse(oracle_text) : NULL;
    cJSON *convs = conv_text ? cJSON_Parse(conv_text) : NULL;
    if (!oracle || !convs) {
        fprintf(stderr, "compare: cannot read %s\n", !oracle ? argv[1] : argv[3]);
        return 2;
    }
    tl_tokenizer *tok = tl_tokenizer_load(argv[2]);
    if (!tok) {
        printf("compare: %s\n", tl_error());
        return 1;
    }
    const char *name = str(oracle, "tokenizer");
    printf("== %s (%s) against %s\n", name, argv[2], str(oracle, "oracle"));
    tally enc = {0}, dec = {0}, chat = {0};

    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(oracle, "encode")) {
        const char *text = str(e, "text"), *source = str(e, "source");
        for (int special = 0; special < 2; special++) {
            int32_t *ids = NULL;
            int64_t n = tl_tokenizer_encode(tok, text, strlen(text), special, &ids);
            if (n < 0) {
                printf("  encode of %s failed: %s\n", source, tl_error());
                tl_clear_error();
                enc.differ++;
                continue;
            }
            same_ids(&enc, special ? "encode(add_special)" : "encode", source, text, ids, n,
                     cJSON_GetObjectItemCaseSensitive(e, special ? "ids_special" : "ids"));
            free(ids);
        }
        decode_and_compare(tok, &dec, e, source);
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(oracle, "decode"))
        decode_and_compare(tok, &dec, e, str(e, "source"));

    compare_chat(tok, &chat, cJSON_GetObjectItemCaseSensitive(oracle, "chat"), convs, argv[3],
                 "@huggingface/jinja");
    if (jinja2)
        compare_chat(tok, &chat, cJSON_GetObjectItemCaseSensitive(jinja2, "chat"), convs, argv[3],
                     "Jinja2");
    printf("  encode: %ld id lists compared (%ld ids), %ld differ\n", enc.compared, enc.ids,
           enc.differ);
    printf("  decode: %ld texts compared, %ld differ\n", dec.compared, dec.differ);
    printf("  chat templates: %ld renders and prompt encodings compared (%ld ids), %ld differ\n",
           chat.compared, chat.ids, chat.differ);
    long differ = enc.differ + dec.differ + chat.differ;
    long compared = enc.compared + dec.compared + chat.compared;
    printf("%s: %ld passed, %ld failed\n", name, compared - differ, differ);
    tl_tokenizer_free(tok);
    cJSON_Delete(oracle);
    cJSON_Delete(convs);
    cJSON_Delete(jinja2);
    free(jinja2_text);
    free(oracle_text);
    free(conv_text);
    tl_shutdown();
    return differ ? 1 : 0;
}
