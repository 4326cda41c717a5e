/* ol list: the lessons, their titles and rungs, and the student's progress. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "harness.h"
#include "opts.h"
#include "scaffold.h"
#include "status.h"

static const char HELP[] =
    "usage: ol list [--drafts] [--workspace DIR]\n"
    "\n"
    "Lists the course's lessons (course/*/lesson.json): id, rung, title, and your\n"
    "progress in the workspace: not started; started (your code is in c/), how\n"
    "many of the starting code's \"not implemented\" functions are left, how many\n"
    "tests you have written; and the result of your last `ol check`.\n"
    "A lesson whose lesson.json says \"draft\": true is not listed: --drafts (for\n"
    "instructors) lists it too.\n"
    "\n"
    "Exit status: 0, or 2 when a lesson.json of the course cannot be read (the\n"
    "other lessons are still listed).\n";

/* Titles longer than this are cut, with "...", to keep the table readable. */
enum { TITLE_MAX = 44 };

/* How many of the stub's `tl_fail("not implemented: ...")` lines are still
 * in the student's sources of l. */
static int not_implemented_left(ol_ctx *ctx, const lesson *l) {
    int left = 0;
    for (int i = 0; i < l->sources.n; i++) {
        char *path = path_join(ctx->student, l->sources.v[i]);
        char *text = read_file(path, NULL);
        for (const char *p = text; p && (p = strstr(p, "\"not implemented")) != NULL; p++) left++;
        free(text);
        free(path);
    }
    return left;
}

/* The folders of course/ that hold a lesson.json (loaded or not). */
static int count_lesson_files(const char *root) {
    char *course = path_join(root, "course");
    DIR *d = opendir(course);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        char *json = xasprintf("%s/%s/lesson.json", course, e->d_name);
        n += is_file(json);
        free(json);
    }
    if (d) closedir(d);
    free(course);
    return n;
}

static void progress_of(ol_ctx *ctx, const lesson *l, strbuf *progress) {
    if (!lesson_started(ctx, l)) {
        sb_add(progress, "not started");
        return;
    }
    sb_add(progress, "started");
    int left = not_implemented_left(ctx, l);
    if (left)
        sb_printf(progress, ", %d function%s still \"not implemented\"", left,
                  left == 1 ? "" : "s");
    char *dir = path_join(ctx->student, l->student_tests);
    suite s;
    char *err = NULL;
    if (suite_scan(&s, l->slug, dir, &err) == 0) {
        /* the example `ol start` wrote, still as it wrote it, is not a test of theirs */
        char *name = NULL, *example = example_test_text(ctx, l, &name);
        int mine = 0;
        for (int i = 0; i < s.tests.n; i++) {
            char *text = read_file(s.test_file.v[i], NULL);
            mine += !text || strcmp(text, example) != 0;
            free(text);
        }
        sb_printf(progress, ", %d test%s of yours", mine, mine == 1 ? "" : "s");
        free(name);
        free(example);
    }
    free(err);
    suite_free(&s);
    free(dir);
    check_status st;
    if (status_load(ctx, l->id, &st) == 0) {
        if (st.passed)
            sb_printf(progress, "; last check: %sPASS%s", color(stdout, C_GREEN),
                      color(stdout, C_RESET));
        else
            sb_printf(progress, "; last check: %sFAIL%s", color(stdout, C_RED),
                      color(stdout, C_RESET));
        if (st.score >= 0) sb_printf(progress, " (mutation score %.2f)", st.score);
    }
}

int cmd_list(int argc, char **argv) {
    const char *workspace = NULL;
    bool drafts = false;
    const ol_option opts[] = {
        {"workspace", 'w', "DIR", &workspace, NULL}, {"drafts", 0, NULL, NULL, &drafts}, {0}};
    strlist args = {0};
    opts_result parsed = opts_parse("list", argc, argv, opts, 0, &args);
    if (parsed == OPTS_RUN && args.n > 0) {
        usage_error("list", "takes no lesson: \"%s\"", args.v[0]);
        parsed = OPTS_ERROR;
    }
    sl_free(&args);
    if (parsed == OPTS_HELP) return print_help(HELP);
    if (parsed == OPTS_ERROR) return OL_USAGE;
    ol_ctx ctx;
    if (open_workspace(&ctx, workspace) != 0) return OL_USAGE;
    if (require_student_workspace(&ctx) != 0) {
        ctx_free(&ctx);
        return OL_USAGE;
    }
    lesson *ls;
    int n;
    lesson_load_all(ctx.root, &ls, &n);
    int unreadable = count_lesson_files(ctx.root) - n;
    /* a draft is not open to students yet: out of the list (and its counts) */
    int shown = 0;
    for (int i = 0; i < n; i++) {
        if (ls[i].draft && !drafts) lesson_free(&ls[i]);
        else ls[shown++] = ls[i];
    }
    n = shown;
    if (n == 0) {
        ol_error("no lesson can be read in %s/course (each lesson is course/ID/lesson.json)",
                 ctx.root);
        ctx_free(&ctx);
        free(ls);
        return OL_USAGE;
    }
    int width = 5;
    for (int i = 0; i < n; i++)
        if ((int)strlen(ls[i].title) > width) width = (int)strlen(ls[i].title);
    if (width > TITLE_MAX) width = TITLE_MAX;
    printf("%-7s %-4s %-*s  %s\n", "Lesson", "Rung", width, "Title", "Your progress");
    const lesson *first_unstarted = NULL;
    bool any_started = false;
    for (int i = 0; i < n; i++) {
        const lesson *l = &ls[i];
        strbuf progress = {0};
        progress_of(&ctx, l, &progress);
        bool started = lesson_started(&ctx, l);
        any_started = any_started || started;
        if (!started && !first_unstarted) first_unstarted = l;
        if (l->draft) sb_add(&progress, " (a draft: hidden from students)");
        if ((int)strlen(l->title) > width)
            printf("%-7s %-4s %.*s...  %s\n", l->id, l->rung, width - 3, l->title, progress.s);
        else
            printf("%-7s %-4s %-*s  %s\n", l->id, l->rung, width, l->title, progress.s);
        sb_free(&progress);
    }
    if (!any_started && first_unstarted) {
        char *chapter = path_join(first_unstarted->dir, "README.md");
        printf("\nStart with `ol start %s`", first_unstarted->id);
        if (is_file(chapter)) printf(" (the chapter: %s)", chapter);
        printf(".\n");
        free(chapter);
    }
    int rc = OL_PASS;
    if (unreadable > 0) {
        ol_error(
            "%d lesson.json file%s of the course could not be read (above): those lessons are not "
            "listed",
            unreadable, unreadable == 1 ? "" : "s");
        rc = OL_USAGE;
    }
    lessons_free(ls, n);
    ctx_free(&ctx);
    return rc;
}
