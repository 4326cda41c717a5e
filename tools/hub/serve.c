/* serve.c: `ol hub serve DIR [--port N] [--cdn-port N] [--lfs-threshold BYTES]
 * [--page-size N] [--rename OLD=NEW]...` serves a folder of repos on 127.0.0.1
 * until SIGINT or SIGTERM. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include "hub_internal.h"

#define USAGE_LINE \
    "usage: ol hub serve DIR [--port N] [--cdn-port N] [--lfs-threshold BYTES] [--page-size N]\n" \
    "                        [--rename OLD=NEW]...\n"
static const char short_usage[] = USAGE_LINE "  (ol hub serve --help says more)\n";
static const char usage[] =
    USAGE_LINE
    "  Serves DIR/<org>/<name>/<files> as Hugging Face repo <org>/<name>, at\n"
    "  revision \"main\" and at the commit it reports, on 127.0.0.1.\n"
    "  --port N             the Hub's port (default 0: any free port)\n"
    "  --cdn-port N         the port of the CDN that large files redirect to (default 0)\n"
    "  --lfs-threshold B    files of at least B bytes are LFS (default 1048576)\n"
    "  --page-size N        entries per page of the API's tree listings (default 1000)\n"
    "  --rename OLD=NEW     repo OLD was renamed NEW: its URLs answer a 307 to NEW's\n";

enum { MAX_RENAMES = 64 };

/* A whole decimal number in [0, max]; false otherwise. */
static bool parse_uint(const char *s, unsigned long long max, unsigned long long *out) {
    if (!s || !*s || strspn(s, "0123456789") != strlen(s)) return false;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno == ERANGE || v > max) return false;
    *out = v;
    return true;
}

static void print_banner(const hub *h, const char *dir, const char *endpoint) {
    printf("Serving %d repo%s (%d files) from %s\n", h->nrepos, h->nrepos == 1 ? "" : "s",
           hub_file_count(h), dir);
    for (int i = 0; i < h->nrepos; i++) {
        const hub_repo *r = &h->repos[i];
        int lfs = 0;
        for (int j = 0; j < r->nfiles; j++) lfs += hub_is_lfs(h, &r->files[j]);
        printf("  %-40s main = %s  (%d files, %d LFS)\n", r->key, r->refs[0].commit,
               r->nfiles, lfs);
    }
    for (int i = 0; i < h->nrenames; i++)
        printf("  %-40s renamed: answers 307 to %s\n", h->renames[i].from, h->renames[i].to);
    const hub_repo *first = &h->repos[0];
    printf("Hub: %s   (CDN for LFS files: %s)\n", endpoint, hub_cdn_endpoint(h));
    printf("Use it with:\n  export HF_ENDPOINT=%s\n", endpoint);
    if (first->nfiles > 0)
        printf("  curl -L %s/%s/resolve/main/%s\n", endpoint, first->key, first->files[0].path);
    printf("Press Ctrl-C to stop.\n");
    fflush(stdout);
}

static void on_stop_signal(int sig) { (void)sig; }

int hub_serve_command(int argc, char **argv) {
    const char *dir = NULL;
    unsigned long long port = 0, cdn_port = 0, threshold = HUB_DEFAULT_LFS_THRESHOLD;
    unsigned long long page_size = HUB_DEFAULT_TREE_PAGE_SIZE;
    const char *renames[MAX_RENAMES];
    int nrenames = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        unsigned long long *target = !strcmp(a, "--port")            ? &port
                                     : !strcmp(a, "--cdn-port")      ? &cdn_port
                                     : !strcmp(a, "--lfs-threshold") ? &threshold
                                     : !strcmp(a, "--page-size")     ? &page_size : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        }
        if (!strcmp(a, "--rename")) {
            if (i + 1 >= argc || !strchr(argv[i + 1], '=') || nrenames == MAX_RENAMES) {
                fprintf(stderr, "ol hub serve: --rename needs OLD=NEW (two repo ids, at most "
                        "%d renames), got \"%s\"\n%s", MAX_RENAMES,
                        i + 1 < argc ? argv[i + 1] : "(nothing)", short_usage);
                return 2;
            }
            renames[nrenames++] = argv[++i];
        } else if (target) {
            unsigned long long max = target == &threshold ? UINT64_MAX
                                     : target == &page_size ? 1000000 : 65535;
            if (i + 1 >= argc || !parse_uint(argv[i + 1], max, target) ||
                (target == &page_size && *target == 0)) {
                fprintf(stderr, "ol hub serve: %s needs a whole number%s, got \"%s\"\n%s", a,
                        max == 65535 ? " from 0 to 65535"
                        : target == &page_size ? " from 1 to 1000000" : " of bytes",
                        i + 1 < argc ? argv[i + 1] : "(nothing)", short_usage);
                return 2;
            }
            i++;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "ol hub serve: unknown option %s\n%s", a, short_usage);
            return 2;
        } else if (dir) {
            fprintf(stderr, "ol hub serve: one folder only (got %s and %s)\n%s", dir, a,
                    short_usage);
            return 2;
        } else {
            dir = a;
        }
    }
    if (!dir) {
        fprintf(stderr, "ol hub serve: which folder? give DIR holding DIR/<org>/<name>/\n%s",
                short_usage);
        return 2;
    }
    if (port != 0 && port == cdn_port) {
        fprintf(stderr, "ol hub serve: --port and --cdn-port must differ (both %llu)\n", port);
        return 2;
    }

    hub *h = hub_new();
    if (!h) {
        fprintf(stderr, "ol hub serve: out of memory\n");
        return 1;
    }
    /* Block the stop signals before any thread starts, so that every
     * thread inherits the mask and sigwait below receives them. A shell
     * starts background jobs with SIGINT ignored, which would discard it:
     * a handler (never run while blocked) keeps it deliverable. */
    sigset_t stop, old;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, &old);
    struct sigaction wake = {.sa_handler = on_stop_signal}, old_int, old_term;
    sigemptyset(&wake.sa_mask);
    sigaction(SIGINT, &wake, &old_int);
    sigaction(SIGTERM, &wake, &old_term);

    int rc = 1;
    const char *endpoint = NULL;
    hub_set_lfs_threshold(h, threshold);
    hub_set_tree_page_size(h, (int)page_size);
    hub_set_ports(h, (unsigned)port, (unsigned)cdn_port);
    hub_set_trace(h, stdout);
    hub_set_log_limit(h, 10000);   /* the trace is the record; the log would only grow */
    bool renamed = true;
    for (int i = 0; i < nrenames && renamed; i++) {
        char *from = strdup(renames[i]), *to = from ? strchr(from, '=') : NULL;
        if (to) *to++ = '\0';
        renamed = to && hub_add_rename(h, from, to) == 0;
        free(from);
    }
    if (!renamed || hub_add_dir(h, dir) != 0 || hub_start(h, &endpoint) != 0) {
        fprintf(stderr, "ol hub serve: %s\n", hub_error(h));
    } else {
        print_banner(h, dir, endpoint);
        int sig = 0;
        sigwait(&stop, &sig);
        printf("Stopping (%s).\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
        fflush(stdout);
        rc = 0;
    }
    hub_free(h);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}
