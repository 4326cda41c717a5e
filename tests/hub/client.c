/* client.c: libcurl and raw-socket clients for the fake Hub's tests. */
#include "client.h"
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- libcurl ----------------------------------------------------------- */

typedef struct {
    http_reply *r;
    size_t cap;
} sink;

static void *must(void *p) {
    if (!p) ck_abort_msg("out of memory in the test client");
    return p;
}

static size_t on_body(char *data, size_t size, size_t n, void *cls) {
    sink *s = cls;
    size_t len = size * n;
    if (s->r->body_len + len + 1 > s->cap) {
        s->cap = 2 * (s->r->body_len + len + 1);
        s->r->body = must(realloc(s->r->body, s->cap));
    }
    memcpy(s->r->body + s->r->body_len, data, len);
    s->r->body_len += len;
    s->r->body[s->r->body_len] = '\0';   /* handy for text bodies */
    return len;
}

static void clear_headers(http_reply *r) {
    for (int i = 0; i < r->nheaders; i++) free(r->names[i]), free(r->values[i]);
    free(r->names);
    free(r->values);
    r->names = r->values = NULL;
    r->nheaders = 0;
}

/* Keeps only the last answer's headers: a status line starts a new set. */
static size_t on_header(char *data, size_t size, size_t n, void *cls) {
    http_reply *r = cls;
    size_t len = size * n;
    if (len >= 5 && !strncmp(data, "HTTP/", 5)) {
        clear_headers(r);
        return len;
    }
    const char *colon = memchr(data, ':', len);
    if (!colon) return len;
    size_t nlen = (size_t)(colon - data);
    const char *v = colon + 1, *end = data + len;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ')) end--;
    r->names = must(realloc(r->names, (size_t)(r->nheaders + 1) * sizeof *r->names));
    r->values = must(realloc(r->values, (size_t)(r->nheaders + 1) * sizeof *r->values));
    r->names[r->nheaders] = must(strndup(data, nlen));
    r->values[r->nheaders] = must(strndup(v, (size_t)(end - v)));
    r->nheaders++;
    return len;
}

http_reply *http_fetch(const char *url, const http_opts *o) {
    static const http_opts none;
    if (!o) o = &none;
    http_reply *r = must(calloc(1, sizeof *r));
    sink s = {r, 0};
    CURL *c = must(curl_easy_init());
    struct curl_slist *hdrs = NULL;
    char line[512];
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->error);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, o->timeout_ms ? o->timeout_ms : 20000L);
    if (o->head) curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (o->range) {
        snprintf(line, sizeof line, "Range: bytes=%s", o->range);
        hdrs = curl_slist_append(hdrs, line);
    }
    if (o->token) {
        snprintf(line, sizeof line, "Authorization: Bearer %s", o->token);
        hdrs = curl_slist_append(hdrs, line);
    }
    if (hdrs) curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    if (o->follow) {
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(c, CURLOPT_MAXREDIRS, o->max_redirs ? o->max_redirs : 10L);
    }
    if (o->unrestricted_auth) curl_easy_setopt(c, CURLOPT_UNRESTRICTED_AUTH, 1L);
    r->code = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_getinfo(c, CURLINFO_REDIRECT_COUNT, &r->redirects);
    char *eff = NULL;
    curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &eff);
    r->effective_url = must(strdup(eff ? eff : ""));
    if (!r->body) r->body = must(calloc(1, 1));
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    return r;
}

void http_reply_free(http_reply *r) {
    if (!r) return;
    clear_headers(r);
    free(r->body);
    free(r->effective_url);
    free(r);
}

const char *http_header(const http_reply *r, const char *name) {
    for (int i = r->nheaders - 1; i >= 0; i--)
        if (!strcasecmp(r->names[i], name)) return r->values[i];
    return NULL;
}

/* ---- raw socket -------------------------------------------------------- */

long raw_get(const char *endpoint, const char *path, char **out) {
    unsigned port = 0;
    if (sscanf(endpoint, "http://127.0.0.1:%u", &port) != 1) return -1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {10, 0};   /* a hung server fails the test, not the run */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char req[1200];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n\r\n", path,
                     port);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 || write(fd, req, (size_t)n) != n) {
        close(fd);
        return -1;
    }
    size_t len = 0, cap = 4096;
    char *buf = must(malloc(cap + 1));
    ssize_t got;
    while ((got = read(fd, buf + len, cap - len)) > 0) {
        len += (size_t)got;
        if (len == cap) buf = must(realloc(buf, (cap *= 2) + 1));
    }
    close(fd);
    buf[len] = '\0';
    *out = buf;
    return got < 0 ? -1 : (long)len;
}

/* ---- small helpers ----------------------------------------------------- */

const char *urlf(const char *fmt, ...) {
    static char bufs[8][1024];
    static int next;
    char *b = bufs[next++ % 8];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof bufs[0], fmt, ap);
    va_end(ap);
    return b;
}

static void digest_hex(const EVP_MD *md, const void *head, size_t nh, const void *data,
                       size_t n, char *out) {
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_MD_CTX *ctx = must(EVP_MD_CTX_new());
    EVP_DigestInit_ex(ctx, md, NULL);
    EVP_DigestUpdate(ctx, head, nh);
    EVP_DigestUpdate(ctx, data, n);
    EVP_DigestFinal_ex(ctx, d, &len);
    EVP_MD_CTX_free(ctx);
    for (unsigned i = 0; i < len; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

void test_sha256_hex(const void *data, size_t n, char out[65]) {
    digest_hex(EVP_sha256(), "", 0, data, n, out);
}

void test_blob_sha1_hex(const void *data, size_t n, char out[41]) {
    char head[40];
    int hn = snprintf(head, sizeof head, "blob %zu", n) + 1;   /* with its NUL */
    digest_hex(EVP_sha1(), head, (size_t)hn, data, n, out);
}

unsigned char *test_bytes(size_t n, unsigned seed) {
    unsigned char *b = must(malloc(n ? n : 1));
    uint32_t x = 2463534242u ^ (seed * 2654435761u);
    for (size_t i = 0; i < n; i++) {   /* xorshift32 */
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b[i] = (unsigned char)(x >> 24);
    }
    return b;
}

hub *start_tiny_hub(unsigned char **model) {
    hub *h = must(hub_new());
    unsigned char *m = test_bytes(MODEL_SIZE, 7);
    ck_assert_int_eq(hub_add_file(h, "org/tiny", "config.json", CONFIG_JSON,
                                  strlen(CONFIG_JSON)), 0);
    ck_assert_int_eq(hub_add_file(h, "org/tiny", "model.safetensors", m, MODEL_SIZE), 0);
    hub_set_lfs_threshold(h, LFS_THRESHOLD);
    ck_assert_msg(hub_start(h, NULL) == 0, "hub_start: %s", hub_error(h));
    if (model) *model = m;
    else free(m);
    return h;
}

int log_count_where(const hub *h, hub_host host, const char *needle) {
    int count = 0;
    hub_request e;
    for (int i = 0; hub_log_get(h, i, &e); i++)
        if ((host == HUB_ANY || e.host == host) && (!needle || strstr(e.path, needle)))
            count++;
    return count;
}
