/* repo_listing.c: a repo's files through the Hub's API (see repo_listing.h). */
#include "repo_listing.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "tinyllm/io/hf.h"
#include "tinyllm/json_keys.h"
#include "tinyllm/tensor.h"

#define MAX_PAGES 10000
#define MAX_FILES 1000000
#define MAX_NAME_BYTES (256u * 1024 * 1024)   /* the names kept: 1M names of 256 bytes */
#define MAX_PATH_BYTES 4096                    /* PATH_MAX: hf_download refuses longer paths */
#define MAX_PAGE_BYTES (32u * 1024 * 1024)     /* a page of 1,000 entries is ~0.3 MB */
#define ATTEMPTS 3
#define MAX_WAIT 30           /* seconds: cap on a wait the server asks for, as hf_download's */

typedef struct {
    char *body;
    size_t len;
    char next[4096];        /* Link rel="next", or "" */
    char location[4096];    /* a redirect's target, absolute, or "" */
    char error_code[64];    /* X-Error-Code */
    int too_big;            /* the body passed MAX_PAGE_BYTES */
    long retry_after;       /* seconds, from Retry-After or RateLimit's t=; -1 when absent */
    int next_too_long;      /* a rel="next" URL that `next` cannot hold */
} answer;

static size_t on_body(char *data, size_t one, size_t n, void *arg) {
    answer *a = arg;
    (void)one;
    if (a->len + n > MAX_PAGE_BYTES) return a->too_big = 1, 0;
    char *grown = realloc(a->body, a->len + n + 1);
    if (!grown) return 0;
    memcpy(grown + a->len, data, n);
    a->body = grown;
    a->len += n;
    a->body[a->len] = 0;
    return n;
}

/* What a server sent, made fit to show in a message: no terminal escapes. */
static void printable(char *s) {
    for (char *c = s; *c; c++)
        if (*c < 0x20 || *c > 0x7e) *c = '?';
}

/* Keeps X-Error-Code, the rel="next" URL of a Link header, and when to
 * retry (Retry-After in seconds, or the Hub's RateLimit: "api";r=0;t=N). */
static size_t on_header(char *data, size_t one, size_t n, void *arg) {
    answer *a = arg;
    char line[8192];   /* curl's header line is not NUL-terminated */
    (void)one;
    if (n >= sizeof line) {
        a->next_too_long |= !strncasecmp(data, "link:", 5);
        return n;
    }
    memcpy(line, data, n);
    line[n] = 0;
    const char *t = n > 10 && !strncasecmp(line, "ratelimit:", 10) ? strstr(line, ";t=") : NULL;
    if (n > 12 && !strncasecmp(line, "retry-after:", 12))
        sscanf(line + 12, " %ld", &a->retry_after);   /* a date: not a number, ignored */
    if (t) sscanf(t + 3, "%ld", &a->retry_after);
    if (n > 13 && !strncasecmp(line, "x-error-code:", 13)) {
        sscanf(line + 13, " %63[^\r\n]", a->error_code);
        printable(a->error_code);
    }
    if (n > 5 && !strncasecmp(line, "link:", 5)) {
        char *rel = strstr(line, "rel=\"next\"");
        char *open = rel ? memrchr(line, '<', (size_t)(rel - line)) : NULL;
        char *close = open ? strchr(open, '>') : NULL;
        if (close && close < rel && (size_t)(close - open - 1) >= sizeof a->next)
            a->next_too_long = 1;   /* ignored, the listing would stop there, silently */
        else if (close && close < rel)
            snprintf(a->next, sizeof a->next, "%.*s", (int)(close - open - 1), open + 1);
    }
    return n;
}

/* "http://host:port" of url, to keep the token on the endpoint's origin. */
static void origin_of(const char *url, char *out, size_t size) {
    const char *host = strstr(url, "://");
    host = host ? host + 3 : url;
    snprintf(out, size, "%.*s", (int)(host - url + (long)strcspn(host, "/?#")), url);
}

