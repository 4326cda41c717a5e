/* server.c: the two libmicrohttpd listeners (the Hub and its CDN), the
 * state of one request, and the hub's life cycle.
 *
 * One thread per connection, so a stalled or trickled answer holds only
 * its own connection; every sleep checks h->stopping, so hub_stop (which
 * joins those threads) returns promptly. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include "hub_internal.h"

hub *hub_new(void) {
    hub *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    if (pthread_mutex_init(&h->lock, NULL) != 0) {
        free(h);
        return NULL;
    }
    h->lfs_threshold = HUB_DEFAULT_LFS_THRESHOLD;
    h->tree_page_size = HUB_DEFAULT_TREE_PAGE_SIZE;
    h->hub_l = (struct hub_listener){.h = h, .host = HUB_HOST_HUB};
    h->cdn_l = (struct hub_listener){.h = h, .host = HUB_HOST_CDN};
    atomic_init(&h->stopping, false);
    snprintf(h->error, sizeof h->error, "no error");
    return h;
}

void hub_free(hub *h) {
    if (!h) return;
    hub_stop(h);
    hub_store_free(h);
    hub_faults_free(h);
    hub_log_free(h);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

void hub_set_lfs_threshold(hub *h, uint64_t bytes) { h->lfs_threshold = bytes; }
void hub_set_small_redirect(hub *h, bool on) { h->small_redirect = on; }
void hub_set_xet_headers(hub *h, bool on) { h->xet_headers = on; }
void hub_set_tree_page_size(hub *h, int entries) {
    h->tree_page_size = entries > 0 ? entries : HUB_DEFAULT_TREE_PAGE_SIZE;
}
void hub_set_trace(hub *h, FILE *f) { h->trace = f; }
void hub_set_log_limit(hub *h, int entries) { h->log_limit = entries > 0 ? entries : 0; }

void hub_set_ports(hub *h, unsigned hub_port, unsigned cdn_port) {
    h->hub_l.want_port = hub_port;
    h->cdn_l.want_port = cdn_port;
}

const char *hub_endpoint(const hub *h) { return h->running ? h->hub_l.url : NULL; }
const char *hub_cdn_endpoint(const hub *h) { return h->running ? h->cdn_l.url : NULL; }

/* ---- one request ------------------------------------------------------- */

struct MHD_Response *hub_text_response(const char *text, const char *content_type) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (resp) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    return resp;
}

bool hub_queue(hub *h, hub_req *r, struct MHD_Connection *c, int status,
               struct MHD_Response *resp) {
    if (!resp) return false;   /* out of memory: closing is all we can do */
    hub_log_status(h, r, status);
    if (h->trace) {
        fprintf(h->trace, "%s %-4s %s -> %d\n", r->l->host == HUB_HOST_CDN ? "cdn" : "hub",
                r->method, r->uri, status);
        fflush(h->trace);
    }
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ok == MHD_YES;
}

/* Called with the raw request-target before MHD parses it: the start of
 * the request's state, which keeps its %-escapes intact. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
    (void)c;
    hub_req *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->l = cls;
    r->uri = strdup(uri);
    r->log_index = -1;
    return r;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode why) {
    (void)cls, (void)c, (void)why;
    hub_req *r = *req_cls;
    if (!r) return;
    hub_route_free(r);
    free(r->uri);
    free(r);
    *req_cls = NULL;
}

/* Leaves URLs escaped: routing decodes each part itself, so that
 * "refs%2Fpr%2F1" stays one path segment. */
static size_t keep_escaped(void *cls, struct MHD_Connection *c, char *s) {
    (void)cls, (void)c;
    return strlen(s);
}

