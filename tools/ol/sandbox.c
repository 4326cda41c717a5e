#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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
#define LL_ABI1_ALL ((1ULL << 13) - 1) /* execute ... make_sym */
#define LL_REFER (1ULL << 13)          /* ABI 2 */
#define LL_TRUNCATE (1ULL << 14)       /* ABI 3 */
#define LL_IOCTL_DEV (1ULL << 15)      /* ABI 5 */
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

int sandbox_abi(void) {
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

bool sandbox_sealed(const strlist *keep_out) {
    if (sandbox_abi() == 0) return false;
    sandbox sb = {0};
    sandbox_system(&sb, keep_out);
    bool sealed = sb.sealed;
    sandbox_free(&sb);
    return sealed;
}

static uint64_t handled_fs(int abi) {
    uint64_t all = LL_ABI1_ALL;
    if (abi >= 2) all |= LL_REFER;
    if (abi >= 3) all |= LL_TRUNCATE;
    if (abi >= 5) all |= LL_IOCTL_DEV;
    return all;
}

/* ---- which trees ---- */

/* path is dir or lies beneath it */
static bool beneath(const char *path, const char *dir) {
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/') return true;
    return strncmp(path, dir, n) == 0 && (path[n] == 0 || path[n] == '/');
}

static void allow_around(sandbox *sb, const char *tree, const strlist *keep_out, bool writable) {
    char real[PATH_MAX];
    if (!realpath(tree, real)) return; /* not on this system */
    bool holds = false;
    for (int i = 0; i < keep_out->n; i++) {
        if (strcmp(keep_out->v[i], real) == 0) return; /* the tree is what stays out */
        if (beneath(keep_out->v[i], real)) holds = true;
    }
    if (!holds) {
        sl_push(writable ? &sb->write : &sb->read, real);
        return;
    }
    if (writable) {
        /* granting its entries one by one would forbid new files in it */
        sl_push(&sb->write, real);
        if (sb->sealed) {
            sb->sealed = false;
            free(sb->unsealed_by);
            sb->unsealed_by = xstrdup(real);
        }
        return;
    }
    DIR *d = opendir(real);
    if (!d) return;
    strlist names = {0};
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) sl_push(&names, e->d_name);
    closedir(d);
    for (int i = 0; i < names.n; i++) {
        char *child = path_join(real, names.v[i]);
        allow_around(sb, child, keep_out, false);
        free(child);
    }
    sl_free(&names);
}

void sandbox_system(sandbox *sb, const strlist *keep_out) {
    static const char *const READ[] = {"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc",
                                       "/opt", "/proc", "/sys", "/run", "/nix", "/gnu"};
    static const char *const WRITE[] = {"/tmp", "/var/tmp", "/dev"};
    sb->sealed = true;
    for (size_t i = 0; i < sizeof READ / sizeof *READ; i++) allow_around(sb, READ[i], keep_out, false);
    for (size_t i = 0; i < sizeof WRITE / sizeof *WRITE; i++) allow_around(sb, WRITE[i], keep_out, true);
}

void sandbox_allow(sandbox *sb, const char *path, bool writable) {
    sl_push(writable ? &sb->write : &sb->read, path);
}

void sandbox_free(sandbox *sb) {
    sl_free(&sb->read);
    sl_free(&sb->write);
    free(sb->unsealed_by);
    memset(sb, 0, sizeof *sb);
}

/* ---- in the child ---- */

/* The tasks (threads) the real user runs now: RLIMIT_NPROC counts them all. */
static long user_tasks(void) {
    DIR *d = opendir("/proc");
    if (!d) return 0;
    uid_t me = getuid();
    long total = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[300], line[256];
        snprintf(path, sizeof path, "/proc/%s/status", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        long uid = -1, threads = 1;
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "Uid:", 4) == 0) uid = strtol(line + 4, NULL, 10);
            else if (strncmp(line, "Threads:", 8) == 0) threads = strtol(line + 8, NULL, 10);
        }
        fclose(f);
        if (uid == (long)me) total += threads;
    }
    closedir(d);
    return total;
}

static void limit(int resource, rlim_t value) {
    struct rlimit now;
    if (getrlimit(resource, &now) != 0) return;
    /* never above what ol itself may use */
    if (now.rlim_max != RLIM_INFINITY && value > now.rlim_max) value = now.rlim_max;
    struct rlimit r = {value, value};
    setrlimit(resource, &r);
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

int sandbox_enter(const sandbox *sb) {
    if (sb->cpu_seconds > 0) {
        rlim_t cpu = (rlim_t)ceil(sb->cpu_seconds);
        struct rlimit r = {cpu, cpu + 5}; /* SIGXCPU, then SIGKILL */
        setrlimit(RLIMIT_CPU, &r);
    }
    /* data, not address space: thread stacks and malloc's arenas reserve
     * far more address space than they use */
    if (sb->memory_bytes > 0) limit(RLIMIT_DATA, (rlim_t)sb->memory_bytes);
    if (sb->file_bytes > 0) limit(RLIMIT_FSIZE, (rlim_t)sb->file_bytes);
    if (sb->extra_tasks > 0) limit(RLIMIT_NPROC, (rlim_t)(user_tasks() + sb->extra_tasks));
    limit(RLIMIT_CORE, 0);

    int abi = sandbox_abi();
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
        const strlist *l = k == 0 ? &sb->read : &sb->write;
        for (int i = 0; i < l->n; i++)
            if (add_rule(ruleset, l->v[i], k == 0 ? read : all) != 0) {
                fprintf(stderr, "ol: cannot let the test program reach %s: %s\n", l->v[i], strerror(errno));
                close(ruleset);
                return -1;
            }
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
        fprintf(stderr, "ol: cannot sandbox the test program: %s\n", strerror(errno));
        close(ruleset);
        return -1;
    }
    close(ruleset);
    return 0;
}
