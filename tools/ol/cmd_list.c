/* ol list: the lessons, their titles and rungs, and the student's progress. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "status.h"

static const char HELP[] =
    "usage: ol list [--workspace DIR]\n"
    "\n"
    "Lists the course's lessons (course/*/lesson.json): id, rung, title, and your\n"
    "progress in the workspace: not started, started (your code is in c/), how many\n"
    "tests you have written, and the result of your last `ol check`.\n";

int cmd_list(int argc, char **argv) {
    static const struct option opts[] = {{"workspace", required_argument, 0, 'w'},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *workspace = NULL;
    int c;
    optind = 0;
    while ((c = getopt_long(argc, argv, "hw:", opts, NULL)) != -1) {
        if (c == 'h') return print_help(HELP);
        if (c == 'w') workspace = optarg;
        else return usage_error("list", "unknown option");
    }
    if (optind < argc) return usage_error("list", "takes no lesson: \"%s\"", argv[optind]);
    ol_ctx ctx;
    if (ctx_init(&ctx, workspace) != 0) return OL_USAGE;
    lesson *ls;
    int n;
    lesson_load_all(ctx.root, &ls, &n);
    if (n == 0) {
        ol_error("no lesson in %s/course (each lesson is course/ID/lesson.json)", ctx.root);
        ctx_free(&ctx);
        free(ls);
        return OL_USAGE;
    }
    int width = 5;
    for (int i = 0; i < n; i++)
        if ((int)strlen(ls[i].title) > width) width = (int)strlen(ls[i].title);
    if (width > 50) width = 50;
    printf("%-7s %-4s %-*s  %s\n", "Lesson", "Rung", width, "Title", "Your progress");
    for (int i = 0; i < n; i++) {
        const lesson *l = &ls[i];
        strbuf progress = {0};
        if (!lesson_started(&ctx, l)) {
            sb_add(&progress, "not started");
        } else {
            sb_add(&progress, "started");
            char *dir = path_join(ctx.student, l->student_tests);
            suite s;
            char *err = NULL;
            if (suite_scan(&s, l->slug, dir, &err) == 0)
                sb_printf(&progress, ", %d test%s", s.tests.n, s.tests.n == 1 ? "" : "s");
            free(err);
            suite_free(&s);
            free(dir);
            check_status st;
            if (status_load(&ctx, l->id, &st) == 0) {
                if (st.passed) sb_printf(&progress, "; last check: %sPASS%s", color(stdout, C_GREEN), color(stdout, C_RESET));
                else sb_printf(&progress, "; last check: %sFAIL%s", color(stdout, C_RED), color(stdout, C_RESET));
                if (st.score >= 0) sb_printf(&progress, " (mutation score %.2f)", st.score);
            }
        }
        printf("%-7s %-4s %-*.*s  %s\n", l->id, l->rung, width, width, l->title, progress.s);
        sb_free(&progress);
    }
    lessons_free(ls, n);
    ctx_free(&ctx);
    return OL_PASS;
}
