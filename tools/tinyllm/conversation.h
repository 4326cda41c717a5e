/* conversation.h: the messages of a chat, as the JSON list a chat template
 * renders ([{"role": "user", "content": "..."}, ...]). */
#ifndef TINYLLM_TOOL_CONVERSATION_H
#define TINYLLM_TOOL_CONVERSATION_H

typedef struct conversation conversation;

conversation *conversation_new(void);
void conversation_free(conversation *c);
/* Appends one message. -1 when memory runs out. */
int conversation_add(conversation *c, const char *role, const char *content);
/* Drops the last message (a turn that failed or was interrupted). */
void conversation_pop(conversation *c);
int conversation_len(const conversation *c);
/* The messages as a malloc'd JSON list, or NULL. */
char *conversation_json(const conversation *c);

#endif
