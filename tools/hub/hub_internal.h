/* hub_internal.h: what the fake Hub's files share (not part of the API).
 *
 * store.c   repos, files, refs, hashes, commits, loading a folder
 * faults.c  the fault table: matching a request and counting hits
 * reqlog.c  the request log
 * url.c     percent-decoding and -encoding, Range parsing
 * body.c    answers that carry file bytes (Range, body faults, streaming)
 * routes.c  what the Hub and the CDN answer (resolve URLs, errors)
 * api.c     the metadata API: /api/{models|datasets|spaces}/{repo}[/revision,
 *           /tree, /paths-info]
 * server.c  the two libmicrohttpd listeners, per-request state, life cycle
 * serve.c   `ol hub serve`
 */
#ifndef TL_HUB_INTERNAL_H
#define TL_HUB_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include "tinyllm/testing/hub.h"

typedef struct {
    char *path;                 /* in the repo, '/'-separated */
    const unsigned char *data;  /* size bytes; NULL when size is 0 */
    size_t size;
    bool mapped;                /* data is an mmap of a file, else malloc'd */
    char blob_sha1[41];         /* sha1("blob <size>\0" + data): the git ETag */
    char sha256[65];            /* the LFS oid: X-Linked-Etag */
    char pointer_sha1[41];      /* git blob sha1 of its LFS pointer file: the
                                   tree API's "oid" for an LFS file */
    size_t pointer_size;        /* bytes of that pointer file */
} hub_file;

typedef struct {
    char *name;                 /* "main", "refs/pr/1", ... */
    char commit[41];
} hub_ref;

typedef struct {
    char *key;                  /* as in URLs: "org/name", "datasets/org/name" */
    const char *id;             /* key without its type prefix */
    const char *type;           /* "models", "datasets" or "spaces" */
    hub_file *files;            /* sorted by path */
    int nfiles, capfiles;
    hub_ref *refs;              /* refs[0] is "main" */
    int nrefs, caprefs;
    char *private_token;        /* NULL: public */
    bool gated;
    char *approved_token;       /* gated: the one token let in (may be NULL) */
    long long modified;         /* seconds since 1970: the newest file's time */
} hub_repo;

typedef struct {
    hub_fault f;                /* strings point into the owned copies below */
    char *repo, *path, *method, *header, *value;
    int hits;
    bool active;
} hub_fault_slot;

struct hub_listener {
    hub *h;
    hub_host host;
    struct MHD_Daemon *daemon;
    unsigned want_port;
    char url[48];               /* "http://127.0.0.1:PORT" */
};

typedef struct {
    char *from, *to;            /* keys as in URLs: a renamed repo and its new name */
} hub_rename;

struct hub {
    hub_repo *repos;
    int nrepos, caprepos;
    hub_rename *renames;
    int nrenames, caprenames;
    uint64_t lfs_threshold;
    bool small_redirect;
    bool xet_headers;
    int tree_page_size;         /* entries per page of /tree listings */
    int log_limit;              /* requests the log keeps; 0: all */
    FILE *trace;
    struct hub_listener hub_l, cdn_l;
    bool running;
    atomic_bool stopping;       /* tells sleeping and trickling requests to end */

    pthread_mutex_t lock;       /* guards everything below */
    hub_fault_slot *faults;
    int nfaults, capfaults;
    hub_request *log;
    int nlog, caplog;
    unsigned log_generation;    /* bumped by hub_log_clear */

    char error[1024];
};

#define HUB_MAX_BODY (1024 * 1024)   /* bytes of a request body kept */

/* One request, from its first line to its completion. */
typedef struct {
    struct hub_listener *l;
    char *uri;                  /* the raw request-target */
    char method[16];            /* set on the first call, with the headers */
    bool has_range;             /* a Range header arrived */
    bool answered;
    int log_index;              /* -1 when not logged */
    unsigned log_generation;
    /* The URL's parts, decoded (routes.c). */
    int route;
    char *key, *rev, *path, *sha256, *signature;
    char *query;                /* the raw query string, or NULL */
    int api;                    /* which API call (api.c), when route is ROUTE_API */
    char *body;                 /* a POST's body (paths-info), NUL-terminated */
    size_t body_len;
    bool body_too_long;
    /* What the request names, when routing found it (for fault matching). */
    const hub_repo *repo;
    const hub_file *file;
    /* Where the repo id lies in uri (routes.c, api.c), and its new key when
     * the repo was renamed (hub_add_rename): such a request answers 307. */
    size_t id_at, id_len;
    const char *renamed_to;
} hub_req;

