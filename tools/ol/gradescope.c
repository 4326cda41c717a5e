#include "gradescope.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc.h"

static const char *const SCRIPTS[] = {"setup.sh", "run_autograder", "merge_results.py"};

int gradescope_write(ol_ctx *ctx, const dist_options *opt, const char *milestone, const char *zip) {
    char abs_zip[PATH_MAX];
    char *parent = path_dirname(zip);
    if (!realpath(parent, abs_zip)) {
        ol_error("the folder of %s does not exist: create it first", zip);
        free(parent);
        return OL_USAGE;
    }
    char *zip_path = path_join(abs_zip, path_base(zip));
    char *tmp = make_temp_dir(abs_zip, ".ol-gradescope");
    int rc = tmp ? OL_PASS : OL_USAGE;
    if (!tmp) ol_error("cannot create a scratch folder in %s: %s", abs_zip, strerror(errno));
    char *release = tmp ? path_join(tmp, "release") : NULL;
    if (rc == OL_PASS) {
        dist_options grader = *opt;
        grader.grader = true;
        rc = dist_write(ctx, &grader, release);
    }
    for (size_t i = 0; rc == OL_PASS && i < sizeof SCRIPTS / sizeof *SCRIPTS; i++) {
        char *from = xasprintf("%s/tools/ol/gradescope/%s", ctx->root, SCRIPTS[i]);
        char *to = path_join(tmp, SCRIPTS[i]);
        if (copy_file_atomic(from, to) != 0 || chmod(to, 0755) != 0) {
            ol_error("cannot copy %s into the autograder: %s", from, strerror(errno));
            rc = OL_USAGE;
        }
        free(from);
        free(to);
    }
    if (rc == OL_PASS) {
        cJSON *o = cJSON_CreateObject();
        cJSON *ls = cJSON_AddArrayToObject(o, "lessons");
        for (int i = 0; i < opt->lessons.n; i++)
            cJSON_AddItemToArray(ls, cJSON_CreateString(opt->lessons.v[i]));
        if (milestone)
            cJSON_AddStringToObject(o, "milestone", milestone);
        else
            cJSON_AddNullToObject(o, "milestone");
        char *text = cJSON_Print(o), *path = path_join(tmp, "autograder.json");
        if (write_file_atomic(path, text, strlen(text)) != 0) rc = OL_USAGE;
        free(path);
        free(text);
        cJSON_Delete(o);
    }
    if (rc == OL_PASS) {
        /* the scripts at the zip's top level, where Gradescope looks for them */
        char *part = xasprintf("%s.tmp%ld.zip", zip_path, (long)getpid());
        proc_job job = {0};
        proc_arg(&job, "zip");
        proc_arg(&job, "-q");
        proc_arg(&job, "-r");
        proc_arg(&job, "-X");
        proc_arg(&job, part);
        for (size_t i = 0; i < sizeof SCRIPTS / sizeof *SCRIPTS; i++) proc_arg(&job, SCRIPTS[i]);
        proc_arg(&job, "autograder.json");
        proc_arg(&job, "release");
        job.cwd = xstrdup(tmp);
        job.out_path = path_join(tmp, "zip.log");
        int ran = proc_run(&job);
        char *said = read_file(job.out_path, NULL);
        if (ran != 0 || job.exit_code != 0) {
            ol_error(
                "zip could not write %s (is zip installed? tools/install-deps.sh installs it): %s",
                zip, said ? said : "");
            unlink(part);
            rc = OL_USAGE;
        } else if (rename(part, zip_path) != 0) {
            ol_error("cannot rename %s to %s: %s", part, zip_path, strerror(errno));
            rc = OL_USAGE;
        } else if (!opt->quiet) {
            printf("ol dist: the Gradescope autograder is %s (upload it as the assignment's "
                   "autograder; choose Gradescope's Ubuntu 22.04 or later base image)\n",
                   zip);
        }
        free(said);
        proc_job_free(&job);
        free(part);
    }
    if (tmp) remove_tree(tmp, abs_zip);
    free(release);
    free(tmp);
    free(zip_path);
    free(parent);
    return rc;
}
