/* api.c: the Hub's metadata API, as the real Hub serves it for public repos
 * (see hub.h): repo info, tree listings with Link pagination, paths-info.
 *
 *   /api/{models|datasets|spaces}/{repo}[/revision/{rev}]
 *   /api/{type}/{repo}/tree/{rev}[/{path}]
 *   /api/{type}/{repo}/paths-info/{rev}                 (POST)
 *
 * {repo} is "ns/name" or "name"; {rev} is percent-encoded ("refs%2Fpr%2F1"),
 * though "refs/pr/1" unencoded is understood too, as the real Hub does;
 * {path} may use "/" or "%2F". Answers are built with cJSON. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "hub_internal.h"

enum { API_INFO = 1, API_TREE, API_PATHS_INFO };

/* ---- the URL ------------------------------------------------------------ */

typedef struct { const char *s; size_t n; } part;

static int split_parts(const char *p, part *out, int max) {
    int n = 0;
    while (*p == '/' && n < max) {
        const char *start = ++p;
        while (*p && *p != '/') p++;
        out[n++] = (part){start, (size_t)(p - start)};
    }
    return n;
}

static bool part_is(part p, const char *word) {
    return p.n == strlen(word) && !strncmp(p.s, word, p.n);
}

static bool is_keyword(part p) {
    return part_is(p, "revision") || part_is(p, "tree") || part_is(p, "paths-info");
}

/* The decoded text of parts[from..to) joined by '/'; NULL on a bad escape. */
static char *join_decoded(const part *parts, int from, int to) {
    size_t cap = 1;
    for (int i = from; i < to; i++) cap += parts[i].n + 1;
    char *out = malloc(cap), *o = out;
    if (!out) return NULL;
    *o = '\0';
    for (int i = from; i < to; i++) {
        char *d = hub_url_decode(parts[i].s, parts[i].n);
        if (!d) {
            free(out);
            return NULL;
        }
        o += sprintf(o, "%s%s", i > from ? "/" : "", d);
        free(d);
    }
    return out;
}

/* How many parts a revision takes from parts[at]: "refs/pr/1" sent
 * unencoded spans three, anything else one. */
static int revision_parts(const part *parts, int at, int n) {
    if (at + 2 < n && part_is(parts[at], "refs") &&
        (part_is(parts[at + 1], "pr") || part_is(parts[at + 1], "heads") ||
         part_is(parts[at + 1], "tags") || part_is(parts[at + 1], "convert")))
        return 3;
    return 1;
}

bool hub_api_identify(hub *h, hub_req *r, const char *path, const char *query) {
    (void)h, (void)query;
    part p[64];
    if (strncmp(path, "/api/", 5)) return false;
    int n = split_parts(path, p, 64);
    if (n < 3) return false;
    const char *prefix = part_is(p[1], "models") ? ""
                         : part_is(p[1], "datasets") ? "datasets/"
                         : part_is(p[1], "spaces") ? "spaces/" : NULL;
    if (!prefix) return false;
    /* "ns/name", unless the part after the first is already the call's
     * keyword followed by a revision ("gpt2/revision/main"). */
    int id_end = n >= 5 && is_keyword(p[3]) ? 3 : n >= 4 ? 4 : 3;
    char *id = join_decoded(p, 2, id_end);
    r->id_at = (size_t)(p[2].s - path);
    r->id_len = (size_t)(p[id_end - 1].s + p[id_end - 1].n - p[2].s);
    if (!id || asprintf(&r->key, "%s%s", prefix, id) < 0) r->key = NULL;
    free(id);
    if (!r->key) {
        r->route = ROUTE_BAD;
        return true;
    }
    int k = id_end;   /* the keyword, if any */
    if (k == n) {
        r->api = API_INFO;
        r->rev = strdup("main");
    } else if (k + 1 < n && (part_is(p[k], "revision") || part_is(p[k], "tree") ||
                             part_is(p[k], "paths-info"))) {
        int nrev = revision_parts(p, k + 1, n);
        r->api = part_is(p[k], "revision") ? API_INFO
                 : part_is(p[k], "tree") ? API_TREE : API_PATHS_INFO;
        r->rev = join_decoded(p, k + 1, k + 1 + nrev);
        int rest = k + 1 + nrev;
        if (r->api == API_TREE && rest < n) r->path = join_decoded(p, rest, n);
        else if (rest < n) r->api = 0;   /* /revision/main/extra: no such call */
        if (r->api == API_TREE && rest < n && !r->path) r->route = ROUTE_BAD;
    }
    if (r->api && !r->rev) r->route = ROUTE_BAD;
    if (r->rev && !strcmp(r->rev, "HEAD")) {   /* what @huggingface/hub asks by default */
        free(r->rev);
        r->rev = strdup("main");
        if (!r->rev) r->route = ROUTE_BAD;
    }
    return true;
}

