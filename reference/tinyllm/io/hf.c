/* hf.c: hf_download, the chapter's resumable, verified, atomic downloader.
 *
 * One file, read top to bottom: validation, URLs, one HTTP exchange, what
 * the server says a file is, hashing, the transfer into <file>.part, and the
 * loop over files. See contracts/tinyllm/io/hf.h for the contract.
 */
#include "tinyllm/io/hf.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "tinyllm/tensor.h"

#define DEFAULT_ENDPOINT "https://huggingface.co"
#define MAX_REDIRECTS 5
#define MAX_ATTEMPTS 5        /* per request: tries after 408/429/5xx, a drop or a timeout */
#define FIRST_WAIT 0.25       /* seconds before the first retry; doubles after each */
#define MAX_WAIT 30.0         /* seconds: cap on a wait, Retry-After included */
#define PROGRESS_MIN_BYTES (10LL * 1024 * 1024)
#define MAX_SEGMENT 250       /* bytes in a path segment: 255 (NAME_MAX) less ".part" */
#define PATH_BYTES 4096       /* PATH_MAX: a longer path is refused, never cut */

/* A URL for a message: without its query, which may hold a signature. */
#define SHOWN(url) (int)strcspn(url, "?"), url

/* ---- validation: nothing may leave the cache folder ------------------- */

static bool is_hex(const char *s, size_t len) {
    if (strlen(s) != len) return false;
    for (size_t i = 0; i < len; i++)
        if (!isdigit((unsigned char)s[i]) && !(s[i] >= 'a' && s[i] <= 'f')) return false;
    return true;
}

static bool has_control_char(const char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) return true;
    return false;
}

/* One part of a repo id: [A-Za-z0-9._-], starting and ending with a letter or digit. */
static bool valid_repo_part(const char *s, size_t len, size_t max_len) {
    if (len == 0 || len > max_len) return false;
    if (!isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[len - 1])) return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i])) return false;
    return true;
}

int hf_validate_repo_id(const char *repo_id) {
    if (!repo_id || !*repo_id) return tl_fail_status("hf_download: the repo id is empty");
    const char *slash = strchr(repo_id, '/');
    size_t len = strlen(repo_id);
    bool ok = !has_control_char(repo_id) && !strstr(repo_id, "--") && !strstr(repo_id, "..") &&
              !(len >= 4 && !strcmp(repo_id + len - 4, ".git"));
    if (ok && slash)
        ok = !strchr(slash + 1, '/') && valid_repo_part(repo_id, (size_t)(slash - repo_id), 96) &&
             valid_repo_part(slash + 1, strlen(slash + 1), 96);
    else if (ok)
        ok = valid_repo_part(repo_id, len, 96);
    if (!ok)
        return tl_fail_status("hf_download: invalid repo id '%s': expected 'org/name' of letters, "
                              "digits and '._-' (no '--' or '..', no '.git' suffix, names up to "
                              "96 characters)", repo_id);
    return 0;
}

/* Why a relative path cannot become a path in the cache; NULL when it can. */
static const char *path_problem(const char *path, char *buf, size_t size) {
    if (!path || !*path) return "it is empty";
    if (path[0] == '/') return "it is an absolute path";
    if (strchr(path, '\\')) return "it contains a backslash";
    if (isalpha((unsigned char)path[0]) && path[1] == ':') return "it has a drive prefix";
    if (has_control_char(path)) return "it contains a control character";
    /* every segment non-empty, neither "." nor "..", and short enough for a file system */
    for (const char *seg = path; seg;) {
        const char *end = strchr(seg, '/');
        size_t len = end ? (size_t)(end - seg) : strlen(seg);
        if (len == 0) return "it has an empty path segment";
        if ((len == 1 && seg[0] == '.') || (len == 2 && !strncmp(seg, "..", 2)))
            return "it has a '.' or '..' segment";
        if (len > MAX_SEGMENT) {
            snprintf(buf, size, "a path segment has %zu bytes, more than %d (255 less '.part')",
                     len, MAX_SEGMENT);
            return buf;
        }
        seg = end ? end + 1 : NULL;
    }
    return NULL;
}

int hf_validate_filename(const char *filename) {
    char buf[96];
    const char *why = path_problem(filename, buf, sizeof buf);
    if (why)
        return tl_fail_status("hf_download: invalid filename '%.300s': %s; use a relative path "
                              "inside the repository, like 'model.safetensors' or "
                              "'onnx/model.onnx'", filename ? filename : "(null)", why);
    return 0;
}

int hf_validate_revision(const char *revision) {
    /* A revision becomes a folder of the cache: the filename rules apply. */
    char buf[96];
    const char *why = path_problem(revision, buf, sizeof buf);
    if (why)
        return tl_fail_status("hf_download: invalid revision '%.300s': %s; use a branch, a tag, "
                              "'refs/pr/N' or a 40-hex commit", revision ? revision : "(null)",
                              why);
    return 0;
}

/* ---- URLs -------------------------------------------------------------- */

/* Percent-encodes s as UTF-8 bytes, keeping letters, digits, "_.-~" and `safe`. */
static char *percent_encode(const char *s, const char *safe) {
    char *out = malloc(strlen(s) * 3 + 1), *p = out;
    if (!out) return NULL;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (isalnum(*c) || strchr("_.-~", *c) || strchr(safe, *c)) *p++ = (char)*c;
        else p += sprintf(p, "%%%02X", *c);
    }
    *p = 0;
    return out;
}

static char *resolve_url(const char *endpoint, const char *repo_id, const char *revision,
                         const char *filename) {
    char *rev = percent_encode(revision, "");
    char *file = percent_encode(filename, "/");
    char *url = NULL;
    if (rev && file && asprintf(&url, "%s/%s/resolve/%s/%s", endpoint, repo_id, rev, file) < 0)
        url = NULL;
    free(rev);
    free(file);
    return url;
}

/* "http://host:port/path" -> "http://host:port", to compare hosts. Compared
 * as text, a host in capitals or with its default port written out counts
 * as another host: that can only withhold the token, never leak it. */
static void origin_of(const char *url, char *out, size_t size) {
    const char *scheme_end = strstr(url, "://");
    const char *host = scheme_end ? scheme_end + 3 : url;
    size_t len = strcspn(host, "/?#");
    snprintf(out, size, "%.*s", (int)(host - url + len), url);
}

/* ---- one HTTP exchange --------------------------------------------------- */

typedef struct {
    long status;
    char etag[96];            /* ETag, without W/ and quotes */
    char linked_etag[96];     /* X-Linked-Etag: the sha256 of an LFS file */
    long long linked_size;    /* X-Linked-Size, -1 when absent */
    long long content_length; /* -1 when absent */
    long long range_start;    /* Content-Range's first byte, -1 when absent */
    long long range_total;    /* Content-Range's total size, -1 when absent */
    char commit[96];          /* X-Repo-Commit */
    char error_code[64];      /* X-Error-Code */
    char location[PATH_BYTES]; /* a redirect's target, made absolute by curl */
    double retry_after;       /* seconds, -1 when absent */
    const char *malformed;    /* a header that is not well-formed, or came twice with
                                 different values; NULL when none */
} response;

