/* tinyllm/testing/hub.h: a fake Hugging Face Hub for tests and for `ol hub serve`.
 *
 * Student tests of a downloader (L7.9) include it like any contract header;
 * the library (tools/hub) links into every test of a lesson whose lesson.json
 * lists build/lib/libtlhub.a in "link".
 *
 * It speaks the part of the Hub protocol a downloader needs
 * (docs/hub-protocol.md): HEAD and GET on
 *     {endpoint}/{[datasets/|spaces/]}{ns}/{name}/resolve/{revision}/{path}
 * with the real Hub's headers, on 127.0.0.1 only. Two listeners run: the
 * Hub itself and a "CDN" on another port, the target of the redirects for
 * large (LFS) files. Tests choose faults (a dropped connection, a flipped
 * byte, a stall, ...) per request and read back a log of what arrived.
 *
 *     hub *h = hub_new();
 *     hub_add_file(h, "org/tiny", "config.json", json, strlen(json));
 *     hub_add_file(h, "org/tiny", "model.safetensors", weights, n);
 *     hub_set_lfs_threshold(h, 1024);            // model.safetensors is LFS
 *     const char *endpoint;
 *     if (hub_start(h, &endpoint) != 0) die(hub_error(h));
 *     hub_add_fault(h, &(hub_fault){.kind = HUB_FAULT_CLOSE_AFTER, .n = 100,
 *                                   .path = "model.safetensors", .times = 1});
 *     ... download from endpoint (HF_ENDPOINT) ...
 *     hub_request r;
 *     for (int i = 0; i < hub_log_count(h); i++) hub_log_get(h, i, &r);
 *     hub_free(h);                               // stops it too
 *
 * What it answers (see hub-protocol.md, "What the real Hub answers"):
 *  - a small file: 200 with ETag "<git blob sha1>", Content-Length,
 *    X-Repo-Commit, Accept-Ranges; Range gives 206/416. With
 *    hub_set_small_redirect, public files of a namespaced repo first get a
 *    relative 307 to /api/resolve-cache/..., as the real Hub often does.
 *  - a file of at least the LFS threshold: 302 with an absolute Location on
 *    the CDN listener, X-Linked-Etag "<sha256>", X-Linked-Size,
 *    X-Repo-Commit and a short text body of its own. The CDN needs no token,
 *    serves Range (206 + Content-Range, 416 past the end), sends an ETag
 *    unrelated to the content and refuses (403) a URL whose query was
 *    altered, as a signed CDN URL would.
 *  - 404 with X-Error-Code RepoNotFound, RevisionNotFound or EntryNotFound;
 *    GatedRepo as 401 (no token) or 403 (token not approved); a private repo
 *    without its Bearer token gets 401 with no X-Error-Code.
 * A revision is "main", a ref added with hub_add_ref ("refs/pr/1", sent as
 * refs%2Fpr%2F1), or the 40-hex commit the Hub reports for one of them.
 *
 * The metadata API, as the real Hub serves it for public repos (what
 * huggingface_hub's model_info, list_repo_tree and snapshot_download, and
 * @huggingface/hub's modelInfo, listFiles and snapshotDownload, read):
 *  - GET /api/{models|datasets|spaces}/{repo}[/revision/{rev}]: JSON with
 *    _id, id, author, sha (the revision's commit), lastModified, createdAt,
 *    private, gated (false or "manual"), disabled, downloads, likes, tags,
 *    usedStorage and siblings [{rfilename}] (with ?blobs=true also size,
 *    blobId and lfs {size, sha256, pointerSize}). ?expand=F (repeated)
 *    returns _id, id and those fields only; an unknown F is a 400. The
 *    revision "HEAD" is main.
 *  - GET /api/{type}/{repo}/tree/{rev}[/{path}][?recursive=true&expand=true]:
 *    a JSON array of {type "file"|"directory", oid, size, path} (files in LFS
 *    add lfs {oid: sha256, size, pointerSize}, and oid is then the git blob
 *    sha1 of the LFS pointer; expand adds lastCommit and securityFileStatus),
 *    at most hub_set_tree_page_size entries a page; a further page is named
 *    by an absolute URL in `Link: <...>; rel="next"` (its ?cursor=).
 *  - POST /api/{type}/{repo}/paths-info/{rev} with JSON {"paths": [...],
 *    "expand": bool} or the form paths=a&paths=b&expand=...: the entries of
 *    the paths that exist, as in /tree.
 *  - Errors: X-Error-Code RepoNotFound (a missing repo, or a private one
 *    without its token: 401 when no token was sent, else 404),
 *    RevisionNotFound, EntryNotFound (a /tree path that is not a folder);
 *    a gated repo's metadata is public, as on the real Hub.
 *
 * Recipes for a downloader's tests (each fault aimed with .path):
 *  - a dropped connection: CLOSE_AFTER n, .times = 1; the log then shows
 *    the retry's "Range: bytes=n-" reaching the CDN.
 *  - a mirror without ranges: IGNORE_RANGE with the above.
 *  - corruption: FLIP_BYTE; a sha256 check must refuse the file.
 *  - a truncated body that looks complete: CLOSE_AFTER with
 *    .no_content_length; only X-Linked-Size or the hash can tell.
 *  - rate limits: STATUS 429, .retry_after = 1, .times = 2.
 *
 * Threads: configure content and access (hub_add_*, hub_set_*) before
 * hub_start. Faults and the log may be used at any time from any thread.
 * Functions returning int give 0 on success and -1 on failure, with a
 * message in hub_error(h).
 */