/* ---- the JSON ----------------------------------------------------------- */

static void iso_time(long long seconds, char out[32]) {
    time_t t = (time_t)seconds;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
}

/* True when the query has key=value with a true value ("true", "True", "1"). */
static bool query_flag(const char *query, const char *key) {
    char *v = query ? hub_query_value(query, key) : NULL;
    bool on = v && (!strcasecmp(v, "true") || !strcmp(v, "1"));
    free(v);
    return on;
}

static cJSON *lfs_object(const hub_file *f, const char *hash_key) {
    cJSON *lfs = cJSON_CreateObject();
    cJSON_AddStringToObject(lfs, hash_key, f->sha256);
    cJSON_AddNumberToObject(lfs, "size", (double)f->size);
    cJSON_AddNumberToObject(lfs, "pointerSize", (double)f->pointer_size);
    return lfs;
}

static void add_last_commit(cJSON *entry, const hub_repo *repo, const hub_ref *ref) {
    char date[32];
    iso_time(repo->modified, date);
    cJSON *c = cJSON_AddObjectToObject(entry, "lastCommit");
    cJSON_AddStringToObject(c, "id", ref->commit);
    cJSON_AddStringToObject(c, "title", "Upload files (tinyllm fake hub)");
    cJSON_AddStringToObject(c, "date", date);
}

static cJSON *file_entry(const hub *h, const hub_repo *repo, const hub_ref *ref,
                         const hub_file *f, bool expand) {
    cJSON *e = cJSON_CreateObject();
    bool lfs = hub_is_lfs(h, f);
    cJSON_AddStringToObject(e, "type", "file");
    cJSON_AddStringToObject(e, "oid", lfs ? f->pointer_sha1 : f->blob_sha1);
    cJSON_AddNumberToObject(e, "size", (double)f->size);
    cJSON_AddStringToObject(e, "path", f->path);
    if (lfs) cJSON_AddItemToObject(e, "lfs", lfs_object(f, "oid"));
    if (expand) {
        add_last_commit(e, repo, ref);
        cJSON *sec = cJSON_AddObjectToObject(e, "securityFileStatus");
        cJSON_AddStringToObject(sec, "status", "unscanned");
    }
    return e;
}

/* A folder's oid: a sha1 over the ids and paths of everything below it, so
 * it changes when they do (not git's tree encoding). */
static cJSON *folder_entry(const hub_repo *repo, const hub_ref *ref, const char *dir,
                           bool expand) {
    size_t n = strlen(dir);
    char *text = NULL, oid[65];
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (m) {
        fprintf(m, "tree %s\n", dir);
        for (int i = 0; i < repo->nfiles; i++)
            if (!strncmp(repo->files[i].path, dir, n) && repo->files[i].path[n] == '/')
                fprintf(m, "%s %s\n", repo->files[i].blob_sha1, repo->files[i].path);
        fclose(m);
    }
    hub_sha256_hex(text ? text : "", text ? len : 0, oid);
    free(text);
    oid[40] = '\0';   /* 40 hex digits, like git's */
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "type", "directory");
    cJSON_AddStringToObject(e, "oid", oid);
    cJSON_AddNumberToObject(e, "size", 0);
    cJSON_AddStringToObject(e, "path", dir);
    if (expand) add_last_commit(e, repo, ref);
    return e;
}