static const response NO_RESPONSE = {.linked_size = -1, .content_length = -1, .range_start = -1,
                                     .range_total = -1, .retry_after = -1};

/* Where a body goes: the .part file, hashed as it is written. */
typedef struct {
    FILE *file;               /* opened for appending */
    EVP_MD_CTX *sha256, *sha1;
    long long written;        /* bytes in the file, including those there before */
    long long expected;       /* the announced size */
    const response *r;        /* the answer being received */
    bool body_started;
    bool bad_range;           /* a 206 that does not start where we asked */
    bool bad_size;            /* the answer describes a file of another size */
    bool too_long;            /* more bytes than the announced size */
    int write_errno;          /* why writing the file failed, else 0 */
    bool resumed;             /* the bytes in the file did not all come, from byte 0, in
                                 one answer of this call (a .part from before, a 206) */
    bool whole_only;          /* ranges are no use with this server: whole file only */
    char why_whole[512];      /* why, for messages */
    bool progress;            /* draw a progress bar on stderr */
    int shown_percent;
} sink;

static int restart_part(sink *s);

static void header_value(const char *line, size_t len, char *out, size_t size) {
    const char *v = memchr(line, ':', len);
    if (!v) return;
    v++;
    const char *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ')) end--;
    if (end - v >= 2 && !strncmp(v, "W/", 2)) v += 2;  /* a weak ETag names the same bytes */
    if (end - v >= 2 && *v == '"' && end[-1] == '"') { v++; end--; }
    snprintf(out, size, "%.*s", (int)(end - v), v);
}

/* Reads the decimal digits at *s, at most 18 (no overflow), and moves past
 * them; -1 when there are none or more. */
static long long read_count(const char **s) {
    const char *p = *s;
    long long n = 0;
    while (isdigit((unsigned char)*p) && p - *s < 18) n = n * 10 + (*p++ - '0');
    if (p == *s || isdigit((unsigned char)*p)) return -1;
    *s = p;
    return n;
}

/* A value that is only a count ("200"); -1 for "-5", "abc", "12abc", 20 digits. */
static long long parse_count(const char *value) {
    long long n = read_count(&value);
    return *value ? -1 : n;
}

/* Content-Range: "bytes 100-199/200"; '*' stands for a total not known,
 * and, in a 416, for the range. Fills what it gives; false when it is
 * anything else. */
static bool read_content_range(const char *v, long long *first, long long *total) {
    long long last = -1;
    if (strncmp(v, "bytes ", 6) != 0) return false;
    v += 6;
    if (*v == '*') v++;
    else if ((*first = read_count(&v)) < 0 || *v++ != '-' || (last = read_count(&v)) < *first)
        return false;
    if (*v++ != '/') return false;
    if (!strcmp(v, "*")) return true;
    *total = parse_count(v);
    return *total > last;
}

/* Headers whose values we keep: a second, different value makes the answer
 * malformed (which of the two would be true?). */
static void take_text(response *r, const char *name, char *field, size_t size, const char *v) {
    if (*field && strncmp(field, v, size - 1) != 0) r->malformed = name;
    snprintf(field, size, "%s", v);
}

static void take_count(response *r, const char *name, long long *field, const char *v) {
    long long n = parse_count(v);
    if (n < 0 || (*field >= 0 && *field != n)) r->malformed = name;
    *field = n;
}

static size_t on_header(char *line, size_t one, size_t len, void *data) {
    response *r = data;
    char value[256] = "";
    (void)one;
    if (!strncmp(line, "HTTP/", 5)) {       /* a new response: forget the previous one's headers */
        *r = NO_RESPONSE;
        const char *code = strchr(line, ' ');
        r->status = code ? atol(code + 1) : 0;
        return len;
    }
    header_value(line, len, value, sizeof value);
#define IS(name) (len > sizeof(name) - 1 && !strncasecmp(line, name, sizeof(name) - 1))
    if (IS("etag:")) take_text(r, "ETag", r->etag, sizeof r->etag, value);
    else if (IS("x-linked-etag:"))
        take_text(r, "X-Linked-Etag", r->linked_etag, sizeof r->linked_etag, value);
    else if (IS("x-repo-commit:"))
        take_text(r, "X-Repo-Commit", r->commit, sizeof r->commit, value);
    else if (IS("x-error-code:")) {   /* shown in messages: no terminal escapes */
        header_value(line, len, r->error_code, sizeof r->error_code);
        for (char *c = r->error_code; *c; c++)
            if (*c < 0x20 || *c > 0x7e) *c = '?';
    }
    else if (IS("x-linked-size:")) take_count(r, "X-Linked-Size", &r->linked_size, value);
    else if (IS("content-length:")) take_count(r, "Content-Length", &r->content_length, value);
    else if (IS("retry-after:")) r->retry_after = (double)parse_count(value);  /* a date: -1 */
    else if (IS("content-range:")) {
        bool again = r->range_start >= 0 || r->range_total >= 0;
        if (again || !read_content_range(value, &r->range_start, &r->range_total))
            r->malformed = "Content-Range";
    }
#undef IS
    return len;
}

/* Checks made once, when the first bytes of a file's body arrive. */
static bool body_begins(sink *s) {
    const response *r = s->r;
    if (r->malformed || (r->status == 206 && r->range_start < 0))
        return false;                         /* refused by the caller, before any byte */
    if (r->status == 206 && r->range_start != s->written && r->range_start != 0) {
        s->bad_range = true;                  /* would put bytes in the wrong place */
        return false;
    }
    /* A 200 (the range was ignored) or a 206 from byte 0: the whole file
     * again, from its start: empty the .part and the hashes, then take it. */
    if (s->written > 0 && (r->status == 200 || r->range_start == 0) && restart_part(s) != 0) {
        s->write_errno = errno;
        return false;
    }
    if (r->status == 206 && r->range_start > 0) s->resumed = true;
    long long total = r->status == 206 ? r->range_total : r->content_length;
    if (total >= 0 && total != s->expected) {
        s->bad_size = true;
        return false;
    }
    return true;
}

static size_t on_body(char *data, size_t one, size_t len, void *arg) {
    sink *s = arg;
    (void)one;
    if (s->r->status != 200 && s->r->status != 206) return len;  /* an error page, not the file */
    if (!s->body_started) {
        s->body_started = true;
        if (!body_begins(s)) return 0;        /* 0 aborts the transfer: nothing appended */
    }
    if (s->written + (long long)len > s->expected) {
        s->too_long = true;
        return 0;
    }
    if (fwrite(data, 1, len, s->file) != len) {
        s->write_errno = errno;
        return 0;
    }
    EVP_DigestUpdate(s->sha256, data, len);
    EVP_DigestUpdate(s->sha1, data, len);
    s->written += (long long)len;
    return len;
}

