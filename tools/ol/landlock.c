#include "landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Landlock's interface, spelled out: the system's <linux/landlock.h> may be
 * older than the kernel (Debian 12's knows ABI 1 to 2), and later ABIs only
 * add rights and fields. */
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_EXECUTE (1ULL << 0)
#define LL_WRITE_FILE (1ULL << 1)
#define LL_READ_FILE (1ULL << 2)
#define LL_READ_DIR (1ULL << 3)
#define LL_ABI1_ALL ((1ULL << 13) - 1)            /* execute ... make_sym */
#define LL_REFER (1ULL << 13)                     /* ABI 2 */
#define LL_TRUNCATE (1ULL << 14)                  /* ABI 3 */
#define LL_IOCTL_DEV (1ULL << 15)                 /* ABI 5 */
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)               /* ABI 6 */
/* the rights that apply to a file (the rest only to folders) */
#define LL_FILE_RIGHTS (LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | LL_TRUNCATE | LL_IOCTL_DEV)

struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net; /* ABI 4 */
    uint64_t scoped;             /* ABI 6 */
};

struct ll_path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

int landlock_abi(void) {
    static int abi = -1;
    if (abi < 0) {
        long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
        abi = v > 0 ? (int)v : 0;
        /* a test hook: behave as on a kernel without Landlock (tests/ol proves the fallback) */
        const char *off = getenv("OL_TEST_NO_LANDLOCK");
        if (off && *off && strcmp(off, "0") != 0) abi = 0;
    }
    return abi;
}

static uint64_t handled_fs(int abi) {
    uint64_t all = LL_ABI1_ALL;
    if (abi >= 2) all |= LL_REFER;
    if (abi >= 3) all |= LL_TRUNCATE;
    if (abi >= 5) all |= LL_IOCTL_DEV;
    return all;
}

static int add_rule(int ruleset, const char *path, uint64_t rights) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? 0 : -1;
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) rights &= LL_FILE_RIGHTS;
    struct ll_path_beneath_attr rule = {.allowed_access = rights, .parent_fd = fd};
    long rc = syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &rule, 0);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc == 0 ? 0 : -1;
}

int landlock_restrict(const strlist *read_trees, const strlist *write_trees) {
    int abi = landlock_abi();
    if (abi == 0) return 0; /* the caller has said so once */
    struct ll_ruleset_attr attr = {.handled_access_fs = handled_fs(abi)};
    size_t size = sizeof attr.handled_access_fs;
    if (abi >= 6) {
        attr.scoped = LL_SCOPE_SIGNAL | LL_SCOPE_ABSTRACT_UNIX_SOCKET;
        size = sizeof attr;
    }
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (ruleset < 0) {
        fprintf(stderr, "ol: cannot create a Landlock ruleset: %s\n", strerror(errno));
        return -1;
    }
    const uint64_t read = LL_EXECUTE | LL_READ_FILE | LL_READ_DIR, all = handled_fs(abi);
    for (int k = 0; k < 2; k++) {
        const strlist *l = k == 0 ? read_trees : write_trees;
        for (int i = 0; i < l->n; i++)
            if (add_rule(ruleset, l->v[i], k == 0 ? read : all) != 0) {
                fprintf(stderr, "ol: cannot let the test program reach %s: %s\n", l->v[i],
                        strerror(errno));
                close(ruleset);
                return -1;
            }
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
        fprintf(stderr, "ol: cannot sandbox the test program: %s\n", strerror(errno));
        close(ruleset);
        return -1;
    }
    close(ruleset);
    return 0;
}
