#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "landlock.h"
#include "seccomp.h"

/* A test's own user when ol is root: one of these, drawn per run (no
 * account has them; RLIMIT_NPROC then counts only that run's tasks). */
#define TEST_UID_FIRST 0x7a000000u
#define TEST_UID_COUNT 0x01000000u
/* The devices a test may open. */
static const char *const DEVICES[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
                                      "/dev/urandom"};

bool sandbox_jails(void) { return jail_available(NULL); }

char *sandbox_mode(const strlist *keep_out) {
    return xasprintf("%s%s%s landlock-%d%s", sandbox_jails() ? "jail" : "no-jail",
                     seccomp_available() ? " seccomp" : "", cgroup_available(NULL) ? " cgroup" : "",
                     landlock_abi(), sandbox_sealed(keep_out) ? " sealed" : " open");
}

bool sandbox_sealed(const strlist *keep_out) {
    if (sandbox_jails()) return true;
    if (landlock_abi() == 0) return false;
    sandbox sb = {0};
    sandbox_system(&sb, keep_out, true);
    bool sealed = sb.sealed;
    sandbox_free(&sb);
    return sealed;
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

void sandbox_system(sandbox *sb, const strlist *keep_out, bool shared_tmp) {
    /* not /run: its sockets (a container engine's, the system bus) are no test's business */
    static const char *const READ[] = {"/usr", "/lib",  "/lib32", "/lib64", "/libx32",
                                       "/bin", "/sbin", "/etc",   "/opt",   "/proc",
                                       "/sys", "/nix",  "/gnu"};
    static const char *const WRITE[] = {"/tmp", "/var/tmp", "/dev"};
    sb->sealed = true;
    for (size_t i = 0; i < sizeof READ / sizeof *READ; i++)
        allow_around(sb, READ[i], keep_out, false);
    for (size_t i = 0; shared_tmp && i < sizeof WRITE / sizeof *WRITE; i++)
        allow_around(sb, WRITE[i], keep_out, true);
}

void sandbox_allow(sandbox *sb, const char *path, bool writable) {
    /* by its real path: a jail mounts what a link leads to, not the link */
    char real[PATH_MAX];
    sl_push(writable ? &sb->write : &sb->read, realpath(path, real) ? real : path);
}

void sandbox_free(sandbox *sb) {
    sl_free(&sb->read);
    sl_free(&sb->write);
    free(sb->unsealed_by);
    free(sb->program);
    jail_free(&sb->jl);
    if (sb->cg.version) cgroup_destroy(&sb->cg);
    memset(sb, 0, sizeof *sb);
}

/* ---- a test program ---- */

/* Hands every folder beneath dir (dir too) to the test's user: it writes
 * its logs, coverage and scratch files there. Files ol placed stay ol's. */
static int give_folders(const char *dir, uid_t uid) {
    if (chown(dir, uid, uid) != 0) return -1;
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char *child = path_join(dir, e->d_name);
        struct stat st;
        if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode)) rc = give_folders(child, uid);
        free(child);
    }
    closedir(d);
    return rc;
}

static bool tests_run_as_root; /* for sandbox_gaps */

/* Unjailed, a user of its own must reach every tree through folders that
 * let anyone pass (a workspace under a 0700 folder does not). */
static bool reachable_by_anyone(const sandbox *sb) {
    for (int k = 0; k < 2; k++) {
        const strlist *l = k == 0 ? &sb->read : &sb->write;
        for (int i = 0; i < l->n; i++) {
            char *dir = path_dirname(l->v[i]);
            while (strcmp(dir, "/") != 0 && strcmp(dir, ".") != 0) {
                struct stat st;
                bool pass = stat(dir, &st) == 0 && (st.st_mode & S_IXOTH);
                char *up = path_dirname(dir);
                free(dir);
                dir = up;
                if (!pass) {
                    free(dir);
                    return false;
                }
            }
            free(dir);
        }
    }
    return true;
}