static int on_progress(void *arg, curl_off_t total, curl_off_t now, curl_off_t ut, curl_off_t un) {
    sink *s = arg;
    (void)total; (void)now; (void)ut; (void)un;
    int percent = (int)(100.0 * (double)s->written / (double)s->expected);
    if (percent != s->shown_percent) {
        s->shown_percent = percent;
        fprintf(stderr, "\r  [%-40.*s] %3d%% %lld/%lld MB", percent * 40 / 100,
                "########################################", percent, s->written >> 20,
                s->expected >> 20);
    }
    return 0;
}

/* Performs one request without following redirects: a HEAD when s is NULL,
 * else a GET whose body goes to s. Returns the curl code; errbuf says more. */
static CURLcode exchange(const char *url, const char *token, long long range_from, double timeout,
                         response *r, sink *s, char errbuf[CURL_ERROR_SIZE]) {
    CURL *curl = curl_easy_init();
    if (!curl) return CURLE_FAILED_INIT;
    struct curl_slist *headers = NULL;
    char line[4096];
    if (token) {
        snprintf(line, sizeof line, "Authorization: Bearer %s", token);
        headers = curl_slist_append(headers, line);
    }
    if (range_from > 0) {
        snprintf(line, sizeof line, "Range: bytes=%lld-", range_from);
        headers = curl_slist_append(headers, line);
    }
    *r = NO_RESPONSE;
    errbuf[0] = 0;
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");  /* never file:// and the like */
    curl_easy_setopt(curl, CURLOPT_NOBODY, s ? 0L : 1L);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "tinyllm-hf/1.0");
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout * 1000));
    /* silence: less than one byte per second for `timeout` seconds */
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, (long)(timeout < 1 ? 1 : timeout));
    if (!s)   /* a HEAD has no body: headers trickled byte by byte must not hold it forever */
        curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)(2 * timeout * 1000));
    if (s) {
        s->r = r;
        s->body_started = s->bad_range = s->bad_size = s->too_long = false;
        s->write_errno = 0;
        curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(curl, CURLOPT_WRITEDATA, s);
        if (s->progress) {
            curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
            curl_easy_setopt(curl, CURLOPT_XFERINFODATA, s);
            curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
        }
    }
    CURLcode rc = curl_easy_perform(curl);
    char *location = NULL;
    if (curl_easy_getinfo(curl, CURLINFO_REDIRECT_URL, &location) == CURLE_OK && location)
        snprintf(r->location, sizeof r->location, "%s", location);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    return rc;
}

static bool retryable(long status) { return status == 408 || status == 429 || status >= 500; }

/* A connection refused or dropped, or a timeout: worth another try. An
 * answer that is not HTTP (garbage, a status line without a code, a header
 * too large) or a failed write will not get better. */
static bool transient(CURLcode cc) {
    switch (cc) {
    case CURLE_COULDNT_RESOLVE_HOST: case CURLE_COULDNT_CONNECT: case CURLE_PARTIAL_FILE:
    case CURLE_OPERATION_TIMEDOUT: case CURLE_SSL_CONNECT_ERROR: case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR: case CURLE_RECV_ERROR: case CURLE_HTTP2: case CURLE_HTTP2_STREAM:
        return true;
    default:
        return false;
    }
}

/* Before try number `attempt` + 1: the server's Retry-After, else a backoff
 * of 0.25 s doubling each time; capped. */
static void wait_before_retry(int attempt, double retry_after) {
    double seconds = retry_after >= 0 ? retry_after : FIRST_WAIT * (double)(1 << (attempt - 1));
    if (seconds > MAX_WAIT) seconds = MAX_WAIT;
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
}

/* What went wrong on the wire, for a message: a timeout says how long. */
static const char *wire_error(CURLcode cc, const char *errbuf, double timeout, char *out,
                              size_t size) {
    if (cc == CURLE_OPERATION_TIMEDOUT)
        snprintf(out, size, "timeout: no data for %g s (%s)", timeout, errbuf);
    else
        snprintf(out, size, "%s", *errbuf ? errbuf : curl_easy_strerror(cc));
    return out;
}

static int fail_status(const char *file, const char *url, const response *r, int attempts) {
    const char *what = r->status == 401 || r->status == 403
                           ? "access denied: set HF_TOKEN to a token with access to this repo"
                       : !strcmp(r->error_code, "RepoNotFound") ? "the repository does not exist"
                       : !strcmp(r->error_code, "RevisionNotFound") ? "the revision does not exist"
                       : !strcmp(r->error_code, "EntryNotFound")
                           ? "the file is not in the repository"
                       : r->status >= 300 && r->status < 400
                           ? "a redirect where the file was expected"
                       : retryable(r->status) ? "the server keeps failing: try again later"
                       : "the server refused the request";
    char tries[32] = "";
    if (attempts > 1) snprintf(tries, sizeof tries, " (%d attempts)", attempts);
    tl_fail("hf_download: %s: HTTP %ld%s%s from %.*s%s: %s", file, r->status,
            *r->error_code ? " " : "", r->error_code, SHOWN(url), tries, what);
    return -1;
}

/* ---- what the server says a file is ------------------------------------- */

typedef struct {
    char url[PATH_BYTES];     /* where the bytes are (a CDN for LFS files) */
    long long size;
    char sha256[96];          /* from X-Linked-Etag, for LFS files (checked: 64 hex) */
    char sha1[96];            /* the git blob sha1 ETag, for small files (40 hex) */
} file_meta;

/* HEADs the resolve URL, retrying transient failures. */
static int head(const char *file, const char *url, const char *token, double timeout,
                response *r) {
    char errbuf[CURL_ERROR_SIZE], why[512];
    for (int attempt = 1;; attempt++) {
        CURLcode cc = exchange(url, token, 0, timeout, r, NULL, errbuf);
        if (cc == CURLE_OK && !retryable(r->status)) return 0;
        if (cc != CURLE_OK && !transient(cc))
            return tl_fail_status("hf_download: %s: no valid HTTP answer from %.*s: %s; check "
                                  "that HF_ENDPOINT is a Hub", file, SHOWN(url),
                                  wire_error(cc, errbuf, timeout, why, sizeof why));
        if (attempt == MAX_ATTEMPTS) {
            if (cc == CURLE_OK) return fail_status(file, url, r, attempt);
            return tl_fail_status("hf_download: %s: cannot reach %.*s after %d attempts: %s; "
                                  "check the network and HF_ENDPOINT, then run again", file,
                                  SHOWN(url), attempt,
                                  wire_error(cc, errbuf, timeout, why, sizeof why));
        }
        if (cc != CURLE_OPERATION_TIMEDOUT)  /* a timeout has waited long enough */
            wait_before_retry(attempt, cc == CURLE_OK ? r->retry_after : -1);
    }
}

