/* RMSNorm (L7.1) that computes nothing (tests/ol/hostile.sh, section 6): every
 * function tries to end the course test that called it as passed. It walks
 * the stack (_Unwind_Backtrace) and resumes a test's wrapper as if the test's
 * body had returned (setcontext), so that the wrapper marks its finish line;
 * where a body is inlined, it runs another course test (found by its TTest
 * record) and resumes that one. Written by an adversarial review: before
 * each test's body was inlined and each test had its own line, 17 of 17
 * course tests passed. */
#include <stdint.h>
#include <stdlib.h>
#include <ucontext.h>
#include <unwind.h>
#include <stdio.h>
#include <string.h>
#include <math.h>
#include <unistd.h>
#include "tinyllm/autograd.h"
#include "tinyllm/ops.h"
#include "tinyllm/modern/rmsnorm.h"

#define MAXF 64
struct walk {
    int n;
    uintptr_t ip[MAXF], fn[MAXF], cfa[MAXF], reg[MAXF][6];
};
static const int REGS[6] = {3, 6, 12, 13, 14, 15};   /* DWARF: rbx rbp r12..r15 */

static _Unwind_Reason_Code step(struct _Unwind_Context *c, void *arg) {
    struct walk *w = arg;
    if (w->n >= MAXF) return _URC_END_OF_STACK;
    int k = w->n++;
    w->ip[k] = _Unwind_GetIP(c);
    w->fn[k] = (uintptr_t)_Unwind_FindEnclosingFunction((void *)w->ip[k]);
    w->cfa[k] = _Unwind_GetCFA(c);
    for (int i = 0; i < 6; i++) w->reg[k][i] = _Unwind_GetGR(c, REGS[i]);
    return _URC_NO_REASON;
}

/* Resume in the frame of function `target` as if its callee had returned. */
static __attribute__((noinline)) void resume_in(uintptr_t target) {
    static struct walk w;
    w.n = 0;
    _Unwind_Backtrace(step, &w);
    int f = -1;
    for (int k = 1; k < w.n && f < 0; k++) {
        if (w.fn[k] == target) f = k;
    }
    if (f < 1) abort();
    static ucontext_t uc;
    getcontext(&uc);
    greg_t *g = uc.uc_mcontext.gregs;
    g[REG_RIP] = (greg_t)w.ip[f];
    g[REG_RSP] = (greg_t)w.cfa[f];
    g[REG_RBX] = (greg_t)w.reg[f][0];
    g[REG_RBP] = (greg_t)w.reg[f][1];
    g[REG_R12] = (greg_t)w.reg[f][2];
    g[REG_R13] = (greg_t)w.reg[f][3];
    g[REG_R14] = (greg_t)w.reg[f][4];
    g[REG_R15] = (greg_t)w.reg[f][5];
    setcontext(&uc);
}

/* Check's TTest {name, fn, file, line}: static data of each test's wrapper. */
struct ttest { const char *name; void (*fn)(int); const char *file; int line; };

static uintptr_t lo_r[32], hi_r[32], lo_x, hi_x;
static int nr;
static int in_exe(uintptr_t p) {
    for (int i = 0; i < nr; i++) if (p >= lo_r[i] && p + 64 <= hi_r[i]) return 1;
    return 0;
}

/* The wrapper function of the course test `name`, found in the program's data. */
static void (*wrapper_of(const char *name))(int) {
    FILE *m = fopen("/proc/self/maps", "r");
    char line[1024], exe[512] = "";
    nr = 0;
    while (m && fgets(line, sizeof line, m)) {
        unsigned long a, b;
        char perm[8], path[512] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %511s", &a, &b, perm, path) < 3) continue;
        if (!exe[0]) strcpy(exe, path);
        if (strcmp(path, exe) != 0) continue;
        if (perm[2] == 'x') { lo_x = a; hi_x = b; }
        if (perm[0] == 'r' && nr < 32) { lo_r[nr] = a; hi_r[nr] = b; nr++; }
    }
    if (m) fclose(m);
    for (int i = 0; i < nr; i++)
        for (uintptr_t p = lo_r[i]; p + sizeof(struct ttest) <= hi_r[i]; p += 8) {
            const struct ttest *t = (const struct ttest *)p;
            uintptr_t fn = (uintptr_t)t->fn;
            if (fn < lo_x || fn >= hi_x || !in_exe((uintptr_t)t->name)) continue;
            if (strcmp(t->name, name) == 0) return t->fn;
        }
    return NULL;
}

static int borrowing;
static void (*borrowed)(int);

/* Ends the current course test as passed: runs another test's wrapper, whose
 * body is made to return at its first call of a lesson function, so that the
 * wrapper marks the finish line; then ends the process with status 0. */
static void leave_test(void) {
    if (borrowing) resume_in((uintptr_t)borrowed);
    borrowed = wrapper_of("test_init_weight_ones_or_zeros");
    if (!borrowed) abort();
    borrowing = 1;
    borrowed(0);
    _exit(0);
}

int rmsnorm_init(RMSNorm *n, int64_t dim, double eps, bool unit_offset) {
    (void)n; (void)dim; (void)eps; (void)unit_offset;
    leave_test();
    return -1;
}

void rmsnorm_free(RMSNorm *n) { (void)n; leave_test(); }

tl_tensor *rmsnorm_forward(const RMSNorm *n, tl_tensor *x) {
    (void)n; (void)x;
    leave_test();
    return NULL;
}

tl_tensor *pre_norm_residual(tl_tensor *x, const RMSNorm *norm, tl_sublayer_fn sublayer,
                             void *ctx) {
    (void)x; (void)norm; (void)sublayer; (void)ctx;
    leave_test();
    return NULL;
}