static int prepare_program(sandbox *sb, const char *program, const char *run_dir, const char *cwd,
                           bool debugger) {
    sb->test_program = true;
    sb->debugger = debugger;
    sb->program = xstrdup(program);
    sb->seccomp = seccomp_available();
    /* executable, not readable: a test cannot copy its own program out, nor disassemble it
     * (a debugger must read it: a debug run grades nothing) */
    if (chmod(program, debugger ? 0555 : 0111) != 0) {
        ol_error("cannot make %s execute-only: %s", program, strerror(errno));
        return -1;
    }
    bool own_user = geteuid() == 0 && (sandbox_jails() || reachable_by_anyone(sb));
    if (geteuid() == 0 && !own_user) tests_run_as_root = true;
    if (own_user) {
        uint32_t x = 0;
        if (getrandom(&x, sizeof x, 0) != (ssize_t)sizeof x) x = (uint32_t)getpid() * 2654435761u;
        sb->uid = (uid_t)(TEST_UID_FIRST + x % TEST_UID_COUNT);
        if (give_folders(run_dir, sb->uid) != 0) {
            ol_error("cannot hand the run folder %s to the test's user: %s", run_dir,
                     strerror(errno));
            return -1;
        }
    }
    if (sandbox_jails()) {
        jail *j = &sb->jl;
        j->root = path_join(run_dir, "root");
        j->cwd = xstrdup(cwd);
        /* each tmpfs may hold what the test may allocate (it counts against it in a group) */
        j->tmpfs_bytes = sb->memory_bytes > 0 ? sb->memory_bytes : 256LL << 20;
        if (mkdir(j->root, 0755) != 0) {
            ol_error("cannot make %s: %s", j->root, strerror(errno));
            return -1;
        }
        for (int i = 0; i < sb->read.n; i++)
            if (strcmp(sb->read.v[i], "/proc") != 0)
                jail_add(j, sb->read.v[i], JAIL_RO); /* its own, fresh */
        for (int i = 0; i < sb->write.n; i++) jail_add(j, sb->write.v[i], JAIL_RW);
        /* the system's trees are listed by their real paths: the links to
         * them (/lib64 -> usr/lib64, where the dynamic loader is) come too */
        static const char *const LINKS[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
        for (size_t i = 0; i < sizeof LINKS / sizeof *LINKS; i++) {
            struct stat st;
            if (lstat(LINKS[i], &st) == 0 && S_ISLNK(st.st_mode)) jail_add(j, LINKS[i], JAIL_RO);
        }
        jail_add(j, program, JAIL_RO); /* over itself: chmod fails, whoever owns it */
        jail_add(j, "/dev", JAIL_DEVDIR);
        for (size_t i = 0; i < sizeof DEVICES / sizeof *DEVICES; i++)
            jail_add(j, DEVICES[i], JAIL_DEV);
        static const char *const PRIVATE[] = {"/tmp", "/var/tmp", "/dev/shm"};
        for (size_t i = 0; i < sizeof PRIVATE / sizeof *PRIVATE; i++)
            jail_add(j, PRIVATE[i], JAIL_TMPFS);
        /* Landlock inside, on the same view */
        sl_push(&sb->write, "/tmp");
        sl_push(&sb->write, "/var/tmp");
        sl_push(&sb->write, "/dev");
        if (sb->memory_bytes > 0 && cgroup_available(NULL))
            cgroup_create(&sb->cg, sb->memory_bytes, sb->extra_tasks);
    }
    return 0;
}

int sandbox_test_program(sandbox *sb, const char *program, const char *run_dir, const char *cwd) {
    return prepare_program(sb, program, run_dir, cwd, false);
}

int sandbox_debug_program(sandbox *sb, const char *program, const char *run_dir, const char *cwd) {
    return prepare_program(sb, program, run_dir, cwd, true);
}

bool sandbox_release(sandbox *sb) {
    bool oom = cgroup_out_of_memory(&sb->cg);
    if (sb->cg.version) cgroup_destroy(&sb->cg);
    return oom;
}

pid_t sandbox_fork(const sandbox *sb) { return sb && sb->jl.root ? jail_clone() : fork(); }

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
            if (strncmp(line, "Uid:", 4) == 0)
                uid = strtol(line + 4, NULL, 10);
            else if (strncmp(line, "Threads:", 8) == 0)
                threads = strtol(line + 8, NULL, 10);
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

static int fail(const char *what) {
    fprintf(stderr, "ol: cannot %s for the test program: %s\n", what, strerror(errno));
    return -1;
}

/* Limits, the test's user, Landlock, seccomp: what the program's process
 * takes into exec. */
static int enter(const void *arg, int *listener) {
    const sandbox *sb = arg;
    *listener = -1;
    if (sb->cpu_seconds > 0) {
        rlim_t cpu = (rlim_t)ceil(sb->cpu_seconds);
        struct rlimit r = {cpu, cpu + 5}; /* SIGXCPU, then SIGKILL */
        setrlimit(RLIMIT_CPU, &r);
    }
    /* in a control group the group holds the run's memory; else each
     * process its data (not its address space: thread stacks and malloc's
     * arenas reserve far more than they use) */
    if (sb->memory_bytes > 0 && sb->cg.version == 0) limit(RLIMIT_DATA, (rlim_t)sb->memory_bytes);
    if (sb->file_bytes > 0) limit(RLIMIT_FSIZE, (rlim_t)sb->file_bytes);
    /* a user of its own (or a user namespace) starts with no tasks counted */
    bool counted_alone = sb->uid != 0 || (sb->jl.root && geteuid() != 0);
    if (sb->extra_tasks > 0)
        limit(RLIMIT_NPROC, (rlim_t)((counted_alone ? 0 : user_tasks()) + sb->extra_tasks));
    limit(RLIMIT_CORE, 0);
    if (sb->uid != 0) {
        if (setgroups(0, NULL) != 0 || setresgid(sb->uid, sb->uid, sb->uid) != 0 ||
            setresuid(sb->uid, sb->uid, sb->uid) != 0 || getuid() != sb->uid ||
            geteuid() != sb->uid)
            return fail("take the test's own user");
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail("forbid new privileges");
    if (landlock_restrict(&sb->read, &sb->write) != 0) return -1;
    /* exec once needs a supervisor: the jail's PID 1 */
    bool exec_once = sb->jl.root != NULL && !sb->debugger;
    if (sb->seccomp && seccomp_install(exec_once, sb->debugger, listener) != 0)
        return fail("install the seccomp filter");
    return 0;
}

void sandbox_exec(const sandbox *sb, char **argv, int status_fd) {
    if (sb->jl.root) {
        jail j = sb->jl;
        j.cg = sb->cg.version ? &sb->cg : NULL;
        jail_run(&j, argv, status_fd, enter, sb);
    }
    int listener;
    if (sb->cg.version && cgroup_join(&sb->cg) != 0) {
        fail("join the test's control group");
        _exit(126);
    }
    if (enter(sb, &listener) != 0) _exit(126);
    execvp(argv[0], argv);
    fprintf(stderr, "ol: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

void sandbox_gaps(strlist *out) {
    const char *why = NULL;
    if (!jail_available(&why))
        sl_push_owned(
            out,
            xasprintf("no namespaces (%s): tests share the machine's /tmp, /var/tmp and /dev/shm, "
                      "its network and its devices, and a process a test leaves behind outlives "
                      "its run",
                      why));
    else if (!cgroup_available(&why))
        sl_push_owned(
            out,
            xasprintf("no control groups (%s): memory is limited per process, not per run", why));
    if (landlock_abi() == 0)
        sl_push(out, "no Landlock (Linux 5.13 or later, enabled): without namespaces too, tests "
                     "could read the "
                     "course's reference and ol's caches; with them, they see only the jail");
    if (!seccomp_available())
        sl_push(out, "no seccomp supervisor (Linux 5.5): tests may ptrace, exec other programs and "
                     "use keyrings");
    if (geteuid() != 0 && !jail_available(NULL))
        sl_push(out, "ol is not root and has no namespaces: a test can read its own program file");
    if (tests_run_as_root)
        sl_push(out, "tests run as root: without namespaces, a user of their own could not reach "
                     "the workspace "
                     "(a folder above it lets only its owner in), so RLIMIT_NPROC does not hold "
                     "and the program "
                     "file is readable");
}
