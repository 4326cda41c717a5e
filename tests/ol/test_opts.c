/* The one option parser of every command: values in every spelling, the
 * other arguments in order, and each mistake said once, naming the option. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ol/opts.h"

static const char *workspace, *json, *filter;
static bool ref_deps;
static char said[4096];

static const ol_option OPTS[] = {{"workspace", 'w', "DIR", &workspace, NULL},
                                 {"ref-deps", 0, NULL, NULL, &ref_deps},
                                 {"json", 0, "FILE", &json, NULL},
                                 {"json-lines", 0, "FILE", &json, NULL},
                                 {NULL, 'k', "NAME", &filter, NULL},
                                 {0}};

/* Parses a NULL-ended argument list (after "ol check"); what went to stderr lands in `said`. */
static opts_result parse(strlist *args, int stop_after, ...) {
    char *argv[32] = {"ol check"};
    int argc = 1;
    va_list ap;
    va_start(ap, stop_after);
    for (char *a; (a = va_arg(ap, char *)) != NULL;) argv[argc++] = a;
    va_end(ap);
    workspace = json = filter = NULL;
    ref_deps = false;
    fflush(stderr);
    char path[] = "/tmp/ol-opts-XXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    dup2(fd, 2);
    opts_result r = opts_parse("check", argc, argv, OPTS, stop_after, args);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, said, sizeof said - 1, 0);
    said[n > 0 ? n : 0] = 0;
    close(fd);
    unlink(path);
    return r;
}

START_TEST(test_values_in_every_spelling_and_arguments_in_order) {
    strlist args = {0};
    ck_assert_int_eq(parse(&args, 0, "L7.1", "--json", "r.json", "-kgolden", "--workspace=/w",
                           "--ref", "x", NULL),
                     OPTS_RUN);
    ck_assert_str_eq(json, "r.json");
    ck_assert_str_eq(filter, "golden");
    ck_assert_str_eq(workspace, "/w");
    ck_assert(ref_deps); /* an unambiguous prefix */
    ck_assert_int_eq(args.n, 2);
    ck_assert_str_eq(args.v[0], "L7.1");
    ck_assert_str_eq(args.v[1], "x");
    ck_assert_str_eq(said, "");
    sl_free(&args);
    ck_assert_int_eq(parse(&args, 0, "-k", "eps", "-w", "/v", "--", "--json", NULL), OPTS_RUN);
    ck_assert_str_eq(filter, "eps");
    ck_assert_str_eq(workspace, "/v");
    ck_assert_ptr_null(json);
    ck_assert_int_eq(args.n, 1);
    ck_assert_str_eq(args.v[0], "--json"); /* after "--", an argument */
    sl_free(&args);
}
END_TEST

START_TEST(test_a_missing_value_is_named_with_what_it_is) {
    strlist args = {0};
    ck_assert_int_eq(parse(&args, 0, "L7.1", "--json", NULL), OPTS_ERROR);
    ck_assert_msg(strstr(said, "ol check: --json needs a FILE") != NULL, "said: %s", said);
    ck_assert_msg(strstr(said, "ol check --help") != NULL, "said: %s", said);
    sl_free(&args);
    ck_assert_int_eq(parse(&args, 0, "-k", NULL), OPTS_ERROR);
    ck_assert_msg(strstr(said, "-k needs a NAME") != NULL, "said: %s", said);
    sl_free(&args);
}
END_TEST

START_TEST(test_unknown_ambiguous_and_misused_options_are_refused) {
    strlist args = {0};
    ck_assert_int_eq(parse(&args, 0, "--jsn", "x", NULL), OPTS_ERROR);
    ck_assert_msg(strstr(said, "unknown option --jsn") != NULL, "said: %s", said);
    ck_assert_int_eq(parse(&args, 0, "--js", "x", NULL), OPTS_ERROR);
    ck_assert_msg(strstr(said, "ambiguous option --js") != NULL, "said: %s", said);
    ck_assert_int_eq(parse(&args, 0, "--ref-deps=yes", NULL), OPTS_ERROR);
    ck_assert_msg(strstr(said, "--ref-deps takes no value") != NULL, "said: %s", said);
    ck_assert_int_eq(parse(&args, 0, "-q", NULL), OPTS_ERROR);
    ck_assert_msg(strstr(said, "unknown option -q") != NULL, "said: %s", said);
    /* an exact name wins over the longer one it begins */
    ck_assert_int_eq(parse(&args, 0, "--json", "a", NULL), OPTS_RUN);
    ck_assert_str_eq(json, "a");
    sl_free(&args);
}
END_TEST

START_TEST(test_help_anywhere_and_the_rest_left_for_a_subcommand) {
    strlist args = {0};
    ck_assert_int_eq(parse(&args, 0, "L7.1", "-h", NULL), OPTS_HELP);
    sl_free(&args);
    ck_assert_int_eq(parse(&args, 0, "--help", "--bogus", NULL), OPTS_HELP);
    sl_free(&args);
    /* after one argument the rest is the subcommand's, options included */
    ck_assert_int_eq(parse(&args, 1, "serve", "--port", "8080", "--help", NULL), OPTS_RUN);
    ck_assert_int_eq(args.n, 4);
    ck_assert_str_eq(args.v[1], "--port");
    ck_assert_str_eq(args.v[3], "--help");
    sl_free(&args);
}
END_TEST
