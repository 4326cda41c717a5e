/* routes.c: what the Hub and its CDN answer (hub-protocol.md, "What the
 * real Hub answers"), and where the header and redirect faults apply.
 *
 * Hub:  /{[datasets|spaces]/}{ns}/{name}/resolve/{rev}/{path}
 *       /api/resolve-cache/{models|datasets|spaces}/{ns}/{name}/{commit}/{path}
 * CDN:  /repos/{repo}/{sha256}?filename={path}&Signature={hex}
 * The metadata API (/api/{models|datasets|spaces}/...) is api.c's.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "hub_internal.h"

/* ---- parsing the URL --------------------------------------------------- */

typedef struct { const char *s; size_t n; } seg;

/* Splits the first `max` segments of a raw path ("/a/b/c"); *rest points
 * after the last one taken. Returns how many were found. */
static int split(const char *path, seg *out, int max, const char **rest) {
    const char *p = path;
    int n = 0;
    while (n < max && *p == '/') {
        const char *start = ++p;
        while (*p && *p != '/') p++;
        out[n++] = (seg){start, (size_t)(p - start)};
    }
    *rest = p;
    return n;
}

static bool seg_is(seg s, const char *word) {
    return s.n == strlen(word) && !strncmp(s.s, word, s.n);
}

/* Repo key from raw segments: "[type/]a[/b]", decoded; NULL when bad. */
static char *make_key(const char *type_prefix, seg a, const seg *b) {
    char *da = hub_url_decode(a.s, a.n), *db = b ? hub_url_decode(b->s, b->n) : NULL;
    char *key = NULL;
    if (da && (!b || db) &&
        asprintf(&key, "%s%s%s%s", type_prefix, da, b ? "/" : "", b ? db : "") < 0)
        key = NULL;
    free(da);
    free(db);
    return key;
}

/* Fills key, rev and path of a resolve URL; ROUTE_NONE when it is not one. */
static int parse_resolve(hub_req *r, const char *path) {
    seg s[6];
    const char *rest;
    int n = split(path, s, 6, &rest);
    int i = 0;
    const char *prefix = "";
    if (n >= 4 && (seg_is(s[0], "datasets") || seg_is(s[0], "spaces")) &&
        (seg_is(s[2], "resolve") || (n >= 5 && seg_is(s[3], "resolve")))) {
        prefix = seg_is(s[0], "datasets") ? "datasets/" : "spaces/";
        i = 1;
    }
    int k;   /* index of "resolve" */
    if (n > i + 1 && seg_is(s[i + 1], "resolve")) k = i + 1;
    else if (n > i + 2 && seg_is(s[i + 2], "resolve")) k = i + 2;
    else return ROUTE_NONE;
    if (n < k + 3) return ROUTE_NONE;   /* no revision or no file */
    const char *file_start = s[k + 1].s + s[k + 1].n + 1;
    r->key = make_key(prefix, s[i], k == i + 2 ? &s[i + 1] : NULL);
    r->id_at = (size_t)(s[i].s - path);
    r->id_len = (size_t)(s[k - 1].s + s[k - 1].n - s[i].s);
    r->rev = hub_url_decode(s[k + 1].s, s[k + 1].n);
    r->path = hub_url_decode(file_start, strlen(file_start));
    return r->key && r->rev && r->path ? ROUTE_RESOLVE : ROUTE_BAD;
}

static int parse_cache(hub_req *r, const char *path) {
    seg s[6];
    const char *rest;
    if (split(path, s, 6, &rest) < 6 || !seg_is(s[0], "api") ||
        !seg_is(s[1], "resolve-cache") || *rest != '/')
        return ROUTE_NONE;
    const char *prefix = seg_is(s[2], "models") ? ""
                         : seg_is(s[2], "datasets") ? "datasets/"
                         : seg_is(s[2], "spaces") ? "spaces/" : NULL;
    if (!prefix) return ROUTE_NONE;
    r->key = make_key(prefix, s[3], &s[4]);
    r->rev = hub_url_decode(s[5].s, s[5].n);
    r->path = hub_url_decode(rest + 1, strlen(rest + 1));
    return r->key && r->rev && r->path ? ROUTE_CACHE : ROUTE_BAD;
}

