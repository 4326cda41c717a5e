/* store.c: the fake Hub's repositories, their files and revisions.
 *
 * Everything is in memory (folders are mapped read-only), hashed once when
 * added, so a request never touches the file system: a requested path can
 * only match a name in the table, whatever ".." or "%2F" it holds. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "hub_internal.h"

void hub_set_error(hub *h, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->error, sizeof h->error, fmt, ap);
    va_end(ap);
}

const char *hub_error(const hub *h) {
    return h ? h->error : "hub_error: no hub (hub_new failed: out of memory)";
}

/* ---- hashing ----------------------------------------------------------- */

static void to_hex(const unsigned char *d, unsigned n, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < n; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
    out[2 * n] = '\0';
}

/* Digest of the concatenation of two buffers (a header and a body). */
static void digest2_hex(const EVP_MD *md, const void *a, size_t na, const void *b, size_t nb,
                        char *out) {
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || !EVP_DigestInit_ex(ctx, md, NULL) || !EVP_DigestUpdate(ctx, a, na) ||
        !EVP_DigestUpdate(ctx, b, nb) || !EVP_DigestFinal_ex(ctx, d, &n)) {
        /* Only on allocation failure; an all-zero hash fails every check. */
        memset(d, 0, sizeof d);
        n = (unsigned)EVP_MD_size(md);
    }
    EVP_MD_CTX_free(ctx);
    to_hex(d, n, out);
}

void hub_sha256_hex(const void *data, size_t n, char out[65]) {
    digest2_hex(EVP_sha256(), "", 0, data, n, out);
}

/* git's blob id: sha1("blob <size>\0" + content), the ETag of small files. */
static void blob_sha1_hex(const void *data, size_t n, char out[41]) {
    char head[48];
    int len = snprintf(head, sizeof head, "blob %zu", n) + 1;   /* keeps the NUL */
    digest2_hex(EVP_sha1(), head, (size_t)len, data, n, out);
}

/* ---- validation (hub-protocol.md, "Validation") ------------------------ */

static bool id_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
}
static bool alnum(char c) { return id_char(c) && c != '.' && c != '_' && c != '-'; }

static bool valid_id_part(const char *s, size_t n, size_t max) {
    if (n == 0 || n > max || !alnum(s[0]) || !alnum(s[n - 1])) return false;
    for (size_t i = 0; i < n; i++)
        if (!id_char(s[i])) return false;
    return true;
}

/* Splits "datasets/org/name" into type and id; false when invalid. */
static bool parse_repo_key(const char *key, const char **type, const char **id) {
    *type = "models";
    *id = key;
    if (!strncmp(key, "datasets/", 9)) *type = "datasets", *id = key + 9;
    else if (!strncmp(key, "spaces/", 7)) *type = "spaces", *id = key + 7;
    const char *s = *id, *slash = strchr(s, '/');
    if (strstr(s, "--") || strstr(s, "..")) return false;
    size_t n = strlen(s);
    if (n >= 4 && !strcmp(s + n - 4, ".git")) return false;
    if (!slash) return valid_id_part(s, n, 96);
    if (strchr(slash + 1, '/')) return false;
    return valid_id_part(s, (size_t)(slash - s), 96) &&
           valid_id_part(slash + 1, strlen(slash + 1), 96);
}

static bool valid_repo_path(const char *p) {
    if (!*p || *p == '/') return false;
    for (const char *seg = p;;) {
        const char *end = strchr(seg, '/');
        size_t n = end ? (size_t)(end - seg) : strlen(seg);
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && !strncmp(seg, "..", 2)))
            return false;
        if (!end) break;
        seg = end + 1;
    }
    for (const unsigned char *c = (const unsigned char *)p; *c; c++)
        if (*c < 0x20 || *c == 0x7f || *c == '\\') return false;
    return true;
}

/* ---- lookups ----------------------------------------------------------- */

hub_repo *hub_find_repo(const hub *h, const char *key) {
    for (int i = 0; i < h->nrepos; i++)
        if (!strcmp(h->repos[i].key, key)) return &h->repos[i];
    return NULL;
}

/* Index of path in the sorted file array, or -(insertion point) - 1. */
static int file_index(const hub_repo *r, const char *path) {
    int lo = 0, hi = r->nfiles - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(r->files[mid].path, path);
        if (c == 0) return mid;
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -lo - 1;
}