/* One GET, retried on 429, 5xx and transport errors. The status, or -1
 * with err set. */
static long get(const char *url, const char *token, double timeout, answer *a, char *err,
                size_t errsize) {
    char auth[4200], ebuf[CURL_ERROR_SIZE];
    long status = -1;
    for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
        free(a->body);
        *a = (answer){.retry_after = -1};
        CURL *c = curl_easy_init();
        if (!c) return snprintf(err, errsize, "out of memory"), -1;
        struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json");
        if (token) {
            snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
            h = curl_slist_append(h, auth);
        }
        ebuf[0] = 0;
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, a);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
        curl_easy_setopt(c, CURLOPT_USERAGENT, "tinyllm-hf/1.0");
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout * 1000));
        /* silence: under one byte a second for `timeout` seconds; a page
         * trickled byte by byte is cut at six times that, a minute at least */
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)(timeout < 1 ? 1 : timeout));
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)((timeout < 10 ? 10 : timeout) * 6000));
        CURLcode cc = curl_easy_perform(c);
        status = -1;
        char *location = NULL;
        if (cc == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        if (cc == CURLE_OK && curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &location) == CURLE_OK &&
            location && strlen(location) < sizeof a->location)
            snprintf(a->location, sizeof a->location, "%s", location);
        curl_slist_free_all(h);
        curl_easy_cleanup(c);
        if (a->too_big)   /* not a transport error: asking again gets the same */
            return snprintf(err, errsize, "%.*s sent more than %u MB: no listing page is that "
                            "large: is it a Hub?", (int)strcspn(url, "?"), url,
                            MAX_PAGE_BYTES >> 20), -1;
        if (cc == CURLE_OPERATION_TIMEDOUT)
            snprintf(err, errsize, "no answer from %.*s in time (%d attempts; the last: %s): "
                     "is the Hub up? HF_HUB_ETAG_TIMEOUT is the seconds of silence allowed "
                     "(now %g)", (int)strcspn(url, "?"), url, ATTEMPTS,
                     *ebuf ? ebuf : curl_easy_strerror(cc), timeout);
        else if (cc != CURLE_OK)
            snprintf(err, errsize, "no answer from %.*s: %s", (int)strcspn(url, "?"), url,
                     *ebuf ? ebuf : curl_easy_strerror(cc));
        if (cc == CURLE_OK && status != 429 && status < 500) return status;
        if (attempt < ATTEMPTS) {   /* a rate limit says how long: sooner fails again */
            long wait = a->retry_after < 0 ? 0 : a->retry_after < MAX_WAIT ? a->retry_after
                                                                               : MAX_WAIT;
            struct timespec ts = {wait, wait ? 0 : 250000000L * attempt};
            nanosleep(&ts, NULL);
        }
    }
    if (status > 0)
        snprintf(err, errsize, "HTTP %ld from %.*s (%d attempts): the Hub keeps failing: try "
                 "again later", status, (int)strcspn(url, "?"), url, ATTEMPTS);
    return -1;
}

/* get(), following redirects on the endpoint's origin (a renamed repo
 * answers a relative 307 to its new name), at most five; url becomes the
 * last one asked. Another origin is refused: the token stays on the Hub. */
static long get_on_origin(char *url, size_t urlsize, const char *origin, const char *token,
                          double timeout, answer *a, char *err, size_t errsize) {
    char target_origin[2048];
    for (int hops = 0;; hops++) {
        long status = get(url, token, timeout, a, err, errsize);
        if (status < 300 || status >= 400 || status == 304) return status;
        if (!*a->location) {
            snprintf(err, errsize, "HTTP %ld from %.*s: a redirect without a usable Location: "
                     "the server or a proxy is broken", status, (int)strcspn(url, "?"), url);
            return -1;
        }
        printable(a->location);
        origin_of(a->location, target_origin, sizeof target_origin);
        if (strcmp(origin, target_origin) != 0) {
            snprintf(err, errsize, "%.*s redirects to %.200s, not on %s: refusing to follow "
                     "it (check HF_ENDPOINT)", (int)strcspn(url, "?"), url, a->location, origin);
            return -1;
        }
        if (hops == 5) {
            snprintf(err, errsize, "more than 5 redirects from %.*s (a loop?): the server or a "
                     "proxy is misconfigured", (int)strcspn(url, "?"), url);
            return -1;
        }
        if (strlen(a->location) >= urlsize) {
            snprintf(err, errsize, "%.*s redirects to too long a URL", (int)strcspn(url, "?"),
                     url);
            return -1;
        }
        snprintf(url, urlsize, "%s", a->location);
    }
}

