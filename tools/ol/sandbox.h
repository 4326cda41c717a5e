/* sandbox: what a test program may touch. Student tests (and the student's
 * code under the course tests) run where they cannot read the course's
 * reference, mutants or ol's caches, cannot write the workspace, the course
 * or a Gradescope results file, and cannot signal ol: Landlock (Linux 5.13+,
 * no privileges needed) allows the system's files, the fixtures, the run's
 * own scratch folder and /tmp, nothing else. Resource limits bound the
 * processes, CPU time, memory and file sizes a test may use. */
#ifndef OL_SANDBOX_H
#define OL_SANDBOX_H

#include <stdbool.h>
#include "util.h"

typedef struct sandbox {
    strlist read;         /* trees readable (and executable) beneath */
    strlist write;        /* trees also writable beneath */
    bool sealed;          /* false: a writable system tree holds the course or workspace */
    char *unsealed_by;    /* that tree ("/tmp"), for the note */
    /* resource limits (0: leave as inherited) */
    double cpu_seconds;   /* RLIMIT_CPU, per process */
    long long memory_bytes; /* RLIMIT_DATA: what it may allocate */
    long long file_bytes;   /* RLIMIT_FSIZE */
    int extra_tasks;      /* RLIMIT_NPROC: the user's tasks now, plus this many */
} sandbox;

/* Landlock's ABI version, 0 when the kernel (or a seccomp filter) has none
 * (or $OL_TEST_NO_LANDLOCK, a test hook, says so). */
int sandbox_abi(void);
/* Can tests be kept out of every path in keep_out? (Landlock, and no
 * writable system tree holding one of them.) */
bool sandbox_sealed(const strlist *keep_out);

/* The system's trees (read: /usr, /etc, /proc, ...; write: /tmp, /dev) minus
 * anything holding one of `keep_out` (the course root, the workspace): a
 * read-only tree that holds one is opened up entry by entry around it; a
 * writable one (a workspace under /tmp) is granted whole and the sandbox is
 * marked unsealed, since new files could not be created in it otherwise. */
void sandbox_system(sandbox *sb, const strlist *keep_out);
void sandbox_allow(sandbox *sb, const char *path, bool writable);
void sandbox_free(sandbox *sb);

/* In the child, between fork and exec: limits, then Landlock (when the
 * kernel has it). 0, or -1 with a message on stderr. */
int sandbox_enter(const sandbox *sb);

#endif
