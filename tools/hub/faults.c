/* faults.c: the faults a test asked for, and which request each one hits.
 *
 * Each place that can misbehave asks for a fault of its own kind
 * (hub_fault_take); the first active one that matches the request is
 * counted there and then, so `times` counts requests it really changed. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "hub_internal.h"

static const char *const names[HUB_FAULT_KIND_COUNT] = {
    [HUB_FAULT_NONE] = "none",
    [HUB_FAULT_CLOSE_AFTER] = "close_after",
    [HUB_FAULT_IGNORE_RANGE] = "ignore_range",
    [HUB_FAULT_WRONG_RANGE_START] = "wrong_range_start",
    [HUB_FAULT_FLIP_BYTE] = "flip_byte",
    [HUB_FAULT_BODY_LONGER] = "body_longer",
    [HUB_FAULT_BODY_SHORTER] = "body_shorter",
    [HUB_FAULT_TRICKLE] = "trickle",
    [HUB_FAULT_WHOLE_AS_206] = "whole_as_206",
    [HUB_FAULT_REFUSE_RANGE] = "refuse_range",
    [HUB_FAULT_WRONG_LINKED_SIZE] = "wrong_linked_size",
    [HUB_FAULT_OMIT_HEADER] = "omit_header",
    [HUB_FAULT_EVIL_ETAG] = "evil_etag",
    [HUB_FAULT_EVIL_COMMIT] = "evil_commit",
    [HUB_FAULT_WEAK_ETAG] = "weak_etag",
    [HUB_FAULT_REDIRECT_LOOP] = "redirect_loop",
    [HUB_FAULT_REDIRECT_NO_LOCATION] = "redirect_no_location",
    [HUB_FAULT_STATUS] = "status",
    [HUB_FAULT_STALL] = "stall",
};

const char *hub_fault_name(hub_fault_kind kind) {
    return kind >= 0 && kind < HUB_FAULT_KIND_COUNT ? names[kind] : "unknown";
}

static bool dup_opt(const char *s, char **out) {
    *out = s ? strdup(s) : NULL;
    return !s || *out;
}

static void free_slot(hub_fault_slot *s) {
    free(s->repo);
    free(s->path);
    free(s->method);
    free(s->header);
    free(s->value);
}

int hub_add_fault(hub *h, const hub_fault *f) {
    if (!f || f->kind <= HUB_FAULT_NONE || f->kind >= HUB_FAULT_KIND_COUNT) {
        hub_set_error(h, "hub_add_fault: unknown fault kind %d: use a HUB_FAULT_* value",
                      f ? (int)f->kind : -1);
        return -1;
    }
    if (f->kind == HUB_FAULT_OMIT_HEADER && (!f->header || !*f->header)) {
        hub_set_error(h, "hub_add_fault: omit_header needs .header (\"X-Linked-Etag\", "
                         "\"ETag\", \"X-Repo-Commit\" or \"X-Linked-Size\")");
        return -1;
    }
    if (f->times < 0 || f->ms < 0 || f->on < HUB_ANY || f->on > HUB_HOST_CDN ||
        f->range < HUB_RANGE_ANY || f->range > HUB_UNRANGED ||
        (f->status && (f->status < 100 || f->status > 599))) {
        hub_set_error(h, "hub_add_fault: %s: times and ms must be >= 0, status 100..599 "
                         "(or 0 for the default), on HUB_ANY, HUB_HOST_HUB or HUB_HOST_CDN, "
                         "range HUB_RANGE_ANY, HUB_RANGED or HUB_UNRANGED",
                      hub_fault_name(f->kind));
        return -1;
    }
    if (f->method && strcasecmp(f->method, "GET") && strcasecmp(f->method, "HEAD")) {
        hub_set_error(h, "hub_add_fault: method \"%s\": the hub answers GET and HEAD only",
                      f->method);
        return -1;
    }
    hub_fault_slot s = {.f = *f, .active = true};
    if (!dup_opt(f->repo, &s.repo) || !dup_opt(f->path, &s.path) ||
        !dup_opt(f->method, &s.method) || !dup_opt(f->header, &s.header) ||
        !dup_opt(f->value, &s.value)) {
        free_slot(&s);
        hub_set_error(h, "hub_add_fault: out of memory");
        return -1;
    }
    s.f.repo = s.repo;
    s.f.path = s.path;
    s.f.method = s.method;
    s.f.header = s.header;
    s.f.value = s.value;

    pthread_mutex_lock(&h->lock);
    int id = -1;
    if (h->nfaults == h->capfaults) {
        int cap = h->capfaults ? 2 * h->capfaults : 16;
        hub_fault_slot *p = realloc(h->faults, (size_t)cap * sizeof *p);
        if (p) h->faults = p, h->capfaults = cap;
    }
    if (h->nfaults < h->capfaults) {
        id = h->nfaults++;
        h->faults[id] = s;
    }
    pthread_mutex_unlock(&h->lock);
    if (id < 0) {
        free_slot(&s);
        hub_set_error(h, "hub_add_fault: out of memory");
    }
    return id;
}

int hub_fault_hits(const hub *h, int id) {
    hub *m = (hub *)h;   /* the lock is not part of the hub's logical state */
    pthread_mutex_lock(&m->lock);
    int hits = id >= 0 && id < h->nfaults ? h->faults[id].hits : -1;
    pthread_mutex_unlock(&m->lock);
    return hits;
}

/* Slots stay allocated (inactive) until hub_free: a request that took a
 * fault may still be reading its strings, and ids stay meaningful. */
void hub_clear_faults(hub *h) {
    pthread_mutex_lock(&h->lock);
    for (int i = 0; i < h->nfaults; i++) h->faults[i].active = false;
    pthread_mutex_unlock(&h->lock);
}

void hub_faults_free(hub *h) {
    for (int i = 0; i < h->nfaults; i++) free_slot(&h->faults[i]);
    free(h->faults);
    h->faults = NULL;
    h->nfaults = h->capfaults = 0;
}

static bool matches(const hub_fault *f, const hub_req *r) {
    if (f->on != HUB_ANY && f->on != r->l->host) return false;
    if (f->method && strcasecmp(f->method, r->method)) return false;
    if (f->repo && (!r->repo || strcmp(f->repo, r->repo->key))) return false;
    if (f->path && (!r->file || strcmp(f->path, r->file->path))) return false;
    if (f->range != HUB_RANGE_ANY && (f->range == HUB_RANGED) != r->has_range) return false;
    return true;
}

bool hub_fault_take(hub *h, hub_req *r, hub_fault_kind kind, const char *header,
                    hub_fault_filter filter, void *ctx, hub_fault *out) {
    bool found = false;
    pthread_mutex_lock(&h->lock);
    for (int i = 0; i < h->nfaults && !found; i++) {
        hub_fault_slot *s = &h->faults[i];
        if (!s->active || s->f.kind != kind || !matches(&s->f, r)) continue;
        if (header && (!s->f.header || strcasecmp(s->f.header, header))) continue;
        if (filter && !filter(&s->f, ctx)) continue;
        s->hits++;
        if (s->f.times > 0 && s->hits >= s->f.times) s->active = false;
        if (out) *out = s->f;
        hub_log_mark_fault_locked(h, r, kind);
        found = true;
    }
    pthread_mutex_unlock(&h->lock);
    return found;
}
