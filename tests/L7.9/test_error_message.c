/* What the contract promises of a failure (contracts/tinyllm/io/hf.h):
 * hf_download returns NULL with tl_error() naming the file, the URL and the
 * cause, so the one line a user sees says what to fix. */
#include "hf_fixture.h"

START_TEST(test_error_names_the_file_the_url_and_the_cause)
{
    hf_fx f;
    fx_init(&f);
    fx_start(&f);
    const char *names[] = {"config.json", "weights/missing.bin"};
    tl_clear_error();
    char *dir = fx_download(&f, "main", names, 2, NULL);
    const char *e = tl_error() ? tl_error() : "(no message)";
    ck_assert_msg(dir == NULL, "a file the repository does not have was downloaded");
    char url[256];
    snprintf(url, sizeof url, "%s/org/tiny/resolve/main/weights/missing.bin", f.endpoint);
    ck_assert_msg(strstr(e, "weights/missing.bin") != NULL, "the error should name the file: %s",
                  e);
    ck_assert_msg(strstr(e, url) != NULL, "the error should give the URL %s: %s", url, e);
    ck_assert_msg(strstr(e, "404") != NULL, "the error should give the cause (404): %s", e);
    fx_end(&f);
}
END_TEST
