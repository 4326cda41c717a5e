/* The seccomp filter a test program takes into exec: what it refuses, and
 * that ordinary work (threads, fork, files, Unix and IP sockets) goes on.
 * Each test runs in its own process (CK_FORK=yes), so the filter stays there. */
#include <check.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ol/seccomp.h"

static void filtered(void) {
    if (!seccomp_available()) return;
    int listener;
    ck_assert_int_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
    ck_assert_int_eq(seccomp_install(false, false, &listener), 0);
    ck_assert_int_eq(listener, -1);
}

START_TEST(test_refuses_what_no_test_needs) {
    if (!seccomp_available()) return;
    filtered();
    errno = 0;
    ck_assert_int_eq(syscall(SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0), -1);
    ck_assert_int_eq(errno, EPERM);
    ck_assert_int_eq(unshare(CLONE_NEWUSER), -1);
    ck_assert_int_eq(errno, EPERM);
    ck_assert_int_eq(syscall(SYS_add_key, "user", "k", "v", 1, -4), -1);
    ck_assert_int_eq(errno, EPERM);
    ck_assert_int_eq(socket(40 /* AF_VSOCK */, SOCK_STREAM, 0), -1);
    ck_assert_int_eq(errno, EAFNOSUPPORT);
    ck_assert_int_eq(syscall(SYS_clone3, NULL, 0), -1);
    ck_assert_int_eq(errno, ENOSYS);
}
END_TEST

START_TEST(test_ordinary_work_goes_on) {
    if (!seccomp_available()) return;
    filtered();
    int s = socket(AF_INET, SOCK_STREAM, 0), u = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert(s >= 0 && u >= 0);
    close(s);
    close(u);
    pid_t pid = fork();
    if (pid == 0) _exit(7);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 7);
}
END_TEST

/* A debug run's filter (ol tests --gdb): a debugger may trace, the rest holds. */
START_TEST(test_a_debugger_may_trace_and_nothing_more) {
    if (!seccomp_available()) return;
    int listener;
    ck_assert_int_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
    ck_assert_int_eq(seccomp_install(false, true, &listener), 0);
    pid_t pid = fork();
    if (pid == 0) _exit(syscall(SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0) == 0 ? 0 : 1);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    errno = 0;
    ck_assert_int_eq(unshare(CLONE_NEWUSER), -1);
    ck_assert_int_eq(errno, EPERM);
    ck_assert_int_eq(syscall(SYS_add_key, "user", "k", "v", 1, -4), -1);
    ck_assert_int_eq(errno, EPERM);
}
END_TEST
