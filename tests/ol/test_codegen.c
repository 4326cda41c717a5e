/* Code generation per build: the same seed gives the same flags (a rerun
 * reuses its builds), different seeds give different ones, and every build
 * differs from a plain one from its first byte on (a nop after the entry). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ol/codegen.h"

static char *flags_of(const char *build) {
    char seed[HASH_HEX];
    codegen_seed("a secret", "a suite", build, seed);
    strlist flags = {0};
    codegen_flags(seed, &flags);
    char *joined = sl_join(&flags, " ");
    sl_free(&flags);
    return joined;
}

START_TEST(test_the_same_seed_gives_the_same_flags) {
    char *a = flags_of("control 0"), *b = flags_of("control 0");
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
}
END_TEST

START_TEST(test_builds_differ) {
    strlist seen = {0};
    for (int i = 0; i < 64; i++) {
        char build[32];
        snprintf(build, sizeof build, "mutant s%02d", i);
        char *f = flags_of(build);
        if (!sl_contains(&seen, f)) sl_push(&seen, f);
        free(f);
    }
    ck_assert_int_eq(seen.n, 64);
    sl_free(&seen);
}
END_TEST

START_TEST(test_every_build_pads_after_its_entry) {
    for (int i = 0; i < 200; i++) {
        char build[32];
        snprintf(build, sizeof build, "control %d", i);
        char *f = flags_of(build);
        unsigned n = 0, m = 0;
        const char *at = strstr(f, "-fpatchable-function-entry=");
        ck_assert_ptr_nonnull(at);
        ck_assert_int_eq(sscanf(at, "-fpatchable-function-entry=%u,%u", &n, &m), 2);
        ck_assert_msg(n > m && n <= 16, "%s", f);
        /* nothing that changes floating point */
        ck_assert_ptr_null(strstr(f, "fast-math"));
        ck_assert_ptr_null(strstr(f, "fp-contract"));
        free(f);
    }
}
END_TEST
