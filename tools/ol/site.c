#include "site.h"

#include <stdlib.h>
#include <string.h>

#include "cdecl.h"

/* The spans of the functions a file defines; 0 when it cannot be read. */
static int spans_of(const char *path, c_span **out) {
    char *text = read_file(path, NULL);
    *out = NULL;
    int n = text ? cdecl_spans(text, out) : 0;
    free(text);
    return n;
}

void mutant_site_of(ol_ctx *ctx, const mutant *m, int line, mutant_site *out) {
    memset(out, 0, sizeof *out);
    const changed_line *c = mutant_first_change(m);
    if (!c) return;
    if (line <= 0) line = c->line;
    out->file = xasprintf("c/%s", c->file);
    char *ref = xasprintf("%s/reference/%s", ctx->root, c->file);
    c_span *spans;
    int n = spans_of(ref, &spans);
    const char *fn = cdecl_function_at(spans, n, line);
    if (fn) out->function = xstrdup(fn);
    cdecl_spans_free(spans, n);
    free(ref);
    /* a student release: the function its manifest records for the line */
    for (int i = 0; !out->function && i < m->nchanges; i++)
        if (m->changes[i].line == line && m->changes[i].function &&
            !strcmp(m->changes[i].file, c->file))
            out->function = xstrdup(m->changes[i].function);
    if (!out->function) return;
    char *mine = path_join(ctx->student, c->file);
    n = spans_of(mine, &spans);
    for (int i = 0; i < n && !out->line; i++)
        if (!strcmp(spans[i].name, out->function)) out->line = spans[i].first;
    cdecl_spans_free(spans, n);
    free(mine);
}

void mutant_site_free(mutant_site *s) {
    free(s->function);
    free(s->file);
    memset(s, 0, sizeof *s);
}
