/* cgroup: a control group per test program, so its processes together use
 * at most the lesson's memory and a bounded number of tasks, and can be
 * killed as one. cgroup v2 (memory.max, pids.max, cgroup.kill) where ol
 * may make groups with those controllers (as root: under the hierarchy's
 * root; else a delegated group it runs in), else cgroup v1's memory and
 * pids hierarchies. Without either (an unprivileged ol, a container), the
 * limits are resource limits per process (sandbox.c) and the PID namespace
 * does the killing (jail.c). */
#ifndef OL_CGROUP_H
#define OL_CGROUP_H

#include <stdbool.h>

typedef struct cgroup {
    char *dirs[2]; /* v2: one folder; v1: the memory one and the pids one */
    int n;
    int version; /* 1 or 2; 0 when none was made */
} cgroup;

/* Can ol make control groups here? Probed once (makes and removes one);
 * why says what is missing when not. $OL_TEST_NO_CGROUP, a test hook, says no. */
bool cgroup_available(const char **why);

/* A new group named after ol's pid and a counter, limited to memory_bytes
 * (with swap) and max_tasks. 0, or -1 (cg->version 0). */
int cgroup_create(cgroup *cg, long long memory_bytes, int max_tasks);
/* In the child, before it starts anything: moves the calling process in.
 * 0, or -1 with errno. */
int cgroup_join(const cgroup *cg);
/* Did the kernel kill a process of the group for using too much memory? */
bool cgroup_out_of_memory(const cgroup *cg);
/* Kills everything in the group, then removes it. */
void cgroup_destroy(cgroup *cg);

#endif
