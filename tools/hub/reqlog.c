/* reqlog.c: the log of requests tests read back. An entry is written when a
 * request's headers arrive and completed when it is answered, so a client
 * that gave up on a stalled answer still finds its request here. */
#include <stdlib.h>
#include <string.h>
#include "hub_internal.h"

static void copy_field(char *dst, size_t cap, const char *src, size_t n) {
    if (n >= cap) n = cap - 1;   /* long values are cut: the log is for tests */
    memcpy(dst, src, n);
    dst[n] = '\0';
}

void hub_log_begin(hub *h, hub_req *r, struct MHD_Connection *c) {
    hub_request e = {.host = r->l->host};
    const char *uri = r->uri ? r->uri : "";
    const char *q = strchr(uri, '?');
    copy_field(e.method, sizeof e.method, r->method, strlen(r->method));
    copy_field(e.path, sizeof e.path, uri, q ? (size_t)(q - uri) : strlen(uri));
    if (q) copy_field(e.query, sizeof e.query, q + 1, strlen(q + 1));
    const char *range = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_RANGE);
    if (range) {
        e.has_range = r->has_range = true;
        copy_field(e.range, sizeof e.range, range, strlen(range));
    }
    e.authorization =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION) != NULL;

    pthread_mutex_lock(&h->lock);
    r->log_index = -1;
    if (h->log_limit > 0 && h->nlog >= h->log_limit) {   /* full: start over */
        h->nlog = 0;
        h->log_generation++;
    }
    if (h->nlog == h->caplog) {
        int cap = h->caplog ? 2 * h->caplog : 64;
        hub_request *p = realloc(h->log, (size_t)cap * sizeof *p);
        if (p) h->log = p, h->caplog = cap;
    }
    if (h->nlog < h->caplog) {   /* out of memory: the request goes unlogged */
        r->log_index = h->nlog;
        r->log_generation = h->log_generation;
        h->log[h->nlog++] = e;
    }
    pthread_mutex_unlock(&h->lock);
}

/* The entry of r, when the log was not cleared since it was written. */
static hub_request *entry_locked(hub *h, const hub_req *r) {
    if (r->log_index < 0 || r->log_generation != h->log_generation || r->log_index >= h->nlog)
        return NULL;
    return &h->log[r->log_index];
}

void hub_log_status(hub *h, hub_req *r, int status) {
    pthread_mutex_lock(&h->lock);
    hub_request *e = entry_locked(h, r);
    if (e) e->status = status;
    pthread_mutex_unlock(&h->lock);
}

void hub_log_mark_fault_locked(hub *h, const hub_req *r, hub_fault_kind kind) {
    hub_request *e = entry_locked(h, r);
    if (e) e->faults |= 1u << kind;
}

int hub_log_count(const hub *h) {
    hub *m = (hub *)h;
    pthread_mutex_lock(&m->lock);
    int n = h->nlog;
    pthread_mutex_unlock(&m->lock);
    return n;
}

bool hub_log_get(const hub *h, int i, hub_request *out) {
    hub *m = (hub *)h;
    pthread_mutex_lock(&m->lock);
    bool ok = i >= 0 && i < h->nlog;
    if (ok) *out = h->log[i];
    pthread_mutex_unlock(&m->lock);
    return ok;
}

void hub_log_clear(hub *h) {
    pthread_mutex_lock(&h->lock);
    h->nlog = 0;
    h->log_generation++;
    pthread_mutex_unlock(&h->lock);
}

void hub_log_free(hub *h) {
    free(h->log);
    h->log = NULL;
    h->nlog = h->caplog = 0;
}