/* Why a redirect's target must not be followed, or NULL: only http(s),
 * no user name or password, and not cut to fit our buffer. */
static const char *bad_target(const char *url, size_t capacity) {
    size_t host = !strncmp(url, "https://", 8) ? 8 : !strncmp(url, "http://", 7) ? 7 : 0;
    if (!host) return "only http and https are followed";
    if (memchr(url + host, '@', strcspn(url + host, "/?#"))) return "it carries credentials";
    if (strlen(url) >= capacity - 1) return "it is too long";
    return NULL;
}

/* Asks the Hub about a file, following same-host redirects and stopping at
 * the redirect to another host: that one carries the LFS headers. */
static int fetch_meta(const char *file, const char *url, const char *token, double timeout,
                      const char *want_sha256, file_meta *m) {
    char current[PATH_BYTES], origin[2048], next_origin[2048];
    snprintf(current, sizeof current, "%s", url);
    origin_of(url, origin, sizeof origin);
    for (int hops = 0;; hops++) {
        response r;
        if (head(file, current, token, timeout, &r) != 0) return -1;
        if (r.malformed)
            return tl_fail_status("hf_download: %s: the answer from %.*s has a malformed %s, or "
                                  "two that differ: refusing it (the server or a proxy is broken)",
                                  file, SHOWN(current), r.malformed);
        if (*r.commit && !is_hex(r.commit, 40))
            return tl_fail_status("hf_download: %s: %.*s sent X-Repo-Commit '%.60s', not a 40-hex "
                                  "commit: refusing it (check HF_ENDPOINT)", file, SHOWN(current),
                                  r.commit);
        if (r.status >= 300 && r.status < 400) {
            if (!*r.location)
                return tl_fail_status("hf_download: %s: HTTP %ld redirect without a Location from "
                                      "%.*s: the server or a proxy is broken; try again later",
                                      file, r.status, SHOWN(current));
            const char *why = bad_target(r.location, sizeof r.location);
            if (why)
                return tl_fail_status("hf_download: %s: refusing the redirect from %.*s to a %.*s "
                                      "URL: %s (check HF_ENDPOINT)", file, SHOWN(current),
                                      (int)strcspn(r.location, ":/"), r.location, why);
            if (hops == MAX_REDIRECTS)
                return tl_fail_status("hf_download: %s: more than %d redirects from %.*s (a "
                                      "loop?): the server or a proxy is misconfigured", file,
                                      MAX_REDIRECTS, SHOWN(url));
            origin_of(r.location, next_origin, sizeof next_origin);
            if (*r.linked_etag || r.linked_size >= 0 || strcmp(next_origin, origin) != 0) {
                /* an LFS file: the redirect itself describes the content */
                snprintf(m->url, sizeof m->url, "%s", r.location);
                m->size = r.linked_size;
                snprintf(m->sha256, sizeof m->sha256, "%s", r.linked_etag);
                break;
            }
            snprintf(current, sizeof current, "%s", r.location);
            continue;
        }
        if (r.status != 200) return fail_status(file, current, &r, 1);
        snprintf(m->url, sizeof m->url, "%s", current);
        m->size = r.linked_size >= 0 ? r.linked_size : r.content_length;
        if (*r.linked_etag) snprintf(m->sha256, sizeof m->sha256, "%s", r.linked_etag);
        else if (is_hex(r.etag, 64)) snprintf(m->sha256, sizeof m->sha256, "%s", r.etag);
        else if (is_hex(r.etag, 40)) snprintf(m->sha1, sizeof m->sha1, "%s", r.etag);
        break;
    }
    if (*m->sha256 && !is_hex(m->sha256, 64))
        return tl_fail_status("hf_download: %s: the X-Linked-Etag '%.80s' from %.*s is not a "
                              "sha256: refusing it (check HF_ENDPOINT)", file, m->sha256,
                              SHOWN(url));
    if (!*m->sha256 && !*m->sha1 && !want_sha256)
        return tl_fail_status("hf_download: %s: the server sent no sha256 (X-Linked-Etag) or git "
                              "sha1 (ETag) at %.*s, so the bytes cannot be verified: pass the "
                              "expected sha256", file, SHOWN(url));
    if (m->size < 0)
        return tl_fail_status("hf_download: %s: the server did not say the file's size (no "
                              "X-Linked-Size or Content-Length) at %.*s: try again later", file,
                              SHOWN(url));
    return 0;
}

/* ---- hashing ----------------------------------------------------------- */

