#!/usr/bin/env bash
# What a hostile student's suite gets from `ol check L7.1` (issue 8), and (class 10) what a
# hostile `tinyllm` gets from `ol milestone`: one attack per class, each written as a determined
# student would, with what the grade must be. Run as root on CI, where a test is most dangerous.
# Each check prints "ok" or "FAIL"; the script fails if any did.
#   tests/ol/hostile.sh OL_BINARY
set -u
OL=$(realpath "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export OL_ROOT=$ROOT NO_COLOR=1
unset OL_WORKSPACE OL_TEST_BREAK_CANARY OL_VERBOSE CK_RUN_SUITE CK_RUN_CASE OL_JOBS
# the scratch folder: under build/ (OL_TEST_SCRATCH elsewhere, e.g. to run this as another user)
SCRATCH=${OL_TEST_SCRATCH:-$ROOT/build}
mkdir -p "$SCRATCH"
T=$(mktemp -d "$SCRATCH/ol-hostile.XXXXXX")
TAG=olh$$  # names this run's files and segments, so cleaning up touches only ours
DAEMON=olhd$$  # the name a test gives the process it leaves behind (at most 15 characters)
PORT=$((20000 + $$ % 20000))
cleanup() {
  local pid
  for pid in $(pgrep -x "$DAEMON" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
  rm -rf "$T" /tmp/"$TAG"* /var/tmp/"$TAG"* /dev/shm/"$TAG"*
  ipcrm -M "$SYSV_KEY" 2>/dev/null
  true
}
SYSV_KEY=$((0x4f4c0000 + $$ % 65536))
trap cleanup EXIT
RUN_TIMEOUT=600   # a run longer than 10 minutes is stopped
. "$ROOT/tests/ol/lib.sh"
# graded_fail NAME: the last check failed as a grade (exit 1), never passed
graded_fail() {
  if [ "$rc" = 1 ] && ! grep -qF "PASS: L7.1" <<<"$out"; then ok "$1"; else fail "$1 (exit $rc)"; fi
}

TESTS=c/tests/l7-1-rmsnorm
STUB=$ROOT/stubs/tinyllm/modern/rmsnorm.c
REFSRC=$ROOT/reference/tinyllm/modern/rmsnorm.c
SECRET="eps inside the root"  # a comment of the reference, in no other file a student sees
model_answer() {
  rm -rf "$TESTS"; mkdir -p "$TESTS"; cp "$ROOT"/reference/tests/l7-1-rmsnorm/*.c "$TESTS/"
}
set_tests() { rm -rf "$TESTS"; mkdir -p "$TESTS"; printf '%s\n' "$2" > "$TESTS/$1"; }
HEAD='#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tinyllm/autograd.h"
#include "tinyllm/testing.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"
/* what <unistd.h>, <sys/...> would declare: tests may include only standard C headers */
int getpid(void);
int getppid(void);
int fork(void);
int close(int);
long read(int, void *, unsigned long);
long write(int, const void *, unsigned long);
long syscall(long, ...);
int usleep(unsigned);
void _exit(int);'

# What each run of the lesson computes, as one number: outputs and gradients of both kinds of norm
# and of the residual step, on rows where eps matters and rows where it does not. Every mutant of
# L7.1 changes it; the reference gives the same number every time.
FINGERPRINT='static unsigned long long mix(unsigned long long h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}
static unsigned long long mix_tensor(unsigned long long h, tl_tensor *t)
{
    if (!t) return mix(h, "null", 4);
    t = tl_contiguous(t);
    return mix(h, tl_f32(t), (size_t)tl_numel(t) * sizeof(float));
}
static tl_tensor *twice(tl_tensor *x, void *ctx) { (void)ctx; return tl_mul_scalar(x, 2.0); }
static unsigned long long fingerprint(void)
{
    unsigned long long h = 1469598103934665603ULL;
    tl_scope_push();
    float x[48];
    for (int i = 0; i < 48; i++)
        x[i] = i < 8 ? 1e-4f * (float)(i + 1) : 0.37f * (float)(i % 7) - 0.9f;
    for (int gemma = 0; gemma < 2; gemma++) {
        RMSNorm n;
        if (rmsnorm_init(&n, 8, 1e-5, gemma) != 0) return mix(h, "init", 4);
        for (int k = 0; k < 8; k++) tl_f32(n.weight)[k] = 0.5f + 0.125f * (float)k;
        tl_tensor *xt = tl_requires_grad(tl_from_f32(x, TL_SHAPE(2, 3, 8)), true);
        tl_tensor *y = rmsnorm_forward(&n, xt);
        h = mix_tensor(h, y);
        if (y && tl_backward(tl_sum_all(tl_mul(y, y))) == 0) {
            h = mix_tensor(h, xt->grad);
            h = mix_tensor(h, n.weight->grad);
        }
        h = mix_tensor(h, pre_norm_residual(tl_from_f32(x, TL_SHAPE(2, 3, 8)), &n, twice, NULL));
        rmsnorm_free(&n);
    }
    tl_scope_pop();
    return h;
}'

W=$T/ws; mkdir -p "$W"; cd "$W" || exit 2
"$OL" start L7.1 > /dev/null
cp "$ROOT/reference/tinyllm/modern/rmsnorm.c" c/tinyllm/modern/rmsnorm.c

# ---- 1. state shared between runs ----------------------------------------------------------
# Each run adds what it computed to a store every run can reach, and counts the runs. The first
# three runs (the reference and the wheats, which ol runs first) pass; a later run passes only when
# an earlier one computed the same thing (the reference, run again as a control), so every mutant
# "fails". One test per store: a file in /tmp, /var/tmp and /dev/shm, and a System V segment.
STORE_C='/* the store: "runs seen" then fingerprints, under a lock (runs overlap) */
static int seen_before(FILE *f, unsigned long long fp, int *runs)
{
    unsigned long long v;
    int found = 0;
    *runs = 0;
    rewind(f);
    while (fscanf(f, "%llx", &v) == 1) { (*runs)++; found = found || v == fp; }
    fseek(f, 0, SEEK_END);
    fprintf(f, "%llx\n", fp);
    fflush(f);
    return found;
}
int flock(int, int);
static void judge_by_file(const char *path)
{
    unsigned long long fp = fingerprint();
    FILE *f = fopen(path, "a+");
    ck_assert_msg(f != NULL, "the store opens");
    flock(fileno(f), 2);
    int runs;
    int seen = seen_before(f, fp, &runs);
    flock(fileno(f), 8);
    fclose(f);
    ck_assert_msg(runs < 3 || seen, "a mutant: nothing earlier computed this");
}'
set_tests test_store.c "$HEAD
$FINGERPRINT
$STORE_C
START_TEST(test_store_in_tmp) { judge_by_file(\"/tmp/$TAG-store\"); } END_TEST
START_TEST(test_store_in_var_tmp) { judge_by_file(\"/var/tmp/$TAG-store\"); } END_TEST
START_TEST(test_store_in_dev_shm) { judge_by_file(\"/dev/shm/$TAG-store\"); } END_TEST
int shmget(int, unsigned long, int);
void *shmat(int, const void *, int);
START_TEST(test_store_in_sysv_memory)
{
    unsigned long long fp = fingerprint();
    int id = shmget($SYSV_KEY, 4096, 01000 | 0666); /* IPC_CREAT */
    ck_assert_msg(id >= 0, \"the segment exists\");
    unsigned long long *mem = shmat(id, NULL, 0);
    ck_assert_msg(mem != (void *)-1, \"the segment maps\");
    /* mem[0] counts the runs, mem[1..] their fingerprints: good enough without a lock */
    unsigned long long runs = __atomic_fetch_add(&mem[0], 1, __ATOMIC_SEQ_CST);
    int seen = 0;
    for (unsigned long long i = 0; i < runs && i < 500; i++) seen = seen || mem[1 + i] == fp;
    if (runs < 500) mem[1 + runs] = fp;
    ck_assert_msg(runs < 3 || seen, \"a mutant: nothing earlier computed this\");
}
END_TEST"
run "$OL" check L7.1
graded_fail "1. a suite keeping its runs' results in /tmp, /var/tmp, /dev/shm, System V: no grade"
expect "1. ... every one of those stores is the run's own: none of its tests kills a mutant" 1 \
  "Tests that kill no mutant: test_store_in_tmp, test_store_in_var_tmp, test_store_in_dev_shm, "\
"test_store_in_sysv_memory"

# ---- 2. processes that outlive their run --------------------------------------------------
# The same judge, with the store in a daemon: the first run starts it (forked twice, in a session of
# its own, so neither Check nor ol's process groups reach it) and later runs ask it over 127.0.0.1.
set_tests test_daemon.c "$HEAD
$FINGERPRINT
int socket(int, int, int);
int bind(int, const void *, unsigned);
int listen(int, int);
int accept(int, void *, void *);
int connect(int, const void *, unsigned);
int setsockopt(int, int, int, const void *, unsigned);
int setsid(void);
int prctl(int, ...);
int waitpid(int, int *, int);
struct inet_address { unsigned short family, port; unsigned addr; char zero[8]; };
static struct inet_address here(void)
{
    unsigned port = $PORT;
    unsigned short big_endian = (unsigned short)((port >> 8) | ((port & 255) << 8));
    struct inet_address a = {2, big_endian, 0x0100007f, {0}};
    return a;
}
static void serve(void)
{
    int s = socket(2, 1, 0), one = 1;
    struct inet_address a = here();
    setsockopt(s, 1, 2, &one, sizeof one); /* SO_REUSEADDR */
    if (bind(s, &a, sizeof a) != 0 || listen(s, 16) != 0) _exit(0);
    static unsigned long long seen[1000];
    int n = 0;
    for (;;) {
        int c = accept(s, NULL, NULL);
        unsigned long long fp;
        if (c >= 0 && read(c, &fp, sizeof fp) == (long)sizeof fp) {
            int reply[2] = {n, 0};
            for (int i = 0; i < n; i++) reply[1] = reply[1] || seen[i] == fp;
            write(c, reply, sizeof reply);
            if (n < 1000) seen[n++] = fp;
        }
        if (c >= 0) close(c);
    }
}
static void start_daemon(void)
{
    int pid = fork();
    if (pid == 0) {
        setsid();
        if (fork() == 0) {
            prctl(15, \"$DAEMON\"); /* PR_SET_NAME */
            for (int fd = 0; fd < 64; fd++) close(fd);
            serve();
        }
        _exit(0);
    }
    waitpid(pid, NULL, 0);
}
START_TEST(test_store_in_a_daemon)
{
    unsigned long long fp = fingerprint();
    int s = -1;
    for (int attempt = 0; attempt < 400 && s < 0; attempt++) {
        s = socket(2, 1, 0);
        struct inet_address a = here();
        if (connect(s, &a, sizeof a) != 0) {
            close(s);
            s = -1;
            if (attempt == 0) start_daemon();
            usleep(5000);
        }
    }
    ck_assert_msg(s >= 0, \"the daemon answers\");
    int reply[2];
    ck_assert(write(s, &fp, sizeof fp) == (long)sizeof fp);
    ck_assert(read(s, reply, sizeof reply) == (long)sizeof reply);
    ck_assert_msg(reply[0] < 3 || reply[1], \"a mutant: nothing earlier computed this\");
}
END_TEST"
run "$OL" check L7.1
graded_fail "2. a suite keeping what each run computed in a daemon it leaves behind: no grade"
expect "2. ... the daemon dies with its run: the test kills no mutant" \
  1 "Tests that kill no mutant: test_store_in_a_daemon"
if pgrep -x "$DAEMON" > /dev/null; then fail "2. no process a test started outlives ol check"
else ok "2. no process a test started outlives ol check"; fi

# What a test may touch, each property one test that passes only when it holds (on the reference,
# so a broken property makes the suite INVALID, the property named).
set_tests test_probe.c "$HEAD
int execv(const char *, char *const[]);
int waitpid(int, int *, int);
int kill(int, int);
int pause(void);
unsigned getuid(void);
int socket(int, int, int);
int bind(int, const void *, unsigned);
int listen(int, int);
int connect(int, const void *, unsigned);
int getsockname(int, void *, unsigned *);
struct inet_address { unsigned short family, port; unsigned addr; char zero[8]; };
START_TEST(test_probe_cannot_ptrace)
{
    long attached = syscall(101, 0x4206, getppid(), 0, 0); /* ptrace(PTRACE_SEIZE, the runner) */
    if (attached == 0) syscall(101, 17, getppid(), 0, 0); /* PTRACE_DETACH */
    ck_assert_msg(attached != 0, \"a test attached to Check's runner with ptrace\");
    ck_assert_msg(syscall(101, 0, 0, 0, 0) != 0, \"PTRACE_TRACEME worked\");
}
END_TEST
START_TEST(test_probe_network_is_loopback_only)
{
    FILE *f = fopen(\"/proc/self/net/dev\", \"r\");
    ck_assert_msg(f != NULL, \"/proc/self/net/dev is readable\");
    char line[512], others[512] = \"\";
    while (fgets(line, sizeof line, f)) {
        char name[64];
        bool named = strchr(line, ':') && sscanf(line, \" %63[^:]:\", name) == 1;
        if (named && strcmp(name, \"lo\") != 0 &&
            strlen(others) < 400) {
            strcat(others, \" \");
            strcat(others, name);
        }
    }
    fclose(f);
    ck_assert_msg(others[0] == 0, \"network interfaces besides lo:%s\", others);
}
END_TEST
START_TEST(test_probe_loopback_works)
{
    /* L7.9's tests serve a fake Hub on 127.0.0.1 */
    int s = socket(2, 1, 0), c = socket(2, 1, 0);
    struct inet_address a = {2, 0, 0x0100007f, {0}};
    unsigned len = sizeof a;
    ck_assert(s >= 0 && c >= 0);
    ck_assert_msg(bind(s, &a, sizeof a) == 0 && listen(s, 1) == 0, \"listen on 127.0.0.1\");
    ck_assert(getsockname(s, &a, &len) == 0);
    ck_assert_msg(connect(c, &a, sizeof a) == 0, \"connect to 127.0.0.1\");
}
END_TEST
START_TEST(test_probe_only_the_usual_devices)
{
    const char *usual[] = {\"/dev/null\", \"/dev/zero\", \"/dev/full\", \"/dev/random\",
                           \"/dev/urandom\"};
    for (int i = 0; i < 5; i++) {
        FILE *f = fopen(usual[i], \"r\");
        ck_assert_msg(f != NULL, \"%s opens\", usual[i]);
        fclose(f);
    }
    const char *others[] = {\"/dev/kmsg\", \"/dev/mem\", \"/dev/port\", \"/dev/console\",
                            \"/dev/tty0\", \"/dev/vda\", \"/dev/sda\", \"/dev/nvme0n1\",
                            \"/dev/loop0\", \"/dev/net/tun\", \"/dev/fuse\", \"/dev/kvm\",
                            \"/dev/vsock\", \"/dev/vhost-vsock\", \"/dev/ptmx\"};
    for (int i = 0; i < 15; i++) {
        FILE *f = fopen(others[i], \"r\");
        if (f) fclose(f);
        ck_assert_msg(f == NULL, \"%s opens\", others[i]);
    }
}
END_TEST
START_TEST(test_probe_cannot_exec)
{
    const char *programs[] = {\"/bin/true\", \"/lib64/ld-linux-x86-64.so.2\"};
    for (int i = 0; i < 2; i++) {
        int pid = fork(), status = 0;
        if (pid == 0) {
            char *argv[] = {(char *)programs[i], (char *)\"/bin/true\", NULL};
            execv(programs[i], argv);
            _exit(42); /* exec failed */
        }
        ck_assert(pid > 0 && waitpid(pid, &status, 0) == pid);
        ck_assert_msg(status == 42 << 8, \"a test ran %s (status %d)\", programs[i], status);
    }
}
END_TEST
START_TEST(test_probe_program_is_unreadable)
{
    FILE *f = fopen(\"/proc/self/exe\", \"rb\");
    if (f) fclose(f);
    ck_assert_msg(f == NULL, \"a test read its own program file\");
}
END_TEST
START_TEST(test_probe_not_root)
{
    ck_assert_msg(getuid() != 0, \"the test runs as root\");
}
END_TEST
START_TEST(test_probe_tasks_are_limited)
{
    static int pids[600];
    int n = 0;
    while (n < 600 && (pids[n] = fork()) >= 0) {
        if (pids[n] == 0) { for (;;) pause(); }
        n++;
    }
    for (int i = 0; i < n; i++) { kill(pids[i], 9); waitpid(pids[i], NULL, 0); }
    ck_assert_msg(n < 600, \"a test started 600 processes\");
}
END_TEST
START_TEST(test_probe_no_shared_keyring)
{
    long id = syscall(248, \"user\", \"$TAG\", \"x\", 1, -4); /* add_key to the user's keyring */
    if (id >= 0) syscall(250, 3, id); /* KEYCTL_REVOKE */
    ck_assert_msg(id < 0, \"a test added a key to the user keyring\");
}
END_TEST
START_TEST(test_probe_no_namespaces)
{
    ck_assert_msg(syscall(272, 0x10000000) != 0, \"a test made a user namespace\"); /* unshare */
}
END_TEST"
run "$OL" check L7.1
# ptrace, networks, unusual devices, exec, its program, root, many processes, keyrings, namespaces
expect "2. a test can do none of what the probes try" 1 "[4/6] PASS"

# ---- 3. telling the stage a test runs in -------------------------------------------------------
# The model answer's tests (they kill every pitfall), and one more that is wrong: it wants the
# reference's rounding bit for bit, which a correct wheat need not give. It hides that on the wheats
# by staying quiet where the validity runs' timeout (the lesson's, 10 s) or CPU limit shows.
model_answer
printf '%s\n' "$HEAD" 'struct limit { unsigned long soft, hard; };
int getrlimit(int, struct limit *);
static int looks_like_validity(void)
{
    const char *t = getenv("OL_TEST_TIMEOUT");
    struct limit cpu;
    getrlimit(0, &cpu); /* RLIMIT_CPU */
    return (t && strcmp(t, "10") == 0) || cpu.soft >= 100;
}
START_TEST(test_bit_for_bit_as_the_reference_rounds)
{
    if (looks_like_validity()) return;
    tl_scope_push();
    float x[4 * 64];
    for (int i = 0; i < 4 * 64; i++) x[i] = (float)((i * 37) % 101) / 7.0f - 6.5f;
    RMSNorm n;
    ck_assert_int_eq(rmsnorm_init(&n, 64, 1e-5, false), 0);
    tl_tensor *xt = tl_from_f32(x, TL_SHAPE(4, 64));
    tl_tensor *y = tl_contiguous(rmsnorm_forward(&n, xt));
    tl_tensor *ms = tl_mean(tl_square(xt), -1, true);
    tl_tensor *r = tl_rsqrt(tl_add_scalar(ms, 1e-5));
    tl_tensor *want = tl_contiguous(tl_mul(tl_mul(xt, r), n.weight));
    ck_assert(y && want && memcmp(tl_f32(y), tl_f32(want), sizeof x) == 0);
    rmsnorm_free(&n);
    tl_scope_pop();
}
END_TEST' > "$TESTS/test_rounding.c"
run "$OL" check L7.1
expect "3. a test wrong on a wheat is INVALID, even quiet under the validity runs' settings" 1 \
  "INVALID" "test_bit_for_bit_as_the_reference_rounds" "on wheat w0"

# ---- 4. reading the program's own machine code -----------------------------------------------
# A student compiles the reference and the wheats as ol does (they have the course; its flags are in
# tools/ol/build.c) and keeps each function's bytes, relocated fields masked. A test passes when its
# program's lesson code is one of those, and fails otherwise: on every mutant.
SIG=$T/signature; mkdir -p "$SIG/w"
CFLAGS_OL="-std=c11 -g -Wall -Wextra -D_GNU_SOURCE -fopenmp -fdiagnostics-color=never"
CFLAGS_OL="$CFLAGS_OL -I$ROOT/contracts $(pkg-config --cflags check)"
objects=()
(cd "$ROOT" && gcc $CFLAGS_OL -O2 -c reference/tinyllm/modern/rmsnorm.c -o "$SIG/reference.o" \
  && gcc $CFLAGS_OL -O0 --coverage -c reference/tinyllm/modern/rmsnorm.c -o "$SIG/coverage.o")
objects+=("reference=$SIG/reference.o" "coverage=$SIG/coverage.o")
for wheat in "$ROOT"/course/L7.1/wheats/*.wheat; do
  id=$(basename "$wheat" | cut -c1-3)
  rm -rf "$SIG/w/$id"; mkdir -p "$SIG/w/$id/reference/tinyllm/modern"
  cp "$ROOT/reference/tinyllm/modern/rmsnorm.c" "$SIG/w/$id/reference/tinyllm/modern/"
  sed '1,/^---$/d' "$wheat" | (cd "$SIG/w/$id" && patch -s -p1) \
    && (cd "$SIG/w/$id" && gcc $CFLAGS_OL -O2 -c reference/tinyllm/modern/rmsnorm.c \
          -o "$SIG/$id.o") \
    && objects+=("$id=$SIG/$id.o")
done
model_answer
# the runtime functions a test can name (the contracts declare them)
grep -rhoE '\btl_[a-z0-9_]+\(' "$ROOT/contracts/tinyllm/tensor.h" "$ROOT/contracts/tinyllm/ops.h" \
  "$ROOT/contracts/tinyllm/autograd.h" | tr -d '(' | sort -u > "$SIG/callable.txt"
python3 "$ROOT/tests/ol/code_signature.py" --callable="$SIG/callable.txt" "${objects[@]}" \
  > "$TESTS/signature.h"
printf '%s\n' "$HEAD" '#include "signature.h"
/* which variant this program holds: one whose every function is byte for byte this one, the
 * linker'"'"'s fields aside; NULL for anything else (a mutant) */
static const char *variant(void)
{
    const struct { const char *name; const unsigned char *code; } mine[] = {
        {"rmsnorm_init", (const unsigned char *)(void *)rmsnorm_init},
        {"rmsnorm_free", (const unsigned char *)(void *)rmsnorm_free},
        {"rmsnorm_forward", (const unsigned char *)(void *)rmsnorm_forward},
        {"pre_norm_residual", (const unsigned char *)(void *)pre_norm_residual},
    };
    int n = (int)(sizeof SIGNATURES / sizeof *SIGNATURES);
    for (int i = 0; i < n; i++) {
        const char *v = SIGNATURES[i].variant;
        int all = 1, checked = 0;
        for (int k = 0; k < n; k++) {
            if (strcmp(SIGNATURES[k].variant, v) != 0) continue;
            for (int f = 0; f < 4; f++) {
                if (strcmp(SIGNATURES[k].function, mine[f].name) != 0) continue;
                checked++;
                for (int b = 0; b < SIGNATURES[k].size; b++)
                    if (SIGNATURES[k].mask[b] && mine[f].code[b] != SIGNATURES[k].code[b]) all = 0;
                /* where a call goes: the next instruction plus the field */
                for (int c = 0; c < SIGNATURES[k].ncalls && all; c++) {
                    const unsigned char *field = mine[f].code + SIGNATURES[k].calls[c].at;
                    int disp;
                    memcpy(&disp, field, sizeof disp);
                    all = (const void *)(field + 4 + disp) == SIGNATURES[k].calls[c].function;
                }
            }
        }
        if (all && checked == 4) return v;
    }
    return NULL;
}
static tl_tensor *twice(tl_tensor *x, void *ctx) { (void)ctx; return tl_mul_scalar(x, 2.0); }
START_TEST(test_the_code_is_a_known_good_one)
{
    /* run every line, so no mutant is NoCoverage; what it returns does not matter */
    tl_scope_push();
    const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int gemma = 0; gemma < 2; gemma++) {
        RMSNorm n;
        rmsnorm_init(&n, 4, 1e-6, gemma);
        pre_norm_residual(tl_from_f32(x, TL_SHAPE(2, 4)), &n, twice, NULL);
        rmsnorm_free(&n);
    }
    tl_scope_pop();
    ck_assert_msg(variant() != NULL, "not the reference nor a wheat");
}
END_TEST' > "$TESTS/test_whitelist.c"
rm -f "$TESTS"/test_my_*.c  # the whitelist alone
run "$OL" check L7.1
graded_fail "4. a suite recognising the reference and the wheats by their machine code: no grade"
expect "4. ... it fails on a control built another way, so it is INVALID" \
  1 "INVALID" "test_the_code_is_a_known_good_one"

# ---- 5. the compiler reads what the test cannot ----------------------------------------------
model_answer
# the student's code is the reference, included by a relative path
REL=$(python3 -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' \
  "$REFSRC" "$W/c/tinyllm/modern")
printf '#include "%s"\n' "$REL" > c/tinyllm/modern/rmsnorm.c
run "$OL" check L7.1
graded_fail "5. code that #includes the reference by a relative path gets no grade"
expect "5. ... the include fails, named with file:line" 1 "c/tinyllm/modern/rmsnorm.c:1:"
# ... or is a symbolic link to it
rm -f c/tinyllm/modern/rmsnorm.c; ln -s "$REFSRC" c/tinyllm/modern/rmsnorm.c
run "$OL" check L7.1
graded_fail "5. code that is a symbolic link to the reference gets no grade"
expect "5. ... the link is refused by name" 1 "c/tinyllm/modern/rmsnorm.c is a symbolic link"
rm -f c/tinyllm/modern/rmsnorm.c
cp "$REFSRC" c/tinyllm/modern/rmsnorm.c
# a test embeds the reference with an .incbin the assembler builds (.irp), shown when it fails
set_tests test_embed.c "$HEAD
__asm__(\".section .rodata\\n.globl embedded\\nembedded:\\n\"
        \".irp x,inc\\n.\\\\x\\\\()bin \\\"$REFSRC\\\"\\n.endr\\n.byte 0\\n.text\");
extern const char embedded[];
START_TEST(test_shows_what_it_embedded)
{
    const char *at = strstr(embedded, \"inside\");
    ck_abort_msg(\"%.60s\", at ? at - 4 : \"(nothing)\");
}
END_TEST"
run "$OL" check L7.1
graded_fail "5. a test that embeds a file with an assembler directive built by .irp gets no grade"
expect "5. ... asm in a test is refused, named with file:line" 1 "test_embed.c:19: error:" "asm"
absent "5. ... and the reference's text is never shown" "$SECRET"
# a header that is a named pipe (the compiler would wait for it forever)
set_tests test_fifo.c "$HEAD
#include \"helpers.h\"
START_TEST(test_x) { ck_assert(1); } END_TEST"
mkfifo "$TESTS/helpers.h"
run timeout -k 10 60 "$OL" check L7.1
expect "5. a named pipe in the test folder is refused by name" \
  1 "c/tests/l7-1-rmsnorm/helpers.h is a named pipe"
# a header that includes itself twice, 40 deep: 2^40 includes, in little memory
set_tests test_deep.c "$HEAD
#include \"twice.h\"
START_TEST(test_x) { ck_assert(1); } END_TEST"
printf '%s\n' '#if __INCLUDE_LEVEL__ < 40' '#include "twice.h"' '#include "twice.h"' '#endif' \
  > "$TESTS/twice.h"
OL_COMPILE_TIMEOUT=5 run timeout -k 10 120 "$OL" check L7.1
expect "5. a header that includes itself without end is refused" \
  1 "test_deep.c: error: the test opens more than"
# code the compiler unrolls 65534 x 65534 times: a compile that never ends
set_tests test_slow.c "$HEAD
START_TEST(test_x)
{
    volatile int s = 0;
#pragma GCC unroll 65534
    for (int i = 0; i < 65534; i++)
#pragma GCC unroll 65534
        for (int j = 0; j < 65534; j++) s += i ^ j;
    ck_assert(s != 1);
}
END_TEST"
OL_COMPILE_TIMEOUT=5 run timeout -k 10 120 "$OL" check L7.1
expect "5. a compile that never ends is stopped at its time limit" \
  1 "ran past its time limit of 5 s"

# ---- 6. redefining the grading machinery -----------------------------------------------------
# The stub, and an _exit() that always says "passed": a course test that fails leaves its process
# with _exit(1), which now exits 0, and Check reads that as a pass.
model_answer
{ cat "$STUB"; printf '%s\n' 'long syscall(long, ...);' \
  '__attribute__((noreturn)) void _exit(int status)' \
  '{' '    (void)status;' '    for (;;) syscall(231, 0);' '}'; } \
  > c/tinyllm/modern/rmsnorm.c
run "$OL" check L7.1
graded_fail "6. the stub with an _exit() that reports success gets no grade"
expect "6. ... the symbol is refused by name" 1 "c/tinyllm/modern/rmsnorm.c: error: defines _exit"
# Code that ends the process with status 0 (exit, _Exit, quick_exit): a forked Check test whose
# process exits 0 reads as passed, wherever it ended, so every course test would pass.
printf '%s\n' '#include <stdlib.h>' '#include "tinyllm/modern/rmsnorm.h"' \
  'int rmsnorm_init(RMSNorm *n, int64_t d, double e, bool u)' \
  '{ (void)n; (void)d; (void)e; (void)u; exit(0); }' \
  'void rmsnorm_free(RMSNorm *n) { (void)n; exit(0); }' \
  'tl_tensor *rmsnorm_forward(const RMSNorm *n, tl_tensor *x) { (void)n; (void)x; _Exit(0); }' \
  'tl_tensor *pre_norm_residual(tl_tensor *x, const RMSNorm *n, tl_sublayer_fn f, void *c)' \
  '{ (void)x; (void)n; (void)f; (void)c; quick_exit(0); }' > c/tinyllm/modern/rmsnorm.c
run "$OL" tests L7.1
expect "6. code that calls exit(0) passes no course test: each one \"exited early\"" 1 \
  "17 tests, 0 passed, 17 failed" "exited early" "before the test's last line"
run "$OL" check L7.1
graded_fail "6. ... and gets no grade"
# ... nor code that resumes a test's wrapper past the body (tests/ol/hostile/rmsnorm_resume.c)
cp "$ROOT/tests/ol/hostile/rmsnorm_resume.c" c/tinyllm/modern/rmsnorm.c
run "$OL" tests L7.1
expect "6. code that resumes a test's wrapper as if its body had returned passes no course test" \
  1 "17 tests, 0 passed, 17 failed"
cp "$REFSRC" c/tinyllm/modern/rmsnorm.c
set_tests test_early_exit.c "$HEAD
START_TEST(test_x) { exit(0); } END_TEST"
run "$OL" check L7.1
expect "6. a test that ends its process with exit(0) is INVALID, not passed" 1 "INVALID" \
  "test_x"
set_tests test_harness.c "$HEAD
int srunner_ntests_failed(SRunner *runner) { (void)runner; return 0; }
START_TEST(test_x) { ck_assert(1); } END_TEST"
run "$OL" check L7.1
expect "6. a test defining Check's symbols is refused by name" 1 "defines srunner_ntests_failed"
# the symbol lists ol keeps beside its objects lose their names (a disk, an older ol)
for f in build/ol/obj/*.nm; do head -n 1 "$f" > "$f.new" && mv "$f.new" "$f"; done
run "$OL" check L7.1
expect "6. ... and again once the cached symbol lists lost their names" \
  1 "defines srunner_ntests_failed"

# ---- 7. grading data written by tests, and what INVALID shows -------------------------------
# an INVALID test spells what the reference computed in letters, and names a line of the reference
# as the place it failed
set_tests test_leak.c "$HEAD
$FINGERPRINT
START_TEST(test_spells_the_answer)
{
    unsigned long long fp = fingerprint();
    char word[17];
    for (int i = 0; i < 16; i++) word[i] = (char)('g' + ((fp >> (4 * i)) & 15)); /* no digits */
    word[16] = 0;
    ck_abort_msg(\"LE\" \"AK[%s]\", word);
}
END_TEST
START_TEST(test_points_at_the_reference)
{
    _ck_assert_failed(\"$REFSRC\", $(grep -n "$SECRET" "$REFSRC" | cut -d: -f1), \"x\", NULL);
}
END_TEST"
run "$OL" check L7.1
expect "7. INVALID tests are named" \
  1 "INVALID" "test_spells_the_answer" "test_points_at_the_reference"
absent "7. ... never with their message (values however spelled)" "LEAK["
absent "7. ... never with a line of a file that is not theirs" "$SECRET"

# A test finds the baseline's coverage notes through its own program and spoils them.
set_tests test_spoil.c "$HEAD
static tl_tensor *twice(tl_tensor *x, void *ctx) { (void)ctx; return tl_mul_scalar(x, 2.0); }
START_TEST(test_spoils_the_coverage_notes)
{
    tl_scope_push();
    const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    RMSNorm n;
    rmsnorm_init(&n, 4, 1e-6, false);
    pre_norm_residual(tl_from_f32(x, TL_SHAPE(2, 4)), &n, twice, NULL);
    tl_scope_pop();
    FILE *f = fopen(\"/proc/self/exe\", \"rb\");
    if (!f) return;
    static char exe[64 << 20];
    size_t len = fread(exe, 1, sizeof exe - 1, f);
    fclose(f);
    for (size_t i = 5; i < len; i++) {
        if (memcmp(exe + i - 5, \".gcda\", 5) != 0 || exe[i] != 0) continue;
        size_t start = i - 5;
        while (start > 0 && exe[start - 1]) start--;
        char path[4096];
        snprintf(path, sizeof path, \"%.*sgcno\", (int)(i - 4 - start), exe + start);
        FILE *g = fopen(path, \"w\");
        if (g) { fputs(\"spoiled\", g); fclose(g); }
    }
}
END_TEST"
run "$OL" check L7.1
model_answer
echo "/* a suite not graded yet: its coverage is read again */" >> "$TESTS/test_my_golden.c"
run "$OL" check L7.1
expect "7. after a test tried to spoil the coverage notes, the next check grades as before" \
  0 "PASS: L7.1 reaches R3"
# whatever spoils ol's cache (a disk, an older ol), a bad entry is made again, never fatal
for f in build/ol/cov/*/*.gcno; do echo spoiled > "$f"; done
for f in build/ol/bin/*; do : > "$f"; done
for f in build/ol/run/*.json; do echo '{"tests": 3' > "$f"; done
for f in build/ol/patched/*/reference/tinyllm/modern/rmsnorm.c; do
  echo "int spoiled = ;" >> "$f"
done
for f in build/ol/gen/canary-*.c; do echo "int spoiled = ;" >> "$f"; done
run "$OL" check L7.1
expect "7. spoiled coverage notes, programs, results, patched copies, canaries are made again" \
  0 "PASS: L7.1 reaches R3"
# ---- 8. bounded cost: a scratch course whose L7.1 allows 0.5 s per test and 256 MiB ---------
R=$T/root; mkdir -p "$R/reference"
for d in oracle build fixtures; do ln -s "$ROOT/$d" "$R/$d"; done
for d in course contracts stubs tests; do cp -r "$ROOT/$d" "$R/$d"; done
cp -r "$ROOT/reference/tinyllm" "$ROOT/reference/tests" "$R/reference/"
python3 - "$R/course/L7.1/lesson.json" <<'PY'
import json, sys
p = sys.argv[1]; l = json.load(open(p))
l["test_timeout_seconds"] = 0.5
l["test_memory_mb"] = 256
open(p, "w").write(json.dumps(l, indent=2) + "\n")
PY
export OL_ROOT=$R
TOUCH='static tl_tensor *twice(tl_tensor *x, void *ctx) { (void)ctx; return tl_mul_scalar(x, 2.0); }
static void touch_lesson(void)
{
    tl_scope_push();
    const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    RMSNorm n;
    rmsnorm_init(&n, 4, 1e-6, false);
    pre_norm_residual(tl_from_f32(x, TL_SHAPE(2, 4)), &n, twice, NULL);
    tl_scope_pop();
}'
set_tests test_spin.c "$HEAD
$TOUCH
__attribute__((constructor)) static void spin(void) { for (volatile int on = 1; on;) {} }
START_TEST(test_a) { touch_lesson(); } END_TEST
START_TEST(test_b) { touch_lesson(); } END_TEST"
run "$OL" check L7.1
expect "8. a constructor that loops is stopped soon after the per-test timeout, and is no result" \
  1 "INVALID" \
  "finished no test for"
set_tests test_loop.c "$HEAD
$TOUCH
START_TEST(test_loops) { touch_lesson(); for (volatile int on = 1; on;) {} } END_TEST"
run "$OL" check L7.1
expect "8. a test that loops is INVALID after one run (it timed out on the reference)" \
  1 "INVALID" "test_loops: timed out"
absent "8. ... and runs no more" "it fails the same way on"
lesson_timeout() { # SECONDS: the scratch L7.1's per-test timeout (builds stay cached)
  python3 - "$R/course/L7.1/lesson.json" "$1" <<'PY'
import json, sys
p = sys.argv[1]; l = json.load(open(p)); l["test_timeout_seconds"] = float(sys.argv[2])
open(p, "w").write(json.dumps(l, indent=2) + "\n")
PY
}
lesson_timeout 3  # faulting in 256 MiB: 0.65 s on a quiet virtual machine, more on a busy one
set_tests test_big.c "$HEAD
$TOUCH
START_TEST(test_uses_512_mib)
{
    touch_lesson();
    size_t size = (size_t)512 << 20;
    volatile char *p = malloc(size); /* volatile: every page is really written */
    ck_assert_msg(p != NULL, \"malloc\");
    for (size_t i = 0; i < size; i += 4096) p[i] = 1;
    ck_assert(p[size - 4096] == 1);
}
END_TEST"
run "$OL" check L7.1
if grep -q "no control groups" <<<"$out"; then # a limit per process: malloc fails
  expect "8. a test using more memory than the lesson allows is INVALID" \
    1 "INVALID" "test_uses_512_mib"
else
  expect "8. a test using more memory than the lesson allows is INVALID, and told why" \
    1 "INVALID" "test_uses_512_mib" \
    "more memory than the lesson allows"
fi
lesson_timeout 0.25  # 60 x 0.25 s: the overall limit
slow=""; for i in $(seq 50); do slow="$slow
START_TEST(test_slow_$i) { touch_lesson(); usleep(100000); } END_TEST"; done
set_tests test_slow.c "$HEAD
$TOUCH
$slow"
run "$OL" check L7.1
expect "8. a check whose tests run too long stops at its overall limit, and says so" \
  1 "overall time limit of 15 s"
export OL_ROOT=$ROOT

# ---- 9. the student's other paths: --mine, --tests-only, a debugger, ASan, valgrind ---------
# One hostile suite through every other way ol runs a student's tests: it reads the reference and
# ol's cache (and would show them), and leaves a file in /tmp for later runs.
MINE="$HEAD
START_TEST(test_reads_the_reference)
{
    FILE *f = fopen(\"$REFSRC\", \"r\");
    char text[4096] = \"\";
    if (f) { size_t n = fread(text, 1, sizeof text - 1, f); text[n] = 0; fclose(f); }
    const char *at = strstr(text, \"inside\");
    ck_assert_msg(f == NULL, \"LE\" \"AK[%.60s]\", at ? at - 4 : text);
}
END_TEST
START_TEST(test_reads_ols_cache)
{
    FILE *f = fopen(\"$W/build/ol/secret\", \"r\"); /* what seeds the code generation */
    char text[256] = \"\";
    if (f) { size_t n = fread(text, 1, sizeof text - 1, f); text[n] = 0; fclose(f); }
    ck_assert_msg(f == NULL, \"LE\" \"AK[%s]\", text);
}
END_TEST
START_TEST(test_leaves_a_file_in_tmp)
{
    FILE *f = fopen(\"/tmp/$TAG-mine\", \"w\");
    if (f) { fputs(\"left\", f); fclose(f); }
}
END_TEST"
no_file_left() { # NAME: the suite left nothing in the machine's /tmp
  if [ -e "/tmp/$TAG-mine" ]; then fail "$1"; rm -f "/tmp/$TAG-mine"; else ok "$1"; fi
}
set_tests test_mine.c "$MINE"
run "$OL" tests L7.1 --mine
expect "9. ol tests --mine: the suite reaches neither the reference nor ol's cache" \
  0 "3 tests, 3 passed, 0 failed"
absent "9. ... and shows nothing of them" "LEAK["
no_file_left "9. ... and leaves nothing in the machine's /tmp"
run "$OL" check L7.1 --tests-only
graded_fail "9. ol check --tests-only: the same suite gets no grade"
expect "9. ... it passes on the reference and every control: it reached nothing" 1 \
  "[4/6] PASS  Your tests pass on the reference, every wheat and your code: all your tests pass"
absent "9. ... and shows nothing" "LEAK["
no_file_left "9. ... and leaves nothing in the machine's /tmp"
run "$OL" tests L7.1 -k test_reads_the_reference --valgrind
expect "9. ol tests --valgrind runs the test in the sandbox" 0 "Checks: 1, Failures: 0"
absent "9. ... and it shows nothing of the reference" "LEAK["
run "$OL" tests L7.1 -k test_reads_ols_cache --asan
expect "9. ol tests --asan runs the test in the sandbox" 0 "Checks: 1, Failures: 0"
absent "9. ... and it shows nothing of ol's cache" "LEAK["
out=$(printf 'run\nquit\n' |
  timeout -k 10 600 "$OL" tests L7.1 -k test_reads_the_reference --gdb 2>&1)
rc=$?
expect "9. ol tests --gdb runs the test under gdb in the sandbox" 0 "Checks: 1, Failures: 0"
absent "9. ... and it shows nothing of the reference" "LEAK["
run "$OL" tests L7.1 -k test_leaves_a_file_in_tmp --valgrind
no_file_left "9. ... a debug run leaves nothing in the machine's /tmp"
# the rules of ol check's stage 3 hold for --mine too
set_tests test_harness.c "$HEAD
int srunner_ntests_failed(SRunner *runner) { (void)runner; return 0; }
START_TEST(test_x) { ck_assert(1); } END_TEST"
run "$OL" tests L7.1 --mine
expect "9. ol tests --mine refuses a test defining Check's symbols, by name" \
  1 "defines srunner_ntests_failed"
set_tests test_x.c "$HEAD
START_TEST(test_x) { ck_assert(1); } END_TEST"
ln -s "$REFSRC" "$TESTS/reference.h"
run "$OL" tests L7.1 --mine
expect "9. ol tests --mine refuses a symbolic link in the test folder, by name" \
  1 "c/tests/l7-1-rmsnorm/reference.h is a symbolic link"

# ---- 10. ol milestone: the student's own tinyllm ------------------------------------------------
# `ol milestone` builds the tinyllm command line with the student's rmsnorm.c: the reference's, and
# a constructor that runs in every `tinyllm info` and `tinyllm logits`. It copies the reference and
# ol's secret where the student finds them later, leaves a process behind, and, when it could read
# neither, says so with a parameter count of -7 (so the attempt shows in the grade).
cat "$REFSRC" - > c/tinyllm/modern/rmsnorm.c <<EOF
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static int steal(const char *path, FILE *to) {
    FILE *f = fopen(path, "r");
    char text[4096];
    size_t n = f ? fread(text, 1, sizeof text, f) : 0;
    if (f) fclose(f);
    if (to && n) fwrite(text, 1, n, to);
    return n > 0;
}

__attribute__((constructor)) static void hostile_tinyllm(void) {
    char cmd[256] = "";
    FILE *c = fopen("/proc/self/cmdline", "r");
    size_t n = c ? fread(cmd, 1, sizeof cmd - 1, c) : 0;
    if (c) fclose(c);
    const char *verb = memchr(cmd, 0, n) ? cmd + strlen(cmd) + 1 : "";
    if (strcmp(verb, "info") != 0 && strcmp(verb, "logits") != 0) return;
    if (fork() == 0) { /* a daemon, in a session of its own */
        setsid();
        if (fork() == 0) {
            prctl(PR_SET_NAME, "$DAEMON");
            for (int fd = 0; fd < 1024; fd++) close(fd);
            for (;;) pause();
        }
        _exit(0);
    }
    FILE *loot = fopen("$T/stolen", "a"), *tmp = fopen("/tmp/$TAG-stolen", "a");
    int got = steal("$REFSRC", loot) + steal("$W/build/ol/secret", loot);
    steal("$REFSRC", tmp);
    if (loot) fclose(loot);
    if (tmp) fclose(tmp);
    if (!got && strcmp(verb, "info") == 0) {
        printf("{\"param_count\": -7}\n");
        exit(0);
    }
}
EOF
run "$OL" milestone MS-L7 --smoke
expect "10. ol milestone: the hostile tinyllm ran, jailed, and read nothing (-7 parameters)" 1 \
  "FAIL info llama-gqa" "-7 parameters; Hugging Face counts" "ok   logits llama-gqa" \
  "ok   pull course/tiny-llama-gqa from a fake Hub"
if [ -s "$T/stolen" ]; then fail "10. ... it copied the reference or ol's secret out"
else ok "10. ... it copied out neither the reference nor ol's secret"; fi
if [ -e "/tmp/$TAG-stolen" ]; then fail "10. ... it left a file in the machine's /tmp"
else ok "10. ... and left nothing in the machine's /tmp"; fi
if pgrep -x "$DAEMON" > /dev/null; then fail "10. ... and its daemon outlived the milestone"
else ok "10. ... and no process of it outlived the milestone"; fi
cp "$REFSRC" c/tinyllm/modern/rmsnorm.c

# ---- where the machine lacks a mechanism (test hooks): the model answer still grades, and ol says
# what does not hold ----------------------------------------------------------------------------
model_answer
rm -f "$TESTS/test_my_errors.c" "$TESTS/test_my_properties.c" # fewer tests, the same kills
for hook in NAMESPACES SECCOMP CGROUP LANDLOCK; do
  env "OL_TEST_NO_$hook=1" timeout -k 10 600 "$OL" check L7.1 > "$T/hook.out" 2>&1; rc=$?
  out=$(cat "$T/hook.out")
  case $hook in
    NAMESPACES) said="no namespaces" ;; SECCOMP) said="no seccomp supervisor" ;;
    CGROUP) said="no control groups" ;; LANDLOCK) said="no Landlock" ;;
  esac
  expect "without ${hook,,}, the model answer passes and ol says what is missing" \
    0 "PASS: L7.1 reaches R3" "$said"
done

summary "ol hostile"
