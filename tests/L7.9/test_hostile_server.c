/* Answers no real Hub sends, from a raw socket (libmicrohttpd, under the
 * fake Hub, cannot send them): garbage, a status line without a code, huge
 * or conflicting headers, sizes that cannot be right, redirects to other
 * schemes, to hosts with credentials, or too long to hold. Each one ends in
 * an error naming the file, nothing under the final name, nothing outside
 * the cache, and HF_TOKEN only ever on the endpoint's own host and port. */
#include <netinet/in.h>
#include <openssl/evp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include "hf_fixture.h"

/* ---- a raw HTTP listener pair ------------------------------------------- */

/* What arrived: one entry per connection that sent a request head. */
typedef struct {
    int listener;                /* 0: the endpoint, 1: "another host" */
    char method[8];
    char path[2048];
    bool token;                  /* an Authorization header carrying the token */
} raw_request;

/* The scripted answer to requests on `listener` (-1: either) whose path
 * starts with `prefix`: sent verbatim, then the connection closes. A NULL
 * answer closes the connection with a reset, without a word; `reset` sends
 * one after the answer. */
typedef struct {
    int listener;
    char prefix[256];
    char *answer;
    size_t len;
    bool reset;                  /* after the answer, a reset instead of a close */
    int trickle_ms;              /* > 0: one byte of the answer every trickle_ms */
} raw_route;

typedef struct {
    int fd[2], stop[2];
    char url[2][48];             /* "http://127.0.0.1:PORT" */
    pthread_t thread;
    pthread_mutex_t lock;
    raw_route routes[16];
    int nroutes;
    raw_request log[64];
    int nlog;
    const char *token;
} raw_server;

static void raw_serve_one(raw_server *s, int listener) {
    int c = accept(s->fd[listener], NULL, NULL);
    if (c < 0) return;
    struct timeval tv = {5, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    static char head[32768];
    size_t n = 0;
    while (n < sizeof head - 1 && !memmem(head, n, "\r\n\r\n", 4)) {
        ssize_t k = recv(c, head + n, sizeof head - 1 - n, 0);
        if (k <= 0) break;
        n += (size_t)k;
    }
    head[n] = 0;
    raw_request r = {.listener = listener};
    sscanf(head, "%7s %2047s", r.method, r.path);
    const char *auth = strcasestr(head, "\r\nAuthorization:");
    r.token = auth && s->token && strstr(auth, s->token) &&
              strstr(auth, s->token) < strstr(auth + 2, "\r\n");
    char *answer = NULL;
    size_t len = 0;
    bool reset = true;
    int trickle_ms = 0;
    pthread_mutex_lock(&s->lock);
    if (s->nlog < 64) s->log[s->nlog++] = r;
    for (int i = 0; i < s->nroutes; i++)
        if ((s->routes[i].listener < 0 || s->routes[i].listener == listener) &&
            !strncmp(r.path, s->routes[i].prefix, strlen(s->routes[i].prefix))) {
            len = s->routes[i].len;
            reset = s->routes[i].reset || !s->routes[i].answer;
            trickle_ms = s->routes[i].trickle_ms;
            answer = s->routes[i].answer ? malloc(len) : NULL;
            if (answer) memcpy(answer, s->routes[i].answer, len);
            break;
        }
    pthread_mutex_unlock(&s->lock);
    for (size_t sent = 0; answer && sent < len;) {
        ssize_t k = send(c, answer + sent, trickle_ms > 0 ? 1 : len - sent, MSG_NOSIGNAL);
        if (k <= 0) break;
        sent += (size_t)k;
        if (trickle_ms > 0) usleep((useconds_t)trickle_ms * 1000);
    }
    if (!reset) {
        shutdown(c, SHUT_WR);
        while (recv(c, head, sizeof head, 0) > 0) {}   /* until the client hangs up */
    } else {
        struct linger now = {1, 0};
        setsockopt(c, SOL_SOCKET, SO_LINGER, &now, sizeof now);
    }
    free(answer);
    close(c);
}

static void *raw_loop(void *arg) {
    raw_server *s = arg;
    for (;;) {
        struct pollfd p[3] = {{s->fd[0], POLLIN, 0}, {s->fd[1], POLLIN, 0},
                              {s->stop[0], POLLIN, 0}};
        if (poll(p, 3, -1) < 0) continue;
        if (p[2].revents) return NULL;
        for (int l = 0; l < 2; l++)
            if (p[l].revents & POLLIN) raw_serve_one(s, l);
    }
}

static void raw_start(raw_server *s) {
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    ck_assert_int_eq(pipe(s->stop), 0);
    for (int l = 0; l < 2; l++) {
        s->fd[l] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t alen = sizeof a;
        ck_assert_int_eq(bind(s->fd[l], (struct sockaddr *)&a, sizeof a), 0);
        ck_assert_int_eq(listen(s->fd[l], 16), 0);
        ck_assert_int_eq(getsockname(s->fd[l], (struct sockaddr *)&a, &alen), 0);
        snprintf(s->url[l], sizeof s->url[l], "http://127.0.0.1:%u", ntohs(a.sin_port));
    }
    ck_assert_int_eq(pthread_create(&s->thread, NULL, raw_loop, s), 0);
}

static void raw_clear(raw_server *s) {
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->nroutes; i++) free(s->routes[i].answer);
    s->nroutes = 0;
    s->nlog = 0;
    pthread_mutex_unlock(&s->lock);
}

