/* The validators on their own (contracts/tinyllm/io/hf.h): what the caller
 * gives (repo ids, filenames, revisions) and what the server sends (commits,
 * etags) is accepted or refused before it names anything on disk. No Hub and
 * no download: the first tests a student can turn green. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "tinyllm/io/hf.h"
#include "tinyllm/tensor.h"

/* validate(value) must return 0 and leave no error. */
#define assert_accepted(validate, value)                                                          \
    do {                                                                                          \
        tl_clear_error();                                                                         \
        int rc_ = validate(value);                                                                \
        ck_assert_msg(rc_ == 0, "%s(\"%s\") refused a good value: %s", #validate, value,          \
                      tl_error() ? tl_error() : "(no message)");                                  \
    } while (0)

/* validate(value) must return -1 with a message that names the value. */
#define assert_refused(validate, value, shown)                                                    \
    do {                                                                                          \
        tl_clear_error();                                                                         \
        int rc_ = validate(value);                                                                \
        const char *e_ = tl_error() ? tl_error() : "(no message)";                                \
        ck_assert_msg(rc_ == -1, "%s(\"%s\") accepted a bad value", #validate, value);            \
        ck_assert_msg(strstr(e_, shown) != NULL, "%s(\"%s\"): the error should show \"%s\": %s",  \
                      #validate, value, shown, e_);                                               \
    } while (0)

START_TEST(test_validate_repo_ids)
{
    assert_accepted(hf_validate_repo_id, "gpt2");
    assert_accepted(hf_validate_repo_id, "HuggingFaceTB/SmolLM2-135M-Instruct");
    assert_refused(hf_validate_repo_id, "org/../tiny", "org/../tiny");
    assert_refused(hf_validate_repo_id, "a/b/c", "a/b/c");
    assert_refused(hf_validate_repo_id, "org/tiny-", "org/tiny-");
    assert_refused(hf_validate_repo_id, "", "empty");
}
END_TEST

START_TEST(test_validate_filenames)
{
    assert_accepted(hf_validate_filename, "config.json");
    assert_accepted(hf_validate_filename, "onnx/model.onnx");
    assert_refused(hf_validate_filename, "../x", "../x");
    assert_refused(hf_validate_filename, "/etc/passwd", "/etc/passwd");
    assert_refused(hf_validate_filename, "a//b", "a//b");
}
END_TEST

START_TEST(test_validate_revisions)
{
    assert_accepted(hf_validate_revision, "main");
    assert_accepted(hf_validate_revision, "refs/pr/1");
    assert_accepted(hf_validate_revision, "0123456789abcdef0123456789abcdef01234567");
    assert_refused(hf_validate_revision, "../main", "../main");
    assert_refused(hf_validate_revision, "main/..", "main/..");
}
END_TEST

START_TEST(test_validate_commits)
{
    assert_accepted(hf_validate_commit, "0123456789abcdef0123456789abcdef01234567");
    assert_refused(hf_validate_commit, "0123456789ABCDEF0123456789ABCDEF01234567",
                   "0123456789ABCDEF");
    assert_refused(hf_validate_commit, "../../evil", "../../evil");
    assert_refused(hf_validate_commit, "0123456789abcdef", "0123456789abcdef");
}
END_TEST

START_TEST(test_validate_etags)
{
    assert_accepted(hf_validate_etag, "0123456789abcdef0123456789abcdef01234567"); /* a git sha1 */
    /* an LFS sha256 */
    assert_accepted(hf_validate_etag, "0123456789abcdef0123456789abcdef"
                                      "0123456789abcdef0123456789abcdef");
    assert_refused(hf_validate_etag, "\"0123456789abcdef0123456789abcdef01234567\"", "\"0123");
    assert_refused(hf_validate_etag, "../../evil", "../../evil");
    assert_refused(hf_validate_etag, "W/abc", "W/abc");
}
END_TEST