static int parse_cdn(hub_req *r, const char *path, const char *query) {
    if (strncmp(path, "/repos/", 7)) return ROUTE_NONE;
    const char *key = path + 7, *slash = strrchr(key, '/');
    if (!slash || slash == key) return ROUTE_NONE;
    r->key = hub_url_decode(key, (size_t)(slash - key));
    r->sha256 = hub_url_decode(slash + 1, strlen(slash + 1));
    r->path = query ? hub_query_value(query, "filename") : NULL;
    r->signature = query ? hub_query_value(query, "Signature") : NULL;
    return r->key && r->sha256 ? ROUTE_CDN : ROUTE_BAD;
}

void hub_route_identify(hub *h, hub_req *r) {
    char *path = strdup(r->uri);
    if (!path) {
        r->route = ROUTE_BAD;
        return;
    }
    char *query = strchr(path, '?');
    if (query) *query++ = '\0';
    if (query) r->query = strdup(query);
    if (r->l->host == HUB_HOST_CDN) r->route = parse_cdn(r, path, query);
    else if ((r->route = parse_cache(r, path)) != ROUTE_NONE) {
    } else if (hub_api_identify(h, r, path, query)) {
        if (r->route != ROUTE_BAD) r->route = ROUTE_API;
    } else {
        r->route = parse_resolve(r, path);
    }
    free(path);
    r->repo = r->key ? hub_find_repo(h, r->key) : NULL;
    if (!r->repo && r->key && r->id_len && r->route != ROUTE_CDN && r->route != ROUTE_CACHE)
        r->renamed_to = hub_renamed_to(h, r->key);
    r->file = r->repo && r->path ? hub_find_file(r->repo, r->path) : NULL;
}

void hub_route_free(hub_req *r) {
    free(r->key);
    free(r->rev);
    free(r->path);
    free(r->sha256);
    free(r->signature);
    free(r->query);
    free(r->body);
}

/* ---- answers ----------------------------------------------------------- */

/* A header value must not carry CR, LF or other control characters (a
 * revision from the URL is echoed back in messages). */
static void sanitize(char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

const char *hub_type_word(const hub_repo *repo) {
    return !strcmp(repo->type, "datasets") ? "dataset"
           : !strcmp(repo->type, "spaces") ? "space" : "model";
}

bool hub_error_answer(hub *h, hub_req *r, struct MHD_Connection *c, int status,
                      const char *code, const char *commit, const char *fmt, ...) {
    char msg[512], json[1200], *j = json;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sanitize(msg);
    j += sprintf(j, "{\"error\":\"");
    for (const char *m = msg; *m; m++) {
        if (*m == '"' || *m == '\\') *j++ = '\\';
        *j++ = *m;
    }
    strcpy(j, "\"}\n");
    struct MHD_Response *resp = hub_text_response(json, "application/json; charset=utf-8");
    if (resp) {
        if (code) MHD_add_response_header(resp, "X-Error-Code", code);
        MHD_add_response_header(resp, "X-Error-Message", msg);
        if (commit) MHD_add_response_header(resp, "X-Repo-Commit", commit);
    }
    return hub_queue(h, r, c, status, resp);
}

/* Adds the header unless an OMIT_HEADER fault takes it out. */
static void add_header(hub *h, hub_req *r, struct MHD_Response *resp, const char *name,
                       const char *value) {
    if (!hub_fault_take(h, r, HUB_FAULT_OMIT_HEADER, name, NULL, NULL, NULL))
        MHD_add_response_header(resp, name, value);
}

/* The content hash headers: `name` is "ETag" or "X-Linked-Etag". */
static void add_etag(hub *h, hub_req *r, struct MHD_Response *resp, const char *name,
                     const char *hash) {
    hub_fault fl;
    char quoted[300];
    if (hub_fault_take(h, r, HUB_FAULT_EVIL_ETAG, NULL, NULL, NULL, &fl))
        hash = fl.value ? fl.value : "../../evil";
    bool weak = hub_fault_take(h, r, HUB_FAULT_WEAK_ETAG, NULL, NULL, NULL, NULL);
    snprintf(quoted, sizeof quoted, "%s\"%.290s\"", weak ? "W/" : "", hash);
    sanitize(quoted);
    add_header(h, r, resp, name, quoted);
}

static void add_commit(hub *h, hub_req *r, struct MHD_Response *resp, const char *commit) {
    hub_fault fl;
    char value[256];
    if (hub_fault_take(h, r, HUB_FAULT_EVIL_COMMIT, NULL, NULL, NULL, &fl))
        commit = fl.value ? fl.value : "../../evil";
    snprintf(value, sizeof value, "%s", commit);
    sanitize(value);
    add_header(h, r, resp, "X-Repo-Commit", value);
}

static bool redirect(hub *h, hub_req *r, struct MHD_Connection *c, int status,
                     const char *location, struct MHD_Response **out) {
    char *text = NULL;
    if (asprintf(&text, "Found. Redirecting to %s", location ? location : "(nowhere)") < 0)
        text = NULL;
    struct MHD_Response *resp = text ? hub_text_response(text, "text/plain; charset=utf-8")
                                     : NULL;
    free(text);
    if (resp && location) MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, location);
    if (out) {   /* the caller adds headers, then queues */
        *out = resp;
        return resp != NULL;
    }
    return hub_queue(h, r, c, status, resp);
}

