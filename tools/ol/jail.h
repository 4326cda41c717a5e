/* jail: a test program in namespaces of its own. Mount: a new root that
 * holds only what the sandbox lists (the system's files and the fixtures
 * read-only, the run's folder writable), fresh tmpfs at /tmp, /var/tmp and
 * /dev/shm, a /dev with only null, zero, full, random and urandom, and a
 * /proc of its own. PID: the jail's first process (ol's child, PID 1 in
 * there) starts the program and waits for it; when the program ends, so
 * does PID 1, and the kernel kills whatever else the test started (a
 * daemon cannot outlive its run). Network: only a loopback, brought up (a
 * fake Hub on 127.0.0.1 works; nothing else is reachable). IPC and UTS:
 * System V memory and the host name are the jail's own. When ol is not
 * root, a user namespace makes the rest possible (ol's user maps to itself,
 * so the program runs with no capabilities). PID 1 also answers the
 * seccomp filter's exec requests (seccomp.h). */
#ifndef OL_JAIL_H
#define OL_JAIL_H

#include <stdbool.h>
#include <sys/types.h>

struct cgroup;

typedef enum {
    JAIL_RO,    /* the host's path, bound read-only at the same path (a folder or a file) */
    JAIL_RW,    /* the host's path, bound writable at the same path */
    JAIL_TMPFS, /* a fresh private tmpfs (sticky, writable by anyone) */
    JAIL_DEV,   /* a device file of the host, bound at the same path */
    JAIL_DEVDIR /* /dev itself: an empty tmpfs, with fd, stdin, stdout and stderr links */
} jail_kind;

typedef struct {
    char *path;
    jail_kind kind;
} jail_mount;

typedef struct jail {
    jail_mount *m;
    int n;
    char *root;              /* an empty host folder; the new root is a tmpfs on it */
    char *cwd;               /* inside the jail */
    long long tmpfs_bytes;   /* the size of each tmpfs */
    const struct cgroup *cg; /* a group to join first, or NULL */
    /* PID 1 calls this once the view and the loopback are up, before the
     * program starts (a fake Hub on the jail's own 127.0.0.1: ol milestone's
     * pull); 0, or -1 having said why on stderr. NULL: nothing. */
    int (*serve)(void *arg);
    void *serve_arg;
} jail;

void jail_add(jail *j, const char *path, jail_kind kind);
void jail_free(jail *j);

/* Can ol make these namespaces here (and mount in them)? Probed once, in a
 * throwaway child; why says which step failed. $OL_TEST_NO_NAMESPACES, a
 * test hook, says no. */
bool jail_available(const char **why);

/* Like fork(), but the child is PID 1 of new namespaces. -1 with errno. */
pid_t jail_clone(void);

/* What the program's process does before exec (limits, Landlock, seccomp):
 * 0, or -1 having said why on stderr. *listener: the seccomp supervisor's
 * end, or -1. */
typedef int (*jail_enter_fn)(const void *arg, int *listener);

/* In jail_clone's child: builds the view, starts argv (an absolute path)
 * after enter(arg), answers its exec requests, and when it ends writes its
 * wait status (an int) to status_fd and exits, taking every process of
 * the jail with it. A setup failure says "ol: cannot ..." on stderr and
 * exits 126. Never returns. */
void jail_run(const jail *j, char **argv, int status_fd, jail_enter_fn enter, const void *arg)
    __attribute__((noreturn));

#endif
