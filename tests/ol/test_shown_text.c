/* A student's bytes as ol passes them on: on a terminal no control character acts (a title
 * set, a screen cleared), and in a JSON report every string is UTF-8, invalid bytes U+FFFD as
 * Python's errors="replace" makes them. */
#include <check.h>
#include <stdlib.h>

#include "ol/util.h"

static void expect_shown(const char *in, const char *out) {
    char *got = shown_text(in);
    ck_assert_msg(strcmp(got, out) == 0, "shown_text(\"%s\") = \"%s\", expected \"%s\"", in, got,
                  out);
    free(got);
}

static void expect_repaired(const char *in, const char *out) {
    char *got = utf8_repaired(in);
    ck_assert_msg(strcmp(got, out) == 0, "utf8_repaired(\"%s\") = \"%s\", expected \"%s\"", in,
                  got, out);
    free(got);
}

START_TEST(test_control_characters_are_spelled_out)
{
    expect_shown("a /* \x1b]0;pwned\x07 \x1b[2J */", "a /* \\x1b]0;pwned\\x07 \\x1b[2J */");
    expect_shown("cr\rdel\x7f", "cr\\x0ddel\\x7f");
    expect_shown("csi \xc2\x9b" "2J", "csi \\u009b2J"); /* C1, once decoded */
    /* tab and newline are text (a message of several lines) */
    expect_shown("a\tb\nc", "a\tb\nc");
}
END_TEST

START_TEST(test_valid_utf8_is_shown_as_it_is)
{
    expect_shown("caf\xc3\xa9 \xe2\x80\x98q\xe2\x80\x99 \xf0\x9f\x99\x82 \xc2\xa0", /* NBSP */
                 "caf\xc3\xa9 \xe2\x80\x98q\xe2\x80\x99 \xf0\x9f\x99\x82 \xc2\xa0");
}
END_TEST

START_TEST(test_invalid_bytes_are_spelled_out)
{
    expect_shown("caf\xe9 \xff\xfe", "caf\\xe9 \\xff\\xfe");
    expect_shown("cut \xe2\x80", "cut \\xe2\\x80"); /* a sequence the end cuts */
}
END_TEST

START_TEST(test_utf8_validity)
{
    ck_assert(utf8_valid(""));
    ck_assert(utf8_valid("test_caf\xc3\xa9.c"));
    ck_assert(utf8_valid("\xf4\x8f\xbf\xbf")); /* U+10FFFF */
    ck_assert(!utf8_valid("bad\xff\xfe.c"));
    ck_assert(!utf8_valid("\xc0\xaf"));         /* an overlong '/' */
    ck_assert(!utf8_valid("\xed\xa0\x80"));     /* a surrogate */
    ck_assert(!utf8_valid("\xf4\x90\x80\x80")); /* past U+10FFFF */
    ck_assert(!utf8_valid("\xe2\x82"));         /* cut short */
}
END_TEST

/* One U+FFFD per maximal subpart, as Python's bytes.decode("utf-8", "replace") */
START_TEST(test_invalid_sequences_become_replacement_characters)
{
#define FFFD "\xef\xbf\xbd"
    expect_repaired("caf\xe9 \xff\xfe */", "caf" FFFD " " FFFD FFFD " */");
    expect_repaired("\xe2\x82 x", FFFD " x");               /* one for a cut sequence */
    expect_repaired("\xed\xa0\x80", FFFD FFFD FFFD);        /* a surrogate: three */
    expect_repaired("\xf0\x9f\x99", FFFD);                  /* cut at the end */
    expect_repaired("\xc0\xaf", FFFD FFFD);                 /* overlong */
    expect_repaired("ok \xc3\xa9\xf0\x9f\x99\x82", "ok \xc3\xa9\xf0\x9f\x99\x82");
#undef FFFD
}
END_TEST
