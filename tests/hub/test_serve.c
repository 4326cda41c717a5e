/* `ol hub serve`: its arguments (serving itself is tested by
 * tests/hub/real_clients.sh, which signals the real program). */
#include <check.h>
#include "tinyllm/testing.h"
#include "client.h"

static int serve(int argc, const char **argv) {
    return hub_serve_command(argc, (char **)argv);
}

START_TEST(test_serve_usage_errors_return_2) {
    const char *no_dir[] = {"serve"};
    const char *unknown[] = {"serve", "/tmp", "--verbose"};
    const char *bad_port[] = {"serve", "/tmp", "--port", "80a"};
    const char *big_port[] = {"serve", "/tmp", "--port", "70000"};
    const char *no_value[] = {"serve", "/tmp", "--cdn-port"};
    const char *negative[] = {"serve", "/tmp", "--lfs-threshold", "-1"};
    const char *two_dirs[] = {"serve", "/tmp", "/var"};
    const char *same_ports[] = {"serve", "/tmp", "--port", "5000", "--cdn-port", "5000"};
    const char *rename_no_pair[] = {"serve", "/tmp", "--rename", "org/old"};
    const char *rename_nothing[] = {"serve", "/tmp", "--rename"};
    ck_assert_int_eq(serve(1, no_dir), 2);
    ck_assert_int_eq(serve(3, unknown), 2);
    ck_assert_int_eq(serve(4, bad_port), 2);
    ck_assert_int_eq(serve(4, big_port), 2);
    ck_assert_int_eq(serve(3, no_value), 2);
    ck_assert_int_eq(serve(4, negative), 2);
    ck_assert_int_eq(serve(3, two_dirs), 2);
    ck_assert_int_eq(serve(6, same_ports), 2);
    ck_assert_int_eq(serve(4, rename_no_pair), 2);
    ck_assert_int_eq(serve(3, rename_nothing), 2);
}
END_TEST

START_TEST(test_serve_help_is_0_and_a_missing_folder_is_1) {
    const char *help[] = {"serve", "--help"};
    const char *missing[] = {"serve", "/nonexistent/hub-folder"};
    const char *bad_rename[] = {"serve", "/tmp", "--rename", "org/a=datasets/org/b"};
    ck_assert_int_eq(serve(2, help), 0);
    ck_assert_int_eq(serve(2, missing), 1);
    ck_assert_int_eq(serve(4, bad_rename), 1);   /* refused by hub_add_rename, said */
}
END_TEST
