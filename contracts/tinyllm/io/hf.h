/* tinyllm/io/hf.h: download files of a Hugging Face repository into a cache
 * (L7.9; the chapter, course/L7.9/README.md, explains it in section 2.7).
 *
 *   char *dir = hf_download("org/tiny", (const char *[]){"config.json",
 *                           "model.safetensors"}, 2, "cache", "main", NULL,
 *                           NULL, 60.0);
 *   // dir == "cache/org--tiny/main", holding both files; free(dir).
 *
 * For each file:
 *   URL    {endpoint}/{repo_id}/resolve/{revision}/{filename}, the revision
 *          percent-encoded with no safe characters ("refs/pr/1" becomes
 *          "refs%2Fpr%2F1"), the filename as UTF-8 keeping '/' and
 *          letters, digits and "_.-~".
 *   Hash   a large (LFS) file answers with a redirect carrying X-Linked-Etag
 *          (its sha256) and X-Linked-Size; a small file's ETag is its git
 *          blob sha1. The caller's sha256[i], when given, is checked too.
 *   Bytes  go to <file>.part. After a dropped connection (in this call or an
 *          earlier one) the bytes already on disk are hashed first, then the
 *          rest is asked for with "Range: bytes=<size>-". A 200 answer to a
 *          range request, or a 206 from byte 0 ("bytes 0-(N-1)/N"), restarts
 *          the file with that answer. A 206 starting anywhere else, or a 416
 *          for a range below the size, empties the .part and fetches the
 *          whole file without Range, once; a .part (kept, or resumed) whose
 *          result does not verify gives way to the whole file the same way.
 *          A .part already of full size is verified without a request. When
 *          that whole-file fetch fails too, the error gives both reasons; a
 *          rerun then either finishes the file or fails for the same reason.
 *   Lock   the .part is locked (flock) from opening to renaming. A second
 *          download of the same file at the same time (a thread or a
 *          process) waits for the first, saying so on stderr, as long as the
 *          first keeps writing (it gives up after `timeout` seconds in which
 *          the .part did not grow); then it finds the verified file and does
 *          not download it again.
 *   Place  only a file whose size and hash check out is renamed to its final
 *          name (atomic): a failure never leaves a bad file there.
 *   Cache  cache_dir/<org>--<name>/<revision>/<filename>. A file already there
 *          whose size and hash match the server's is not downloaded again; a
 *          stale one is replaced.
 * Retries: 408, 429 (honouring Retry-After), 5xx, and a connection refused,
 * dropped or timed out, with backoff, a bounded number of times. Answers
 * that are not well-formed are refused at once: not HTTP, a size, hash or
 * Content-Range that is malformed or sent twice with different values, a
 * redirect to anything but http(s) or carrying credentials; so is a size
 * larger than the disk's free space, before any byte is asked for.
 * HF_TOKEN is sent as "Authorization: Bearer ..." to the endpoint's host and
 * port only, never to a redirect's other host. HF_HUB_OFFLINE=1 serves only
 * from the cache, without any request. A progress bar is drawn on stderr for
 * large files when stderr is a terminal.
 *
 * Nothing is ever written outside cache_dir: the repo id, the filenames, the
 * revision (path segments of at most 250 bytes: 255 less ".part"), and any
 * commit or etag the server sends are validated first; and no symbolic link
 * below cache_dir is followed: every folder is opened from cache_dir one name
 * at a time with O_NOFOLLOW, the .part with O_NOFOLLOW, and a link found on
 * the way is refused with a message naming it. A link under a file's final
 * name is not a cached file: it is replaced by the verified file (rename),
 * its target untouched. cache_dir itself may be a link.
 */
#ifndef TINYLLM_IO_HF_H
#define TINYLLM_IO_HF_H

/* repo_id:   "org/name" (or "name"), validated as the Hub does.
 * filenames: n paths inside the repository ("config.json", "a/b.bin").
 * cache_dir: the cache root; created if missing.
 * revision:  a branch, tag, "refs/pr/N" or a 40-hex commit; NULL means "main".
 * endpoint:  the Hub's URL; NULL means $HF_ENDPOINT, else https://huggingface.co.
 * sha256:    NULL, or n expected lowercase hex digests (NULL entries: none).
 * timeout:   seconds allowed to connect and, later, of silence mid-transfer;
 *            <= 0 means 60.
 * Returns the folder holding the files (malloc'd; free it), or NULL with
 * tl_error() naming the file, the URL and the cause. */
char *hf_download(const char *repo_id, const char *const *filenames, int n,
                  const char *cache_dir, const char *revision, const char *endpoint,
                  const char *const *sha256, double timeout);

/* The validators hf_download applies, public so tests and tools can use them.
 * Each returns 0, or -1 with tl_error() saying what is wrong with the value. */
int hf_validate_repo_id(const char *repo_id);
int hf_validate_filename(const char *filename);
int hf_validate_revision(const char *revision);
/* What the server sends is checked before it names anything on disk: a
 * commit (X-Repo-Commit) is 40 lowercase hex digits; an etag (ETag, or
 * X-Linked-Etag) is a git blob sha1 (40 lowercase hex digits) or an LFS
 * file's sha256 (64), quotes removed. */
int hf_validate_commit(const char *commit);
int hf_validate_etag(const char *etag);

#endif