const hub_file *hub_find_file(const hub_repo *r, const char *path) {
    int i = file_index(r, path);
    return i >= 0 ? &r->files[i] : NULL;
}

const hub_ref *hub_find_ref(const hub_repo *r, const char *rev) {
    for (int i = 0; i < r->nrefs; i++)
        if (!strcmp(r->refs[i].name, rev)) return &r->refs[i];
    for (int i = 0; i < r->nrefs; i++)
        if (!strcmp(r->refs[i].commit, rev)) return &r->refs[i];
    return NULL;
}

bool hub_is_lfs(const hub *h, const hub_file *f) { return f->size >= h->lfs_threshold; }

/* ---- commits ----------------------------------------------------------- */

/* A ref's commit: sha1 of the repo key, the ref name and the sorted
 * "<blob sha1> <path>" lines, so any change of content changes it. */
static void update_commits(hub_repo *r) {
    size_t n = strlen(r->key) + 64;
    for (int i = 0; i < r->nfiles; i++) n += strlen(r->files[i].path) + 43;
    char *list = malloc(n);
    if (!list) return;   /* the old commits stay: still 40-hex, just stale */
    size_t used = (size_t)snprintf(list, n, "tinyllm fake hub\nrepo %s\n", r->key);
    for (int i = 0; i < r->nfiles; i++)
        used += (size_t)snprintf(list + used, n - used, "%s %s\n", r->files[i].blob_sha1,
                                 r->files[i].path);
    for (int i = 0; i < r->nrefs; i++) {
        char head[512];
        int hn = snprintf(head, sizeof head, "ref %.480s\n", r->refs[i].name);
        digest2_hex(EVP_sha1(), head, (size_t)hn, list, used, r->refs[i].commit);
    }
    free(list);
}

static void free_repo(hub_repo *r) {
    for (int i = 0; i < r->nfiles; i++) {
        hub_file *f = &r->files[i];
        if (f->mapped) munmap((void *)f->data, f->size);
        else free((void *)f->data);
        free(f->path);
    }
    for (int i = 0; i < r->nrefs; i++) free(r->refs[i].name);
    free(r->files);
    free(r->refs);
    free(r->key);
    free(r->private_token);
    free(r->approved_token);
}

void hub_store_free(hub *h) {
    for (int i = 0; i < h->nrepos; i++) free_repo(&h->repos[i]);
    free(h->repos);
    h->repos = NULL;
    h->nrepos = h->caprepos = 0;
    for (int i = 0; i < h->nrenames; i++) free(h->renames[i].from), free(h->renames[i].to);
    free(h->renames);
    h->renames = NULL;
    h->nrenames = h->caprenames = 0;
}

static bool grow(void **arr, int *cap, int need, size_t elem) {
    if (need <= *cap) return true;
    int ncap = *cap ? *cap * 2 : 8;
    while (ncap < need) ncap *= 2;
    void *p = realloc(*arr, (size_t)ncap * elem);
    if (!p) return false;
    *arr = p;
    *cap = ncap;
    return true;
}

static bool refuse_if_running(hub *h, const char *what) {
    if (!h->running) return false;
    hub_set_error(h, "%s: the hub is running; change its content before hub_start "
                     "(or hub_stop first)", what);
    return true;
}

/* The repo named key, created (with "main") when missing; NULL on error. */
static hub_repo *repo_for(hub *h, const char *key, const char *what) {
    const char *type, *id;
    if (!key || !parse_repo_key(key, &type, &id)) {
        hub_set_error(h, "%s: \"%s\" is not a valid repo id: expected \"ns/name\" or \"name\" "
                         "(letters, digits, '.', '_', '-'; no \"--\" or \"..\"), optionally "
                         "after \"datasets/\" or \"spaces/\"", what, key ? key : "(null)");
        return NULL;
    }
    hub_repo *r = hub_find_repo(h, key);
    if (r) return r;
    if (!grow((void **)&h->repos, &h->caprepos, h->nrepos + 1, sizeof *h->repos)) goto oom;
    r = &h->repos[h->nrepos];
    memset(r, 0, sizeof *r);
    r->key = strdup(key);
    r->refs = calloc(4, sizeof *r->refs);
    if (!r->key || !r->refs || !(r->refs[0].name = strdup("main"))) {
        free(r->key);
        free(r->refs);
        goto oom;
    }
    r->caprefs = 4;
    r->nrefs = 1;
    r->id = r->key + (id - key);
    r->type = type;
    update_commits(r);
    h->nrepos++;
    return r;
oom:
    hub_set_error(h, "%s: out of memory adding repo %s", what, key);
    return NULL;
}

