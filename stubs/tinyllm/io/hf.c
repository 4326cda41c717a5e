/* hf.c: your downloader (L7.9, section 2.7). Read contracts/tinyllm/io/hf.h
 * first: it is the contract the course tests check.
 *
 * A plan that works: validate the inputs; build the resolve URL; ask the
 * server what the file is (HEAD without following a redirect to another
 * host: the redirect carries X-Linked-Etag and X-Linked-Size); skip a file
 * already verified in the cache; write to <file>.part, resuming with a Range
 * request after hashing the bytes already there; verify size and hash; then
 * rename into place. libcurl does HTTP, OpenSSL's EVP does sha256 and sha1.
 */
#include "tinyllm/io/hf.h"

#include "tinyllm/tensor.h"

char *hf_download(const char *repo_id, const char *const *filenames, int n,
                  const char *cache_dir, const char *revision, const char *endpoint,
                  const char *const *sha256, double timeout) {
    (void)repo_id; (void)filenames; (void)n; (void)cache_dir; (void)revision;
    (void)endpoint; (void)sha256; (void)timeout;
    return tl_fail("not implemented: hf_download (L7.9)");
}

int hf_validate_repo_id(const char *repo_id) {
    (void)repo_id;
    return tl_fail_status("not implemented: hf_validate_repo_id (L7.9)");
}

int hf_validate_filename(const char *filename) {
    (void)filename;
    return tl_fail_status("not implemented: hf_validate_filename (L7.9)");
}

int hf_validate_revision(const char *revision) {
    (void)revision;
    return tl_fail_status("not implemented: hf_validate_revision (L7.9)");
}

int hf_validate_commit(const char *commit) {
    /* 40 lowercase hex digits, nothing else (section 2.7: X-Repo-Commit). */
    (void)commit;
    return tl_fail_status("not implemented: hf_validate_commit (L7.9)");
}

int hf_validate_etag(const char *etag) {
    /* A git blob sha1 (40 hex) or an LFS sha256 (64 hex), lowercase. */
    (void)etag;
    return tl_fail_status("not implemented: hf_validate_etag (L7.9)");
}
