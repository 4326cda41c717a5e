#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* Where ol's own group of a hierarchy is: the hierarchy's mount point joined
 * with the path /proc/self/cgroup gives (v2: controllers ""; v1: one of
 * them, e.g. "memory"). NULL when that hierarchy is not mounted. */
static char *mount_of(bool v2, const char *controller, char **own) {
    *own = NULL;
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (!f) return NULL;
    char line[4096], *found = NULL, *root = NULL;
    while (!found && fgets(line, sizeof line, f)) {
        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS */
        char mroot[1024], point[1024], type[64], super[1024];
        const char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %1023s %1023s", mroot, point) != 2 ||
            sscanf(dash + 3, "%63s %*s %1023s", type, super) != 2)
            continue;
        bool match = v2 ? strcmp(type, "cgroup2") == 0 : strcmp(type, "cgroup") == 0;
        if (match && !v2) {
            match = false;
            char *save = NULL;
            for (char *o = strtok_r(super, ",", &save); o; o = strtok_r(NULL, ",", &save))
                match = match || strcmp(o, controller) == 0;
        }
        if (match) {
            found = xstrdup(point);
            root = xstrdup(mroot);
        }
    }
    fclose(f);
    if (!found) return NULL;
    f = fopen("/proc/self/cgroup", "r");
    while (f && !*own && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c2 = 0;
        bool match = v2 ? c1[1] == 0 : false;
        char *save = NULL;
        for (char *o = v2 ? NULL : strtok_r(c1 + 1, ",", &save); o; o = strtok_r(NULL, ",", &save))
            match = match || strcmp(o, controller) == 0;
        if (!match) continue;
        const char *path = c2 + 1;
        size_t n = strlen(root);
        if (strcmp(root, "/") != 0 && strncmp(path, root, n) == 0)
            path += n; /* as the mount shows it */
        *own = xasprintf("%s%s", found, path);
    }
    if (f) fclose(f);
    free(root);
    return found;
}

