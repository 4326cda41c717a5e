#include "jail.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "seccomp.h"
#include "util.h"

/* mount_setattr (Linux 5.12), spelled out for older headers */
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#define ATTR_RDONLY 0x00000001
#define ATTR_NOSUID 0x00000002
#define ATTR_NODEV 0x00000004
struct ol_mount_attr {
    uint64_t attr_set, attr_clr, propagation, userns_fd;
};
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

void jail_add(jail *j, const char *path, jail_kind kind) {
    j->m = xrealloc(j->m, (size_t)(j->n + 1) * sizeof *j->m);
    j->m[j->n++] = (jail_mount){xstrdup(path), kind};
}

void jail_free(jail *j) {
    for (int i = 0; i < j->n; i++) free(j->m[i].path);
    free(j->m);
    free(j->root);
    free(j->cwd);
    memset(j, 0, sizeof *j);
}

/* ---- namespaces ---- */

static uid_t outer_uid;
static gid_t outer_gid;

static int clone_flags(void) {
    int flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
    /* root needs no user namespace; anyone else does, to mount */
    if (geteuid() != 0) flags |= CLONE_NEWUSER;
    return flags;
}

pid_t jail_clone(void) {
    outer_uid = geteuid();
    outer_gid = getegid();
    /* fork's way: the child runs on a copy of this stack */
    return (pid_t)syscall(SYS_clone, (unsigned long)clone_flags() | SIGCHLD, NULL, NULL, NULL,
                          NULL);
}

