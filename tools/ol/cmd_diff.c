/* ol diff L7.x: the student's code beside the reference, after a pass. */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "opts.h"
#include "prebuilt.h"
#include "proc.h"
#include "status.h"

static const char HELP[] =
    "usage: ol diff L7.x [--unified | --side-by-side] [--workspace DIR]\n"
    "\n"
    "Shows your code for the lesson beside the reference, once `ol check L7.x` has\n"
    "passed (before that, the reference stays hidden: finding your own way is the\n"
    "point). Every line is shown whole: side by side when the longest line of both\n"
    "files fits twice in the terminal's width ($COLUMNS when it is not a terminal,\n"
    "else 160), a unified diff otherwise. --unified or --side-by-side choose; side\n"
    "by side is then as wide as the longest line needs.\n";

/* The terminal's width, else $COLUMNS, else 160. */
static int terminal_width(void) {
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *cols = getenv("COLUMNS");
    if (cols && atoi(cols) > 0) return atoi(cols);
    return 160;
}

/* The widest line of a file, tabs expanded to 8 columns (as diff shows them);
 * UTF-8 continuation bytes take no column. */
static int widest_line(const char *path) {
    char *text = read_file(path, NULL);
    int widest = 0, col = 0;
    for (const char *p = text; p && *p; p++) {
        if (*p == '\n') col = 0;
        else if (*p == '\t') col = (col / 8 + 1) * 8;
        else if (((unsigned char)*p & 0xC0) != 0x80) col++;
        if (col > widest) widest = col;
    }
    free(text);
    return widest;
}

int cmd_diff(int argc, char **argv) {
    const char *workspace = NULL;
    bool unified = false, side = false;
    const ol_option opts[] = {{"workspace", 'w', "DIR", &workspace, NULL},
                              {"unified", 'u', NULL, NULL, &unified},
                              {"side-by-side", 'y', NULL, NULL, &side},
                              {0}};
    char *id;
    int status;
    if (!opts_one_lesson("diff", argc, argv, opts, HELP, "L7.1", &id, &status)) return status;
    if (unified && side) {
        free(id);
        return usage_error("diff", "--unified or --side-by-side, not both");
    }
    ol_ctx ctx;
    lesson l;
    int opened = open_lesson(&ctx, &l, workspace, id);
    free(id);
    if (opened != 0) return OL_USAGE;
    if (require_student_workspace(&ctx) != 0) {
        lesson_free(&l);
        ctx_free(&ctx);
        return OL_USAGE;
    }
    char *ref0 = xasprintf("%s/reference/%s", ctx.root, l.sources.v[0]);
    bool hidden = prebuilt_release(&ctx) && !is_file(ref0);
    free(ref0);
    if (hidden) {
        /* a student release holds the reference only as compiled objects */
        ol_error("this is a student release: the reference of %s is not in it, only compiled. Once "
                 "`ol check %s` passes on the grader's side (Gradescope, or your instructor's `ol "
                 "grade`), the grader's report shows it: the reference's source in the report of "
                 "your passing submission", l.id, l.id);
        lesson_free(&l);
        ctx_free(&ctx);
        return OL_FAIL;
    }
    check_status st;
    int rc = OL_PASS;
    bool checked = status_load(&ctx, l.id, &st) == 0;
    if (!checked || !st.passed) {
        /* finding one's own way is the point: the reference waits for a pass */
        ol_error("the reference of %s is shown only after `ol check %s` passes: %s", l.id, l.id,
                 !checked
                     ? "you have not run it in this workspace yet; run it, and once it says PASS, "
                       "run `ol diff` again"
                     : "your last check did not; its report says what to do next (`ol list` shows "
                       "where you are)");
        rc = OL_FAIL;
    }
    char *tmp = rc == OL_PASS ? ctx_cache_dir(&ctx, "tmp") : NULL;
    if (rc == OL_PASS && !tmp) rc = OL_USAGE;
    for (int i = 0; rc == OL_PASS && i < l.sources.n; i++) {
        const char *src = l.sources.v[i];
        char *mine = path_join(ctx.student, src);
        char *ref = xasprintf("%s/reference/%s", ctx.root, src);
        if (!is_file(mine)) {
            ol_error("c/%s is missing: your code for %s was moved or deleted since your check "
                     "(`ol start %s` brings back the starting code)", src, l.id, l.id);
            rc = OL_FAIL;
        } else {
            /* side by side cuts what does not fit its half: only when every line fits */
            int widest = widest_line(mine), w = widest_line(ref);
            if (w > widest) widest = w;
            int needed = 2 * widest + 3, width = terminal_width();
            bool by_side = side || (!unified && needed <= width);
            if (by_side && needed > width) width = needed;
            proc_job job = {0};
            proc_arg(&job, "diff");
            if (!by_side) proc_arg(&job, "-u");
            else {
                proc_arg(&job, "--side-by-side");
                proc_argf(&job, "--width=%d", width);
                proc_arg(&job, "--expand-tabs");
            }
            proc_argf(&job, "--label=yours: c/%s", src);
            proc_argf(&job, "--label=the reference: reference/%s", src);
            proc_arg(&job, mine);
            proc_arg(&job, ref);
            job.out_path = xasprintf("%s/diff.%ld.txt", tmp, (long)getpid());
            if (proc_run(&job) != 0) rc = 130;
            else if (job.exit_code > 1) {
                ol_error("diff could not compare c/%s with the reference", src);
                rc = OL_USAGE;
            } else {
                char *text = read_file(job.out_path, NULL);
                if (by_side) {
                    char *left = xasprintf("yours: c/%s", src);
                    printf("%-*s reference/%s\n", (width - 3) / 2 + 3, left, src);
                    free(left);
                } else if (!unified && text && *text) {
                    printf(
                        "(a unified diff: the longest line, %d columns, does not fit twice in %d; "
                        "--side-by-side shows it wider)\n",
                        widest, width);
                }
                /* the student's lines, as a terminal may show them */
                char *shown = text && *text ? shown_text(text) : NULL;
                if (shown) fputs(shown, stdout);
                else printf("c/%s is identical to the reference, reference/%s\n", src, src);
                free(shown);
                free(text);
            }
            unlink(job.out_path);
            proc_job_free(&job);
        }
        free(mine);
        free(ref);
    }
    free(tmp);
    lesson_free(&l);
    ctx_free(&ctx);
    return rc;
}
