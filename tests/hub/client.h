/* client.h: what the fake Hub's tests use to talk to it: libcurl for
 * ordinary requests, a raw socket where the bytes on the wire matter, and
 * hashes computed here (not by the hub) to check what it announces. */
#ifndef TESTS_HUB_CLIENT_H
#define TESTS_HUB_CLIENT_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include "tinyllm/testing/hub.h"

typedef struct {
    bool head;               /* HEAD instead of GET */
    const char *range;       /* "100-" sends Range: bytes=100- */
    const char *token;       /* sends Authorization: Bearer <token> */
    bool follow;             /* follow redirects (at most max_redirs, default 10) */
    long max_redirs;
    bool unrestricted_auth;  /* keep Authorization when the host changes */
    long timeout_ms;         /* whole transfer; 0: 20 s */
} http_opts;

typedef struct {
    CURLcode code;           /* CURLE_OK, CURLE_PARTIAL_FILE, CURLE_OPERATION_TIMEDOUT... */
    char error[CURL_ERROR_SIZE];
    long status;             /* of the last answer */
    unsigned char *body;
    size_t body_len;
    long redirects;
    char *effective_url;
    int nheaders;            /* the last answer's headers */
    char **names, **values;
} http_reply;

/* Never NULL (aborts the test when out of memory). */
http_reply *http_fetch(const char *url, const http_opts *o);
void http_reply_free(http_reply *r);
/* The last answer's header (case-insensitive name), or NULL. */
const char *http_header(const http_reply *r, const char *name);

/* GET over a plain socket with "Connection: close", reading to the end:
 * every byte the server sent, headers included, whatever their framing.
 * Returns the byte count and sets *out (malloc'd), or -1. */
long raw_get(const char *endpoint, const char *path, char **out);

/* An URL from a format, in one of 8 rotating static buffers. */
const char *urlf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Independent hashes: sha256 and git's blob sha1, lowercase hex. */
void test_sha256_hex(const void *data, size_t n, char out[65]);
void test_blob_sha1_hex(const void *data, size_t n, char out[41]);

/* n deterministic bytes, different for each seed. */
unsigned char *test_bytes(size_t n, unsigned seed);

/* The standard fixture: repo "org/tiny" with config.json (CONFIG_JSON,
 * small) and model.safetensors (MODEL_SIZE bytes of test_bytes(.., 7), LFS
 * at threshold LFS_THRESHOLD), started. *model (may be NULL) receives the
 * model's bytes (free it). */
#define CONFIG_JSON "{\"model_type\": \"llama\", \"hidden_size\": 64}\n"
#define MODEL_SIZE 50000
#define LFS_THRESHOLD 4096
hub *start_tiny_hub(unsigned char **model);

/* How many log entries on host (HUB_ANY for both) whose path contains
 * needle (NULL: any). */
int log_count_where(const hub *h, hub_host host, const char *needle);

#endif