static void raw_stop(raw_server *s) {
    ck_assert_int_eq(write(s->stop[1], "x", 1), 1);
    pthread_join(s->thread, NULL);
    raw_clear(s);
    close(s->fd[0]), close(s->fd[1]), close(s->stop[0]), close(s->stop[1]);
    pthread_mutex_destroy(&s->lock);
}

/* Adds a route whose answer is `answer` (taken over; NULL: reset). */
static void raw_route_bytes(raw_server *s, int listener, const char *prefix, char *answer,
                            size_t len) {
    pthread_mutex_lock(&s->lock);
    ck_assert_int_lt(s->nroutes, 16);
    raw_route *r = &s->routes[s->nroutes++];
    r->listener = listener;
    snprintf(r->prefix, sizeof r->prefix, "%s", prefix);
    r->answer = answer;
    r->len = len;
    pthread_mutex_unlock(&s->lock);
}

/* The route added last sends its answer one byte every ms milliseconds. */
static void raw_trickle(raw_server *s, int ms) {
    pthread_mutex_lock(&s->lock);
    s->routes[s->nroutes - 1].trickle_ms = ms;
    pthread_mutex_unlock(&s->lock);
}

/* The route added last ends its answers with a reset. */
static void raw_reset_after(raw_server *s) {
    pthread_mutex_lock(&s->lock);
    s->routes[s->nroutes - 1].reset = true;
    pthread_mutex_unlock(&s->lock);
}

static void raw_route_text(raw_server *s, int listener, const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void raw_route_text(raw_server *s, int listener, const char *prefix, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    ck_assert_int_ge(vasprintf(&text, fmt, ap), 0);
    va_end(ap);
    raw_route_bytes(s, listener, prefix, text, strlen(text));
}

static int raw_count(raw_server *s, int listener) {
    pthread_mutex_lock(&s->lock);
    int n = 0;
    for (int i = 0; i < s->nlog; i++) n += listener < 0 || s->log[i].listener == listener;
    pthread_mutex_unlock(&s->lock);
    return n;
}

static const char *raw_log_text(raw_server *s) {
    static char text[4096];
    size_t used = 0;
    text[0] = 0;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->nlog && used < sizeof text - 300; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "\n  %s %s %.200s%s",
                                 s->log[i].listener ? "other" : "endpoint", s->log[i].method,
                                 s->log[i].path, s->log[i].token ? " (token)" : "");
    pthread_mutex_unlock(&s->lock);
    return used ? text : " (no request)";
}

/* ---- the file they serve ------------------------------------------------ */

#define HEAD_PATH "/org/tiny/resolve/main/model.bin"
#define FINAL "org--tiny/main/model.bin"
static const char CONTENT[] = "raw bytes of a small model\n";