/* REDIRECT_LOOP and REDIRECT_NO_LOCATION: true when one answered. */
static bool redirect_fault(hub *h, hub_req *r, struct MHD_Connection *c, bool *ok) {
    hub_fault fl;
    if (hub_fault_take(h, r, HUB_FAULT_REDIRECT_LOOP, NULL, NULL, NULL, &fl)) {
        *ok = redirect(h, r, c, fl.status ? fl.status : 302, r->uri, NULL);
        return true;
    }
    if (hub_fault_take(h, r, HUB_FAULT_REDIRECT_NO_LOCATION, NULL, NULL, NULL, &fl)) {
        *ok = redirect(h, r, c, fl.status ? fl.status : 302, NULL, NULL);
        return true;
    }
    return false;
}

/* A renamed repo: the same URL on its new name, relative, as the real Hub
 * answers (clients follow such a same-host redirect, never a CDN's). */
bool hub_answer_renamed(hub *h, hub_req *r, struct MHD_Connection *c) {
    const char *to = r->renamed_to;
    if (!strncmp(to, "datasets/", 9)) to += 9;
    else if (!strncmp(to, "spaces/", 7)) to += 7;
    char *location = NULL;
    if (asprintf(&location, "%.*s%s%s", (int)r->id_at, r->uri, to,
                 r->uri + r->id_at + r->id_len) < 0)
        return hub_queue(h, r, c, 500, NULL);
    bool ok = redirect(h, r, c, 307, location, NULL);
    free(location);
    return ok;
}

/* The CDN signs its URLs (repo, object, file name); altering them, or
 * dropping the query, breaks the signature. */
static void cdn_signature(const char *key, const char *sha256, const char *path, char out[65]) {
    char *text = NULL;
    int n = asprintf(&text, "tinyllm fake cdn\n%s\n%s\n%s", key, sha256, path);
    if (n < 0) {
        memset(out, '0', 64);
        out[64] = '\0';
        return;
    }
    hub_sha256_hex(text, (size_t)n, out);
    free(text);
}

/* What a Xet-backed file's redirect adds: its Xet hash and where a Xet
 * client gets a token. A plain client ignores both. */
static void add_xet(hub *h, hub_req *r, struct MHD_Response *resp, const hub_ref *ref) {
    char xet[65], *seed = NULL, *link = NULL;
    if (asprintf(&seed, "xet %s", r->file->sha256) >= 0) {
        hub_sha256_hex(seed, strlen(seed), xet);
        MHD_add_response_header(resp, "X-Xet-Hash", xet);
    }
    if (asprintf(&link, "<%s/api/%s/%s/xet-read-token/%s>; rel=\"xet-auth\"", h->hub_l.url,
                 r->repo->type, r->repo->id, ref->commit) >= 0)
        MHD_add_response_header(resp, "Link", link);
    free(seed);
    free(link);
}

