/* conversation.c: a chat's messages (conversation.h), on cJSON. */
#include <stdlib.h>
#include <cjson/cJSON.h>

#include "conversation.h"

struct conversation {
    cJSON *messages;
};

conversation *conversation_new(void) {
    conversation *c = malloc(sizeof *c);
    if (c && !(c->messages = cJSON_CreateArray())) {
        free(c);
        c = NULL;
    }
    return c;
}

void conversation_free(conversation *c) {
    if (!c) return;
    cJSON_Delete(c->messages);
    free(c);
}

int conversation_add(conversation *c, const char *role, const char *content) {
    cJSON *m = cJSON_CreateObject();
    if (!m || !cJSON_AddStringToObject(m, "role", role) ||
        !cJSON_AddStringToObject(m, "content", content)) {
        cJSON_Delete(m);
        return -1;
    }
    cJSON_AddItemToArray(c->messages, m);
    return 0;
}

void conversation_pop(conversation *c) {
    int n = cJSON_GetArraySize(c->messages);
    if (n > 0) cJSON_DeleteItemFromArray(c->messages, n - 1);
}

int conversation_len(const conversation *c) { return cJSON_GetArraySize(c->messages); }

char *conversation_json(const conversation *c) { return cJSON_PrintUnformatted(c->messages); }