static void digest_hex(EVP_MD_CTX *ctx, char *out) {
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_DigestFinal_ex(ctx, d, &n);
    for (unsigned i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

/* Starts both hashes; git's blob sha1 covers "blob <size>\0" then the bytes. */
static void hashes_begin(sink *s) {
    char prefix[64];
    int n = snprintf(prefix, sizeof prefix, "blob %lld", s->expected) + 1;
    EVP_DigestInit_ex(s->sha256, EVP_sha256(), NULL);
    EVP_DigestInit_ex(s->sha1, EVP_sha1(), NULL);
    EVP_DigestUpdate(s->sha1, prefix, (size_t)n);
    s->written = 0;
}

/* Feeds the first `len` bytes of an open file to both hashes, then leaves
 * the position at the end (where appends go). */
static int hash_existing(FILE *f, long long len, sink *s) {
    unsigned char buf[1 << 16];
    rewind(f);
    for (long long left = len; left > 0;) {
        size_t want = left < (long long)sizeof buf ? (size_t)left : sizeof buf;
        if (fread(buf, 1, want, f) != want) return -1;
        EVP_DigestUpdate(s->sha256, buf, want);
        EVP_DigestUpdate(s->sha1, buf, want);
        left -= (long long)want;
    }
    s->written = len;
    return fseek(f, 0, SEEK_END);
}

/* Empties the .part file and the hashes: the download starts over. */
static int restart_part(sink *s) {
    if (fflush(s->file) != 0 || ftruncate(fileno(s->file), 0) != 0) return -1;
    hashes_begin(s);
    s->resumed = false;
    return 0;
}

/* Verifies a finished file: size, then every hash we were given. */
static int verify(const char *file, const file_meta *m, const char *want_sha256, sink *s) {
    char sha256[65], sha1[41];
    digest_hex(s->sha256, sha256);
    digest_hex(s->sha1, sha1);
    if (s->written != m->size)
        return tl_fail_status("hf_download: %s: got %lld bytes from %.*s, which announced %lld",
                              file, s->written, SHOWN(m->url), m->size);
    if (*m->sha256 && strcmp(sha256, m->sha256) != 0)
        return tl_fail_status("hf_download: %s: sha256 mismatch: expected %s (X-Linked-Etag), "
                              "found %s in the bytes from %.*s; they were deleted: the server or "
                              "a proxy is corrupting the file (try again later, or another "
                              "endpoint)", file, m->sha256, sha256, SHOWN(m->url));
    if (want_sha256 && strcmp(sha256, want_sha256) != 0)
        return tl_fail_status("hf_download: %s: sha256 mismatch: expected %s (given by the "
                              "caller), found %s in the bytes from %.*s; they were deleted: check "
                              "the expected hash", file, want_sha256, sha256, SHOWN(m->url));
    if (*m->sha1 && strcmp(sha1, m->sha1) != 0)
        return tl_fail_status("hf_download: %s: git blob sha1 mismatch: expected %s (ETag), found "
                              "%s in the bytes from %.*s; they were deleted: the server or a "
                              "proxy is corrupting the file", file, m->sha1, sha1, SHOWN(m->url));
    return 0;
}

/* ---- the cache's folders: no symbolic link below its root -------------- */

/* The cache root may itself be (or lie below) a symbolic link: the user
 * chose it. Below it, every folder is opened with O_NOFOLLOW, one name at a
 * time from the root's descriptor, so that no link planted in the cache can
 * carry a write elsewhere; files are then opened, renamed and checked
 * relative to their folder's descriptor. */

/* Opens folder rel (a '/'-separated path) below the folder `at` (whose path
 * for messages is shown), creating what is missing when create. Returns a
 * descriptor; -1 with an error; -2 when a folder is missing and !create.
 * *shown_out (PATH_BYTES) receives the full path. */
static int open_folders(int at, const char *shown, const char *rel, bool create,
                        const char *what, char *shown_out) {
    int fd = dup(at);
    size_t used = (size_t)snprintf(shown_out, PATH_BYTES, "%s", shown);
    if (fd < 0) return tl_fail_status("hf_download: %s: cannot open %s: %s", what, shown,
                               strerror(errno));
    for (const char *name = rel; *name;) {
        size_t len = strcspn(name, "/");
        char part[MAX_SEGMENT + 1];
        if (len == 0 || len > MAX_SEGMENT || used + len + 2 > PATH_BYTES) {
            close(fd);
            return tl_fail_status("hf_download: %s: the path %.200s/%.*s cannot be a folder of "
                                  "the cache (empty or too long)", what, shown_out, (int)len, name);
        }
        memcpy(part, name, len);
        part[len] = 0;
        used += (size_t)snprintf(shown_out + used, PATH_BYTES - used, "/%s", part);
        int next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && errno == ENOENT && create) {
            if (mkdirat(fd, part, 0755) != 0 && errno != EEXIST) {
                int e = errno;
                close(fd);
                return tl_fail_status("hf_download: %s: cannot create the folder %s: %s; check "
                                      "the permissions of the cache folder", what, shown_out,
                                      strerror(e));
            }
            next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        int e = errno;
        struct stat st;
        bool link = next < 0 && fstatat(fd, part, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    S_ISLNK(st.st_mode);
        close(fd);
        if (next < 0 && link)
            return tl_fail_status("hf_download: %s: %s is a symbolic link: refusing to write "
                                  "through it (it could lead out of the cache); delete it and run "
                                  "again", what, shown_out);
        if (next < 0 && e == ENOENT) return -2;
        if (next < 0 && (e == ENOTDIR || e == EEXIST))
            return tl_fail_status("hf_download: %s: %s is not a folder: move it away, or use "
                                  "another cache folder", what, shown_out);
        if (next < 0)
            return tl_fail_status("hf_download: %s: cannot open the folder %s: %s", what,
                                  shown_out, strerror(e));
        fd = next;
        name += len;
        while (*name == '/') name++;
    }
    return fd;
}

/* What the final name holds: -1 nothing, 0 a regular file, 1 a symbolic
 * link (replaced, never followed), 2 a folder or anything else. */
static int final_kind(int dir, const char *base) {
    struct stat st;
    if (fstatat(dir, base, &st, AT_SYMLINK_NOFOLLOW) != 0) return -1;
    return S_ISREG(st.st_mode) ? 0 : S_ISLNK(st.st_mode) ? 1 : 2;
}

/* True when base (in folder dir) is a regular file, not a link, with the
 * server's size and hashes. */
static bool already_verified(const char *file, int dir, const char *base, const file_meta *m,
                             const char *want_sha256, sink *s) {
    int fd = openat(dir, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0) return false;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != m->size) {
        close(fd);
        return false;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return false;
    }
    s->expected = m->size;
    hashes_begin(s);
    bool ok = hash_existing(f, m->size, s) == 0 && verify(file, m, want_sha256, s) == 0;
    fclose(f);
    tl_clear_error();          /* a stale file is not an error: it is replaced */
    return ok;
}

/* ---- the transfer -------------------------------------------------------- */

/* Switches to whole-file downloads for the rest of this call: the .part is
 * emptied and no more Range is sent, because this server's ranges cannot be
 * used (or the bytes kept on disk were not the file's). Done once at most:
 * callers check s->whole_only first. 0, or -1 when the .part cannot be
 * emptied. */
static int fetch_whole_instead(sink *s, const char *why) {
    s->whole_only = true;
    snprintf(s->why_whole, sizeof s->why_whole, "%.500s", why);
    return restart_part(s);
}

/* The refusal once the whole-file fallback failed too: the first reason,
 * then the second. */
static int fail_after_fallback(const char *file, const file_meta *m, const char *second,
                               const sink *s) {
    return tl_fail_status("hf_download: %s: %s, so the whole file was asked for instead (no "
                          "Range), and that failed too: %s (%lld of %lld bytes kept; %.*s does "
                          "not serve this file reliably: try again later, or another endpoint)",
                          file, s->why_whole, second, s->written, m->size, SHOWN(m->url));
}

/* Fills s->file (part, opened for appending) until it holds m->size bytes,
 * resuming from what is there. 0, or -1 with an error. */
static int fill_part(const char *file, const char *part, const file_meta *m, const char *token,
                     double timeout, sink *s) {
    char errbuf[CURL_ERROR_SIZE], why[512];
    for (int attempt = 1; s->written < m->size; attempt++) {
        response r;
        long long from = s->written;
        CURLcode cc = exchange(m->url, token, from, timeout, &r, s, errbuf);
        if (!r.malformed && r.status == 206 && r.range_start < 0)
            r.malformed = "Content-Range (a 206 needs one naming its bytes)";
        if (r.malformed)
            return tl_fail_status("hf_download: %s: the answer from %.*s has a malformed %s, or "
                                  "two that differ: refusing it (the server or a proxy is broken; "
                                  "the %lld bytes in %s are kept)", file, SHOWN(m->url),
                                  r.malformed, from, part);
        if (s->bad_range) {
            if (from == 0)
                snprintf(why, sizeof why, "asked %.*s for the whole file (no Range), it answered "
                         "a 206 starting at byte %lld", SHOWN(m->url), r.range_start);
            else
                snprintf(why, sizeof why, "asked %.*s for bytes from %lld, its 206 has a "
                         "Content-Range starting at %lld", SHOWN(m->url), from, r.range_start);
            if (s->whole_only) return fail_after_fallback(file, m, why, s);
            if (from == 0)
                return tl_fail_status("hf_download: %s: %s: refusing it (the server or a proxy is "
                                      "broken)", file, why);
            if (fetch_whole_instead(s, why) != 0) break;
            continue;                                 /* at once: nothing to wait for */
        }
        if (s->bad_size)
            return tl_fail_status("hf_download: %s: the server announced %lld bytes "
                                  "(X-Linked-Size or Content-Length) but %.*s sends a file of "
                                  "%lld: refusing it (the Hub and its CDN disagree; try again "
                                  "later)", file, m->size, SHOWN(m->url),
                                  r.status == 206 ? r.range_total : r.content_length);
        if (s->too_long)
            return tl_fail_status("hf_download: %s: %.*s sent more than the %lld bytes announced: "
                                  "refusing it (try again later)", file, SHOWN(m->url), m->size);
        if (s->write_errno)
            return tl_fail_status("hf_download: %s: cannot write %s: %s; free some space or "
                                  "choose another cache folder", file, part,
                                  strerror(s->write_errno));
        if (cc != CURLE_OK && !transient(cc))
            return tl_fail_status("hf_download: %s: no valid HTTP answer from %.*s: %s (%lld of "
                                  "%lld bytes kept in %s)", file, SHOWN(m->url),
                                  wire_error(cc, errbuf, timeout, why, sizeof why), s->written,
                                  m->size, part);
        if (cc == CURLE_OK && r.status == 416) {
            /* A range below the size cannot be past the end: the server is wrong. */
            if (r.range_total >= 0 && r.range_total != m->size)
                return tl_fail_status("hf_download: %s: the server announced %lld bytes but %.*s "
                                      "says the file has %lld (416): refusing it (the Hub and its "
                                      "CDN disagree; try again later)", file, m->size,
                                      SHOWN(m->url), r.range_total);
            if (from == 0)
                snprintf(why, sizeof why, "%.*s answered 416 (Range Not Satisfiable) to a request "
                         "without Range", SHOWN(m->url));
            else
                snprintf(why, sizeof why, "%.*s answered 416 (Range Not Satisfiable) to bytes "
                         "from %lld of %lld", SHOWN(m->url), from, m->size);
            if (s->whole_only) return fail_after_fallback(file, m, why, s);
            if (from == 0)
                return tl_fail_status("hf_download: %s: %s: refusing it (the server or a proxy is "
                                      "broken)", file, why);
            if (fetch_whole_instead(s, why) != 0) break;
            continue;
        }
        if (cc == CURLE_OK && (r.status == 200 || r.status == 206)) {
            if (s->written == m->size) break;
            cc = CURLE_PARTIAL_FILE;                  /* a clean close before the end */
        } else if (cc == CURLE_OK && !retryable(r.status)) {
            return fail_status(file, m->url, &r, attempt);
        }
        if (s->whole_only && s->written > 0)          /* cut short: a range would not help */
            return fail_after_fallback(file, m, wire_error(cc, errbuf, timeout, why,
                                                           sizeof why), s);
        if (attempt == MAX_ATTEMPTS) {
            if (cc == CURLE_OK) return fail_status(file, m->url, &r, attempt);
            return tl_fail_status("hf_download: %s: transfer from %.*s failed %d times: %s (%lld "
                                  "of %lld bytes kept in %s; run again to resume)", file,
                                  SHOWN(m->url), attempt,
                                  wire_error(cc, errbuf, timeout, why, sizeof why), s->written,
                                  m->size, part);
        }
        bool progressed = s->written > from;
        if (!progressed && cc != CURLE_OPERATION_TIMEDOUT)
            wait_before_retry(attempt, cc == CURLE_OK ? r.retry_after : -1);
    }
    if (s->written < m->size)                         /* left the loop: cannot empty the .part */
        return tl_fail_status("hf_download: %s: cannot empty %s: %s", file, part, strerror(errno));
    return 0;
}

/* A short pause while another download holds a lock. */
static void pause_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Opens part (in folder dir) for reading and appending, locked with flock
 * so that a second download of the same file (a thread or a process) never
 * mixes its bytes in; a symbolic link is refused. When another download
 * holds the lock, waits for it, saying so on stderr, for as long as it keeps
 * writing: it gives up after `timeout` seconds in which the .part did not
 * grow. Returns the stream; NULL with an error; or NULL without an error
 * (*gone set) when the .part was renamed away meanwhile: the other download
 * finished, and the caller looks at the final file. */
static FILE *lock_part(const char *file, int dir, const char *base_part, const char *part,
                       double timeout, bool *gone, bool *waited) {
    *gone = *waited = false;
    int fd = openat(dir, base_part, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno == ELOOP)
        return tl_fail("hf_download: %s: %s is a symbolic link: refusing to write through it; "
                       "delete it and run again", file, part);
    if (fd < 0)
        return tl_fail("hf_download: %s: cannot write %s: %s; check that the cache folder is "
                       "writable", file, part, strerror(errno));
    struct stat st;
    long long last_size = -1;
    double quiet = 0;                                 /* seconds without growth */
    bool told = false;
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            int e = errno;
            close(fd);
            return tl_fail("hf_download: %s: cannot lock %s: %s", file, part, strerror(e));
        }
        if (fstat(fd, &st) == 0 && (long long)st.st_size != last_size) {
            last_size = (long long)st.st_size;
            quiet = 0;
        }
        *waited = true;
        if (!told) {
            fprintf(stderr, "hf_download: %s: waiting for another download of this file "
                            "(it holds the lock on %s)\n", file, part);
            told = true;
        }
        if (quiet >= timeout) {
            close(fd);
            return tl_fail("hf_download: %s: another download of this file holds %s and has not "
                           "written to it for %g s: let it finish or stop it, then run again",
                           file, part, timeout);
        }
        pause_ms(100);
        quiet += 0.1;
    }
    /* Locked, and still the file named part: not one that the other
     * download finished and renamed into place. */
    struct stat named;
    if (fstat(fd, &st) != 0 || fstatat(dir, base_part, &named, AT_SYMLINK_NOFOLLOW) != 0 ||
        st.st_ino != named.st_ino || st.st_dev != named.st_dev) {
        close(fd);
        *gone = true;
        return NULL;
    }
    FILE *f = fdopen(fd, "a+");
    if (!f) close(fd);
    return f ? f : tl_fail("hf_download: out of memory");
}