/* ---- the tree ------------------------------------------------------------- */

typedef struct {
    char *path;
    const hub_file *file;       /* NULL for a folder */
} tree_item;

typedef struct {
    tree_item *items;
    int n, cap;
    bool oom;
} tree_list;

static void list_add(tree_list *t, const char *path, size_t len, const hub_file *f) {
    for (int i = 0; !f && i < t->n; i++)   /* a folder once */
        if (!t->items[i].file && strlen(t->items[i].path) == len &&
            !strncmp(t->items[i].path, path, len))
            return;
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        tree_item *p = realloc(t->items, (size_t)cap * sizeof *p);
        if (!p) {
            t->oom = true;
            return;
        }
        t->items = p, t->cap = cap;
    }
    char *copy = strndup(path, len);
    if (!copy) {
        t->oom = true;
        return;
    }
    t->items[t->n++] = (tree_item){copy, f};
}

static int item_cmp(const void *a, const void *b) {
    const tree_item *x = a, *y = b;
    return strcmp(x->path, y->path);
}

/* Folders first, then files, each sorted: the real Hub's order for one folder. */
static int item_cmp_folders_first(const void *a, const void *b) {
    const tree_item *x = a, *y = b;
    if (!x->file != !y->file) return x->file ? 1 : -1;
    return strcmp(x->path, y->path);
}

static void list_free(tree_list *t) {
    for (int i = 0; i < t->n; i++) free(t->items[i].path);
    free(t->items);
}

/* The entries under dir ("" for the root), recursive or one level; false
 * when dir is not a folder of the repo. */
static bool collect(const hub_repo *repo, const char *dir, bool recursive, tree_list *t) {
    size_t n = strlen(dir);
    bool found = n == 0;
    for (int i = 0; i < repo->nfiles; i++) {
        const hub_file *f = &repo->files[i];
        const char *rest = f->path;
        if (n) {
            if (strncmp(f->path, dir, n) || f->path[n] != '/') continue;
            rest = f->path + n + 1;
        }
        found = true;
        /* each folder between dir and the file, then the file */
        for (const char *slash = strchr(rest, '/'); slash; slash = strchr(slash + 1, '/')) {
            list_add(t, f->path, (size_t)(slash - f->path), NULL);
            if (!recursive) break;
        }
        if (recursive || !strchr(rest, '/')) list_add(t, f->path, strlen(f->path), f);
    }
    if (t->n > 1)
        qsort(t->items, (size_t)t->n, sizeof *t->items,
              recursive ? item_cmp : item_cmp_folders_first);
    return found;
}

/* ---- answers ------------------------------------------------------------ */

static bool json_answer(hub *h, hub_req *r, struct MHD_Connection *c, cJSON *json,
                        const char *link) {
    char *text = json ? cJSON_PrintUnformatted(json) : NULL;
    cJSON_Delete(json);
    if (!text) return hub_queue(h, r, c, 500, hub_text_response("{\"error\":\"out of memory\"}",
                                                                "application/json"));
    struct MHD_Response *resp = hub_text_response(text, "application/json; charset=utf-8");
    free(text);
    if (resp && link) MHD_add_response_header(resp, "Link", link);
    return hub_queue(h, r, c, 200, resp);
}

/* The next page's URL: this one with cursor=<offset>, absolute, as the real
 * Hub sends it (clients accept only absolute URLs there). */
static char *next_link(const hub *h, const hub_req *r, int offset) {
    char *path = strdup(r->uri), *q = path ? strchr(path, '?') : NULL, *link = NULL;
    if (!path) return NULL;
    if (q) *q++ = '\0';
    char *kept = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&kept, &len);
    if (!m) {
        free(path);
        return NULL;
    }
    for (char *p = q; p && *p;) {   /* every parameter but the old cursor */
        char *end = strchr(p, '&');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (strncmp(p, "cursor=", 7)) fprintf(m, "%.*s&", (int)n, p);
        p = end ? end + 1 : NULL;
    }
    fclose(m);
    if (asprintf(&link, "<%s%s?%scursor=%x>; rel=\"next\"", h->hub_l.url, path, kept ? kept : "",
                 offset) < 0)
        link = NULL;
    free(kept);
    free(path);
    return link;
}

