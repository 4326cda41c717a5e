/* sandbox: what a program ol starts on the student's behalf may touch, and
 * the mechanisms that hold it there, each where the machine allows (they
 * are probed once, and ol says once what is missing):
 *  - a test program (run.c), and each run of ol milestone's tinyllm
 *    (milestone.c), runs jailed (jail.h): namespaces of its own, a
 *    file system holding only the system's files, the fixtures and its run
 *    folder, private /tmp, /var/tmp and /dev/shm, the usual devices, only a
 *    loopback network, and a PID 1 that takes every process of the run
 *    with it when the program ends;
 *  - in a control group (cgroup.h) limited to the lesson's memory;
 *  - as a user of its own when ol is root, so that it cannot read its
 *    program file (mode 0111) and RLIMIT_NPROC counts only the run's tasks;
 *  - Landlock (landlock.h) on the same trees, and seccomp (seccomp.h): no
 *    ptrace, no namespaces or mounts, no keyrings, no exec after its own;
 *  - resource limits on CPU time, memory, file sizes and tasks.
 * A compile of the student's files (build.c) gets Landlock and limits: it
 * reads the system, the contracts and the student's own files, and writes
 * only its scratch folder.
 * Without namespaces a test program gets Landlock on the system's trees,
 * the fixtures, its run folder and the machine's /tmp (which it then
 * shares with other runs): the README's "residual risks" say what that
 * leaves open. */
#ifndef OL_SANDBOX_H
#define OL_SANDBOX_H

#include <stdbool.h>
#include <sys/types.h>
#include "cgroup.h"
#include "jail.h"
#include "util.h"

typedef struct sandbox {
    strlist read;      /* trees readable (and executable) beneath */
    strlist write;     /* trees also writable beneath */
    bool sealed;       /* false: a writable system tree holds the course or workspace */
    char *unsealed_by; /* that tree ("/tmp"), for the note */
    /* resource limits (0: leave as inherited) */
    double cpu_seconds;     /* RLIMIT_CPU, per process */
    long long memory_bytes; /* per process (RLIMIT_DATA) or, in a control group, the whole run */
    long long file_bytes;   /* RLIMIT_FSIZE */
    int extra_tasks;        /* RLIMIT_NPROC: that many more tasks than the user has (as a
                             * user of its own, in all) */
    /* a test program: set by sandbox_test_program */
    bool test_program;
    char *program; /* its file: executable, not readable */
    uid_t uid;     /* ol is root: the test's own user and group (0: stay) */
    bool seccomp;  /* the filter, with exec only once */
    bool debugger; /* a debug run: the filter lets a debugger trace, and exec */
    jail jl;       /* jailed when jl.root is set */
    cgroup cg;     /* made by sandbox_test_program when the machine allows */
} sandbox;

/* The system's trees (read: /usr, /etc, /proc, ...; and, for a test program
 * that cannot be jailed, write: /tmp, /var/tmp, /dev) minus anything holding
 * one of `keep_out` (the course root, the workspace): a read-only tree that
 * holds one is opened up entry by entry around it; a writable one (a
 * workspace under /tmp) is granted whole and the sandbox is marked
 * unsealed, since new files could not be created in it otherwise. */
void sandbox_system(sandbox *sb, const strlist *keep_out, bool shared_tmp);
void sandbox_allow(sandbox *sb, const char *path, bool writable);
void sandbox_free(sandbox *sb);

/* Can tests be kept out of every path in keep_out? (Jailed, or Landlock
 * with no writable system tree holding one of them.) */
bool sandbox_sealed(const strlist *keep_out);
/* Will test programs be jailed here? */
bool sandbox_jails(void);
/* The mechanisms a test program gets here ("jail seccomp cgroup landlock-7"),
 * part of a run's cache key: a result depends on what a test could reach. */
char *sandbox_mode(const strlist *keep_out);

/* Makes sb (the trees already listed, `run_dir` among the writable ones)
 * the sandbox of the test program `program` started in `cwd`: a jail with
 * its own root under run_dir, a control group, its own user when ol is
 * root (the run folder is handed to it), the seccomp filter. -1 with a
 * message when the run folder cannot be prepared. */
int sandbox_test_program(sandbox *sb, const char *program, const char *run_dir, const char *cwd);
/* The same for a debug run (ol tests --gdb, --valgrind, --asan), which
 * grades nothing: the same jail, group, user and Landlock, but the program
 * stays readable (gdb reads its symbols), ptrace is allowed (in the jail it
 * reaches only the jail's processes) and exec is open (gdb and valgrind
 * start the program, ASan its symbolizer). */
int sandbox_debug_program(sandbox *sb, const char *program, const char *run_dir, const char *cwd);
/* After the run: did it run out of the lesson's memory (the control group
 * says so)? Then removes the group. */
bool sandbox_release(sandbox *sb);

/* In proc.c's parent: fork(), or jail_clone() for a jailed program. */
pid_t sandbox_fork(const sandbox *sb);
/* In the child, instead of exec: the limits, the user, Landlock, seccomp,
 * then argv; jailed, through the jail's PID 1, which writes the program's
 * wait status to status_fd. Never returns (exit 126 when the sandbox
 * cannot be set up, having said why on stderr). */
void sandbox_exec(const sandbox *sb, char **argv, int status_fd) __attribute__((noreturn));

/* What the sandbox cannot do on this machine, one line each, for the note
 * ol prints once (NULL entries end the list). */
void sandbox_gaps(strlist *out);

#endif