/* Downloads m->url into part, resuming what is there, verifies it and
 * renames it to base, all under part's lock (or finds that a concurrent
 * download placed the file meanwhile). 0, or -1 with an error. */
static int transfer(const char *file, int dir, const char *base, const char *shown_dir,
                    const file_meta *m, const char *token, const char *want_sha256,
                    double timeout, sink *s) {
    char base_part[MAX_SEGMENT + 8], part[PATH_BYTES + MAX_SEGMENT + 8];
    snprintf(base_part, sizeof base_part, "%s.part", base);
    snprintf(part, sizeof part, "%s/%s", shown_dir, base_part);
    for (;;) {
        bool gone, waited;
        s->file = lock_part(file, dir, base_part, part, timeout, &gone, &waited);
        /* After a wait, the other download's file, if it verifies, is ours
         * too: nothing to download. */
        if (waited && already_verified(file, dir, base, m, want_sha256, s)) {
            if (s->file) {
                struct stat st;
                if (fstat(fileno(s->file), &st) == 0 && st.st_size == 0)
                    unlinkat(dir, base_part, 0);      /* the empty one we made */
                fclose(s->file);
                s->file = NULL;
            }
            return 0;
        }
        if (s->file) break;
        if (!gone) return -1;
    }
    struct stat st;
    long long have = fstat(fileno(s->file), &st) == 0 ? (long long)st.st_size : 0;
    s->expected = m->size;
    s->shown_percent = -1;
    s->whole_only = false;
    hashes_begin(s);
    s->resumed = have > 0 && have <= m->size;
    int filled = 0;
    if (have > m->size) {                             /* longer than the file: useless */
        filled = restart_part(s);
        if (filled != 0) tl_fail("hf_download: %s: cannot empty %s: %s", file, part,
                                 strerror(errno));
    } else if (have > 0) {                            /* resume: hash the bytes on disk first */
        filled = hash_existing(s->file, have, s);
        if (filled != 0) tl_fail("hf_download: %s: cannot read %s: %s", file, part,
                                 strerror(errno));
    }
    if (filled == 0) filled = fill_part(file, part, m, token, timeout, s);
    int checked = filled == 0 ? verify(file, m, want_sha256, s) : -1;
    if (filled == 0 && checked != 0 && s->resumed) {
        /* Bytes kept from before, or appended to a range, were not the
         * file's: it can still be had whole, once. */
        char why[512];
        snprintf(why, sizeof why, "the resumed %.300s did not verify (%.150s)", base_part,
                 strstr(tl_error(), "mismatch") ? "hash mismatch" : "wrong size");
        tl_clear_error();
        filled = fetch_whole_instead(s, why) == 0 ? fill_part(file, part, m, token, timeout, s)
                                                  : -1;
        checked = filled == 0 ? verify(file, m, want_sha256, s) : -1;
    }
    int rc = filled == 0 ? checked : -1;
    if (s->progress) fputc('\n', stderr);
    if ((fflush(s->file) != 0 || fsync(fileno(s->file)) != 0) && rc == 0) {
        tl_fail("hf_download: %s: cannot write %s: %s; free some space or use another cache "
                "folder", file, part, strerror(errno));
        rc = -1;
    }
    if (s->too_long || (filled == 0 && checked != 0)) {
        unlinkat(dir, base_part, 0);                  /* its bytes are not the file's */
    } else if (rc == 0 && renameat(dir, base_part, dir, base) != 0) {
        rc = -1;                                      /* (a link at base is replaced, unread) */
        tl_fail("hf_download: %s: cannot rename %s to %s/%s: %s; check the folder's permissions",
                file, part, shown_dir, base, strerror(errno));
    }
    fclose(s->file);                                  /* unlocks, once part is gone */
    s->file = NULL;
    return rc;
}