/* ---- store.c ---- */
void hub_set_error(hub *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
hub_repo *hub_find_repo(const hub *h, const char *key);
/* The new key of a renamed repo (hub_add_rename), or NULL. */
const char *hub_renamed_to(const hub *h, const char *key);
const hub_file *hub_find_file(const hub_repo *r, const char *path);
/* A ref by name, or by the commit it reports; NULL when neither. */
const hub_ref *hub_find_ref(const hub_repo *r, const char *rev);
bool hub_is_lfs(const hub *h, const hub_file *f);
void hub_store_free(hub *h);
void hub_sha256_hex(const void *data, size_t n, char out[65]);

/* ---- faults.c ---- */
/* Optional extra test: does fault f change this particular answer? */
typedef bool (*hub_fault_filter)(const hub_fault *f, void *ctx);
/* Finds the first active fault of `kind` matching request r (and, for
 * OMIT_HEADER, naming `header`), counts it (hits, times, the log entry's
 * bits) and copies it to *out. The copy's strings live until hub_free. */
bool hub_fault_take(hub *h, hub_req *r, hub_fault_kind kind, const char *header,
                    hub_fault_filter filter, void *ctx, hub_fault *out);
void hub_faults_free(hub *h);

/* ---- reqlog.c ---- */
void hub_log_begin(hub *h, hub_req *r, struct MHD_Connection *c);
void hub_log_status(hub *h, hub_req *r, int status);
/* With h->lock held. */
void hub_log_mark_fault_locked(hub *h, const hub_req *r, hub_fault_kind kind);
void hub_log_free(hub *h);

/* ---- url.c ---- */
/* Decodes n bytes of %XX escapes into a new string; NULL on a bad escape,
 * an encoded NUL or no memory. */
char *hub_url_decode(const char *s, size_t n);
/* Encodes s keeping letters, digits, "_.-~" and (when keep_slash) '/'. */
char *hub_url_encode(const char *s, bool keep_slash);
/* The value of key in a raw query ("a=1&b=2"), decoded; NULL when absent. */
char *hub_query_value(const char *query, const char *key);
typedef enum { HUB_RANGE_NONE, HUB_RANGE_OK, HUB_RANGE_UNSATISFIABLE } hub_range_kind;
/* One byte range of a resource of `size` bytes ("bytes=N-", "bytes=N-M",
 * "bytes=-K"); a header it cannot read, or several ranges, is NONE: the
 * whole body, as RFC 9110 allows. */
hub_range_kind hub_parse_range(const char *header, uint64_t size, uint64_t *first,
                               uint64_t *last);

/* ---- body.c ---- */
/* The answer carrying f's bytes for a GET or HEAD: 200, 206 or 416 after
 * Range and the body faults. NULL when out of memory. */
struct MHD_Response *hub_body_response(hub *h, hub_req *r, struct MHD_Connection *c,
                                       const hub_file *f, int *status);
/* Sleeps ms in short steps; false when the hub is stopping. */
bool hub_sleep_ms(hub *h, int ms);

/* ---- api.c ---- */
/* Recognizes /api/... URLs (models, datasets, spaces); fills r->key, rev,
 * path, api. False when the URL is not an API call. */
bool hub_api_identify(hub *h, hub_req *r, const char *path, const char *query);
/* Answers an API call identified above; false when the connection should close. */
bool hub_api_answer(hub *h, hub_req *r, struct MHD_Connection *c);

/* ---- routes.c ---- */
enum { ROUTE_NONE, ROUTE_BAD, ROUTE_RESOLVE, ROUTE_CACHE, ROUTE_CDN, ROUTE_API };
/* The Hub's error answer: {"error": message}, X-Error-Code (when code is
 * not NULL), X-Error-Message, and X-Repo-Commit when commit is known. */
bool hub_error_answer(hub *h, hub_req *r, struct MHD_Connection *c, int status,
                      const char *code, const char *commit, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
/* The request's Bearer token; "" when Authorization is not a Bearer one,
 * NULL when absent. */
const char *hub_bearer_token(struct MHD_Connection *c);
/* "model", "dataset" or "space", for messages. */
const char *hub_type_word(const hub_repo *repo);
/* Fills r->repo and r->file from the URL, without answering. */
void hub_route_identify(hub *h, hub_req *r);
/* Queues the answer; false when the connection should close. */
bool hub_route_answer(hub *h, hub_req *r, struct MHD_Connection *c);
/* The 307 of a renamed repo's request (r->renamed_to). */
bool hub_answer_renamed(hub *h, hub_req *r, struct MHD_Connection *c);
void hub_route_free(hub_req *r);

/* ---- server.c ---- */
/* Queues response with status (logging it) and releases it. */
bool hub_queue(hub *h, hub_req *r, struct MHD_Connection *c, int status,
               struct MHD_Response *resp);
/* A small text or JSON answer. */
struct MHD_Response *hub_text_response(const char *text, const char *content_type);

#endif
