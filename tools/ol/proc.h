/* proc: runs commands (compilers, test programs) as child processes, a few
 * at a time, each with its own environment, output file and wall-clock
 * limit. Children get their own process group so a limit or Ctrl-C stops
 * everything they started. */
#ifndef OL_PROC_H
#define OL_PROC_H

#include <stdbool.h>
#include <sys/types.h>
#include "util.h"

typedef struct proc_job {
    strlist argv;         /* argv[0] is looked up in PATH */
    strlist env;          /* "KEY=VALUE" set in the child */
    bool clean_env;       /* start from an empty environment (PATH, HOME and LC_ALL=C, then env):
                           * a test program or a student's compile sees nothing else of ol's */
    const struct sandbox *sandbox; /* what it may touch (sandbox.h); NULL: anything */
    char *cwd;            /* NULL: ol's own */
    char *out_path;       /* stdout and stderr; NULL: /dev/null */
    double timeout;       /* seconds of wall clock; 0: none */
    char *progress_path;  /* a file that grows as the job gets on (Check's TAP log) ... */
    double idle_timeout;  /* ... and how long it may stay the same before the job is stopped */
    /* told as the job ends (results set), while the others run on; NULL: no one */
    void (*on_done)(struct proc_job *j);
    void *data;           /* the caller's, for on_done */
    /* results */
    int exit_code;        /* -1 when ended by a signal or not started */
    int term_signal;      /* the signal that ended it, else 0 */
    bool timed_out;       /* ol stopped it: its timeout, its idle timeout or the deadline */
    bool idle;            /* ... because it made no progress */
    bool past_deadline;   /* ... because the batch's deadline passed (or it never started) */
    double seconds;
    /* bookkeeping */
    pid_t pid;
    double started;
    int state;
    int status_fd;        /* a jailed job: where its PID 1 says how the program ended */
    long long progress_size;
    double progress_at, progress_seen;
} proc_job;

void proc_arg(proc_job *j, const char *arg);
void proc_argf(proc_job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void proc_env(proc_job *j, const char *key, const char *value);
void proc_job_free(proc_job *j);

/* Ctrl-C and SIGTERM stop every running child, then ol exits 130. */
void proc_setup(void);

/* Runs jobs, `parallel` at a time. 0 when every job ran (whatever its exit
 * status), -1 when ol was interrupted (ol then exits). */
int proc_run_all(proc_job *jobs, int n, int parallel);
/* The same, but at `deadline` (now_seconds(); 0: none) what still runs is
 * stopped and what has not started is not: those are past_deadline. */
int proc_run_until(proc_job *jobs, int n, int parallel, double deadline);
/* The same, with up to `most` at a time while the machine's cores go unused
 * (more than half a core idle over 100 ms, niced work counted as idle): for
 * jobs that mostly wait, such as tests of a downloader against a server that
 * stalls, where `parallel` jobs would leave the cores idle. */
int proc_run_filling(proc_job *jobs, int n, int parallel, int most, double deadline);
int proc_run(proc_job *job);
/* A helper: a forked copy of ol that works in the background (ol check
 * builds what later stages need while the course tests run). Returns 0 in
 * the helper, its pid in ol, -1 on failure (or while a helper runs). It is
 * in its own process group, never stopped as an orphan, and stopped with
 * the jobs on Ctrl-C. proc_wait_helper waits for it to end; proc_stop_helper
 * stops it as Ctrl-C would (it stops what it started and exits). Both do
 * nothing when there is none. */
pid_t proc_fork_helper(void);
void proc_wait_helper(void);
void proc_stop_helper(void);
/* Ctrl-C or SIGTERM arrived: ol's exit status is then 130. */
bool proc_interrupted(void);

/* "exit 3", "signal 11 (Segmentation fault)", "timed out after 5.0 s",
 * "made no progress for 7.0 s". */
char *proc_describe(const proc_job *j);

#endif
