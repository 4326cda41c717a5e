/* What the cache folder already holds, when it is not what hf_download
 * would have left: symbolic links where a .part or a file should be, a file
 * where a folder should be, a folder where a file should be, a folder it may
 * not write. Nothing is written outside the cache, nothing good is lost,
 * and the error names the path and what to do. */
#include <sys/wait.h>

#include "hf_fixture.h"

#define MODEL_DIR "org--tiny/main"
#define MODEL_FINAL "org--tiny/main/model.safetensors"
#define MODEL_PART "org--tiny/main/model.safetensors.part"
#define CONFIG_FINAL "org--tiny/main/config.json"

static const char PRECIOUS[] = "a file outside the cache that must not change\n";

/* True when the error names path itself (not only a path below it) and
 * says it is not a folder. */
static bool names_non_folder(const char *path) {
    const char *e = tl_error();
    bool named = false;
    for (const char *at = e ? strstr(e, path) : NULL; at && !named; at = strstr(at + 1, path))
        named = at[strlen(path)] != '/';
    return named && (strcasestr(e, "not a folder") || strcasestr(e, "not a directory"));
}

static bool is_symlink(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

/* A .part that is a symbolic link to a file outside the cache: never
 * written through (the link is refused), whatever the file is. */
START_TEST(test_part_that_is_a_symlink_is_not_followed)
{
    const char *files[] = {"model.safetensors", "config.json"};
    for (int i = 0; i < 2; i++) {
        hf_fx f;
        fx_init(&f);
        fx_start(&f);
        char victim[128], part[256];
        snprintf(victim, sizeof victim, "%s/victim", f.base);
        fx_write(victim, PRECIOUS, strlen(PRECIOUS));
        snprintf(part, sizeof part, "%s/%s.part", MODEL_DIR, files[i]);
        fx_write(fx_path(&f, part), "", 0);           /* makes the folders */
        unlink(fx_path(&f, part));
        ck_assert_int_eq(symlink(victim, fx_path(&f, part)), 0);
        const char *names[] = {files[i]};
        char *dir = fx_download(&f, "main", names, 1, NULL);
        ck_assert_msg(fx_holds(victim, PRECIOUS, strlen(PRECIOUS)),
                      "%s: the file a .part link points to was changed", files[i]);
        char final[256];
        snprintf(final, sizeof final, "%s/%s", MODEL_DIR, files[i]);
        ck_assert_msg(!is_symlink(fx_path(&f, final)), "%s: the link became the final file",
                      files[i]);
        ck_assert_msg(dir == NULL, "%s: a linked .part should be refused", files[i]);
        fx_assert_error_mentions(files[i], ".part", "link");
        ck_assert(!fx_exists(fx_path(&f, final)));
        fx_end(&f);
    }
}
END_TEST

/* A final file that is a symbolic link to a file outside: the download
 * replaces the link; the file it pointed to stays as it was. */
START_TEST(test_final_file_that_is_a_symlink_is_replaced_not_written)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    char victim[128];
    snprintf(victim, sizeof victim, "%s/victim", f.base);
    fx_write(victim, PRECIOUS, strlen(PRECIOUS));
    fx_write(fx_path(&f, MODEL_FINAL), "", 0);
    unlink(fx_path(&f, MODEL_FINAL));
    ck_assert_int_eq(symlink(victim, fx_path(&f, MODEL_FINAL)), 0);
    const char *names[] = {"model.safetensors"};
    char *dir = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(dir != NULL, "%s", tl_error());
    ck_assert(fx_holds(victim, PRECIOUS, strlen(PRECIOUS)));
    ck_assert(!is_symlink(fx_path(&f, MODEL_FINAL)));
    ck_assert(fx_holds(fx_path(&f, MODEL_FINAL), f.model, f.model_size));
    free(dir);
    fx_end(&f);
}
END_TEST

/* A file where the cache needs a folder: an error naming that path (and
 * the file being downloaded, once there is one). */