/* 302 to the CDN with X-Linked-Etag, X-Linked-Size and X-Repo-Commit. */
static bool answer_lfs(hub *h, hub_req *r, struct MHD_Connection *c, const hub_ref *ref) {
    const hub_file *f = r->file;
    char sig[65], size[32], *location = NULL, *name = hub_url_encode(f->path, false);
    cdn_signature(r->repo->key, f->sha256, f->path, sig);
    if (!name || asprintf(&location, "%s/repos/%s/%s?filename=%s&Signature=%s",
                          h->cdn_l.url, r->repo->key, f->sha256, name, sig) < 0)
        location = NULL;
    free(name);
    struct MHD_Response *resp = NULL;
    bool ok = location && redirect(h, r, c, 302, location, &resp);
    free(location);
    if (!ok) return hub_queue(h, r, c, 500, NULL);

    hub_fault fl;
    int64_t linked = (int64_t)f->size;
    if (hub_fault_take(h, r, HUB_FAULT_WRONG_LINKED_SIZE, NULL, NULL, NULL, &fl))
        linked += fl.n ? fl.n : 1;
    snprintf(size, sizeof size, "%" PRId64, linked < 0 ? 0 : linked);
    add_etag(h, r, resp, "X-Linked-Etag", f->sha256);
    add_header(h, r, resp, "X-Linked-Size", size);
    add_commit(h, r, resp, ref->commit);
    if (h->xet_headers) add_xet(h, r, resp, ref);
    return hub_queue(h, r, c, 302, resp);
}

/* The real Hub sends small files of public, namespaced repos through a
 * relative 307 to a cache URL; the others (and empty files) come direct. */
static bool wants_cache_redirect(const hub *h, const hub_req *r) {
    return h->small_redirect && r->route == ROUTE_RESOLVE && !r->repo->private_token &&
           !r->repo->gated && strchr(r->repo->id, '/') && r->file->size > 0;
}

static bool answer_cache_redirect(hub *h, hub_req *r, struct MHD_Connection *c,
                                  const hub_ref *ref) {
    char *location = NULL, *name = hub_url_encode(r->file->path, true);
    if (!name || asprintf(&location, "/api/resolve-cache/%s/%s/%s/%s?etag=%%22%s%%22",
                          r->repo->type, r->repo->id, ref->commit, name,
                          r->file->blob_sha1) < 0)
        location = NULL;
    free(name);
    struct MHD_Response *resp = NULL;
    bool ok = location && redirect(h, r, c, 307, location, &resp);
    free(location);
    if (!ok) return hub_queue(h, r, c, 500, NULL);
    add_etag(h, r, resp, "ETag", r->file->blob_sha1);
    add_commit(h, r, resp, ref->commit);
    return hub_queue(h, r, c, 307, resp);
}

static bool answer_small(hub *h, hub_req *r, struct MHD_Connection *c, const hub_ref *ref) {
    int status = 500;
    struct MHD_Response *resp = hub_body_response(h, r, c, r->file, &status);
    if (resp) {
        add_etag(h, r, resp, "ETag", r->file->blob_sha1);
        add_commit(h, r, resp, ref->commit);
    }
    return hub_queue(h, r, c, status, resp);
}

const char *hub_bearer_token(struct MHD_Connection *c) {
    const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                MHD_HTTP_HEADER_AUTHORIZATION);
    if (!a) return NULL;
    if (strncasecmp(a, "Bearer ", 7)) return "";   /* present, but no bearer token */
    for (a += 7; *a == ' ';) a++;
    return a;
}

/* Private and gated repos; true when an error was answered. */
static bool refuse_access(hub *h, hub_req *r, struct MHD_Connection *c, bool *ok) {
    const hub_repo *repo = r->repo;
    const char *token = hub_bearer_token(c);
    if (repo->private_token && (!token || strcmp(token, repo->private_token))) {
        *ok = hub_error_answer(h, r, c, 401, NULL, NULL, "%s",
                           token ? "Invalid credentials in Authorization header"
                                 : "Invalid username or password.");
        return true;
    }
    if (repo->gated && !token) {
        *ok = hub_error_answer(h, r, c, 401, "GatedRepo", NULL,
                           "Access to %s %s is restricted. You must have access to it and be "
                           "authenticated to access it. Please log in.",
                           hub_type_word(repo), repo->id);
        return true;
    }
    if (repo->gated && (!repo->approved_token || strcmp(token, repo->approved_token))) {
        *ok = hub_error_answer(h, r, c, 403, "GatedRepo", NULL,
                           "Access to %s %s is restricted and you are not in the authorized "
                           "list. Visit the repo's page to ask for access.",
                           hub_type_word(repo), repo->id);
        return true;
    }
    return false;
}