static int write_proc(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* In a new user namespace: ol's user and group map to themselves, so files
 * keep their owners and the program runs unprivileged. */
static int map_ids(void) {
    if (!(clone_flags() & CLONE_NEWUSER)) return 0;
    char map[64];
    if (write_proc("/proc/self/setgroups", "deny") != 0) return -1;
    snprintf(map, sizeof map, "%u %u 1\n", (unsigned)outer_uid, (unsigned)outer_uid);
    if (write_proc("/proc/self/uid_map", map) != 0) return -1;
    snprintf(map, sizeof map, "%u %u 1\n", (unsigned)outer_gid, (unsigned)outer_gid);
    return write_proc("/proc/self/gid_map", map);
}

/* ---- the file system ---- */

static int fail(const char *what, const char *path) {
    fprintf(stderr, "ol: cannot %s %s in the test's sandbox: %s\n", what, path ? path : "",
            strerror(errno));
    return -1;
}

static int make_dirs(const char *path) {
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(buf, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

static int make_file(const char *path) {
    char *dir = path_dirname(path);
    int rc = make_dirs(dir);
    free(dir);
    if (rc != 0) return -1;
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    close(fd);
    return 0;
}

/* The flags a mount made from host_path must keep: a user namespace may
 * not lift what the host's mount sets (read-only, nosuid, nodev, noexec,
 * its atime rule). */
static unsigned long kept_flags(const char *host_path) {
    struct statvfs st;
    if (statvfs(host_path, &st) != 0) return 0;
    unsigned long f = 0;
    if (st.f_flag & ST_RDONLY) f |= MS_RDONLY;
    if (st.f_flag & ST_NOSUID) f |= MS_NOSUID;
    if (st.f_flag & ST_NODEV) f |= MS_NODEV;
    if (st.f_flag & ST_NOEXEC) f |= MS_NOEXEC;
    if (st.f_flag & ST_NOATIME) f |= MS_NOATIME;
    if (st.f_flag & ST_NODIRATIME) f |= MS_NODIRATIME;
    if (st.f_flag & ST_RELATIME) f |= MS_RELATIME;
    return f;
}

static int bind_path(const char *host, const char *target, bool writable, bool device) {
    struct stat st;
    if (lstat(host, &st) != 0) return errno == ENOENT ? 0 : fail("see", host);
    if (S_ISLNK(st.st_mode)) {
        /* /bin -> usr/bin and the like: the same link, inside */
        char to[PATH_MAX];
        ssize_t n = readlink(host, to, sizeof to - 1);
        char *dir = path_dirname(target);
        int rc = n < 0 || make_dirs(dir) != 0 ? -1 : 0;
        free(dir);
        if (rc == 0) {
            to[n] = 0;
            rc = symlink(to, target) == 0 || errno == EEXIST ? 0 : -1;
        }
        return rc == 0 ? 0 : fail("link", target);
    }
    if ((S_ISDIR(st.st_mode) ? make_dirs(target) : make_file(target)) != 0)
        return fail("make", target);
    if (mount(host, target, NULL, MS_BIND | MS_REC, NULL) != 0) return fail("bind", host);
    /* read-only (the whole tree, submounts too, where the kernel can), no
     * set-user-ID programs, devices only where asked for */
    unsigned long keep = kept_flags(host);
    unsigned long want = MS_NOSUID | (writable ? 0 : MS_RDONLY) | (device ? 0 : MS_NODEV);
    struct ol_mount_attr attr = {.attr_set = ATTR_NOSUID | (writable ? 0 : ATTR_RDONLY) |
                                             (device ? 0 : ATTR_NODEV)};
    if (syscall(SYS_mount_setattr, AT_FDCWD, target, AT_RECURSIVE, &attr, sizeof attr) == 0)
        return 0;
    /* before Linux 5.12: the top mount only */
    unsigned long flags = MS_REMOUNT | MS_BIND | keep | want;
    if (geteuid() == 0 && !(clone_flags() & CLONE_NEWUSER))
        flags = (flags & ~(MS_RELATIME | MS_NODIRATIME)) | MS_NOATIME;
    if (mount(NULL, target, NULL, flags, NULL) != 0 &&
        mount(NULL, target, NULL, MS_REMOUNT | MS_BIND | keep | want, NULL) != 0)
        return fail("make read-only", target);
    return 0;
}

static int tmpfs(const char *target, long long bytes, const char *mode) {
    char opts[128];
    snprintf(opts, sizeof opts, "size=%lld,nr_inodes=65536,mode=%s", bytes > 0 ? bytes : 64LL << 20,
             mode);
    if (make_dirs(target) != 0) return fail("make", target);
    if (mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0)
        return fail("mount a tmpfs on", target);
    return 0;
}

static int devdir(const char *target, long long bytes) {
    if (tmpfs(target, bytes, "0755") != 0) return -1;
    static const char *const LINKS[][2] = {{"fd", "/proc/self/fd"},
                                           {"stdin", "/proc/self/fd/0"},
                                           {"stdout", "/proc/self/fd/1"},
                                           {"stderr", "/proc/self/fd/2"}};
    for (size_t i = 0; i < sizeof LINKS / sizeof *LINKS; i++) {
        char *at = path_join(target, LINKS[i][0]);
        int rc = symlink(LINKS[i][1], at);
        free(at);
        if (rc != 0) return fail("link", LINKS[i][0]);
    }
    return 0;
}

static int by_path(const void *a, const void *b) {
    return strcmp(((const jail_mount *)a)->path, ((const jail_mount *)b)->path);
}

static int build_root(const jail *j) {
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return fail("make private", "/");
    if (tmpfs(j->root, 1 << 20, "0755") != 0) return -1;
    /* parents before what lies in them */
    jail_mount *m = xcalloc((size_t)j->n + 1, sizeof *m);
    memcpy(m, j->m, (size_t)j->n * sizeof *m);
    qsort(m, (size_t)j->n, sizeof *m, by_path);
    int rc = 0;
    for (int i = 0; i < j->n && rc == 0; i++) {
        char *target = xasprintf("%s%s", j->root, m[i].path);
        switch (m[i].kind) {
        case JAIL_RO: rc = bind_path(m[i].path, target, false, false); break;
        case JAIL_RW: rc = bind_path(m[i].path, target, true, false); break;
        case JAIL_DEV: rc = bind_path(m[i].path, target, true, true); break;
        case JAIL_TMPFS: rc = tmpfs(target, j->tmpfs_bytes, "1777"); break;
        case JAIL_DEVDIR: rc = devdir(target, 1 << 20); break;
        }
        free(target);
    }
    free(m);
    if (rc != 0) return -1;
    /* a /proc of this PID namespace: only the jail's processes; read-only
     * (no /proc/PID/mem writes, no sysctls), and only the processes' part
     * where the kernel can (subset=pid, Linux 5.8) */
    char *proc = path_join(j->root, "proc");
    unsigned long pflags = MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY;
    if (make_dirs(proc) != 0 || (mount("proc", proc, "proc", pflags, "subset=pid") != 0 &&
                                 mount("proc", proc, "proc", pflags, NULL) != 0)) {
        free(proc);
        return fail("mount", "/proc");
    }
    free(proc);
    /* the old root goes; the new one becomes read-only */
    if (chdir(j->root) != 0 || syscall(SYS_pivot_root, ".", ".") != 0)
        return fail("enter", j->root);
    if (umount2(".", MNT_DETACH) != 0 || chdir("/") != 0) return fail("leave", "the old root");
    if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) != 0)
        return fail("make read-only", "/");
    if (j->cwd && chdir(j->cwd) != 0) return fail("enter", j->cwd);
    return 0;
}

/* ---- the network: only lo, up ---- */

static int loopback_up(void) {
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) return fail("open a socket for", "lo");
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
    int rc = ioctl(s, SIOCGIFFLAGS, &ifr);
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (rc == 0) rc = ioctl(s, SIOCSIFFLAGS, &ifr);
    close(s);
    return rc == 0 ? 0 : fail("bring up", "lo");
}