static int write_text(const char *dir, const char *file, const char *text) {
    char *path = path_join(dir, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    free(path);
    if (fd < 0) return -1;
    ssize_t n = write(fd, text, strlen(text));
    int saved = errno;
    close(fd);
    errno = saved;
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

static char *read_text(const char *dir, const char *file) {
    char *path = path_join(dir, file);
    char *text = read_file(path, NULL);
    free(path);
    return text;
}

static bool has_word(const char *text, const char *word) {
    size_t n = strlen(word);
    for (const char *p = text; p && (p = strstr(p, word)) != NULL; p += n)
        if ((p == text || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ' || p[n] == '\n')) return true;
    return false;
}

/* v2: the hierarchy's root, when it hands out memory and pids (or ol may
 * make it do so). A group ol runs in cannot have limited children while
 * ol is in it, and moving ol elsewhere is not ol's to decide. */
static char *v2_parent(void) {
    char *own = NULL, *point = mount_of(true, "", &own);
    free(own);
    if (!point) return NULL;
    char *ctl = read_text(point, "cgroup.subtree_control");
    if (!(ctl && has_word(ctl, "memory") && has_word(ctl, "pids"))) {
        write_text(point, "cgroup.subtree_control", "+memory +pids");
        free(ctl);
        ctl = read_text(point, "cgroup.subtree_control");
    }
    bool ok = ctl && has_word(ctl, "memory") && has_word(ctl, "pids") && access(point, W_OK) == 0;
    free(ctl);
    if (!ok) {
        free(point);
        return NULL;
    }
    return point;
}

static void set_limits(const cgroup *cg, long long memory_bytes, int max_tasks) {
    char value[64];
    snprintf(value, sizeof value, "%lld", memory_bytes);
    char tasks[32];
    snprintf(tasks, sizeof tasks, "%d", max_tasks);
    if (cg->version == 2) {
        write_text(cg->dirs[0], "memory.max", value);
        write_text(cg->dirs[0], "memory.swap.max", "0");
        write_text(cg->dirs[0], "pids.max", tasks);
        return;
    }
    write_text(cg->dirs[0], "memory.limit_in_bytes", value);
    write_text(cg->dirs[0], "memory.memsw.limit_in_bytes", value); /* where swap is accounted */
    if (cg->n > 1) write_text(cg->dirs[1], "pids.max", tasks);
}

int cgroup_create(cgroup *cg, long long memory_bytes, int max_tasks) {
    static int counter;
    memset(cg, 0, sizeof *cg);
    char name[64];
    snprintf(name, sizeof name, "ol-%ld-%d", (long)getpid(), ++counter);
    char *parent = v2_parent();
    if (parent) {
        char *dir = path_join(parent, name);
        free(parent);
        if (mkdir(dir, 0755) == 0) {
            cg->version = 2;
            cg->dirs[cg->n++] = dir;
            set_limits(cg, memory_bytes, max_tasks);
            char *max = read_text(dir, "memory.max");
            bool limited = max && strtoll(max, NULL, 10) == memory_bytes;
            free(max);
            if (limited) return 0;
            cgroup_destroy(cg);
            return -1;
        }
        free(dir);
    }
    const char *const controllers[] = {"memory", "pids"};
    for (int k = 0; k < 2; k++) {
        char *own = NULL, *point = mount_of(false, controllers[k], &own);
        free(point);
        char *dir = own ? path_join(own, name) : NULL;
        free(own);
        if (dir && mkdir(dir, 0755) == 0)
            cg->dirs[cg->n++] = dir;
        else if (k == 0) { /* no memory hierarchy: no group */
            free(dir);
            return -1;
        } else
            free(dir);
    }
    cg->version = 1;
    set_limits(cg, memory_bytes, max_tasks);
    char *limit = read_text(cg->dirs[0], "memory.limit_in_bytes");
    /* v1 rounds the limit to pages */
    bool limited = limit && llabs(strtoll(limit, NULL, 10) - memory_bytes) < 65536;
    free(limit);
    if (limited) return 0;
    cgroup_destroy(cg);
    return -1;
}

/* Groups an ol that was killed left behind (empty: the kernel ended their
 * processes with the jail): removed, so they do not pile up. */
static void sweep(const char *parent) {
    DIR *d = parent ? opendir(parent) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        long pid;
        int n;
        if (sscanf(e->d_name, "ol-%ld-%d", &pid, &n) != 2 || pid <= 0) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* that ol still runs */
        char *dir = path_join(parent, e->d_name);
        rmdir(dir); /* only if empty */
        free(dir);
    }
    if (d) closedir(d);
}

static void sweep_all(void) {
    char *point = v2_parent();
    sweep(point);
    free(point);
    const char *const controllers[] = {"memory", "pids"};
    for (int k = 0; k < 2; k++) {
        char *own = NULL, *mount = mount_of(false, controllers[k], &own);
        sweep(own);
        free(own);
        free(mount);
    }
}

bool cgroup_available(const char **why) {
    static int known = -1;
    static const char *reason;
    if (known < 0) {
        const char *off = getenv("OL_TEST_NO_CGROUP");
        cgroup cg;
        if (off && *off && strcmp(off, "0") != 0) {
            known = 0;
            reason = "OL_TEST_NO_CGROUP is set";
        } else if (cgroup_create(&cg, 64LL << 20, 64) == 0) {
            known = 1;
            sweep_all();
            cgroup_destroy(&cg);
        } else {
            known = 0;
            reason = "no cgroup v2 with memory and pids that ol may divide, nor a writable cgroup "
                     "v1 memory "
                     "hierarchy (ol is not root, or runs in a container)";
        }
    }
    if (why) *why = reason;
    return known == 1;
}

int cgroup_join(const cgroup *cg) {
    for (int i = 0; i < cg->n; i++)
        if (write_text(cg->dirs[i], "cgroup.procs", "0") != 0) return -1;
    return 0;
}

bool cgroup_out_of_memory(const cgroup *cg) {
    if (cg->version == 0) return false;
    char *text = read_text(cg->dirs[0], cg->version == 2 ? "memory.events" : "memory.oom_control");
    const char *p = text ? strstr(text, "oom_kill ") : NULL;
    bool oom = p && strtol(p + 9, NULL, 10) > 0;
    free(text);
    return oom;
}

/* Kills every process listed in the group (v1 has no cgroup.kill). */
static void kill_listed(const char *dir) {
    char *text = read_text(dir, "cgroup.procs");
    for (char *save = NULL, *w = text ? strtok_r(text, "\n", &save) : NULL; w;
         w = strtok_r(NULL, "\n", &save)) {
        long pid = strtol(w, NULL, 10);
        if (pid > 0) kill((pid_t)pid, SIGKILL);
    }
    free(text);
}

void cgroup_destroy(cgroup *cg) {
    for (int i = 0; i < cg->n; i++) {
        if (cg->version == 2) write_text(cg->dirs[i], "cgroup.kill", "1");
        /* a killed process leaves its group a moment later */
        for (int tries = 0; tries < 200 && rmdir(cg->dirs[i]) != 0 && errno == EBUSY; tries++) {
            kill_listed(cg->dirs[i]);
            struct timespec nap = {0, 5 * 1000 * 1000};
            nanosleep(&nap, NULL);
        }
        free(cg->dirs[i]);
    }
    memset(cg, 0, sizeof *cg);
}
