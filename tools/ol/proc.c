#include "proc.h"

#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { WAITING, RUNNING, DONE };

static volatile sig_atomic_t interrupted;

/* The helper proc_fork_helper started (0: none), and whether it has ended. */
static pid_t helper_pid;
static bool helper_ended;

/* The first Ctrl-C or SIGTERM stops the children and lets ol say so; a
 * second one (ol busy elsewhere) ends it at once. */
static void on_signal(int sig) {
    if (interrupted) _exit(130);
    interrupted = sig;
}

void proc_setup(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* Orphans (a test's child left behind when its runner is killed) become
     * ol's children, so ol can stop them instead of leaving them running. */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

void proc_arg(proc_job *j, const char *arg) { sl_push(&j->argv, arg); }

void proc_argf(proc_job *j, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    if (!s) {
        fputs("ol: error: out of memory\n", stderr);
        exit(OL_USAGE);
    }
    sl_push_owned(&j->argv, s);
}

void proc_env(proc_job *j, const char *key, const char *value) {
    sl_push_owned(&j->env, xasprintf("%s=%s", key, value));
}

void proc_job_free(proc_job *j) {
    sl_free(&j->argv);
    sl_free(&j->env);
    free(j->cwd);
    free(j->out_path);
    free(j->progress_path);
    memset(j, 0, sizeof *j);
}

extern char **environ;

static void child_exec(proc_job *j) {
    setpgid(0, 0);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    int fd = open(j->out_path ? j->out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        if (fd > 2) close(fd);
    }
    int in = open("/dev/null", O_RDONLY);
    if (in >= 0) {
        dup2(in, 0);
        if (in > 0) close(in);
    }
    if (j->clean_env) {
        /* PATH stays: where the compiler is (nothing secret); the rest goes */
        const char *path = getenv("PATH");
        char *keep = xstrdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
        clearenv();
        setenv("PATH", keep, 1);
        free(keep);
        setenv("HOME", j->cwd ? j->cwd : "/", 1);
        setenv("LC_ALL", "C", 1);
    }
    for (int i = 0; i < j->env.n; i++) putenv(j->env.v[i]);
    if (j->cwd && chdir(j->cwd) != 0) {
        fprintf(stderr, "ol: cannot enter %s: %s\n", j->cwd, strerror(errno));
        _exit(127);
    }
    char **argv = xcalloc((size_t)j->argv.n + 1, sizeof *argv);
    for (int i = 0; i < j->argv.n; i++) argv[i] = j->argv.v[i];
    if (j->sandbox) sandbox_exec(j->sandbox, argv, j->status_fd);
    execvp(argv[0], argv);
    fprintf(stderr, "ol: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

static int start(proc_job *j) {
    fflush(stdout);
    fflush(stderr);
    j->exit_code = -1;
    j->term_signal = 0;
    j->timed_out = j->idle = j->past_deadline = false;
    j->started = j->progress_at = j->progress_seen = now_seconds();
    j->progress_size = -1;
    /* a jailed job's PID 1 says how the program ended through a pipe: its own exit says nothing */
    int status_pipe[2] = {-1, -1};
    j->status_fd = -1;
    if (j->sandbox && j->sandbox->jl.root && pipe2(status_pipe, O_CLOEXEC) != 0) {
        ol_error("cannot start %s: %s", j->argv.n ? j->argv.v[0] : "?", strerror(errno));
        j->state = DONE;
        return -1;
    }
    j->status_fd = status_pipe[1];
    pid_t pid = sandbox_fork(j->sandbox);
    if (pid < 0) {
        ol_error("cannot start %s: %s", j->argv.n ? j->argv.v[0] : "?", strerror(errno));
        if (status_pipe[0] >= 0) close(status_pipe[0]), close(status_pipe[1]);
        j->state = DONE;
        return -1;
    }
    if (pid == 0) child_exec(j);
    if (status_pipe[1] >= 0) close(status_pipe[1]);
    j->status_fd = status_pipe[0];
    setpgid(pid, pid); /* also in the parent, so killpg works at once */
    j->pid = pid;
    j->state = RUNNING;
    return 0;
}

/* Reaps every child that has ended, noting the helper's end. */
static void reap_some(void) {
    pid_t pid;
    while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
        if (pid == helper_pid) helper_ended = true;
}

/* Kills adopted orphans: processes whose parent is ol but that are neither
 * jobs nor the helper. Returns how many it found. */
static int kill_orphans(proc_job *jobs, int n) {
    DIR *d = opendir("/proc");
    if (!d) return 0;
    int found = 0;
    pid_t self = getpid();
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0) continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[got] = 0;
        const char *close_paren = strrchr(buf, ')');
        long ppid = 0;
        char state;
        if (!close_paren || sscanf(close_paren + 1, " %c %ld", &state, &ppid) != 2) continue;
        if (ppid != self) continue;
        bool ours = helper_pid && !helper_ended && pid == helper_pid;
        for (int i = 0; i < n; i++)
            if (jobs[i].state == RUNNING && jobs[i].pid == pid) ours = true;
        if (!ours) {
            kill((pid_t)pid, SIGKILL);
            found++;
        }
    }
    closedir(d);
    reap_some();
    return found;
}

/* Waits (a moment at most) until ol has no child left but the helper,
 * killing stragglers, so nothing is left running or unreaped when ol exits. */
static void reap_all(double limit) {
    double until = now_seconds() + limit;
    for (;;) {
        pid_t pid = waitpid(-1, NULL, WNOHANG);
        if (pid < 0) return; /* ECHILD: none left */
        if (pid > 0) {
            if (pid == helper_pid) helper_ended = true;
            continue;
        }
        if (now_seconds() > until) return;
        if (kill_orphans(NULL, 0) == 0 && helper_pid && !helper_ended)
            return; /* the helper alone */
        struct timespec nap = {0, 2 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
}

static void finish(proc_job *j, int status) {
    j->seconds = now_seconds() - j->started;
    j->state = DONE;
    if (j->status_fd >= 0) {
        /* PID 1 wrote it before it exited; nothing there: it was stopped (or could not set up) */
        int program = 0;
        if (read(j->status_fd, &program, sizeof program) == (ssize_t)sizeof program)
            status = program;
        close(j->status_fd);
        j->status_fd = -1;
    }
    if (WIFEXITED(status)) j->exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) j->term_signal = WTERMSIG(status);
    /* whatever the job left in its group goes too */
    killpg(j->pid, SIGKILL);
    if (j->on_done) j->on_done(j);
}

/* Has the job's progress file stayed the same for longer than it may? (A
 * stat every 50 ms: a run's TAP log grows by a line per test.) */
static bool idle_too_long(proc_job *j, double now) {
    if (!j->progress_path || j->idle_timeout <= 0 || now - j->progress_seen < 0.05) return false;
    j->progress_seen = now;
    struct stat st;
    long long size = stat(j->progress_path, &st) == 0 ? (long long)st.st_size : -1;
    if (size != j->progress_size) {
        j->progress_size = size;
        j->progress_at = now;
    }
    return now - j->progress_at > j->idle_timeout;
}

int proc_run_all(proc_job *jobs, int n, int parallel) {
    return proc_run_until(jobs, n, parallel, 0);
}

int proc_run_until(proc_job *jobs, int n, int parallel, double deadline) {
    return proc_run_filling(jobs, n, parallel, parallel, deadline);
}

/* The machine's CPU time so far, from /proc/stat's first line, in ticks:
 * *busy counts what runs at normal priority (user, system, interrupts,
 * steal); a niced process's time counts as idle, as a nice value asks. */
static bool cpu_ticks(unsigned long long *busy, unsigned long long *total) {
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return false;
    unsigned long long v[8] = {0};
    int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                     &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (got < 4) return false;
    *busy = v[0] + v[2] + v[5] + v[6] + v[7];
    *total = 0;
    for (int i = 0; i < 8; i++) *total += v[i];
    return true;
}

/* Samples the machine every 100 ms: may one more job start beyond the
 * ordinary `parallel`? Yes when, over the last sample, more than half a
 * core went unused (the jobs running are waiting: a test's server that
 * stalls, a retry's backoff). One extra start per sample, so each new job
 * shows in the next sample before another one joins it. */
typedef struct {
    double at;
    unsigned long long busy, total;
    bool ok;
} cpu_sample;

static bool cores_idle(cpu_sample *s, double now) {
    if (now - s->at < 0.1) return false;
    const char *force = getenv("OL_TEST_CORES_IDLE"); /* a test hook: "1" idle, "0" busy */
    if (force && *force) {
        s->at = now;
        return *force == '1';
    }
    unsigned long long busy, total;
    if (!cpu_ticks(&busy, &total)) return false;
    bool idle = false;
    if (s->ok && total > s->total) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        double used =
            (double)(busy - s->busy) / (double)(total - s->total) * (double)(cpus > 0 ? cpus : 1);
        idle = used < (double)cpus - 0.5;
    }
    *s = (cpu_sample){.at = now, .busy = busy, .total = total, .ok = true};
    return idle;
}

int proc_run_filling(proc_job *jobs, int n, int parallel, int most, double deadline) {
    if (parallel < 1) parallel = 1;
    if (most < parallel) most = parallel;
    for (int i = 0; i < n; i++) jobs[i].state = WAITING;
    int next = 0, running = 0, done = 0;
    bool left_orphans = false;
    cpu_sample sample = {0};
    while (done < n) {
        while (running < parallel && next < n) {
            if (start(&jobs[next++]) == 0) running++;
            else done++;
        }
        if (running < most && next < n && most > parallel && cores_idle(&sample, now_seconds())) {
            if (start(&jobs[next++]) == 0) running++;
            else done++;
        }
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            if (pid == helper_pid) helper_ended = true;
            for (int i = 0; i < n; i++)
                if (jobs[i].state == RUNNING && jobs[i].pid == pid) {
                    finish(&jobs[i], status);
                    running--;
                    done++;
                }
            continue; /* an adopted orphan or the helper was reaped, or a job finished */
        }
        if (interrupted) {
            for (int i = 0; i < n; i++)
                if (jobs[i].state == RUNNING) killpg(jobs[i].pid, SIGKILL);
            for (int i = 0; i < n; i++)
                if (jobs[i].state == RUNNING) waitpid(jobs[i].pid, NULL, 0);
            proc_stop_helper();
            reap_all(1.0);
            fprintf(stderr, "\nol: interrupted\n");
            return -1;
        }
        double now = now_seconds();
        if (deadline > 0 && now > deadline) {
            /* what has not started never will; what runs stops now */
            for (int i = next; i < n; i++) {
                jobs[i].state = DONE;
                jobs[i].past_deadline = jobs[i].timed_out = true;
                done++;
            }
            next = n;
        }
        for (int i = 0; i < n; i++) {
            proc_job *j = &jobs[i];
            if (j->state != RUNNING || j->timed_out) continue;
            bool over = j->timeout > 0 && now - j->started > j->timeout;
            bool idle = !over && idle_too_long(j, now);
            bool late = deadline > 0 && now > deadline;
            if (over || idle || late) {
                j->timed_out = true;
                j->idle = idle;
                j->past_deadline = late && !over && !idle;
                killpg(j->pid, SIGKILL);
                left_orphans = true;
            }
        }
        struct timespec nap = {0, 2 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    if (left_orphans) reap_all(1.0);
    return 0;
}

pid_t proc_fork_helper(void) {
    if (helper_pid && !helper_ended) return -1; /* one at a time */
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        setpgid(0, 0); /* its own group: stopping it stops what it started */
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* and it ends with ol, however ol ends */
        if (getppid() != parent) raise(SIGTERM);
        helper_pid = 0;
        helper_ended = false;
        return 0;
    }
    setpgid(pid, pid);
    helper_pid = pid;
    helper_ended = false;
    return pid;
}

void proc_wait_helper(void) {
    if (!helper_pid) return;
    if (!helper_ended) waitpid(helper_pid, NULL, 0); /* ECHILD: reaped already */
    helper_pid = 0;
    helper_ended = false;
}

void proc_stop_helper(void) {
    if (!helper_pid) return;
    /* as Ctrl-C would: it stops its own jobs, tidies up and exits */
    if (!helper_ended) kill(helper_pid, SIGTERM);
    double until = now_seconds() + 5.0;
    while (!helper_ended && now_seconds() < until) {
        pid_t pid = waitpid(helper_pid, NULL, WNOHANG);
        if (pid == helper_pid || pid < 0) helper_ended = true;
        struct timespec nap = {0, 2 * 1000 * 1000};
        if (!helper_ended) nanosleep(&nap, NULL);
    }
    if (!helper_ended) {
        killpg(helper_pid, SIGKILL);
        waitpid(helper_pid, NULL, 0);
        reap_all(1.0); /* what it had started, now ol's orphans (the subreaper), goes too */
    }
    helper_pid = 0;
    helper_ended = false;
}

int proc_run(proc_job *job) { return proc_run_all(job, 1, 1); }

bool proc_interrupted(void) { return interrupted != 0; }

char *proc_describe(const proc_job *j) {
    if (j->past_deadline) return xstrdup("stopped at the deadline");
    if (j->idle) return xasprintf("made no progress for %.1f s", j->idle_timeout);
    if (j->timed_out) return xasprintf("timed out after %.1f s", j->timeout);
    if (j->term_signal)
        return xasprintf("signal %d (%s)", j->term_signal, strsignal(j->term_signal));
    return xasprintf("exit %d", j->exit_code);
}
