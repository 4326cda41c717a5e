/* tokenizer_vocab.c: what a loaded tokenizer tells about its vocabulary and
 * its config files (tokenizer.h): ids and token strings, specials, the
 * config's tokens and the stop ids. */
#include <string.h>

#include "tokenizer_internal.h"

int32_t tl_tokenizer_vocab_size(const tl_tokenizer *t) { return t ? t->n_total : 0; }

int32_t tl_tokenizer_token_to_id(const tl_tokenizer *t, const char *token) {
    if (!t || !token) return -1;
    size_t n = strlen(token);
    int32_t at = tk_strmap_get(&t->added_by_content, token, n);
    if (at >= 0) return t->added[at].id;
    return tk_strmap_get(&t->bpe.vocab, token, n);
}

const char *tl_tokenizer_id_to_token(const tl_tokenizer *t, int32_t id) {
    if (!t || id < 0 || id >= t->n_total) return NULL;
    int32_t at = t->added_index_by_id[id];
    if (at >= 0) return t->added[at].content;
    return id < t->bpe.n_ids ? t->bpe.id_token[id] : NULL;
}

bool tl_tokenizer_is_special(const tl_tokenizer *t, int32_t id) {
    const char *tok = tl_tokenizer_id_to_token(t, id);
    if (!tok) return false;
    /* the library asks by content: a vocabulary token equal to a special one counts */
    int32_t at = tk_strmap_get(&t->added_by_content, tok, strlen(tok));
    return at >= 0 && t->added[at].special;
}

const char *tl_tokenizer_bos_token(const tl_tokenizer *t) { return t ? t->bos_token : NULL; }
const char *tl_tokenizer_eos_token(const tl_tokenizer *t) { return t ? t->eos_token : NULL; }
bool tl_tokenizer_clean_up_spaces(const tl_tokenizer *t) { return t && t->clean_up_spaces; }

int tl_tokenizer_stop_ids(const tl_tokenizer *t, const int32_t **ids) {
    if (ids) *ids = t ? t->stop_ids : NULL;
    return t ? t->stop_count : 0;
}

const char *tl_tokenizer_dir(const tl_tokenizer *t) { return t ? t->dir : NULL; }