/* HUB_FAULT_STATUS: an error (with the headers that say when to retry). */
static bool answer_status_fault(hub *h, hub_req *r, struct MHD_Connection *c,
                                const hub_fault *fl) {
    int status = fl->status ? fl->status : 500;
    char text[96], seconds[16], limit[48];
    snprintf(text, sizeof text, "{\"error\":\"fault injected: status %d\"}\n", status);
    struct MHD_Response *resp = hub_text_response(text, "application/json");
    if (resp && fl->retry_after > 0) {
        snprintf(seconds, sizeof seconds, "%d", fl->retry_after);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, seconds);
        if (status == 429) {   /* the Hub's own rate-limit header, too */
            snprintf(limit, sizeof limit, "\"api\";r=0;t=%d", fl->retry_after);
            MHD_add_response_header(resp, "RateLimit", limit);
        }
    }
    return hub_queue(h, r, c, status, resp);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size,
                                  void **req_cls) {
    (void)url, (void)version;
    struct hub_listener *l = cls;
    hub *h = l->h;
    hub_req *r = *req_cls;
    if (!r || !r->uri) return MHD_NO;
    if (!r->method[0]) {
        /* The first call has only the headers. Answering now would make
         * libmicrohttpd close the connection, so answer on the next call. */
        snprintf(r->method, sizeof r->method, "%s", method);
        hub_log_begin(h, r, c);
        hub_route_identify(h, r);
        return MHD_YES;
    }
    if (*upload_size) {   /* a request body: kept (for paths-info), up to 1 MiB */
        size_t n = *upload_size;
        *upload_size = 0;
        char *grown =
            r->body_len + n <= HUB_MAX_BODY ? realloc(r->body, r->body_len + n + 1) : NULL;
        if (!grown) {
            r->body_too_long = true;
            return MHD_YES;
        }
        memcpy(grown + r->body_len, upload_data, n);
        r->body = grown;
        r->body_len += n;
        r->body[r->body_len] = '\0';
        return MHD_YES;
    }
    if (r->answered) return MHD_YES;
    r->answered = true;

    hub_fault fl;
    if (hub_fault_take(h, r, HUB_FAULT_STALL, NULL, NULL, NULL, &fl) &&
        !hub_sleep_ms(h, fl.ms > 0 ? fl.ms : 1000))
        return MHD_NO;
    if (hub_fault_take(h, r, HUB_FAULT_STATUS, NULL, NULL, NULL, &fl))
        return answer_status_fault(h, r, c, &fl) ? MHD_YES : MHD_NO;
    return hub_route_answer(h, r, c) ? MHD_YES : MHD_NO;
}

/* ---- listeners --------------------------------------------------------- */

static int start_listener(hub *h, struct hub_listener *l) {
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons((uint16_t)l->want_port),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    const char *what = l->host == HUB_HOST_CDN ? "CDN" : "hub";
    if (l->want_port > 65535) {
        hub_set_error(h, "hub_start: %s port %u is not a TCP port (0..65535)", what,
                      l->want_port);
        return -1;
    }
    errno = 0;
    l->daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL, NULL,
        on_request, l, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, l, MHD_OPTION_UNESCAPE_CALLBACK, keep_escaped,
        NULL, MHD_OPTION_NOTIFY_COMPLETED, on_completed, l, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)120, MHD_OPTION_END);
    if (!l->daemon) {
        hub_set_error(h, "hub_start: cannot listen on 127.0.0.1:%u for the %s (%s): give "
                         "another port, or 0 for any free one", l->want_port, what,
                      errno ? strerror(errno) : "libmicrohttpd refused");
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(l->daemon,
                                                           MHD_DAEMON_INFO_BIND_PORT);
    snprintf(l->url, sizeof l->url, "http://127.0.0.1:%u",
             info ? (unsigned)info->port : l->want_port);
    return 0;
}

int hub_start(hub *h, const char **endpoint) {
    if (h->running) {
        hub_set_error(h, "hub_start: already running at %s", h->hub_l.url);
        return -1;
    }
    atomic_store(&h->stopping, false);
    /* The CDN first: the Hub's redirects name its URL. */
    if (start_listener(h, &h->cdn_l) != 0) return -1;
    if (start_listener(h, &h->hub_l) != 0) {
        MHD_stop_daemon(h->cdn_l.daemon);
        h->cdn_l.daemon = NULL;
        return -1;
    }
    h->running = true;
    if (endpoint) *endpoint = h->hub_l.url;
    return 0;
}

void hub_stop(hub *h) {
    if (!h || !h->running) return;
    atomic_store(&h->stopping, true);   /* ends stalls and trickles */
    MHD_stop_daemon(h->hub_l.daemon);
    MHD_stop_daemon(h->cdn_l.daemon);
    h->hub_l.daemon = h->cdn_l.daemon = NULL;
    h->hub_l.url[0] = h->cdn_l.url[0] = '\0';
    h->running = false;
    atomic_store(&h->stopping, false);
}