#ifndef TINYLLM_TESTING_HUB_H
#define TINYLLM_TESTING_HUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct hub hub;

/* ---- life cycle -------------------------------------------------------- */

hub *hub_new(void);            /* an empty hub; NULL only when out of memory */
void hub_free(hub *h);         /* stops it if running; NULL is fine */
/* The message of the last failed call (names the repo, file or option, and
 * what to do). Never NULL. */
const char *hub_error(const hub *h);

/* ---- content ----------------------------------------------------------- */

/* Adds (or replaces) a file. repo is "ns/name", a namespace-less "name", or
 * either prefixed with "datasets/" or "spaces/". path is relative with '/'
 * separators, no empty or ".." segment. The bytes are copied. */
int hub_add_file(hub *h, const char *repo, const char *path, const void *data, size_t size);
/* Serves root/<ns>/<name>/... as model repo "ns/name": every regular file
 * below it (".git" folders skipped), mapped read-only, hashed once here. */
int hub_add_dir(hub *h, const char *root);
/* Another revision name for the repo's files (a branch, a tag, "refs/pr/1");
 * it gets its own commit id. Every repo has "main". */
int hub_add_ref(hub *h, const char *repo, const char *ref);

/* A repo renamed from old_repo to new_repo: every resolve and API request
 * that names old_repo (and no repo has that name) answers a 307 with a
 * relative Location, the same URL on new_repo, as the real Hub does after a
 * rename. Both names are repo ids of one type; new_repo may be added later. */
int hub_add_rename(hub *h, const char *old_repo, const char *new_repo);

/* The 40-hex commit the Hub reports for repo at ref (X-Repo-Commit): the
 * sha1 of the repo's file list and the ref name, so it changes when a file
 * does. NULL when there is no such repo or ref. Valid until the repo changes. */
const char *hub_commit(const hub *h, const char *repo, const char *ref);
/* The hashes the Hub announces for a file (64-hex sha256, 40-hex git blob
 * sha1, unquoted); NULL when absent. For downloader tests' expectations. */
const char *hub_file_sha256(const hub *h, const char *repo, const char *path);
const char *hub_file_blob_sha1(const hub *h, const char *repo, const char *path);
int hub_repo_count(const hub *h);
int hub_file_count(const hub *h);

/* ---- access and serving options (before hub_start) --------------------- */

/* Private: only "Authorization: Bearer <token>" reads it; anything else
 * gets 401 without an X-Error-Code (the real Hub's answer on resolve). */
int hub_set_private(hub *h, const char *repo, const char *token);
/* Gated: no token gets 401 GatedRepo, a token other than approved_token
 * (NULL: nobody is approved) gets 403 GatedRepo. */
int hub_set_gated(hub *h, const char *repo, const char *approved_token);
/* Files of at least this many bytes are LFS (302 to the CDN). Default 1 MiB. */
void hub_set_lfs_threshold(hub *h, uint64_t bytes);
#define HUB_DEFAULT_LFS_THRESHOLD (1024u * 1024u)
/* Small public files of namespaced repos answer a relative 307 to
 * /api/resolve-cache/{models|datasets|spaces}/{repo}/{commit}/{path}. */
