/* ol dist OUT: the student release (dist.c); --gradescope OUT.zip: the
 * Gradescope autograder built on a grader's copy of it (gradescope.c). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "dist.h"
#include "gradescope.h"
#include "opts.h"

static const char HELP[] =
    "usage: ol dist OUT [--lessons L7.1,L7.2,...]\n"
    "       ol dist --gradescope OUT.zip --lessons L7.1,... [--milestone MS-L7]\n"
    "\n"
    "Run in the course repository. Writes the student release into the new folder\n"
    "OUT: the chapters, lesson.json, contracts, stubs, course tests, fixtures, the\n"
    "runtime (headers and compiled libraries), bin/ol and bin/tinyllm, a README for\n"
    "students, and the reference, its wheats and its mutants as compiled objects\n"
    "only (prebuilt/): no source, no diff. Students grade inside it as in the\n"
    "course; hidden tests (lesson.json \"hidden_tests\") and model answers stay out.\n"
    "Without --lessons, every lesson; the lessons they need always come along.\n"
    "\n"
    "  --lessons IDS       comma-separated lesson ids\n"
    "  --gradescope ZIP    write Gradescope's autograder instead: setup.sh,\n"
    "                      run_autograder and a grader's release (hidden tests\n"
    "                      included); run_autograder runs `ol check` per lesson\n"
    "  --milestone ID      with --gradescope: also run `ol milestone ID`\n"
    "\n"
    "Exit status: 0 written, 1 the course is not consistent (said why), 2 usage.\n";

static void split_ids(const char *text, strlist *out) {
    char *copy = xstrdup(text ? text : "");
    for (char *save = NULL, *w = strtok_r(copy, ", ", &save); w; w = strtok_r(NULL, ", ", &save))
        if (!sl_contains(out, w)) sl_push(out, w);
    free(copy);
}

int cmd_dist(int argc, char **argv) {
    const char *lessons = NULL, *zip = NULL, *milestone = NULL;
    bool quiet = false;
    const ol_option opts[] = {{"lessons", 0, "IDS", &lessons, NULL},
                              {"gradescope", 0, "ZIP", &zip, NULL},
                              {"milestone", 0, "ID", &milestone, NULL},
                              {"quiet", 'q', NULL, NULL, &quiet},
                              {0}};
    strlist args = {0};
    opts_result parsed = opts_parse("dist", argc, argv, opts, 0, &args);
    int rc = OL_USAGE;
    if (parsed == OPTS_HELP)
        rc = print_help(HELP);
    else if (parsed == OPTS_ERROR)
        rc = OL_USAGE;
    else if (zip && args.n)
        rc = usage_error("dist", "give either OUT or --gradescope ZIP, not both");
    else if (!zip && args.n != 1)
        rc = usage_error("dist", "give the release's folder, e.g. `ol dist /tmp/tinyllm-release`");
    else if (milestone && !zip)
        rc = usage_error("dist", "--milestone goes with --gradescope");
    else if (zip && !lessons)
        rc =
            usage_error("dist", "--gradescope needs --lessons (the lessons the assignment grades)");
    else {
        ol_ctx ctx;
        if (ctx_init(&ctx, NULL) == 0) {
            dist_options opt = {.quiet = quiet};
            split_ids(lessons, &opt.lessons);
            if (lessons && opt.lessons.n == 0)
                rc = usage_error("dist", "--lessons lists no lesson");
            else if (zip)
                rc = gradescope_write(&ctx, &opt, milestone, zip);
            else
                rc = dist_write(&ctx, &opt, args.v[0]);
            sl_free(&opt.lessons);
            ctx_free(&ctx);
        }
    }
    sl_free(&args);
    return rc;
}
