#include "tinyllm/chat_template.h"
#include "tinyllm/tensor.h"
char *tl_chat_template_apply(const tl_tokenizer *t, const tl_chat_request *req, size_t *len) {
    (void)t; (void)req; (void)len; return tl_fail("todo");
}