void hub_set_small_redirect(hub *h, bool on);
/* LFS redirects also carry Xet's headers (X-Xet-Hash, Link rel="xet-auth"),
 * which a plain HTTP client ignores: it still gets the file from the CDN. */
void hub_set_xet_headers(hub *h, bool on);
/* Entries per page of a /tree listing (default 1000; <= 0 restores it).
 * The real Hub pages long listings too (by its own sizes). */
void hub_set_tree_page_size(hub *h, int entries);
#define HUB_DEFAULT_TREE_PAGE_SIZE 1000
/* Ports to bind on 127.0.0.1; 0 (the default) picks a free one. */
void hub_set_ports(hub *h, unsigned hub_port, unsigned cdn_port);
/* Writes one line per answered request to f ("hub GET /path -> 200");
 * NULL (the default) writes nothing. */
void hub_set_trace(hub *h, FILE *f);
/* Keeps at most `entries` requests in the log (<= 0, the default: all); a
 * full log starts over, as after hub_log_clear. For a long-running server
 * (`ol hub serve`), whose memory would otherwise grow with every request. */
void hub_set_log_limit(hub *h, int entries);

/* ---- running ----------------------------------------------------------- */

/* Starts both listeners. *endpoint (when not NULL) receives the Hub's URL,
 * "http://127.0.0.1:PORT", valid until hub_stop: the value for HF_ENDPOINT. */
int hub_start(hub *h, const char **endpoint);
const char *hub_endpoint(const hub *h);      /* NULL when stopped */
const char *hub_cdn_endpoint(const hub *h);  /* NULL when stopped */
/* Stops both listeners, closing open connections; returns promptly even
 * when a fault is stalling or trickling a response. Faults and the log stay. */
void hub_stop(hub *h);

/* ---- faults (hub-protocol.md, "Faults it can inject") ------------------ */

typedef enum {
    HUB_FAULT_NONE = 0,
    /* Body faults: they change a GET answer that carries file bytes (a small
     * file on the Hub, an LFS file on the CDN); n counts from the first byte
     * of the answer, after any Range. */
    HUB_FAULT_CLOSE_AFTER,        /* close the connection after n body bytes */
    HUB_FAULT_IGNORE_RANGE,       /* answer a Range request 200, whole body */
    HUB_FAULT_WRONG_RANGE_START,  /* 206 starting n bytes off what was asked
                                     (n = 0: one byte late); body matches it */
    HUB_FAULT_FLIP_BYTE,          /* invert the byte at file offset n (the last
                                     byte when n is past the end); same length */
    HUB_FAULT_BODY_LONGER,        /* n junk bytes (0: 1) after the content, past
                                     the Content-Length it announces */
    HUB_FAULT_BODY_SHORTER,       /* the last n bytes (0: 1) never sent */
    HUB_FAULT_TRICKLE,            /* after the first chunk, n bytes (0: 1) every
                                     ms milliseconds: slower than a timeout */
    HUB_FAULT_WHOLE_AS_206,       /* a Range request gets the whole file as a
                                     206, honestly labelled "bytes 0-(N-1)/N" */
    HUB_FAULT_REFUSE_RANGE,       /* a satisfiable Range request gets the 416
                                     of a start past the end (with the true
                                     size in its Content-Range) */
    /* Header faults: they change the headers of the answers that carry
     * them (OMIT_HEADER "ETag" also drops the CDN's own ETag unless
     * .on = HUB_HOST_HUB). */
    HUB_FAULT_WRONG_LINKED_SIZE,  /* X-Linked-Size plus n (0: plus 1) */
    HUB_FAULT_OMIT_HEADER,        /* leave out `header`: "X-Linked-Etag",
                                     "ETag", "X-Repo-Commit", "X-Linked-Size" */
    HUB_FAULT_EVIL_ETAG,          /* ETag and X-Linked-Etag become "value"
                                     (NULL: "../../evil"), quoted */
    HUB_FAULT_EVIL_COMMIT,        /* X-Repo-Commit becomes value (NULL:
                                     "../../evil") */
    HUB_FAULT_WEAK_ETAG,          /* ETag and X-Linked-Etag sent weak, W/"..."
                                     (seen on the real Hub: not an error) */
    /* Answer faults: they replace the answer. Redirect faults hit requests
     * for files that exist; STATUS and STALL hit any request. */
    HUB_FAULT_REDIRECT_LOOP,      /* `status` (0: 302) with Location = the URL
                                     asked, relative, forever */
    HUB_FAULT_REDIRECT_NO_LOCATION, /* `status` (0: 302) without Location */
    HUB_FAULT_STATUS,             /* `status` (0: 500), Retry-After: retry_after
                                     when > 0 (a 429 also gets RateLimit:
                                     "api";r=0;t=retry_after); use times for
                                     "N before success" */
    HUB_FAULT_STALL,              /* sleep ms before the headers */
    HUB_FAULT_KIND_COUNT
} hub_fault_kind;