static bool answer_tree(hub *h, hub_req *r, struct MHD_Connection *c, const hub_ref *ref) {
    bool recursive = query_flag(r->query, "recursive"), expand = query_flag(r->query, "expand");
    int offset = 0;
    char *cursor = r->query ? hub_query_value(r->query, "cursor") : NULL;
    if (cursor) {
        char *end = NULL;
        long v = strtol(cursor, &end, 16);
        bool bad = !*cursor || *end || v < 0 || v > 1 << 30;
        free(cursor);
        if (bad)
            return hub_error_answer(h, r, c, 400, NULL, NULL,
                                    "Invalid cursor: use the URL of the Link header as it is");
        offset = (int)v;
    }
    const char *dir = r->path ? r->path : "";
    while (*dir == '/') dir++;
    tree_list t = {0};
    if (!collect(r->repo, dir, recursive, &t) || (*dir && hub_find_file(r->repo, dir))) {
        list_free(&t);
        return hub_error_answer(h, r, c, 404, "EntryNotFound", ref->commit,
                                "%s does not exist on \"%s\" (or is not a folder)", dir, r->rev);
    }
    if (t.oom) {
        list_free(&t);
        return hub_queue(h, r, c, 500, NULL);
    }
    cJSON *arr = cJSON_CreateArray();
    int end = offset + h->tree_page_size < t.n ? offset + h->tree_page_size : t.n;
    for (int i = offset; i < end; i++)
        cJSON_AddItemToArray(arr, t.items[i].file
                                      ? file_entry(h, r->repo, ref, t.items[i].file, expand)
                                      : folder_entry(r->repo, ref, t.items[i].path, expand));
    char *link = end < t.n ? next_link(h, r, end) : NULL;
    list_free(&t);
    bool ok = json_answer(h, r, c, arr, link);
    free(link);
    return ok;
}

/* The paths a paths-info POST names: JSON {"paths": [...], "expand": b}
 * (@huggingface/hub) or a form paths=a&paths=b&expand=b (huggingface_hub). */
static cJSON *requested_paths(const hub_req *r, bool *expand) {
    const char *body = r->body ? r->body : "";
    cJSON *out = cJSON_CreateArray();
    cJSON *json = body[0] == '{' ? cJSON_Parse(body) : NULL;
    if (json) {
        const cJSON *p, *paths = cJSON_GetObjectItemCaseSensitive(json, "paths");
        if (cJSON_IsString(paths))
            cJSON_AddItemToArray(out, cJSON_CreateString(paths->valuestring));
        if (cJSON_IsArray(paths))
            cJSON_ArrayForEach(p, paths)
                if (cJSON_IsString(p))
                    cJSON_AddItemToArray(out, cJSON_CreateString(p->valuestring));
        *expand = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(json, "expand"));
        cJSON_Delete(json);
        return out;
    }
    for (const char *p = body; *p;) {
        const char *end = strchr(p, '&');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char *pair = hub_url_decode(p, n), *plus;
        while (pair && (plus = strchr(pair, '+'))) *plus = ' ';   /* form encoding */
        if (pair && !strncmp(pair, "paths=", 6))
            cJSON_AddItemToArray(out, cJSON_CreateString(pair + 6));
        if (pair && !strncmp(pair, "expand=", 7))
            *expand = !strcasecmp(pair + 7, "true") || !strcmp(pair + 7, "1");
        free(pair);
        p = end ? end + 1 : "";
    }
    return out;
}

