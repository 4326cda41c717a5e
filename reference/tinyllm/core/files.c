/* files.c: reading and replacing whole files, safely (tinyllm/files.h). */
#include "tinyllm/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "safetensors_internal.h"   /* tl_open_regular */
#include "tinyllm/tensor.h"

const char *tl_file_kind_problem(mode_t mode) {
    if (S_ISREG(mode)) return NULL;
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

int tl_open_regular(const char *path, struct stat *st, char *why, size_t why_size) {
    /* O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever.
     * It changes nothing for regular files. */
    st->st_mode = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int err = errno;
        struct stat lst;
        if (err == ENOENT && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
            snprintf(why, why_size, "cannot open: it is a symlink to a file that does not exist");
        else if (err == ELOOP)
            snprintf(why, why_size, "cannot open: a loop of symlinks");
        else
            snprintf(why, why_size, "cannot open: %s", strerror(err));
        return -1;
    }
    const char *kind = NULL;
    if (fstat(fd, st) != 0) snprintf(why, why_size, "cannot stat: %s", strerror(errno));
    else if ((kind = tl_file_kind_problem(st->st_mode)) != NULL)
        snprintf(why, why_size, "is %s, not a regular file", kind);
    else return fd;
    close(fd);
    return -1;
}

bool tl_path_present(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

char *tl_read_whole_file(const char *path, size_t max_bytes, size_t *len) {
    struct stat st;
    char why[256];
    int fd = tl_open_regular(path, &st, why, sizeof why);
    if (fd < 0) {
        int err = tl_path_present(path) ? EINVAL : ENOENT;
        tl_fail("%s: %s", path, why);
        errno = err;
        return NULL;
    }
    if ((uint64_t)st.st_size > max_bytes) {
        close(fd);
        tl_fail("%s is %lld bytes, over the %zu bytes such a file may have", path,
                (long long)st.st_size, max_bytes);
        errno = EFBIG;
        return NULL;
    }
    /* Read to the end, not to st_size: the file may grow or shrink meanwhile. */
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *text = malloc(cap + 1);
    for (ssize_t got = 1; text && got != 0;) {
        if (n == cap) {
            if (cap > max_bytes) break;   /* over the limit: said below */
            char *bigger = realloc(text, 2 * cap + 1);
            if (!bigger) {                /* out of memory: never a truncated file */
                free(text);
                text = NULL;
                break;
            }
            text = bigger;
            cap *= 2;
        }
        got = read(fd, text + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            int err = errno;
            close(fd);
            free(text);
            tl_fail("cannot read %s: %s", path, strerror(err));
            errno = err;
            return NULL;
        }
        n += (size_t)got;
    }
    close(fd);
    if (!text || n > max_bytes) {
        bool big = text != NULL;
        free(text);
        if (big) tl_fail("%s grew over the %zu bytes such a file may have while it was read",
                         path, max_bytes);
        else tl_fail("out of memory reading %s", path);
        errno = big ? EFBIG : ENOMEM;
        return NULL;
    }
    text[n] = '\0';
    if (len) *len = n;
    return text;
}

FILE *tl_create_temp_beside(const char *path, char *tmp, size_t tmp_size) {
    int wrote = snprintf(tmp, tmp_size, "%s.tmp.XXXXXX", path);
    if (wrote < 0 || (size_t)wrote >= tmp_size) {
        if (tmp_size) tmp[0] = '\0';
        errno = ENAMETOOLONG;
        return NULL;
    }
    /* Not mkstemp: its 0600 would need the umask read back, which changes the
     * process's umask for an instant. open() with 0666 lets the kernel apply it. */
    static const char LETTERS[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    char *suffix = tmp + wrote - 6;
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        unsigned char random[6];
        if (getrandom(random, sizeof random, 0) != (ssize_t)sizeof random) return NULL;
        for (int i = 0; i < 6; i++) suffix[i] = LETTERS[random[i] % (sizeof LETTERS - 1)];
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) return NULL;
    }
    if (fd < 0) return NULL;   /* errno EEXIST */
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        int err = errno;
        close(fd);
        unlink(tmp);
        errno = err;
    }
    return f;
}