/* Which listener a request arrived on (and, in a fault, where it applies). */
typedef enum { HUB_ANY = 0, HUB_HOST_HUB, HUB_HOST_CDN } hub_host;
/* Which requests a fault applies to: any, only those carrying a Range
 * header, or only those without one (a downloader's whole-file retry). */
typedef enum { HUB_RANGE_ANY = 0, HUB_RANGED, HUB_UNRANGED } hub_range_filter;

/* A fault, written with designated initializers; zero fields mean "any" or
 * the documented default. The struct and its strings are copied. */
typedef struct {
    hub_fault_kind kind;
    const char *repo;      /* only this repo ("org/name"); NULL: any */
    const char *path;      /* only this file of the repo(s); NULL: any */
    const char *method;    /* only "GET" or "HEAD"; NULL: both */
    hub_host on;           /* only this listener; HUB_ANY: both */
    hub_range_filter range; /* only requests with (or without) a Range */
    int times;             /* the first `times` requests it applies to; 0: all */
    int64_t n;             /* bytes or offset, as the kind says */
    int ms;                /* STALL and TRICKLE delay (0: 1000 ms) */
    int status;            /* STATUS and redirect faults */
    int retry_after;       /* STATUS: seconds for Retry-After, when > 0 */
    const char *header;    /* OMIT_HEADER */
    const char *value;     /* EVIL_ETAG, EVIL_COMMIT */
    /* CLOSE_AFTER, BODY_LONGER, BODY_SHORTER: send no Content-Length; the
     * body ends when the connection closes, so it looks complete. */
    bool no_content_length;
} hub_fault;

/* Adds a fault; returns its id (>= 0) for hub_fault_hits, or -1. Several
 * faults may apply to one request. A fault that cannot change a request
 * (a body fault on a HEAD, a Range fault without Range) does not count it. */
int hub_add_fault(hub *h, const hub_fault *f);
int hub_fault_hits(const hub *h, int id);  /* requests it changed so far */
void hub_clear_faults(hub *h);
const char *hub_fault_name(hub_fault_kind kind);  /* "close_after", ... */

/* ---- request log ------------------------------------------------------- */

typedef struct {
    hub_host host;          /* HUB_HOST_HUB or HUB_HOST_CDN */
    char method[8];         /* "GET", "HEAD", ... */
    char path[1024];        /* as sent, still percent-encoded, no query */
    char query[1024];       /* after '?', or "" */
    char range[128];        /* the Range header, or "" */
    bool has_range;
    bool authorization;     /* an Authorization header arrived */
    int status;             /* the status answered; 0 when none was (a stall
                               cut short, or not yet) */
    unsigned faults;        /* bit (1u << kind) for each fault applied */
} hub_request;

/* Requests in arrival order; an entry appears when the request's headers
 * have arrived, before the answer. */
int hub_log_count(const hub *h);
/* Copies entry i into *out; false when i is out of range. */
bool hub_log_get(const hub *h, int i, hub_request *out);
void hub_log_clear(hub *h);

/* ---- the command ------------------------------------------------------- */

/* `ol hub serve DIR [--port N] [--cdn-port N] [--lfs-threshold BYTES]`:
 * argv[0] is the command word ("serve"), options follow. Serves
 * DIR/<org>/<name>/ as repo <org>/<name> at "main" and its commit, prints
 * the endpoint and how to use it with HF_ENDPOINT, logs each request, and
 * returns 0 on SIGINT or SIGTERM, 2 on a usage error, 1 on any other.
 * It waits with sigwait: call it before the program starts other threads
 * (it blocks SIGINT and SIGTERM, then restores the mask). */
int hub_serve_command(int argc, char **argv);

#endif