/* A failed status as a message a user can act on; what to do depends on
 * whether a token was sent. */
static void explain(long status, const answer *a, const char *url, const char *token, char *err,
                    size_t errsize) {
    bool gated = !strcmp(a->error_code, "GatedRepo");
    const char *what = !strcmp(a->error_code, "RepoNotFound")
                           ? token ? "the repository does not exist, or HF_TOKEN cannot see it"
                                   : "the repository does not exist, or is private (set HF_TOKEN)"
                       : !strcmp(a->error_code, "RevisionNotFound") ? "the revision does not exist"
                       : gated && token ? "the repository is gated: accept its conditions on its "
                                          "page on the Hub, as the account HF_TOKEN belongs to"
                       : gated ? "the repository is gated: set HF_TOKEN to a token of an account "
                                 "that accepted its conditions on the Hub"
                       : (status == 401 || status == 403) && token
                           ? "access denied: HF_TOKEN has no access to this repository"
                       : status == 401 || status == 403 ? "access denied: set HF_TOKEN"
                       : "the Hub refused the request";
    snprintf(err, errsize, "HTTP %ld%s%s from %.*s: %s", status, *a->error_code ? " " : "",
             a->error_code, (int)strcspn(url, "?"), url, what);
}

static int add_path(repo_listing *l, const char *path, char *err, size_t errsize) {
    if (hf_validate_filename(path) != 0) {
        snprintf(err, errsize, "the listing names '%.200s': %s", path, tl_error());
        tl_clear_error();
        return -1;
    }
    size_t len = strlen(path);
    if (len >= MAX_PATH_BYTES)   /* and kept, such names would take memory without bound */
        return snprintf(err, errsize, "the listing names a path of %zu bytes ('%.60s...'), "
                        "longer than any the cache can hold (%d): is it a Hub?", len, path,
                        MAX_PATH_BYTES - 1), -1;
    if (l->n == MAX_FILES || l->bytes + len > MAX_NAME_BYTES)
        return snprintf(err, errsize, "more than %d files, or %u MB of names: giving up",
                        MAX_FILES, MAX_NAME_BYTES >> 20), -1;
    char **grown = realloc(l->paths, (size_t)(l->n + 1) * sizeof *grown);
    char *copy = strdup(path);
    if (grown) l->paths = grown;
    if (!grown || !copy) {
        free(copy);
        return snprintf(err, errsize, "out of memory"), -1;
    }
    l->paths[l->n++] = copy;
    l->bytes += len;
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts the listing and keeps each path once: a listing naming a file many
 * times would have it checked (HEAD, hash) as many times. */
static void sort_unique(repo_listing *l) {
    if (l->n == 0) return;
    qsort(l->paths, (size_t)l->n, sizeof *l->paths, by_name);
    int kept = 1;
    for (int i = 1; i < l->n; i++)
        if (strcmp(l->paths[kept - 1], l->paths[i]) != 0) l->paths[kept++] = l->paths[i];
        else free(l->paths[i]);
    l->n = kept;
}

/* Percent-encodes a revision with no safe characters ("refs/pr/1"). */
static void encode_revision(const char *rev, char *out, size_t size) {
    size_t o = 0;
    for (const unsigned char *c = (const unsigned char *)rev; *c && o + 4 < size; c++) {
        if (isalnum(*c) || strchr("_.-~", *c)) out[o++] = (char)*c;
        else o += (size_t)snprintf(out + o, size - o, "%%%02X", *c);
    }
    out[o] = 0;
}

/* {endpoint}/api/models/{repo}/{what}/{rev}{query}, and the endpoint's origin. */
static void api_url(const char *endpoint, const char *repo, const char *revision,
                    const char *what, const char *query, char *url, size_t urlsize, char *origin,
                    size_t osize) {
    char rev[1024];
    encode_revision(revision, rev, sizeof rev);
    size_t elen = strlen(endpoint);
    while (elen > 0 && endpoint[elen - 1] == '/') elen--;
    origin_of(endpoint, origin, osize);
    snprintf(url, urlsize, "%.*s/api/models/%s/%s/%s%s", (int)elen, endpoint, repo, what, rev,
             query);
}

/* 40 lowercase hex digits. Checked here, not with hf_validate_commit: tinyllm
 * may be built with a student's hf.c (ol tinyllm), whose check may not be. */
static bool is_commit(const char *s) {
    size_t n = 0;
    while (s && ((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f'))) n++;
    return s && n == 40 && !s[n];
}

/* GETs the revision's commit into commit ("" when the answer has none),
 * the answer into a. 0, or -1 with err set. */
static int get_commit(const char *endpoint, const char *repo, const char *revision,
                      const char *token, double timeout, char commit[41], answer *a, char *err,
                      size_t errsize) {
    char url[4096], origin[2048];
    api_url(endpoint, repo, revision, "revision", "?expand=sha", url, sizeof url, origin,
            sizeof origin);
    long status = get_on_origin(url, sizeof url, origin, token, timeout, a, err, errsize);
    if (status != 200) {
        if (status > 0) explain(status, a, url, token, err, errsize);
        return -1;
    }
    cJSON *info = cJSON_Parse(a->body ? a->body : "");
    const char *sha = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "sha"));
    *commit = 0;
    if (is_commit(sha)) snprintf(commit, 41, "%s", sha);   /* else not shown: escapes? */
    cJSON_Delete(info);
    return 0;
}

int repo_commit_remote(const char *endpoint, const char *repo, const char *revision,
                       const char *token, double timeout, char commit[41], char *err,
                       size_t errsize) {
    answer a = {0};
    int rc = get_commit(endpoint, repo, revision, token, timeout, commit, &a, err, errsize);
    free(a.body);
    return rc;
}

/* FNV-1a: a page's URL, to notice a next link back to a page already listed. */
static unsigned long long url_hash(const char *url) {
    unsigned long long h = 14695981039346656037ull;
    for (const unsigned char *c = (const unsigned char *)url; *c; c++)
        h = (h ^ *c) * 1099511628211ull;
    return h;
}

int repo_list_remote(const char *endpoint, const char *repo, const char *revision,
                     const char *token, double timeout, repo_listing *out, char *err,
                     size_t errsize) {
    *out = (repo_listing){0};
    char url[4096], origin[2048], next_origin[2048];
    answer a = {0};
    int rc = -1;
    unsigned long long *seen = calloc(MAX_PAGES, sizeof *seen);
    if (!seen) return snprintf(err, errsize, "out of memory"), -1;
    if (get_commit(endpoint, repo, revision, token, timeout, out->commit, &a, err, errsize) != 0)
        goto done;

    api_url(endpoint, repo, revision, "tree", "?recursive=true&expand=false", url, sizeof url,
            origin, sizeof origin);
    for (int page = 0; *url; page++) {
        if (page == MAX_PAGES) {
            snprintf(err, errsize, "more than %d pages of listing: giving up", MAX_PAGES);
            goto done;
        }
        seen[page] = url_hash(url);
        for (int i = 0; i < page; i++)
            if (seen[i] == seen[page]) {   /* else the same pages again, up to MAX_PAGES */
                printable(url);
                snprintf(err, errsize, "the listing's next page %.200s was listed before (a "
                         "loop): the server is broken; try again later", url);
                goto done;
            }
        long status = get_on_origin(url, sizeof url, origin, token, timeout, &a, err, errsize);
        if (status != 200) {
            if (status > 0) explain(status, &a, url, token, err, errsize);
            goto done;
        }
        cJSON *arr = cJSON_Parse(a.body ? a.body : ""), *e;
        if (arr && tl_json_nul_escape(a.body) >= 0) {   /* cJSON would cut such a name */
            cJSON_Delete(arr);
            snprintf(err, errsize, "%.*s lists a name with a NUL character (\\u0000), which no "
                     "file can have: is it a Hub?", (int)strcspn(url, "?"), url);
            goto done;
        }
        if (!cJSON_IsArray(arr)) {
            cJSON_Delete(arr);
            snprintf(err, errsize, "%.*s did not answer a JSON list of files: is it a Hub?",
                     (int)strcspn(url, "?"), url);
            goto done;
        }
        int bad = 0;
        cJSON_ArrayForEach(e, arr) {
            const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "type"));
            const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "path"));
            if (type && !strcmp(type, "file") && path && add_path(out, path, err, errsize) != 0) {
                bad = 1;
                break;
            }
        }
        cJSON_Delete(arr);
        if (bad) goto done;
        if (a.next_too_long) {
            snprintf(err, errsize, "%.*s names a next page whose URL is longer than %zu bytes: "
                     "is it a Hub?", (int)strcspn(url, "?"), url, sizeof a.next - 1);
            goto done;
        }
        if (*a.next == '/') {   /* a path on the endpoint's origin (RFC 8288 allows it) */
            if (snprintf(url, sizeof url, "%s%s", origin, a.next) >= (int)sizeof url) {
                snprintf(err, errsize, "the listing's next page has too long a URL");
                goto done;
            }
            continue;
        }
        if (*a.next) {   /* the token must stay on the endpoint's origin */
            origin_of(a.next, next_origin, sizeof next_origin);
            if (strcmp(origin, next_origin) != 0) {
                printable(a.next);
                snprintf(err, errsize, "the listing's next page (%.200s) is not on %s: refusing "
                         "to follow it", a.next, origin);
                goto done;
            }
        }
        snprintf(url, sizeof url, "%s", a.next);
    }
    sort_unique(out);
    rc = 0;
