/* repo_listing.h: the files of a Hub repo at a revision, as snapshot_download
 * lists them: GET {endpoint}/api/models/{repo}/revision/{rev} for the commit,
 * then /api/models/{repo}/tree/{rev}?recursive=true, following the pages the
 * Hub names in `Link: <...>; rel="next"`. Offline, the files already in the
 * cache folder. Used by `tinyllm pull` (pull.c). */
#ifndef TINYLLM_TOOL_REPO_LISTING_H
#define TINYLLM_TOOL_REPO_LISTING_H

#include <stddef.h>

typedef struct {
    char **paths;       /* files (not folders), each a valid hf filename, sorted, each once */
    int n;
    size_t bytes;       /* the paths' total length */
    char commit[41];    /* the revision's commit ("" offline) */
} repo_listing;

/* Lists repo at revision from endpoint (HF_TOKEN sent to the endpoint's own
 * origin only; a next page on another origin is refused). 0, or -1 with a
 * message in err naming the URL and the cause. */
int repo_list_remote(const char *endpoint, const char *repo, const char *revision,
                     const char *token, double timeout, repo_listing *out, char *err,
                     size_t errsize);
/* The commit revision names now on endpoint ("" when the Hub does not say),
 * as repo_list_remote asks it. 0, or -1 with a message in err. */
int repo_commit_remote(const char *endpoint, const char *repo, const char *revision,
                       const char *token, double timeout, char commit[41], char *err,
                       size_t errsize);
/* The regular files below folder dir (no .part files, no links followed).
 * 0, or -1 with a message in err (dir missing: the repo is not cached). */
int repo_list_cached(const char *dir, repo_listing *out, char *err, size_t errsize);
/* True when the listing holds path. */
int repo_listing_has(const repo_listing *l, const char *path);
void repo_listing_free(repo_listing *l);

#endif