START_TEST(test_a_file_where_a_folder_should_be)
{
    hf_fx f;
    fx_init(&f);
    ck_assert_int_eq(hub_add_file(f.h, FX_REPO, "onnx/model.onnx", "onnx", 4), 0);
    fx_start(&f);
    const struct { const char *blocker, *file; } cases[] = {
        {"", "config.json"},                     /* the cache folder itself */
        {"org--tiny", "config.json"},            /* the repo's folder */
        {MODEL_DIR "/onnx", "onnx/model.onnx"},  /* a folder inside the revision */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char blocker[256];
        snprintf(blocker, sizeof blocker, "%s%s%s", f.cache, *cases[i].blocker ? "/" : "",
                 cases[i].blocker);
        fx_write(blocker, "x", 1);
        const char *names[] = {cases[i].file};
        char *dir = fx_download(&f, "main", names, 1, NULL);
        ck_assert_msg(dir == NULL, "'%s' is a file, yet the download worked", blocker);
        ck_assert_msg(names_non_folder(blocker), "the error should say that %s is not a folder: %s",
                      blocker, tl_error());
        if (i == 2) fx_assert_error_mentions(cases[i].file);
        ck_assert_msg(fx_holds(blocker, "x", 1), "%s was changed", blocker);
        unlink(blocker);
    }
    fx_end(&f);
}
END_TEST

/* A folder under the final name: refused before a byte is downloaded. */
START_TEST(test_a_folder_where_the_file_should_be)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    fx_write(fx_path(&f, MODEL_FINAL "/inside"), "x", 1);
    const char *names[] = {"model.safetensors"};
    char *dir = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(dir == NULL, "a folder under the final name should be refused");
    fx_assert_error_mentions("model.safetensors", fx_path(&f, MODEL_FINAL));
    ck_assert_msg(strcasestr(tl_error(), "folder") || strcasestr(tl_error(), "directory"),
                  "the error should say the name is taken by a folder: %s", tl_error());
    ck_assert_msg(fx_count(&f, "GET", HUB_ANY, NULL) == 0,
                  "nothing can be placed there: no GET should be made; requests:%s",
                  fx_log_text(&f));
    ck_assert(fx_holds(fx_path(&f, MODEL_FINAL "/inside"), "x", 1));
    ck_assert(!fx_exists(fx_path(&f, MODEL_PART)));
    fx_end(&f);
}
END_TEST

static int chown_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st; (void)flag; (void)ftw;
    return lchown(path, 65534, 65534);
}

/* Runs hf_download of names in a child process that cannot write the
 * revision folder (as root, it gives up root first); returns the child's
 * result (0: the folder came back) and its error in err. */
static int download_without_write_access(hf_fx *f, const char *const *names, int n, char *err,
                                         size_t size) {
    char rev[256];
    snprintf(rev, sizeof rev, "%s", fx_path(f, MODEL_DIR));
    if (geteuid() == 0) ck_assert_int_eq(nftw(f->base, chown_one, 16, FTW_PHYS), 0);
    ck_assert_int_eq(chmod(rev, 0555), 0);
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(3);
        char *dir = fx_download(f, "main", names, n, NULL);
        const char *e = tl_error() ? tl_error() : "";
        if (write(fds[1], e, strlen(e)) < 0) _exit(4);
        _exit(dir ? 0 : 1);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], err, size - 1);
    err[got > 0 ? got : 0] = 0;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    chmod(rev, 0755);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) <= 1, "the child died: %d", status);
    return WEXITSTATUS(status);
}

/* A cache folder that cannot be written: files already verified are still
 * served; a stale one stays as it was, with an error saying why. */
START_TEST(test_read_only_cache_folder)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    const char *names[] = {"config.json", "model.safetensors"};
    char *dir = fx_download(&f, "main", names, 2, NULL);
    ck_assert_msg(dir != NULL, "%s", tl_error());
    free(dir);
    char err[1024];
    ck_assert_msg(download_without_write_access(&f, names, 2, err, sizeof err) == 0,
                  "verified files need no write: %s", err);

    fx_write(fx_path(&f, CONFIG_FINAL), "{}", 2);   /* stale */
    ck_assert_int_eq(download_without_write_access(&f, names, 1, err, sizeof err), 1);
    ck_assert_msg(strstr(err, "config.json") && strstr(err, "ermission") &&
                      strstr(err, fx_path(&f, MODEL_DIR)),
                  "the error should name the file, the folder and the cause: %s", err);
    ck_assert_msg(fx_holds(fx_path(&f, CONFIG_FINAL), "{}", 2), "the old file was lost");
    fx_end(&f);
}
END_TEST

/* Every file and folder below dir, for "nothing was written there". */
static int count_entries(const char *dir) {
    char names[4096];
    fx_tree(dir, names, sizeof names);
    int n = 0;
    for (const char *p = names; *p; p++) n += *p == '\n';
    return n;
}

/* A symbolic link planted at any level below the cache root (the repo's
 * folder, the revision's, a sub-folder of a nested filename) is never
 * followed: the download is refused with a message naming the link, and
 * the folder it points to stays empty. The same in offline mode. */