done:
    free(a.body);
    free(seen);
    if (rc != 0) repo_listing_free(out);
    return rc;
}

static repo_listing *walk_out;
static size_t walk_skip;
static char walk_err[512];

static int walk_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)ftw;
    size_t n = strlen(path);
    if (flag != FTW_F || (n > 5 && !strcmp(path + n - 5, ".part"))) return 0;
    return add_path(walk_out, path + walk_skip, walk_err, sizeof walk_err) != 0;
}

int repo_list_cached(const char *dir, repo_listing *out, char *err, size_t errsize) {
    *out = (repo_listing){0};
    walk_out = out;
    walk_skip = strlen(dir) + 1;
    walk_err[0] = 0;
    errno = 0;
    int rc = nftw(dir, walk_one, 16, FTW_PHYS);   /* links are not followed (FTW_SL: skipped) */
    if (rc == 0) return sort_unique(out), 0;
    if (*walk_err) snprintf(err, errsize, "%s", walk_err);
    else snprintf(err, errsize, "HF_HUB_OFFLINE=1 and %s is not in the cache (%s): unset "
                  "HF_HUB_OFFLINE to download it", dir, strerror(errno));
    repo_listing_free(out);
    return -1;
}

int repo_listing_has(const repo_listing *l, const char *path) {
    return l->n > 0 && bsearch(&path, l->paths, (size_t)l->n, sizeof *l->paths, by_name);
}

void repo_listing_free(repo_listing *l) {
    for (int i = 0; i < l->n; i++) free(l->paths[i]);
    free(l->paths);
    *l = (repo_listing){0};
}
