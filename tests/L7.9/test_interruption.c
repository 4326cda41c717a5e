/* A download cut off by a kill, and two downloads of the same file at
 * once. A killed process leaves only a .part, which the next call resumes;
 * a second download of a file being written waits for the first (never
 * mixing its bytes in), then finds the file verified. */
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>

#include "hf_fixture.h"

#define MODEL_FINAL "org--tiny/main/model.safetensors"
#define MODEL_PART "org--tiny/main/model.safetensors.part"

/* Waits (up to 20 s) until path holds at least n bytes. */
static bool wait_for_size(const char *path, long long n) {
    for (int i = 0; i < 2000 && fx_size(path) < n; i++) usleep(10000);
    return fx_size(path) >= n;
}

/* In a child process: hf_download of names; exit 0 when it worked, else 1
 * with the error written to fd (when >= 0). Its stderr goes to err_fd
 * (when >= 0). */
static pid_t download_in_child(hf_fx *f, const char *const *names, int n, int fd, int err_fd) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
        char *dir = fx_download(f, "main", names, n, NULL);
        if (!dir && fd >= 0 && write(fd, tl_error(), strlen(tl_error())) < 0) _exit(2);
        int code = dir ? 0 : 1;
        free(dir);
        _exit(code);
    }
    return pid;
}

/* Waits for a child of download_in_child; its exit code, and its error in err. */
static int wait_child(pid_t pid, int fd, char *err, size_t size) {
    int status = 0;
    waitpid(pid, &status, 0);
    ssize_t got = fd >= 0 ? read(fd, err, size - 1) : 0;
    err[got > 0 ? got : 0] = 0;
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) <= 1, "a child died (%d)", status);
    return WEXITSTATUS(status);
}

START_TEST(test_killed_download_leaves_a_part_that_resumes)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    fx_require_downloader(&f);
    /* the CDN sends 2000 bytes every 20 ms: the whole file would take 2 s */
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_TRICKLE, .n = 2000, .ms = 20,
                                    .on = HUB_HOST_CDN});
    const char *names[] = {"model.safetensors"};
    pid_t pid = download_in_child(&f, names, 1, -1, -1);
    bool started = wait_for_size(fx_path(&f, MODEL_PART), 20000);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    ck_assert_msg(started, "the child never wrote 20000 bytes; requests:%s", fx_log_text(&f));
    ck_assert_msg(WIFSIGNALED(status), "the child finished before it was killed");
    ck_assert_msg(!fx_exists(fx_path(&f, MODEL_FINAL)), "a killed download left a final file");
    long long kept = fx_size(fx_path(&f, MODEL_PART));
    ck_assert_msg(kept >= 20000 && kept < (long long)f.model_size, "the .part holds %lld bytes",
                  kept);
    ck_assert_msg(fx_holds(fx_path(&f, MODEL_PART), f.model, (size_t)kept),
                  "the .part does not hold the file's first %lld bytes", kept);

    hub_clear_faults(f.h);
    hub_log_clear(f.h);
    char *dir = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(dir != NULL, "the next call should resume: %s\nrequests:%s", tl_error(),
                  fx_log_text(&f));
    ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
    char range[64];
    snprintf(range, sizeof range, "bytes=%lld-", kept);
    hub_request r;
    int resumed = 0;
    for (int i = 0; hub_log_get(f.h, i, &r); i++)
        resumed += r.host == HUB_HOST_CDN && !strcmp(r.method, "GET") && !strcmp(r.range, range);
    ck_assert_msg(resumed == 1 && fx_count(&f, "GET", HUB_HOST_CDN, NULL) == 1,
                  "expected one GET with Range: %s; requests:%s", range, fx_log_text(&f));
    free(dir);
    fx_end(&f);
}
END_TEST

/* Two processes download the same file at once. The second waits for the
 * first (saying on stderr what it waits for), then finds the verified file
 * and does not download it again: one GET of the bytes in all. */
START_TEST(test_two_downloads_of_one_file_at_once)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    fx_require_downloader(&f);
    hub_add_fault(f.h, &(hub_fault){.kind = HUB_FAULT_TRICKLE, .n = 4000, .ms = 10,
                                    .on = HUB_HOST_CDN});
    const char *names[] = {"model.safetensors"};
    int p1[2], p2[2], e2[2];
    ck_assert(pipe2(p1, O_NONBLOCK) == 0 && pipe2(p2, O_NONBLOCK) == 0 &&
              pipe2(e2, O_NONBLOCK) == 0);
    pid_t first = download_in_child(&f, names, 1, p1[1], -1);
    ck_assert_msg(wait_for_size(fx_path(&f, MODEL_PART), 8000), "the first never started:%s",
                  fx_log_text(&f));
    pid_t second = download_in_child(&f, names, 1, p2[1], e2[1]);
    char err1[1024], err2[1024], said[4096];
    int r1 = wait_child(first, p1[0], err1, sizeof err1);
    int r2 = wait_child(second, p2[0], err2, sizeof err2);
    ssize_t got = read(e2[0], said, sizeof said - 1);
    said[got > 0 ? got : 0] = 0;
    for (int i = 0; i < 2; i++) close(p1[i]), close(p2[i]), close(e2[i]);
    ck_assert_msg(r1 == 0, "the first failed: %s", err1);
    ck_assert_msg(r2 == 0, "the second should wait for the first, then succeed: %s", err2);
    ck_assert_msg(strstr(said, "waiting for another download") && strstr(said, MODEL_PART),
                  "the second should say what it waits for; its stderr: '%s'", said);
    ck_assert_msg(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size),
                  "the final file is not the file (%lld bytes)", fx_size(fx_path(&f, MODEL_FINAL)));
    ck_assert_msg(!fx_exists(fx_path(&f, MODEL_PART)), "a .part was left");
    ck_assert_msg(fx_count(&f, "GET", HUB_HOST_CDN, NULL) == 1,
                  "the second found the verified file: no second GET; requests:%s",
                  fx_log_text(&f));
    fx_end(&f);
}
END_TEST

/* The wait is bounded: a lock held by a download that writes nothing for
 * `timeout` seconds makes the waiting one give up, naming the .part. */
START_TEST(test_waiting_for_a_stuck_download_is_bounded)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    fx_write(fx_path(&f, MODEL_PART), f.model, 1000);
    int fd = open(fx_path(&f, MODEL_PART), O_RDWR);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(flock(fd, LOCK_EX), 0);       /* a stuck download of this process */
    const char *names[] = {"model.safetensors"};
    tl_clear_error();
    char *dir = hf_download(FX_REPO, names, 1, f.cache, "main", f.endpoint, NULL, 1.0);
    fx_assert_failed_cleanly(&f, dir, "model.safetensors", MODEL_FINAL);
    fx_assert_error_mentions("another download", MODEL_PART, "not written");
    ck_assert_int_eq(fx_count(&f, "GET", HUB_ANY, NULL), 0);
    ck_assert(fx_holds(fx_path(&f, MODEL_PART), f.model, 1000));
    close(fd);
    /* once released, the same call resumes it */
    dir = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(dir != NULL, "%s", tl_error());
    ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
    free(dir);
    fx_end(&f);
}
END_TEST
