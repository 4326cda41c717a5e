#include "seccomp.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#define X32_BIT 0x40000000U

/* The calls refused outright. Each is named only where the C library knows
 * it, so an older <sys/syscall.h> leaves out what it cannot spell. */
/* clang-format off */
static const long DENIED[] = {
    SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev, SYS_kcmp,
    SYS_add_key, SYS_request_key, SYS_keyctl,
    SYS_mount, SYS_umount2, SYS_pivot_root, SYS_chroot, SYS_unshare, SYS_setns,
    SYS_swapon, SYS_swapoff, SYS_reboot, SYS_kexec_load, SYS_init_module, SYS_finit_module,
    SYS_delete_module, SYS_acct, SYS_settimeofday, SYS_clock_settime, SYS_clock_adjtime,
    SYS_adjtimex, SYS_iopl, SYS_ioperm, SYS_syslog, SYS_quotactl, SYS_lookup_dcookie, SYS_vhangup,
    SYS_open_by_handle_at, SYS_name_to_handle_at, SYS_perf_event_open, SYS_bpf, SYS_userfaultfd,
    SYS_fanotify_init, SYS_uselib, SYS_personality,
#ifdef SYS_kexec_file_load
    SYS_kexec_file_load,
#endif
#ifdef SYS_io_uring_setup
    SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register,
#endif
#ifdef SYS_open_tree
    SYS_open_tree, SYS_move_mount, SYS_fsopen, SYS_fsconfig, SYS_fsmount, SYS_fspick,
#endif
#ifdef SYS_pidfd_getfd
    SYS_pidfd_getfd,
#endif
#ifdef SYS_mount_setattr
    SYS_mount_setattr,
#endif
#ifdef SYS_process_madvise
    SYS_process_madvise,
#endif
#ifdef SYS_quotactl_fd
    SYS_quotactl_fd,
#endif
};
/* clang-format on */

#define NS_FLAGS                                                                                   \
    (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET |     \
     CLONE_NEWCGROUP | 0x00000080 /* CLONE_NEWTIME */)

typedef struct {
    struct sock_filter v[160];
    int n;
} program;

static void op(program *p, uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
    p->v[p->n++] = (struct sock_filter){code, jt, jf, k};
}

static void ret(program *p, uint32_t what) { op(p, BPF_RET | BPF_K, what, 0, 0); }

/* if nr == call: return `what` (else fall through) */
static void on_call(program *p, long call, uint32_t what) {
    op(p, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)call, 0, 1);
    ret(p, what);
}

/* What a debugger needs that a test does not: tracing the processes it
 * starts (in the jail, only the jail's) and turning off address-space
 * randomisation. */
static bool tracing_call(long call) {
    return call == SYS_ptrace || call == SYS_process_vm_readv || call == SYS_process_vm_writev ||
           call == SYS_personality;
}

static void build(program *p, bool exec_once, bool tracing) {
    const uint32_t nr = offsetof(struct seccomp_data, nr),
                   arch = offsetof(struct seccomp_data, arch),
                   arg0 =
                       offsetof(struct seccomp_data, args[0]); /* its low 32 bits (little-endian) */
    const uint32_t eperm = SECCOMP_RET_ERRNO | EPERM;
    p->n = 0;
    op(p, BPF_LD | BPF_W | BPF_ABS, arch, 0, 0);
    op(p, BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
    ret(p, SECCOMP_RET_KILL_PROCESS); /* a 32-bit call: its numbers mean other calls */
    op(p, BPF_LD | BPF_W | BPF_ABS, nr, 0, 0);
    op(p, BPF_JMP | BPF_JGE | BPF_K, X32_BIT, 0, 1);
    ret(p, SECCOMP_RET_ERRNO | ENOSYS);
    for (size_t i = 0; i < sizeof DENIED / sizeof *DENIED; i++)
        if (!tracing || !tracing_call(DENIED[i])) on_call(p, DENIED[i], eperm);
        /* clone3 keeps its flags in memory a filter cannot read: ENOSYS makes
     * the C library fall back to clone, whose flags it can */
#ifdef SYS_clone3
    on_call(p, SYS_clone3, SECCOMP_RET_ERRNO | ENOSYS);
#endif
    /* clone: no new namespaces */
    op(p, BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4);
    op(p, BPF_LD | BPF_W | BPF_ABS, arg0, 0, 0);
    op(p, BPF_JMP | BPF_JSET | BPF_K, NS_FLAGS, 0, 1);
    ret(p, eperm);
    ret(p, SECCOMP_RET_ALLOW);
    /* socket and socketpair: Unix, IPv4, IPv6 and netlink only */
    for (int k = 0; k < 2; k++) {
        op(p, BPF_JMP | BPF_JEQ | BPF_K, k == 0 ? SYS_socket : SYS_socketpair, 0, 7);
        op(p, BPF_LD | BPF_W | BPF_ABS, arg0, 0, 0);
        op(p, BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 4, 0);
        op(p, BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 3, 0);
        op(p, BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 2, 0);
        op(p, BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 1, 0);
        ret(p, SECCOMP_RET_ERRNO | EAFNOSUPPORT);
        ret(p, SECCOMP_RET_ALLOW);
    }
    if (exec_once) {
        on_call(p, SYS_execve, SECCOMP_RET_USER_NOTIF);
        on_call(p, SYS_execveat, SECCOMP_RET_USER_NOTIF);
    }
    ret(p, SECCOMP_RET_ALLOW);
}

static long set_filter(unsigned flags, const program *p) {
    struct sock_fprog prog = {.len = (unsigned short)p->n, .filter = (struct sock_filter *)p->v};
    return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
}

int seccomp_install(bool exec_once, bool tracing, int *listener) {
    static program p; /* static: the child of a fork has little stack to spare */
    build(&p, exec_once, tracing);
    *listener = -1;
    long fd = set_filter(exec_once ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0, &p);
    if (fd < 0) return -1;
    if (exec_once) *listener = (int)fd;
    return 0;
}

bool seccomp_available(void) {
    static int known = -1;
    if (known >= 0) return known;
    const char *off = getenv("OL_TEST_NO_SECCOMP");
    if (off && *off && strcmp(off, "0") != 0) {
        known = 0;
        return false;
    }
    /* in a child: a filter cannot be taken off again. It must get a
     * listener, and the supervisor must be able to let a call continue. */
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int listener;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
            seccomp_install(true, false, &listener) != 0)
            _exit(1);
        struct seccomp_notif_sizes sizes;
        _exit(syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0 ? 0 : 1);
    }
    int status = 0;
    known =
        pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    return known;
}

int seccomp_answer(int listener, bool *exec_done) {
    struct seccomp_notif req;
    struct seccomp_notif_resp resp;
    memset(&req, 0, sizeof req);
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0)
        return errno == EINTR || errno == ENOENT ? 0 : -1;
    memset(&resp, 0, sizeof resp);
    resp.id = req.id;
    /* the first exec is ol's own: nothing of the test has run yet */
    if (!*exec_done) {
        *exec_done = true;
        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    } else {
        resp.error = -EPERM;
    }
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0 && errno != ENOENT) return -1;
    return 0;
}