/* Takes ownership of data (malloc'd or mapped) on success only. */
static int put_file(hub *h, hub_repo *r, const char *path, const unsigned char *data,
                    size_t size, bool mapped, long long mtime) {
    int i = file_index(r, path);
    if (i < 0) {
        char *p = strdup(path);
        if (!p || !grow((void **)&r->files, &r->capfiles, r->nfiles + 1, sizeof *r->files)) {
            free(p);
            hub_set_error(h, "hub_add_file: out of memory adding %s/%s", r->key, path);
            return -1;
        }
        i = -i - 1;
        memmove(&r->files[i + 1], &r->files[i], (size_t)(r->nfiles - i) * sizeof *r->files);
        r->nfiles++;
        memset(&r->files[i], 0, sizeof r->files[i]);
        r->files[i].path = p;
    } else {
        hub_file *old = &r->files[i];
        if (old->mapped) munmap((void *)old->data, old->size);
        else free((void *)old->data);
    }
    hub_file *f = &r->files[i];
    f->data = data;
    f->size = size;
    f->mapped = mapped;
    blob_sha1_hex(data ? (const void *)data : "", size, f->blob_sha1);
    hub_sha256_hex(data ? (const void *)data : "", size, f->sha256);
    /* What git holds for an LFS file: a pointer naming its sha256 and size. */
    char pointer[160];
    int n = snprintf(pointer, sizeof pointer,
                     "version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %zu\n",
                     f->sha256, size);
    f->pointer_size = (size_t)n;
    blob_sha1_hex(pointer, (size_t)n, f->pointer_sha1);
    if (mtime > r->modified) r->modified = mtime;
    update_commits(r);
    return 0;
}

int hub_add_file(hub *h, const char *repo, const char *path, const void *data, size_t size) {
    if (refuse_if_running(h, "hub_add_file")) return -1;
    if (!path || !valid_repo_path(path)) {
        hub_set_error(h, "hub_add_file: \"%s\" is not a valid path in a repo: use a relative "
                         "'/'-separated path without empty, \".\" or \"..\" segments, "
                         "backslashes or control characters", path ? path : "(null)");
        return -1;
    }
    if (size && !data) {
        hub_set_error(h, "hub_add_file: %s: data is NULL but size is %zu", path, size);
        return -1;
    }
    hub_repo *r = repo_for(h, repo, "hub_add_file");
    if (!r) return -1;
    unsigned char *copy = NULL;
    if (size) {
        if (!(copy = malloc(size))) {
            hub_set_error(h, "hub_add_file: out of memory copying %s/%s (%zu bytes)", repo,
                          path, size);
            return -1;
        }
        memcpy(copy, data, size);
    }
    if (put_file(h, r, path, copy, size, false, (long long)time(NULL)) != 0) {
        free(copy);
        return -1;
    }
    return 0;
}

int hub_add_ref(hub *h, const char *repo, const char *ref) {
    if (refuse_if_running(h, "hub_add_ref")) return -1;
    bool ok = ref && *ref && !strstr(ref, "..") && ref[0] != '/' && strlen(ref) < 256;
    for (const unsigned char *c = (const unsigned char *)ref; ok && *c; c++)
        ok = *c > 0x20 && *c != 0x7f && *c != '\\';
    if (ok && strlen(ref) == 40 && strspn(ref, "0123456789abcdef") == 40) ok = false;
    if (!ok) {
        hub_set_error(h, "hub_add_ref: \"%s\" is not a usable ref name: give a branch, tag "
                      "or \"refs/pr/N\" (printable, no spaces or \"..\", not 40 hex digits)",
                      ref ? ref : "(null)");
        return -1;
    }
    hub_repo *r = repo_for(h, repo, "hub_add_ref");
    if (!r) return -1;
    for (int i = 0; i < r->nrefs; i++)
        if (!strcmp(r->refs[i].name, ref)) return 0;
    char *name = strdup(ref);
    if (!name || !grow((void **)&r->refs, &r->caprefs, r->nrefs + 1, sizeof *r->refs)) {
        free(name);
        hub_set_error(h, "hub_add_ref: out of memory adding %s to %s", ref, repo);
        return -1;
    }
    r->refs[r->nrefs++] = (hub_ref){.name = name};
    update_commits(r);
    return 0;
}