static bool answer_hub(hub *h, hub_req *r, struct MHD_Connection *c) {
    bool ok;
    if (r->route == ROUTE_NONE)
        return hub_error_answer(h, r, c, 404, NULL, NULL,
                                "Not found: this fake Hub serves {repo}/resolve/{revision}/{path} "
                                "and /api/{models|datasets|spaces}/{repo}[/revision/{rev}"
                                "|/tree/{rev}[/{path}]|/paths-info/{rev}]");
    if (r->route == ROUTE_BAD)
        return hub_error_answer(h, r, c, 400, NULL, NULL,
                            "Bad request: the URL has a malformed %%-escape or an encoded NUL");
    if (r->renamed_to) return hub_answer_renamed(h, r, c);
    if (!r->repo)
        return hub_error_answer(h, r, c, 404, "RepoNotFound", NULL, "Repository not found");
    if (refuse_access(h, r, c, &ok)) return ok;
    const hub_ref *ref = hub_find_ref(r->repo, r->rev);
    if (!ref)
        return hub_error_answer(h, r, c, 404, "RevisionNotFound", NULL, "Invalid rev id: %s",
                            r->rev);
    if (!r->file)
        return hub_error_answer(h, r, c, 404, "EntryNotFound", ref->commit,
                            "%s does not exist on \"%s\"", r->path, r->rev);
    if (redirect_fault(h, r, c, &ok)) return ok;
    if (hub_is_lfs(h, r->file)) return answer_lfs(h, r, c, ref);
    if (wants_cache_redirect(h, r)) return answer_cache_redirect(h, r, c, ref);
    return answer_small(h, r, c, ref);
}

static bool answer_cdn(hub *h, hub_req *r, struct MHD_Connection *c) {
    bool ok;
    char sig[65];
    if (r->route != ROUTE_CDN)
        return hub_queue(h, r, c, 404,
                         hub_text_response("NoSuchKey: no object at this URL\n",
                                           "text/plain; charset=utf-8"));
    /* Like a signed-URL store: the signature first, then the object. */
    if (r->path) cdn_signature(r->key, r->sha256, r->path, sig);
    if (!r->path || !r->signature || strcmp(sig, r->signature))
        return hub_queue(h, r, c, 403,
                         hub_text_response("AccessDenied: the URL's signature does not match; "
                                           "follow the Hub's Location unchanged\n",
                                           "text/plain; charset=utf-8"));
    if (!r->repo || !r->file || strcmp(r->file->sha256, r->sha256))
        return hub_queue(h, r, c, 404,
                         hub_text_response("NoSuchKey: no object at this URL\n",
                                           "text/plain; charset=utf-8"));
    if (redirect_fault(h, r, c, &ok)) return ok;
    int status = 500;
    struct MHD_Response *resp = hub_body_response(h, r, c, r->file, &status);
    if (resp) {
        /* A CDN's own ETag: stable, but not the content's sha256. */
        char tag[65], quoted[40];
        char *seed = NULL;
        if (asprintf(&seed, "cdn object %s", r->file->sha256) >= 0) {
            hub_sha256_hex(seed, strlen(seed), tag);
            snprintf(quoted, sizeof quoted, "\"%.32s\"", tag);
            add_header(h, r, resp, "ETag", quoted);
        }
        free(seed);
        char *disposition = NULL, *base = strrchr(r->file->path, '/');
        char *enc = hub_url_encode(base ? base + 1 : r->file->path, false);
        if (enc && asprintf(&disposition, "attachment; filename*=UTF-8''%s", enc) >= 0)
            MHD_add_response_header(resp, "Content-Disposition", disposition);
        free(enc);
        free(disposition);
    }
    return hub_queue(h, r, c, status, resp);
}

bool hub_route_answer(hub *h, hub_req *r, struct MHD_Connection *c) {
    if (r->route == ROUTE_API && r->l->host == HUB_HOST_HUB) return hub_api_answer(h, r, c);
    if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD")) {
        struct MHD_Response *resp =
            hub_text_response("Method not allowed: the hub answers GET and HEAD\n",
                              "text/plain; charset=utf-8");
        if (resp) MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
        return hub_queue(h, r, c, 405, resp);
    }
    return r->l->host == HUB_HOST_CDN ? answer_cdn(h, r, c) : answer_hub(h, r, c);
}