static void sha256_hex(const void *data, size_t n, char out[65]) {
    unsigned char d[32];
    unsigned len = 0;
    EVP_Digest(data, n, d, &len, EVP_sha256(), NULL);
    for (unsigned i = 0; i < len; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

/* The LFS answer of a good Hub, headers first: a 302 to the other listener
 * with the content's sha256 and size, then `extra` headers. */
static void route_lfs_redirect(raw_server *s, const char *extra) {
    char sha[65];
    sha256_hex(CONTENT, strlen(CONTENT), sha);
    raw_route_text(s, 0, HEAD_PATH,
                   "HTTP/1.1 302 Found\r\n%sX-Linked-Etag: \"%s\"\r\nX-Linked-Size: %zu\r\n"
                   "X-Repo-Commit: 0123456789abcdef0123456789abcdef01234567\r\n"
                   "Location: %s/cdn/model.bin?sig=secret\r\nContent-Length: 0\r\n\r\n",
                   extra, sha, strlen(CONTENT), s->url[1]);
}

static void route_cdn_bytes(raw_server *s) {
    raw_route_text(s, 1, "/cdn/", "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n%s",
                   strlen(CONTENT), CONTENT);
}

/* hf_download of model.bin from the raw endpoint; NULL or the folder. */
static char *raw_download(hf_fx *f, raw_server *s) {
    const char *names[] = {"model.bin"};
    tl_clear_error();
    return hf_download(FX_REPO, names, 1, f->cache, "main", s->url[0], NULL, 2.0);
}

/* Nothing but (possibly) a .part of model.bin may be under base. */
static void assert_nothing_written(const hf_fx *f, const char *what) {
    char tree[2048];
    fx_tree(f->base, tree, sizeof tree);
    ck_assert_msg(!*tree || !strcmp(tree, "cache/" FINAL ".part\n"),
                  "%s: files appeared:\n%s", what, tree);
}

/* The harness itself: a well-formed exchange downloads. */
START_TEST(test_raw_listener_serves_a_good_answer)
{
    hf_fx f;
    fx_init(&f);
    raw_server s;
    raw_start(&s);
    route_lfs_redirect(&s, "");
    route_cdn_bytes(&s);
    char *dir = raw_download(&f, &s);
    ck_assert_msg(dir != NULL, "%s\nrequests:%s", tl_error(), raw_log_text(&s));
    ck_assert(fx_holds(fx_path(&f, FINAL), CONTENT, strlen(CONTENT)));
    free(dir);
    raw_stop(&s);
    fx_end(&f);
}
END_TEST

/* Answers that are not HTTP: an error naming the file and the server, no
 * file, and no retry (the same server will send the same thing). An empty
 * answer is a dropped connection: retried a few times. */
START_TEST(test_answers_that_are_not_well_formed)
{
    char *huge_line = malloc(200001);
    ck_assert_ptr_nonnull(huge_line);
    memset(huge_line, 'x', 200000);
    huge_line[200000] = 0;
    const struct { const char *name, *head; int min_tries, max_tries; } cases[] = {
        {"garbage", "SSH-2.0-OpenSSH_9.2\r\n\r\nnot http at all", 1, 1},
        {"a status line without a code", "HTTP/1.1\r\n\r\n", 1, 1},
        {"a word for a status code", "HTTP/1.1 OK\r\n\r\n", 1, 1},
        {"a 200 KB header line", huge_line, 1, 1},
        {"an empty answer", "", 2, 5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        hf_fx f;
        fx_init(&f);
        raw_server s;
        raw_start(&s);
        if (cases[i].head == huge_line)
            raw_route_text(&s, 0, "/", "HTTP/1.1 200 OK\r\nX-Long: %s\r\n\r\n", huge_line);
        else
            raw_route_bytes(&s, 0, "/", strdup(cases[i].head), strlen(cases[i].head));
        char *dir = raw_download(&f, &s);
        ck_assert_msg(dir == NULL, "%s: accepted; requests:%s", cases[i].name, raw_log_text(&s));
        fx_assert_error_mentions("model.bin", "127.0.0.1");
        assert_nothing_written(&f, cases[i].name);
        int n = raw_count(&s, -1);
        ck_assert_msg(n >= cases[i].min_tries && n <= cases[i].max_tries,
                      "%s: %d requests, expected %d to %d:%s", cases[i].name, n,
                      cases[i].min_tries, cases[i].max_tries, raw_log_text(&s));
        raw_stop(&s);
        fx_end(&f);
    }
    free(huge_line);
}
END_TEST

/* Thousands of headers are still a well-formed answer. */
START_TEST(test_thousands_of_headers_are_fine)
{
    hf_fx f;
    fx_init(&f);
    raw_server s;
    raw_start(&s);
    char *many = malloc(5000 * 24 + 1);
    ck_assert_ptr_nonnull(many);
    size_t used = 0;
    for (int i = 0; i < 5000; i++) used += (size_t)sprintf(many + used, "X-Junk-%d: v\r\n", i);
    route_lfs_redirect(&s, many);
    raw_route_text(&s, 1, "/cdn/", "HTTP/1.1 200 OK\r\n%sContent-Length: %zu\r\n\r\n%s", many,
                   strlen(CONTENT), CONTENT);
    free(many);
    char *dir = raw_download(&f, &s);
    ck_assert_msg(dir != NULL, "%s\nrequests:%s", tl_error(), raw_log_text(&s));
    ck_assert(fx_holds(fx_path(&f, FINAL), CONTENT, strlen(CONTENT)));
    free(dir);
    raw_stop(&s);
    fx_end(&f);
}
END_TEST

/* Sizes that cannot be right (negative, not a number, beyond any disk) are
 * refused before a byte is asked for. */
START_TEST(test_sizes_that_cannot_be_right)
{
    const char *sizes[] = {"-5", "abc", "12abc", "0x1b", "1000000000000000000",
                           "99999999999999999999", "27, 28"};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (int small = 0; small < 2; small++) {
            hf_fx f;
            fx_init(&f);
            raw_server s;
            raw_start(&s);
            char sha[65], extra[128];
            sha256_hex(CONTENT, strlen(CONTENT), sha);
            if (small) {   /* a 200 whose Content-Length is the value */
                raw_route_text(&s, 0, "/", "HTTP/1.1 200 OK\r\nETag: \"%s\"\r\n"
                               "Content-Length: %s\r\n\r\n", sha, sizes[i]);
            } else {       /* an LFS redirect whose X-Linked-Size is the value */
                raw_route_text(&s, 0, HEAD_PATH,
                               "HTTP/1.1 302 Found\r\nX-Linked-Etag: \"%s\"\r\n"
                               "X-Linked-Size: %s\r\nLocation: %s/cdn/model.bin\r\n"
                               "Content-Length: 0\r\n\r\n",
                               sha, sizes[i], s.url[1]);
                route_cdn_bytes(&s);
            }
            snprintf(extra, sizeof extra, "%s %s", small ? "Content-Length" : "X-Linked-Size",
                     sizes[i]);
            char *dir = raw_download(&f, &s);
            ck_assert_msg(dir == NULL, "%s: accepted; requests:%s", extra, raw_log_text(&s));
            fx_assert_error_mentions("model.bin");
            ck_assert_msg(raw_count(&s, 1) == 0 && raw_count(&s, 0) <= 5,
                          "%s: the bytes were asked for:%s", extra, raw_log_text(&s));
            assert_nothing_written(&f, extra);
            raw_stop(&s);
            fx_end(&f);
        }
}
END_TEST

/* A 206 must say where its bytes go: "bytes <first>-<last>/<total>", first
 * where we asked. Anything else is refused and the .part kept as it was. */
START_TEST(test_malformed_content_range_is_refused)
{
    const char *ranges[] = {"Content-Range: bytes abc\r\n", "Content-Range: bytes 10-\r\n",
                            "Content-Range: 10-26/27\r\n", "Content-Range: bytes 10-26/abc\r\n",
                            "Content-Range: bytes -10-26/27\r\n",
                            "Content-Range: bytes 10-26/99999999999999999999\r\n",
                            "Content-Range: bytes 10-26/27\r\nContent-Range: bytes 0-26/27\r\n",
                            ""};
    for (size_t i = 0; i < sizeof ranges / sizeof *ranges; i++) {
        hf_fx f;
        fx_init(&f);
        raw_server s;
        raw_start(&s);
        route_lfs_redirect(&s, "");
        raw_route_text(&s, 1, "/cdn/", "HTTP/1.1 206 Partial Content\r\n%sContent-Length: "
                       "%zu\r\n\r\n%s", ranges[i], strlen(CONTENT) - 10, CONTENT + 10);
        fx_write(fx_path(&f, FINAL ".part"), CONTENT, 10);
        char *dir = raw_download(&f, &s);
        ck_assert_msg(dir == NULL, "'%s' accepted; requests:%s", ranges[i], raw_log_text(&s));
        fx_assert_error_mentions("model.bin", "Content-Range");
        ck_assert_msg(!strstr(tl_error(), "sig=secret"), "the signed query is shown: %s",
                      tl_error());
        ck_assert(!fx_exists(fx_path(&f, FINAL)));
        ck_assert_msg(fx_holds(fx_path(&f, FINAL ".part"), CONTENT, 10),
                      "'%s': the .part changed", ranges[i]);
        ck_assert_int_le(raw_count(&s, 1), 5);
        raw_stop(&s);
        fx_end(&f);
    }
}
END_TEST

/* The same header twice with different values: which one is true? Refused. */
START_TEST(test_conflicting_duplicate_headers_are_refused)
{
    char sha[65], other[65];
    sha256_hex(CONTENT, strlen(CONTENT), sha);
    sha256_hex("other", 5, other);
    char cases[3][128];
    snprintf(cases[0], sizeof cases[0], "X-Linked-Size: %zu\r\n", strlen(CONTENT) + 5);
    snprintf(cases[1], sizeof cases[1], "X-Linked-Etag: \"%s\"\r\n", other);
    snprintf(cases[2], sizeof cases[2], "X-Repo-Commit: %s\r\n",
             "1111111111111111111111111111111111111111");
    const char *names[] = {"X-Linked-Size", "X-Linked-Etag", "X-Repo-Commit"};
    for (int i = 0; i < 3; i++)
        for (int after = 0; after < 2; after++) {
            hf_fx f;
            fx_init(&f);
            raw_server s;
            raw_start(&s);
            if (after) {   /* the conflicting copy after the good one */
                char good[1024];
                snprintf(good, sizeof good, "X-Linked-Etag: \"%s\"\r\nX-Linked-Size: %zu\r\n"
                         "X-Repo-Commit: 0123456789abcdef0123456789abcdef01234567\r\n%s", sha,
                         strlen(CONTENT), cases[i]);
                raw_route_text(&s, 0, HEAD_PATH, "HTTP/1.1 302 Found\r\n%sLocation: %s/cdn/m\r\n"
                               "Content-Length: 0\r\n\r\n", good, s.url[1]);
            } else {
                route_lfs_redirect(&s, cases[i]);
            }
            route_cdn_bytes(&s);
            char *dir = raw_download(&f, &s);
            ck_assert_msg(dir == NULL, "two different %s accepted; requests:%s", names[i],
                          raw_log_text(&s));
            fx_assert_error_mentions("model.bin", names[i]);
            ck_assert(!fx_exists(fx_path(&f, FINAL)));
            raw_stop(&s);
            fx_end(&f);
        }
}
END_TEST

/* Redirects to another scheme, to a host with credentials, or too long to
 * hold are refused at once: no request follows them. */
START_TEST(test_hostile_locations_are_refused)
{
    char *longest = malloc(6001);
    ck_assert_ptr_nonnull(longest);
    hf_fx f;
    raw_server s;
    for (int i = 0; i < 5; i++) {
        fx_init(&f);
        raw_start(&s);
        int len = snprintf(longest, 6001, "%s/cdn/", s.url[1]);
        memset(longest + len, 'a', (size_t)(6000 - len));
        longest[6000] = 0;
        char user[192];
        snprintf(user, sizeof user, "http://hf:secret@%.40s/cdn/model.bin", s.url[1] + 7);
        const char *where[] = {"file:///etc/passwd", "ftp://127.0.0.1/model.bin",
                               "gopher://127.0.0.1/model.bin", user, longest};
        char sha[65];
        sha256_hex(CONTENT, strlen(CONTENT), sha);
        raw_route_text(&s, 0, HEAD_PATH,
                       "HTTP/1.1 302 Found\r\nX-Linked-Etag: \"%s\"\r\nX-Linked-Size: %zu\r\n"
                       "Location: %s\r\nContent-Length: 0\r\n\r\n", sha, strlen(CONTENT), where[i]);
        route_cdn_bytes(&s);
        char *dir = raw_download(&f, &s);
        ck_assert_msg(dir == NULL, "Location %.60s accepted; requests:%s", where[i],
                      raw_log_text(&s));
        fx_assert_error_mentions("model.bin", "redirect");
        ck_assert_msg(!tl_error() || !strstr(tl_error(), "secret"),
                      "the error repeats the URL's password: %s", tl_error());
        ck_assert_msg(raw_count(&s, 1) == 0 && raw_count(&s, 0) == 1,
                      "Location %.60s was followed:%s", where[i], raw_log_text(&s));
        assert_nothing_written(&f, where[i]);
        raw_stop(&s);
        fx_end(&f);
    }
    free(longest);
}
END_TEST

/* A connection reset before the headers, after them, or in the middle of
 * the body: retried a few times, then an error; the bytes that did arrive
 * stay in the .part, and no signal (SIGPIPE) ends the process. */
START_TEST(test_resets_fail_cleanly_without_a_signal)
{
    signal(SIGPIPE, SIG_DFL);      /* as in a program that never changed it */
    for (int where = 0; where < 3; where++) {
        hf_fx f;
        fx_init(&f);
        raw_server s;
        raw_start(&s);
        route_lfs_redirect(&s, "");
        if (where == 0) raw_route_bytes(&s, 1, "/cdn/", NULL, 0);
        else if (where == 1) raw_route_text(&s, 1, "/cdn/", "HTTP/1.1 200 OK\r\nContent-Le");
        else raw_route_text(&s, 1, "/cdn/", "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n%.10s",
                            strlen(CONTENT), CONTENT);
        if (where) raw_reset_after(&s);
        char *dir = raw_download(&f, &s);
        ck_assert_msg(dir == NULL, "accepted; requests:%s", raw_log_text(&s));
        fx_assert_error_mentions("model.bin", "127.0.0.1", "run again");
        ck_assert_msg(!strstr(tl_error(), "sig=secret"), "the signed query is shown: %s",
                      tl_error());
        ck_assert(!fx_exists(fx_path(&f, FINAL)));
        if (where == 2)
            ck_assert_msg(fx_holds(fx_path(&f, FINAL ".part"), CONTENT, 10),
                          "the 10 bytes received should wait in the .part for a resume");
        int gets = raw_count(&s, 1);
        ck_assert_msg(gets >= 2 && gets <= 5, "%d GETs: a reset is worth a few tries", gets);
        raw_stop(&s);
        fx_end(&f);
    }
}
END_TEST

/* HF_TOKEN goes to the endpoint's host and port only: never to a redirect
 * that differs in port, that comes back from the other host, or that is
 * written without a scheme; a same-host hop keeps it. (A host that differs
 * only in letter case is the same host: sending the token there or not are
 * both safe, and both must download.) */
START_TEST(test_token_stays_on_the_endpoints_host_and_port)
{
    const char *token = "hf_raw_secret_token";
    for (int k = 0; k < 5; k++) {
        hf_fx f;
        fx_init(&f);
        setenv("HF_TOKEN", token, 1);
        char endpoint[64], upper[64];
        raw_server s;
        raw_start(&s);
        s.token = token;
        char sha[65], other_hostport[40];
        sha256_hex(CONTENT, strlen(CONTENT), sha);
        snprintf(other_hostport, sizeof other_hostport, "%.32s", s.url[1] + 7);
        snprintf(endpoint, sizeof endpoint, "http://localhost%.8s", strrchr(s.url[0], ':'));
        snprintf(upper, sizeof upper, "http://LOCALHOST%.8s", strrchr(s.url[0], ':'));
        const char *lfs = "HTTP/1.1 302 Found\r\nX-Linked-Etag: \"%s\"\r\nX-Linked-Size: %zu\r\n"
                          "Location: %s%s/cdn/model.bin\r\nContent-Length: 0\r\n\r\n";
        if (k == 0) {        /* same host, then a port away */
            raw_route_text(&s, 0, HEAD_PATH, "HTTP/1.1 307 Temporary Redirect\r\n"
                           "Location: /api/resolve-cache/models/org/tiny/c/model.bin\r\n\r\n");
            raw_route_text(&s, 0, "/api/", lfs, sha, strlen(CONTENT), "http://", other_hostport);
            route_cdn_bytes(&s);
        } else if (k == 1) { /* a Location without a scheme: still the other port */
            raw_route_text(&s, 0, HEAD_PATH, lfs, sha, strlen(CONTENT), "//", other_hostport);
            route_cdn_bytes(&s);
        } else if (k == 2) { /* the other host sends the GET back to the endpoint */
            route_lfs_redirect(&s, "");
            raw_route_text(&s, 1, "/cdn/", "HTTP/1.1 302 Found\r\nLocation: %s/back/model.bin\r\n"
                           "Content-Length: 0\r\n\r\n", s.url[0]);
            raw_route_text(&s, 0, "/back/", "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n%s",
                           strlen(CONTENT), CONTENT);
        } else {             /* the bytes on the endpoint's own host (k == 4: in capitals) */
            raw_route_text(&s, 0, HEAD_PATH, lfs, sha, strlen(CONTENT),
                           k == 3 ? s.url[0] : upper, "");
            raw_route_text(&s, 0, "/cdn/", "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n%s",
                           strlen(CONTENT), CONTENT);
        }
        const char *names[] = {"model.bin"};
        tl_clear_error();
        char *dir = hf_download(FX_REPO, names, 1, f.cache, "main", k == 4 ? endpoint : s.url[0],
                                NULL, 2.0);
        if (k != 2)
            ck_assert_msg(dir != NULL, "case %d: %s\nrequests:%s", k, tl_error(), raw_log_text(&s));
        else
            fx_assert_error_mentions("model.bin", "redirect");
        free(dir);
        int on_endpoint = 0, on_other = 0;
        pthread_mutex_lock(&s.lock);
        for (int i = 0; i < s.nlog; i++) {
            if (s.log[i].listener == 1) on_other++;
            else on_endpoint++;
            if (k == 4 && s.log[i].listener == 0) continue;
            ck_assert_msg(s.log[i].listener == 0 ? s.log[i].token : !s.log[i].token,
                          "case %d: %s %s on the %s %s the token", k, s.log[i].method,
                          s.log[i].path, s.log[i].listener ? "other host" : "endpoint",
                          s.log[i].token ? "got" : "did not get");
        }
        pthread_mutex_unlock(&s.lock);
        ck_assert_msg(on_endpoint >= 1 && (k >= 3 || on_other >= 1), "case %d:%s", k,
                      raw_log_text(&s));
        raw_stop(&s);
        fx_end(&f);
    }
}
END_TEST

/* Headers sent one byte at a time never go silent for long: the metadata
 * request still ends, with a timeout that names the file (hf.c bounds a HEAD
 * by a deadline; libcurl's low-speed check, which counts body bytes only,
 * would also stop it). */
START_TEST(test_headers_trickled_byte_by_byte_time_out)
{
    hf_fx f;
    fx_init(&f);
    raw_server s;
    raw_start(&s);
    route_lfs_redirect(
        &s, "X-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
    raw_trickle(&s, 150);            /* the whole 302 would take about 40 s */
    route_cdn_bytes(&s);
    const char *names[] = {"model.bin"};
    tl_clear_error();
    char *dir = hf_download(FX_REPO, names, 1, f.cache, "main", s.url[0], NULL, 0.5);
    ck_assert_msg(dir == NULL, "a trickled answer was waited for to the end");
    ck_assert_msg(tl_error() && strstr(tl_error(), "timeout") && strstr(tl_error(), "model.bin"),
                  "the error should name the file and the timeout: %s", tl_error());
    assert_nothing_written(&f, "trickled headers");
    raw_stop(&s);
    fx_end(&f);
}
END_TEST
