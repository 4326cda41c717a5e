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
    bool clear_check_env; /* drop inherited CK_*, OL_* and GCOV_* variables: a run must not
                           * be filtered, nor see ol's settings */
    const struct sandbox *sandbox; /* limits and Landlock for a test program; NULL: none */
    char *cwd;            /* NULL: ol's own */
    char *out_path;       /* stdout and stderr; NULL: /dev/null */
    double timeout;       /* seconds of wall clock; 0: none */
    /* told as the job ends (results set), while the others run on; NULL: no one */
    void (*on_done)(struct proc_job *j);
    void *data;           /* the caller's, for on_done */
    /* results */
    int exit_code;        /* -1 when ended by a signal or not started */
    int term_signal;      /* the signal that ended it, else 0 */
    bool timed_out;
    double seconds;
    /* bookkeeping */
    pid_t pid;
    double started;
    int state;
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
int proc_run(proc_job *job);
/* Ctrl-C or SIGTERM arrived: ol's exit status is then 130. */
bool proc_interrupted(void);

/* "exit 3", "signal 11 (Segmentation fault)", "timed out after 5.0 s". */
char *proc_describe(const proc_job *j);

#endif
