/* seccomp: the system calls a test program may not make, as a seccomp-bpf
 * filter it takes with it into exec (and every process it starts inherits).
 * Refused with EPERM: ptrace and reading or writing another process's
 * memory, namespaces, mounts, keyrings (a store that outlives the run),
 * io_uring, bpf, perf, kernel modules, clocks and the like; socket families
 * other than Unix, IP and netlink (vsock, for one, leaves the machine);
 * any 32-bit or x32 system call (they would dodge the filter's numbers).
 * Exec: with exec_once, every execve is sent to a supervisor, which lets
 * the first through (ol's own exec of the test program) and refuses the
 * rest, so a test cannot run objdump, a shell or the dynamic loader. */
#ifndef OL_SECCOMP_H
#define OL_SECCOMP_H

#include <stdbool.h>
#include <sys/types.h>

/* Does this kernel have seccomp filters with a supervisor that can let a
 * call continue (Linux 5.5)? Probed once. $OL_TEST_NO_SECCOMP, a test hook,
 * says no. */
bool seccomp_available(void);

/* In the child, after PR_SET_NO_NEW_PRIVS: installs the filter. With
 * exec_once, *listener is the supervisor's end (to pass to it, then close
 * here); else -1. tracing (a debug run: gdb, valgrind, LeakSanitizer):
 * ptrace, process_vm_readv/writev and personality are allowed. 0, or -1
 * with errno. */
int seccomp_install(bool exec_once, bool tracing, int *listener);

/* In the supervisor: answers one pending notification on listener. The
 * first execve asked for is let through; every later one fails with EPERM.
 * 0, or -1 when the listener is gone (the filtered processes ended). */
int seccomp_answer(int listener, bool *exec_done);

#endif