int hub_set_private(hub *h, const char *repo, const char *token) {
    if (refuse_if_running(h, "hub_set_private")) return -1;
    if (!token || !*token) {
        hub_set_error(h, "hub_set_private: %s: give the token that may read it", repo);
        return -1;
    }
    hub_repo *r = repo_for(h, repo, "hub_set_private");
    if (!r) return -1;
    char *t = strdup(token);
    if (!t) {
        hub_set_error(h, "hub_set_private: out of memory");
        return -1;
    }
    free(r->private_token);
    r->private_token = t;
    return 0;
}

int hub_set_gated(hub *h, const char *repo, const char *approved_token) {
    if (refuse_if_running(h, "hub_set_gated")) return -1;
    hub_repo *r = repo_for(h, repo, "hub_set_gated");
    if (!r) return -1;
    char *t = approved_token ? strdup(approved_token) : NULL;
    if (approved_token && !t) {
        hub_set_error(h, "hub_set_gated: out of memory");
        return -1;
    }
    free(r->approved_token);
    r->approved_token = t;
    r->gated = true;
    return 0;
}

static const char *type_of(const char *key) {
    const char *type, *id;
    return parse_repo_key(key, &type, &id) ? type : NULL;
}

int hub_add_rename(hub *h, const char *old_repo, const char *new_repo) {
    if (refuse_if_running(h, "hub_add_rename")) return -1;
    const char *bad = !old_repo || !type_of(old_repo) ? old_repo
                      : !new_repo || !type_of(new_repo) ? new_repo : NULL;
    if (bad || !old_repo || !new_repo) {
        hub_set_error(h, "hub_add_rename: \"%s\" is not a valid repo id: expected \"ns/name\" "
                         "or \"name\", optionally after \"datasets/\" or \"spaces/\"",
                      bad ? bad : "(null)");
        return -1;
    }
    if (strcmp(type_of(old_repo), type_of(new_repo)) != 0 || !strcmp(old_repo, new_repo)) {
        hub_set_error(h, "hub_add_rename: %s -> %s: a rename keeps the repo's type and "
                         "changes its name", old_repo, new_repo);
        return -1;
    }
    for (int i = 0; i < h->nrenames; i++)
        if (!strcmp(h->renames[i].from, old_repo)) {
            hub_set_error(h, "hub_add_rename: %s is already renamed to %s", old_repo,
                          h->renames[i].to);
            return -1;
        }
    char *from = strdup(old_repo), *to = strdup(new_repo);
    if (!from || !to ||
        !grow((void **)&h->renames, &h->caprenames, h->nrenames + 1, sizeof *h->renames)) {
        free(from), free(to);
        hub_set_error(h, "hub_add_rename: out of memory");
        return -1;
    }
    h->renames[h->nrenames++] = (hub_rename){from, to};
    return 0;
}

const char *hub_renamed_to(const hub *h, const char *key) {
    for (int i = 0; i < h->nrenames; i++)
        if (!strcmp(h->renames[i].from, key)) return h->renames[i].to;
    return NULL;
}

/* ---- queries ----------------------------------------------------------- */

const char *hub_commit(const hub *h, const char *repo, const char *ref) {
    const hub_repo *r = repo ? hub_find_repo(h, repo) : NULL;
    if (!r || !ref) return NULL;
    for (int i = 0; i < r->nrefs; i++)
        if (!strcmp(r->refs[i].name, ref)) return r->refs[i].commit;
    return NULL;
}

static const hub_file *lookup(const hub *h, const char *repo, const char *path) {
    const hub_repo *r = repo ? hub_find_repo(h, repo) : NULL;
    return r && path ? hub_find_file(r, path) : NULL;
}

const char *hub_file_sha256(const hub *h, const char *repo, const char *path) {
    const hub_file *f = lookup(h, repo, path);
    return f ? f->sha256 : NULL;
}

const char *hub_file_blob_sha1(const hub *h, const char *repo, const char *path) {
    const hub_file *f = lookup(h, repo, path);
    return f ? f->blob_sha1 : NULL;
}

int hub_repo_count(const hub *h) { return h->nrepos; }