/* ---- PID 1 ---- */

static int send_fd(int sock, int fd) {
    char byte = 0;
    struct iovec io = {&byte, 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } c;
    memset(&c, 0, sizeof c);
    struct msghdr msg = {
        .msg_iov = &io, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof c.buf};
    struct cmsghdr *h = CMSG_FIRSTHDR(&msg);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(h), &fd, sizeof fd);
    return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock) {
    char byte;
    struct iovec io = {&byte, 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } c;
    struct msghdr msg = {
        .msg_iov = &io, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof c.buf};
    if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1) return -1;
    struct cmsghdr *h = CMSG_FIRSTHDR(&msg);
    if (!h || h->cmsg_type != SCM_RIGHTS) return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(h), sizeof fd);
    return fd;
}

static void close_from(int first) {
    if (syscall(SYS_close_range, (unsigned)first, ~0U, 0) == 0) return;
    for (int fd = first; fd < 4096; fd++) close(fd);
}

/* The program's process: enter the sandbox, hand PID 1 the seccomp
 * listener, keep nothing of ol's open, exec. */
static void start_program(char **argv, int sock, jail_enter_fn enter, const void *arg) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int listener = -1;
    if (enter(arg, &listener) != 0) _exit(126);
    if (listener >= 0 && send_fd(sock, listener) != 0) {
        fail("hand over", "the seccomp listener");
        _exit(126);
    }
    close_from(3);
    execv(argv[0], argv);
    fprintf(stderr, "ol: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

void jail_run(const jail *j, char **argv, int status_fd, jail_enter_fn enter, const void *arg) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (map_ids() != 0) {
        fail("map the user in", "a user namespace");
        _exit(126);
    }
    if (j->cg && cgroup_join(j->cg) != 0) {
        fail("join", "the test's control group");
        _exit(126);
    }
    if (build_root(j) != 0 || loopback_up() != 0) _exit(126);
    if (sethostname("ol", 2) != 0) {
        fail("name", "the host");
        _exit(126);
    }
    int sock[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sock) != 0) {
        fail("make", "a socket pair");
        _exit(126);
    }
    /* nothing in the jail may read PID 1's memory (after map_ids: /proc/self would be root's) */
    prctl(PR_SET_DUMPABLE, 0);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int sfd = signalfd(-1, &chld, SFD_CLOEXEC);
    /* after the mask: a thread it starts must not take the program's SIGCHLD */
    if (j->serve && j->serve(j->serve_arg) != 0) _exit(126);
    pid_t pid = fork();
    if (pid < 0) {
        fail("start", argv[0]);
        _exit(126);
    }
    if (pid == 0) {
        close(sock[0]);
        start_program(argv, sock[1], enter, arg);
    }
    close(sock[1]);
    int listener = recv_fd(sock[0]); /* -1 without exec_once, or when the program failed first */
    close(sock[0]);
    bool exec_done = false;
    int status = 0;
    for (;;) {
        struct pollfd p[2] = {{sfd, POLLIN, 0}, {listener, POLLIN, 0}};
        int ready = poll(p, listener >= 0 ? 2 : 1, sfd >= 0 ? -1 : 20);
        if (ready < 0 && errno != EINTR) break;
        if (listener >= 0 && (p[1].revents & (POLLHUP | POLLERR))) {
            close(listener);
            listener = -1;
        } else if (listener >= 0 && (p[1].revents & POLLIN) &&
                   seccomp_answer(listener, &exec_done) != 0) {
            close(listener);
            listener = -1;
        }
        if (sfd >= 0 && (p[0].revents & POLLIN)) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof si) < 0) {
            }
        }
        /* PID 1 reaps every orphan of the jail */
        pid_t w;
        bool ended = false;
        int st;
        while ((w = waitpid(-1, &st, WNOHANG)) > 0)
            if (w == pid) {
                status = st;
                ended = true;
            }
        if (ended) break;
    }
    if (write(status_fd, &status, sizeof status) != (ssize_t)sizeof status) {
    }
    _exit(0);
}