/* ---- one file, then all of them -------------------------------------------- */

/* Creates the cache root and the folders above it (links there are the
 * user's choice, and are followed), and opens it. */
static int open_root(const char *cache_dir, bool create) {
    char buf[PATH_BYTES];
    size_t len = strlen(cache_dir);
    if (len >= sizeof buf)
        return tl_fail_status("hf_download: the cache folder %.100s... is longer than %d bytes",
                              cache_dir, PATH_BYTES - 1);
    memcpy(buf, cache_dir, len + 1);
    for (size_t i = 1; create && i <= len; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        buf[i] = 0;
        struct stat st;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return tl_fail_status("hf_download: the cache: cannot create the folder %s: %s; check "
                                  "the permissions of the cache folder", buf, strerror(errno));
        if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
            return tl_fail_status("hf_download: the cache: %s is not a folder: move it away, or "
                                  "use another cache folder", buf);
        buf[i] = i < len ? '/' : 0;
    }
    int fd = open(cache_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && !create) return -2;
    if (fd < 0)
        return tl_fail_status("hf_download: the cache: cannot open the folder %s: %s", cache_dir,
                              errno == ENOTDIR ? "not a folder" : strerror(errno));
    return fd;
}

/* Refuses a file the disk cannot hold: a wrong or hostile size (10^18
 * bytes) fails here, before a byte is asked for. */
static int check_space(const char *file, int dir, const char *shown_dir, const char *base,
                       long long size) {
    struct statvfs fs;
    char base_part[MAX_SEGMENT + 8];
    struct stat st;
    snprintf(base_part, sizeof base_part, "%s.part", base);
    long long have = fstatat(dir, base_part, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)
                         ? (long long)st.st_size : 0;
    unsigned long long need = (unsigned long long)(size - (have <= size ? have : 0));
    if (fstatvfs(dir, &fs) != 0 || need <= (unsigned long long)fs.f_bavail * fs.f_frsize)
        return 0;
    return tl_fail_status("hf_download: %s: the server announces %lld bytes, more than the %llu "
                          "bytes free in %s: free some space or use another cache folder", file,
                          size, (unsigned long long)fs.f_bavail * fs.f_frsize, shown_dir);
}