int hub_file_count(const hub *h) {
    int n = 0;
    for (int i = 0; i < h->nrepos; i++) n += h->repos[i].nfiles;
    return n;
}

/* ---- loading a folder -------------------------------------------------- */

static int add_mapped(hub *h, hub_repo *r, const char *full, const char *rel) {
    int fd = open(full, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        hub_set_error(h, "hub_add_dir: cannot read %s: %s", full, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    void *map = NULL;
    if (size > 0) {
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            hub_set_error(h, "hub_add_dir: cannot map %s (%zu bytes): %s", full, size,
                          strerror(errno));
            close(fd);
            return -1;
        }
    }
    close(fd);
    if (put_file(h, r, rel, map, size, size > 0, (long long)st.st_mtime) != 0) {
        if (map) munmap(map, size);
        return -1;
    }
    return 0;
}

/* Adds every regular file under dir (full path) as rel/... of repo r. */
static int add_tree(hub *h, hub_repo *r, const char *dir, const char *rel, int depth) {
    if (depth > 32) {
        hub_set_error(h, "hub_add_dir: %s is nested more than 32 folders deep (a symlink "
                         "loop?)", dir);
        return -1;
    }
    DIR *d = opendir(dir);
    if (!d) {
        hub_set_error(h, "hub_add_dir: cannot open folder %s: %s", dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, ".git"))
            continue;
        char *full = NULL, *sub = NULL;
        struct stat st;
        if (asprintf(&full, "%s/%s", dir, e->d_name) < 0 ||
            asprintf(&sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name) < 0) {
            hub_set_error(h, "hub_add_dir: out of memory");
            rc = -1;
        } else if (stat(full, &st) != 0) {
            hub_set_error(h, "hub_add_dir: cannot stat %s: %s", full, strerror(errno));
            rc = -1;
        } else if (S_ISDIR(st.st_mode)) {
            rc = add_tree(h, r, full, sub, depth + 1);
        } else if (S_ISREG(st.st_mode)) {
            if (!valid_repo_path(sub)) {
                hub_set_error(h, "hub_add_dir: %s: \"%s\" cannot be a file name in a repo "
                                 "(control character or backslash): rename it", full, sub);
                rc = -1;
            } else {
                rc = add_mapped(h, r, full, sub);
            }
        }
        free(full);
        free(sub);
    }
    closedir(d);
    return rc;
}

static bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int hub_add_dir(hub *h, const char *root) {
    if (refuse_if_running(h, "hub_add_dir")) return -1;
    if (!root || !is_dir(root)) {
        hub_set_error(h, "hub_add_dir: %s is not a folder: give DIR holding DIR/<org>/<name>/"
                         "<files>", root ? root : "(null)");
        return -1;
    }
    DIR *top = opendir(root);
    if (!top) {
        hub_set_error(h, "hub_add_dir: cannot open folder %s: %s", root, strerror(errno));
        return -1;
    }
    int rc = 0, found = 0;
    struct dirent *org;
    while (rc == 0 && (org = readdir(top))) {
        char *orgdir = NULL;
        if (org->d_name[0] == '.') continue;
        if (asprintf(&orgdir, "%s/%s", root, org->d_name) < 0) {
            hub_set_error(h, "hub_add_dir: out of memory");
            rc = -1;
            break;
        }
        DIR *names = is_dir(orgdir) ? opendir(orgdir) : NULL;
        struct dirent *name;
        while (rc == 0 && names && (name = readdir(names))) {
            char *repodir = NULL, *key = NULL;
            if (name->d_name[0] == '.') continue;
            if (asprintf(&repodir, "%s/%s", orgdir, name->d_name) < 0 ||
                asprintf(&key, "%s/%s", org->d_name, name->d_name) < 0) {
                hub_set_error(h, "hub_add_dir: out of memory");
                rc = -1;
            } else if (is_dir(repodir)) {
                hub_repo *r = repo_for(h, key, "hub_add_dir");
                rc = r ? add_tree(h, r, repodir, "", 0) : -1;
                found++;
            }
            free(repodir);
            free(key);
        }
        if (names) closedir(names);
        free(orgdir);
    }
    closedir(top);
    if (rc == 0 && found == 0) {
        hub_set_error(h, "hub_add_dir: no repository under %s: put each repo's files in "
                         "%s/<org>/<name>/", root, root);
        rc = -1;
    }
    return rc;
}
