/* ol stops a child that makes no progress, and what runs or waits past a
 * batch's deadline; it starts more jobs than asked only while the cores are
 * idle, never more than its limit; its background helper outlives a batch's
 * clean-up and stops when told. Each property is about what ol did (which
 * jobs overlapped, which processes exist), not how fast. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ol/proc.h"

/* Runs n jobs that each append "s", sleep, append "e" to one file, and
 * returns the most that ran at once, read from the file's order. */
static int most_at_once(int n, int parallel, int most, const char *idle, const char *nap) {
    char path[] = "/tmp/ol-overlap-XXXXXX";
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    close(fd);
    setenv("OL_TEST_CORES_IDLE", idle, 1);
    proc_job *jobs = xcalloc((size_t)n, sizeof *jobs);
    char *script = xasprintf("echo s >> %s; sleep %s; echo e >> %s", path, nap, path);
    for (int i = 0; i < n; i++) {
        proc_arg(&jobs[i], "sh");
        proc_arg(&jobs[i], "-c");
        proc_arg(&jobs[i], script);
    }
    ck_assert_int_eq(proc_run_filling(jobs, n, parallel, most, 0), 0);
    unsetenv("OL_TEST_CORES_IDLE");
    char *text = read_file(path, NULL);
    ck_assert(text);
    int now = 0, peak = 0, starts = 0;
    for (const char *p = text; *p; p++) {
        if (*p == 's') starts++, now++;
        if (*p == 'e') now--;
        if (now > peak) peak = now;
    }
    ck_assert_int_eq(starts, n);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(jobs[i].exit_code, 0);
        proc_job_free(&jobs[i]);
    }
    free(jobs);
    free(script);
    free(text);
    unlink(path);
    return peak;
}

START_TEST(test_idle_cores_take_more_jobs) {
    /* one more start per 100 ms sample: six jobs of 0.8 s all overlap */
    int peak = most_at_once(6, 2, 8, "1", "0.8");
    ck_assert_msg(peak >= 4, "at most %d jobs ran at once while the cores were idle", peak);
}
END_TEST

START_TEST(test_busy_cores_keep_the_ordinary_limit) {
    int peak = most_at_once(5, 2, 8, "0", "0.2");
    ck_assert_msg(peak <= 2, "%d jobs ran at once on busy cores, 2 asked", peak);
}
END_TEST

START_TEST(test_filling_stops_at_its_limit) {
    int peak = most_at_once(6, 1, 3, "1", "0.5");
    ck_assert_msg(peak <= 3, "%d jobs ran at once, at most 3 allowed", peak);
}
END_TEST

/* The helper survives a batch that stops a job (ol's clean-up of orphans
 * spares it), only one runs at a time, and proc_stop_helper ends it. */
START_TEST(test_the_helper_outlives_a_batch_and_stops_when_told) {
    pid_t pid = proc_fork_helper();
    ck_assert(pid >= 0);
    if (pid == 0) {
        signal(SIGTERM, SIG_DFL); /* not Check's handler, which stops the test's whole group */
        for (;;) pause(); /* the helper: until stopped */
    }
    ck_assert_int_eq(proc_fork_helper(), -1);
    proc_job j = {0};
    proc_arg(&j, "sleep");
    proc_arg(&j, "300");
    j.timeout = 0.2;
    ck_assert_int_eq(proc_run(&j), 0);
    ck_assert(j.timed_out);
    proc_job_free(&j);
    ck_assert_msg(kill(pid, 0) == 0, "the helper was stopped with the batch's orphans");
    proc_stop_helper();
    ck_assert_msg(kill(pid, 0) != 0 && errno == ESRCH,
                  "the helper still exists after proc_stop_helper");
    pid_t again = proc_fork_helper(); /* a new one may start now */
    ck_assert(again >= 0);
    if (again == 0) _exit(0);
    proc_wait_helper();
    ck_assert(kill(again, 0) != 0);
}
END_TEST

START_TEST(test_a_child_without_progress_is_stopped) {
    char path[] = "/tmp/ol-progress-XXXXXX";
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    close(fd);
    proc_job j = {0};
    proc_arg(&j, "sleep");
    proc_arg(&j, "300");
    j.progress_path = xstrdup(path);
    j.idle_timeout = 0.2;
    ck_assert_int_eq(proc_run(&j), 0);
    ck_assert(j.timed_out && j.idle && !j.past_deadline);
    char *said = proc_describe(&j);
    ck_assert_str_eq(said, "made no progress for 0.2 s");
    free(said);
    proc_job_free(&j);
    unlink(path);
}
END_TEST

START_TEST(test_a_deadline_stops_and_skips) {
    proc_job jobs[3];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < 3; i++) {
        proc_arg(&jobs[i], "sleep");
        proc_arg(&jobs[i], "300");
    }
    ck_assert_int_eq(proc_run_until(jobs, 3, 1, now_seconds() + 0.2), 0);
    for (int i = 0; i < 3; i++) {
        ck_assert(jobs[i].timed_out && jobs[i].past_deadline);
        proc_job_free(&jobs[i]);
    }
}
END_TEST