/* ---- the probe ---- */

bool jail_available(const char **why) {
    static int known = -1;
    static char reason[256];
    if (known < 0) {
        const char *off = getenv("OL_TEST_NO_NAMESPACES");
        known = 0;
        if (off && *off && strcmp(off, "0") != 0) {
            snprintf(reason, sizeof reason, "OL_TEST_NO_NAMESPACES is set");
        } else {
            /* a throwaway PID 1 that mounts a tmpfs and a /proc, as jail_run will */
            int p[2];
            if (pipe2(p, O_CLOEXEC) != 0) p[0] = p[1] = -1;
            fflush(NULL);
            pid_t pid = jail_clone();
            if (pid == 0) {
                const char *step = "map the user";
                int rc = map_ids();
                if (rc == 0) {
                    step = "mount";
                    rc = mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
                                 mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
                                       "size=65536") == 0 &&
                                 mkdir("/tmp/proc", 0755) == 0 &&
                                 mount("proc", "/tmp/proc", "proc",
                                       MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, NULL) == 0
                             ? 0
                             : -1;
                }
                if (rc == 0) {
                    step = "bring up lo";
                    rc = loopback_up();
                }
                if (rc != 0 && p[1] >= 0) {
                    char msg[200];
                    int n = snprintf(msg, sizeof msg, "%s in new namespaces: %s", step,
                                     strerror(errno));
                    if (write(p[1], msg, (size_t)n) < 0) {
                    }
                }
                _exit(rc == 0 ? 0 : 1);
            }
            if (p[1] >= 0) close(p[1]);
            int status = 0;
            if (pid < 0) {
                snprintf(reason, sizeof reason,
                         "clone with new mount, PID, network, IPC and UTS namespaces%s: %s",
                         geteuid() != 0 ? " (and a user namespace)" : "", strerror(errno));
            } else if (waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
                       WEXITSTATUS(status) == 0) {
                known = 1;
            } else {
                ssize_t n = p[0] >= 0 ? read(p[0], reason, sizeof reason - 1) : -1;
                if (n <= 0)
                    snprintf(reason, sizeof reason, "the namespaces' first process failed");
                else
                    reason[n] = 0;
            }
            if (p[0] >= 0) close(p[0]);
        }
    }
    if (why) *why = reason;
    return known == 1;
}