static bool answer_paths_info(hub *h, hub_req *r, struct MHD_Connection *c,
                              const hub_ref *ref) {
    if (r->body_too_long)
        return hub_error_answer(h, r, c, 413, NULL, NULL, "Request body larger than %d bytes",
                                HUB_MAX_BODY);
    bool expand = false;
    cJSON *paths = requested_paths(r, &expand), *p, *arr = cJSON_CreateArray();
    cJSON_ArrayForEach(p, paths) {
        const char *want = p->valuestring;
        const hub_file *f = hub_find_file(r->repo, want);
        if (f) {
            cJSON_AddItemToArray(arr, file_entry(h, r->repo, ref, f, expand));
            continue;
        }
        size_t n = strlen(want);   /* a folder: some file lies below it */
        for (int i = 0; n > 0 && i < r->repo->nfiles; i++)
            if (!strncmp(r->repo->files[i].path, want, n) && r->repo->files[i].path[n] == '/') {
                cJSON_AddItemToArray(arr, folder_entry(r->repo, ref, want, expand));
                break;
            }
    }
    cJSON_Delete(paths);
    return json_answer(h, r, c, arr, NULL);
}

/* The fields of a repo's info that ?expand= may ask for: the real Hub's
 * list for models (those this hub has no value for are left out). */
static const char *const expandable[] = {
    "author", "baseModels", "cardData", "childrenModelCount", "config", "createdAt",
    "disabled", "downloads", "downloadsAllTime", "gated", "gguf", "inference",
    "inferenceProviderMapping", "lastModified", "library_name", "likes", "mask_token",
    "model-index", "pipeline_tag", "private", "resourceGroup", "safetensors", "sha",
    "siblings", "spaces", "tags", "transformersInfo", "trendingScore", "widgetData",
    "usedStorage", "xetEnabled", "citation", "description", "paperswithcode_id",
    "runtime", "sdk", "subdomain", "models", "datasets", NULL};

/* The values of the query's expand (or expand[]) parameters, in turn:
 * calls fn(value, ctx) for each; stops when fn returns true. */
static bool each_expand(const char *query, bool (*fn)(const char *, void *), void *ctx) {
    bool stop = false;
    for (const char *p = query; p && *p && !stop;) {
        const char *end = strchr(p, '&');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char *pair = hub_url_decode(p, n);
        if (pair && (!strncmp(pair, "expand=", 7) || !strncmp(pair, "expand[]=", 9)))
            stop = fn(strchr(pair, '=') + 1, ctx);
        free(pair);
        p = end ? end + 1 : NULL;
    }
    return stop;
}

static bool is_field(const char *value, void *field) { return !strcmp(value, field); }
static bool any_value(const char *value, void *ctx) { (void)value, (void)ctx; return true; }

static bool not_expandable(const char *value, void *bad) {
    for (int i = 0; expandable[i]; i++)
        if (!strcmp(value, expandable[i])) return false;
    snprintf(bad, 128, "%.100s", value);
    return true;
}

static bool answer_info(hub *h, hub_req *r, struct MHD_Connection *c, const hub_ref *ref) {
    const hub_repo *repo = r->repo;
    char bad[128];
    if (each_expand(r->query, not_expandable, bad))   /* an unknown field: the real Hub's 400 */
        return hub_error_answer(h, r, c, 400, NULL, NULL,
                                "\"expand\" must be one of the repo's fields (author, sha, "
                                "siblings, lastModified, ...), not \"%s\"", bad);
    bool blobs = query_flag(r->query, "blobs");
    bool any = each_expand(r->query, any_value, NULL);   /* else every field */
    char id24[65], date[32], created[32];
    hub_sha256_hex(repo->key, strlen(repo->key), id24);   /* a stable Mongo-like _id */
    id24[24] = '\0';
    iso_time(repo->modified, date);
    iso_time(repo->modified, created);
    uint64_t storage = 0;
    for (int i = 0; i < repo->nfiles; i++) storage += repo->files[i].size;

    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "_id", id24);
    cJSON_AddStringToObject(j, "id", repo->id);
