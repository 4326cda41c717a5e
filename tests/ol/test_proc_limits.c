/* ol stops a child that makes no progress, and what runs or waits past a
 * batch's deadline. Each property is about what ol did, not how fast. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ol/proc.h"

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