START_TEST(test_symlinked_folders_in_the_cache_are_refused)
{
    const struct { const char *link, *file; } cases[] = {
        {"org--tiny", "config.json"},
        {"org--tiny/main", "model.safetensors"},
        {"org--tiny/main/onnx", "onnx/model.onnx"},
        {"org--tiny/main/onnx", "onnx/deeper/weights.bin"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        hf_fx f;
        fx_init(&f);
        ck_assert_int_eq(hub_add_file(f.h, FX_REPO, "onnx/model.onnx", "onnx", 4), 0);
        ck_assert_int_eq(hub_add_file(f.h, FX_REPO, "onnx/deeper/weights.bin", "w", 1), 0);
        fx_start(&f);
        char outside[128], link[256];
        snprintf(outside, sizeof outside, "%s/outside", f.base);
        ck_assert_int_eq(mkdir(outside, 0755), 0);
        snprintf(link, sizeof link, "%s", fx_path(&f, cases[i].link));
        fx_write(fx_path(&f, "placeholder"), "", 0);          /* makes the cache folder */
        char parent[256];
        snprintf(parent, sizeof parent, "%s", link);
        *strrchr(parent, '/') = 0;
        fx_write(strcat(strcpy((char[300]){0}, parent), "/x"), "", 0);
        ck_assert_int_eq(symlink(outside, link), 0);
        const char *names[] = {cases[i].file};
        for (int offline = 0; offline < 2; offline++) {
            if (offline) setenv("HF_HUB_OFFLINE", "1", 1);
            char *dir = fx_download(&f, "main", names, 1, NULL);
            ck_assert_msg(dir == NULL, "%s: a download through the link %s worked",
                          cases[i].file, cases[i].link);
            ck_assert_msg(strstr(tl_error(), link) && strstr(tl_error(), "symbolic link"),
                          "the error should name the link %s: %s", link, tl_error());
            ck_assert_msg(count_entries(outside) == 0, "%s: something was written through %s",
                          cases[i].file, cases[i].link);
            unsetenv("HF_HUB_OFFLINE");
        }
        fx_end(&f);
    }
}
END_TEST

/* The cache root itself may be a link (the user chose it): it is followed. */
START_TEST(test_a_cache_root_that_is_a_link_is_used)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    char real[128], link[128];
    snprintf(real, sizeof real, "%s/real-cache", f.base);
    snprintf(link, sizeof link, "%s/cache-link", f.base);
    ck_assert_int_eq(mkdir(real, 0755), 0);
    ck_assert_int_eq(symlink(real, link), 0);
    const char *names[] = {"config.json"};
    tl_clear_error();
    char *dir = hf_download(FX_REPO, names, 1, link, "main", f.endpoint, NULL, FX_TIMEOUT);
    ck_assert_msg(dir != NULL, "%s", tl_error());
    char placed[256];
    snprintf(placed, sizeof placed, "%s/org--tiny/main/config.json", real);
    ck_assert(fx_holds(placed, FX_CONFIG, strlen(FX_CONFIG)));
    free(dir);
    fx_end(&f);
}
END_TEST

/* A final name that is a link is not a verified file, even when what it
 * points to has the right bytes: offline it is refused, online it is
 * replaced by the verified file and its target is left alone. */
START_TEST(test_final_link_to_the_right_bytes_is_not_trusted)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    char victim[128];
    snprintf(victim, sizeof victim, "%s/victim", f.base);
    fx_write(victim, FX_CONFIG, strlen(FX_CONFIG));
    fx_write(fx_path(&f, CONFIG_FINAL), "", 0);
    unlink(fx_path(&f, CONFIG_FINAL));
    ck_assert_int_eq(symlink(victim, fx_path(&f, CONFIG_FINAL)), 0);
    const char *names[] = {"config.json"};
    setenv("HF_HUB_OFFLINE", "1", 1);
    char *dir = fx_download(&f, "main", names, 1, NULL);
    unsetenv("HF_HUB_OFFLINE");
    ck_assert_msg(dir == NULL, "offline, a link is not a cached file");
    fx_assert_error_mentions("config.json", "symbolic link");
    dir = fx_download(&f, "main", names, 1, NULL);
    ck_assert_msg(dir != NULL, "%s", tl_error());
    ck_assert(!is_symlink(fx_path(&f, CONFIG_FINAL)));
    ck_assert(fx_holds(fx_path(&f, CONFIG_FINAL), FX_CONFIG, strlen(FX_CONFIG)));
    ck_assert_int_eq(fx_count(&f, "GET", HUB_ANY, NULL), 1);
    ck_assert(fx_holds(victim, FX_CONFIG, strlen(FX_CONFIG)));
    free(dir);
    fx_end(&f);
}
END_TEST