#define WANT(field) (!any || each_expand(r->query, is_field, (void *)(field)))
    const char *slash = strchr(repo->id, '/');
    if (WANT("author") && slash) {
        char author[128];
        snprintf(author, sizeof author, "%.*s", (int)(slash - repo->id), repo->id);
        cJSON_AddStringToObject(j, "author", author);
    }
    if (WANT("sha")) cJSON_AddStringToObject(j, "sha", ref->commit);
    if (WANT("createdAt")) cJSON_AddStringToObject(j, "createdAt", created);
    if (WANT("lastModified")) cJSON_AddStringToObject(j, "lastModified", date);
    if (WANT("private")) cJSON_AddBoolToObject(j, "private", repo->private_token != NULL);
    if (WANT("gated")) {
        if (repo->gated) cJSON_AddStringToObject(j, "gated", "manual");
        else cJSON_AddFalseToObject(j, "gated");
    }
    if (WANT("disabled")) cJSON_AddFalseToObject(j, "disabled");
    if (WANT("downloads")) cJSON_AddNumberToObject(j, "downloads", 0);
    if (WANT("likes")) cJSON_AddNumberToObject(j, "likes", 0);
    if (WANT("tags")) cJSON_AddArrayToObject(j, "tags");
    if (WANT("usedStorage")) cJSON_AddNumberToObject(j, "usedStorage", (double)storage);
    if (WANT("xetEnabled")) cJSON_AddFalseToObject(j, "xetEnabled");
    if (!any && !strcmp(repo->type, "models")) cJSON_AddStringToObject(j, "modelId", repo->id);
    if (WANT("siblings")) {
        cJSON *sib = cJSON_AddArrayToObject(j, "siblings");
        for (int i = 0; i < repo->nfiles; i++) {
            const hub_file *f = &repo->files[i];
            cJSON *s = cJSON_CreateObject();
            cJSON_AddStringToObject(s, "rfilename", f->path);
            if (blobs) {
                bool lfs = hub_is_lfs(h, f);
                cJSON_AddNumberToObject(s, "size", (double)f->size);
                cJSON_AddStringToObject(s, "blobId", lfs ? f->pointer_sha1 : f->blob_sha1);
                if (lfs) cJSON_AddItemToObject(s, "lfs", lfs_object(f, "sha256"));
            }
            cJSON_AddItemToArray(sib, s);
        }
    }
    if (WANT("spaces") && !strcmp(repo->type, "models")) cJSON_AddArrayToObject(j, "spaces");
#undef WANT
    return json_answer(h, r, c, j, NULL);
}

/* A private repo is invisible without its token (the real Hub does not
 * tell it from a missing one): RepoNotFound, 401 anonymous, 404 with a token. */
static bool hidden(const hub_repo *repo, const char *token) {
    return !repo || (repo->private_token && (!token || strcmp(token, repo->private_token)));
}

bool hub_api_answer(hub *h, hub_req *r, struct MHD_Connection *c) {
    bool post = !strcmp(r->method, "POST"), get = !strcmp(r->method, "GET");
    if (r->api == 0)
        return hub_error_answer(h, r, c, 404, NULL, NULL,
                                "Not found: the API serves /api/{models|datasets|spaces}/{repo}"
                                "[/revision/{rev}|/tree/{rev}[/{path}]|/paths-info/{rev}]");
    if ((r->api == API_PATHS_INFO && !post) || (r->api != API_PATHS_INFO && !get &&
                                                strcmp(r->method, "HEAD"))) {
        struct MHD_Response *resp = hub_text_response(
            "{\"error\":\"Method not allowed\"}\n", "application/json; charset=utf-8");
        if (resp)
            MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
                                    r->api == API_PATHS_INFO ? "POST" : "GET, HEAD");
        return hub_queue(h, r, c, 405, resp);
    }
    if (r->renamed_to) return hub_answer_renamed(h, r, c);
    const char *token = hub_bearer_token(c);
    if (hidden(r->repo, token))
        return hub_error_answer(h, r, c, token ? 404 : 401, "RepoNotFound", NULL,
                                "Repository not found");
    const hub_ref *ref = hub_find_ref(r->repo, r->rev);
    if (!ref)
        return hub_error_answer(h, r, c, 404, "RevisionNotFound", NULL, "Invalid rev id: %s",
                                r->rev);
    if (r->api == API_TREE) return answer_tree(h, r, c, ref);
    if (r->api == API_PATHS_INFO) return answer_paths_info(h, r, c, ref);
    return answer_info(h, r, c, ref);
}
