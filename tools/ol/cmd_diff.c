/* ol diff L7.x: the student's code beside the reference, after a pass. */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "opts.h"
#include "proc.h"
#include "status.h"

static const char HELP[] =
    "usage: ol diff L7.x [--unified] [--workspace DIR]\n"
    "\n"
    "Shows your code for the lesson beside the reference, once `ol check L7.x` has\n"
    "passed (before that, the reference stays hidden: finding your own way is the\n"
    "point). Side by side, as wide as the terminal; --unified prints a unified diff.\n";

static int terminal_width(void) {
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 80) return ws.ws_col;
    const char *cols = getenv("COLUMNS");
    if (cols && atoi(cols) >= 80) return atoi(cols);
    return 160;
}

int cmd_diff(int argc, char **argv) {
    const char *workspace = NULL;
    bool unified = false;
    const ol_option opts[] = {{"workspace", 'w', "DIR", &workspace, NULL}, {"unified", 'u', NULL, NULL, &unified}, {0}};
    char *id;
    int status;
    if (!opts_one_lesson("diff", argc, argv, opts, HELP, "L7.1", &id, &status)) return status;
    ol_ctx ctx;
    lesson l;
    int opened = open_lesson(&ctx, &l, workspace, id);
    free(id);
    if (opened != 0) return OL_USAGE;
    check_status st;
    int rc = OL_PASS;
    bool checked = status_load(&ctx, l.id, &st) == 0;
    if (!checked || !st.passed) {
        /* finding one's own way is the point: the reference waits for a pass */
        ol_error("the reference of %s is shown only after `ol check %s` passes: %s", l.id, l.id,
                 !checked ? "you have not run it in this workspace yet; run it, and once it says PASS, "
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
            proc_job job = {0};
            proc_arg(&job, "diff");
            if (unified) proc_arg(&job, "-u");
            else {
                proc_arg(&job, "--side-by-side");
                proc_argf(&job, "--width=%d", terminal_width());
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
                if (!unified) {
                    char *left = xasprintf("yours: c/%s", src);
                    printf("%-*s reference/%s\n", terminal_width() / 2, left, src);
                    free(left);
                }
                fputs(text && *text ? text : "(identical to the reference)\n", stdout);
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
