/* Reading and replacing whole files (files.h): a regular file is read whole,
 * whatever its size; a folder, a FIFO (never waited on), a dangling link and a
 * file over the limit are refused with the path and what it is, errno ENOENT
 * only for a name that is not there at all. A temporary file is a new name
 * each time, beside the path: an existing file or link under the name a fixed
 * suffix would give is neither written through nor removed; its mode is the
 * one fopen gives, and the process's umask is never changed. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tinyllm/files.h"
#include "tinyllm/tensor.h"
#include "st_test_util.h"

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

START_TEST(files_read_a_regular_file_whole)
{
    char *d = temp_dir();
    size_t big = 300000, len = 0;   /* past any single read's buffer */
    char *text = malloc(big + 1);
    for (size_t i = 0; i < big; i++) text[i] = (char)('a' + i % 26);
    text[big] = '\0';
    write_text(in_dir(d, "big.json"), text);
    char *got = tl_read_whole_file(in_dir(d, "big.json"), big, &len);
    ck_assert_ptr_nonnull(got);
    ck_assert_uint_eq(len, big);
    ck_assert_str_eq(got, text);
    free(got);
    tl_clear_error();
    ck_assert_ptr_null(tl_read_whole_file(in_dir(d, "big.json"), big - 1, &len));
    ck_assert_int_eq(errno, EFBIG);
    ck_assert_ptr_nonnull(strstr(tl_error(), "over the 299999 bytes"));
    free(text);
    remove_tree(d);
}
END_TEST

START_TEST(files_refuse_what_is_not_a_regular_file)
{
    char *d = temp_dir();
    struct { const char *name, *said; int err; } cases[] = {
        {"fifo", "is a FIFO (named pipe), not a regular file", EINVAL},
        {"folder", "is a folder, not a regular file", EINVAL},
        {"dangling", "a symlink to a file that does not exist", EINVAL},
        {"absent", "No such file or directory", ENOENT},
    };
    ck_assert_int_eq(mkfifo(in_dir(d, "fifo"), 0600), 0);
    ck_assert_int_eq(mkdir(in_dir(d, "folder"), 0700), 0);
    ck_assert_int_eq(symlink(in_dir(d, "nowhere"), in_dir(d, "dangling")), 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tl_clear_error();
        ck_assert_ptr_null(tl_read_whole_file(in_dir(d, cases[i].name), 1 << 20, NULL));
        ck_assert_int_eq(errno, cases[i].err);
        ck_assert_msg(strstr(tl_error(), cases[i].said) && strstr(tl_error(), cases[i].name),
                      "%s: %s", cases[i].name, tl_error());
        ck_assert(tl_path_present(in_dir(d, cases[i].name)) == (cases[i].err != ENOENT));
    }
    tl_clear_error();
    remove_tree(d);
}
END_TEST

START_TEST(files_temp_beside_is_new_each_time_and_follows_no_link)
{
    char *d = temp_dir();
    char target[4096], tmp1[4200], tmp2[4200];
    snprintf(target, sizeof target, "%s", in_dir(d, "out.json"));
    write_text(in_dir(d, "victim"), "precious");
    ck_assert_int_eq(symlink(in_dir(d, "victim"), in_dir(d, "out.json.tmp")), 0);
    FILE *a = tl_create_temp_beside(target, tmp1, sizeof tmp1);
    FILE *b = tl_create_temp_beside(target, tmp2, sizeof tmp2);
    ck_assert(a && b);
    ck_assert_str_ne(tmp1, tmp2);
    ck_assert(strncmp(tmp1, target, strlen(target)) == 0 && strstr(tmp1, ".tmp."));
    fputs("new", a);
    fclose(a);
    fclose(b);
    ck_assert_int_eq(rename(tmp1, target), 0);
    ck_assert_int_eq(unlink(tmp2), 0);
    size_t len;
    char *victim = tl_read_whole_file(in_dir(d, "victim"), 100, &len);
    char *out = tl_read_whole_file(target, 100, &len);
    ck_assert_str_eq(victim, "precious");
    ck_assert_str_eq(out, "new");
    free(victim);
    free(out);
    struct stat st;
    ck_assert_int_eq(lstat(in_dir(d, "out.json.tmp"), &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    /* the mode fopen gives (0666 less the umask), and the umask left as it was */
    mode_t old = umask(027);
    FILE *c = tl_create_temp_beside(target, tmp1, sizeof tmp1);
    ck_assert_ptr_nonnull(c);
    fclose(c);
    ck_assert_int_eq(stat(tmp1, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0640);
    ck_assert_int_eq(umask(old), 027);
    unlink(tmp1);
    /* too small a buffer, or a folder that is not there: NULL, errno set, nothing made */
    char small[8];
    ck_assert_ptr_null(tl_create_temp_beside(target, small, sizeof small));
    ck_assert_int_eq(errno, ENAMETOOLONG);
    ck_assert_ptr_null(tl_create_temp_beside(in_dir(d, "no/x"), tmp1, sizeof tmp1));
    ck_assert_int_eq(errno, ENOENT);
    remove_tree(d);
}
END_TEST