/* One file: rev is the revision's folder (shown_rev its path). */
static int download_one(int rev, const char *shown_rev, const char *endpoint,
                        const char *repo_id, const char *revision, const char *file,
                        const char *want_sha256, const char *token, double timeout,
                        bool offline, sink *s) {
    char sub[PATH_BYTES], shown_dir[PATH_BYTES], path[PATH_BYTES];
    const char *slash = strrchr(file, '/'), *base = slash ? slash + 1 : file;
    snprintf(sub, sizeof sub, "%.*s", slash ? (int)(slash - file) : 0, file);
    if (snprintf(path, sizeof path, "%s/%s.part", shown_rev, file) >= (int)sizeof path)
        return tl_fail_status("hf_download: %s: its path in %s would be longer than %d bytes: use "
                              "a shorter cache folder", file, shown_rev, PATH_BYTES - 1);
    snprintf(path, sizeof path, "%s/%s", shown_rev, file);
    /* First without creating anything: a link, a file in the way, or a
     * folder under the final name is refused before any request. */
    int dir = open_folders(rev, shown_rev, sub, false, file, shown_dir);
    if (dir == -1) return -1;
    int kind = dir >= 0 ? final_kind(dir, base) : -1;
    if (offline) {
        if (dir >= 0) close(dir);
        if (kind == 0) return 0;
        if (kind == 1)
            return tl_fail_status("hf_download: %s: %s is a symbolic link, not a file of the "
                                  "cache: delete it and download the file again (unset "
                                  "HF_HUB_OFFLINE)", file, path);
        return tl_fail_status("hf_download: %s: HF_HUB_OFFLINE=1 and the file is not in the cache "
                              "at %s: unset HF_HUB_OFFLINE to download it", file, path);
    }
    if (kind == 2) {
        close(dir);
        return tl_fail_status("hf_download: %s: %s is a folder, so the file cannot be put there: "
                              "move the folder away and run again", file, path);
    }
    char *url = resolve_url(endpoint, repo_id, revision, file);
    file_meta m = {.size = -1};
    int rc = url ? fetch_meta(file, url, token, timeout, want_sha256, &m)
                 : tl_fail_status("hf_download: out of memory");
    free(url);
    if (rc == 0 && dir >= 0 && kind == 0 && already_verified(file, dir, base, &m, want_sha256, s)) {
        close(dir);
        return 0;
    }
    if (rc == 0 && dir < 0) dir = open_folders(rev, shown_rev, sub, true, file, shown_dir);
    if (rc != 0 || dir < 0) {
        if (dir >= 0) close(dir);
        return -1;
    }
    rc = check_space(file, dir, shown_dir, base, m.size);
    char endpoint_origin[2048], bytes_origin[2048];
    origin_of(endpoint, endpoint_origin, sizeof endpoint_origin);
    origin_of(m.url, bytes_origin, sizeof bytes_origin);
    /* the token never goes to another host */
    const char *auth = strcmp(bytes_origin, endpoint_origin) == 0 ? token : NULL;
    s->progress = isatty(STDERR_FILENO) && m.size >= PROGRESS_MIN_BYTES;
    if (rc == 0) rc = transfer(file, dir, base, shown_dir, &m, auth, want_sha256, timeout, s);
    close(dir);
    return rc;
}

char *hf_download(const char *repo_id, const char *const *filenames, int n,
                  const char *cache_dir, const char *revision, const char *endpoint,
                  const char *const *sha256, double timeout) {
    tl_clear_error();          /* a new call: its error, if any, is the one to report */
    if (!revision) revision = "main";
    if (!endpoint || !*endpoint) endpoint = getenv("HF_ENDPOINT");
    if (!endpoint || !*endpoint) endpoint = DEFAULT_ENDPOINT;
    if (!(timeout > 0)) timeout = 60.0;               /* also NaN */
    if (timeout > 86400) timeout = 86400;
    if (!cache_dir || !*cache_dir) return tl_fail("hf_download: no cache folder given");
    if (n < 0 || (n > 0 && !filenames))
        return tl_fail("hf_download: %d filenames: expected n >= 0 and the list", n);
    if (hf_validate_repo_id(repo_id) || hf_validate_revision(revision)) return NULL;
    for (int i = 0; i < n; i++) {
        if (hf_validate_filename(filenames[i])) return NULL;
        if (sha256 && sha256[i] && !is_hex(sha256[i], 64))
            return tl_fail("hf_download: the sha256 given for %s is '%.80s', not 64 lowercase "
                           "hex digits", filenames[i], sha256[i]);
    }
    char base[2048];
    size_t elen = strlen(endpoint);
    while (elen > 0 && endpoint[elen - 1] == '/') elen--;   /* "https://hub/" works too */
    bool http = !strncmp(endpoint, "http://", 7) || !strncmp(endpoint, "https://", 8);
    if (!http || elen >= sizeof base)
        return tl_fail("hf_download: endpoint '%.100s' is not an http(s) URL of at most %zu "
                       "bytes (check HF_ENDPOINT)", endpoint, sizeof base - 1);
    snprintf(base, sizeof base, "%.*s", (int)elen, endpoint);

    /* cache_dir/<org>--<name>/<revision>, the revision's folder */
    char *rel = NULL, shown[PATH_BYTES];
    const char *slash = strchr(repo_id, '/');
    if (asprintf(&rel, "%.*s%s%s/%s", slash ? (int)(slash - repo_id) : 0, repo_id,
                 slash ? "--" : "", slash ? slash + 1 : repo_id, revision) < 0)
        return tl_fail("hf_download: out of memory");
    const char *off = getenv("HF_HUB_OFFLINE");   /* true as huggingface_hub reads it */
    bool offline = off && (!strcmp(off, "1") || !strcasecmp(off, "true") ||
                           !strcasecmp(off, "yes") || !strcasecmp(off, "on"));
    const char *token = getenv("HF_TOKEN");
    if (token && !*token) token = NULL;

    int root = open_root(cache_dir, !offline);
    int rev = root >= 0 ? open_folders(root, cache_dir, rel, !offline, "the cache", shown) : root;
    if (root >= 0) close(root);
    if (rev == -2 && n == 0) rev = -3;                /* offline, nothing asked: fine */
    if (rev == -2)
        tl_fail("hf_download: %s: HF_HUB_OFFLINE=1 and %s/%s is not in the cache: unset "
                "HF_HUB_OFFLINE to download it", filenames[0], cache_dir, rel);
    char *dir = NULL;
    if (rev >= 0 || rev == -3) {
        if (asprintf(&dir, "%s/%s", cache_dir, rel) < 0) dir = NULL;
        if (!dir) tl_fail("hf_download: out of memory");
    }
    free(rel);
    if (!dir) {
        if (rev >= 0) close(rev);
        return NULL;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    sink s = {.sha256 = EVP_MD_CTX_new(), .sha1 = EVP_MD_CTX_new()};
    int rc = 0;
    if (!s.sha256 || !s.sha1) {
        tl_fail("hf_download: out of memory");
        rc = -1;
    }
    for (int i = 0; i < n && rc == 0; i++)
        rc = download_one(rev, dir, base, repo_id, revision, filenames[i],
                          sha256 ? sha256[i] : NULL, token, timeout, offline, &s);
    EVP_MD_CTX_free(s.sha256);
    EVP_MD_CTX_free(s.sha1);
    if (rev >= 0) close(rev);
    if (rc != 0) {
        free(dir);
        return NULL;
    }
    return dir;
}

/* ---- what the server sends, checked as hf_download checks it ---------- */

int hf_validate_commit(const char *commit) {
    if (!commit || !is_hex(commit, 40))
        return tl_fail_status("hf_validate_commit: invalid commit '%.80s': a commit is 40 "
                              "lowercase hex digits", commit ? commit : "(null)");
    return 0;
}

int hf_validate_etag(const char *etag) {
    if (!etag || !(is_hex(etag, 40) || is_hex(etag, 64)))
        return tl_fail_status("hf_validate_etag: invalid etag '%.80s': a file's etag is its git "
                              "blob sha1 (40 lowercase hex digits) or, for an LFS file, its "
                              "sha256 (64)", etag ? etag : "(null)");
    return 0;
}
