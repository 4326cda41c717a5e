#include "crash.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

/* The next backtrace block of text at or after *p ("ol-backtrace: signal"
 * through "ol-backtrace: end"), or NULL. */
static char *next_block(const char **p) {
    const char *start = strstr(*p, "ol-backtrace: signal");
    if (!start) return NULL;
    const char *end = strstr(start, "ol-backtrace: end");
    if (!end) return NULL; /* cut: the tail kept of the output began inside it */
    *p = end + 17;
    return xstrndup(start, (size_t)(end - start));
}

/* Is this frame's object the program (not a shared library)? */
static bool in_program(const char *object) { return !strstr(object, ".so"); }

char *crash_frames(const char *bin, const char *block) {
    /* the program's frames: right after the signal's own frame (libc), a
     * frame's address is the instruction that faulted; any other is a return
     * address, which points past the call (after abort() in libc, into the
     * next function): one byte back names the call's line */
    proc_job job = {0};
    proc_arg(&job, "addr2line");
    proc_arg(&job, "-e");
    proc_arg(&job, bin);
    proc_arg(&job, "-f");
    bool any = false;
    int libc_frames = 0;   /* between the handler and the program's first frame */
    char *copy = xstrdup(block);
    for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        unsigned long offset;
        char object[4096];
        if (sscanf(line, "ol-frame: %lx %4095s", &offset, object) != 2) continue;
        if (!in_program(object)) {
            if (!any) libc_frames++; /* the handler's caller is libc's signal frame */
            continue;
        }
        if (!libc_frames) continue; /* the handler itself */
        bool faulted = !any && libc_frames == 1;   /* the signal came from this instruction */
        proc_argf(&job, "%#lx", faulted ? offset : offset - 1);
        any = true;
    }
    free(copy);
    if (!any) {
        proc_job_free(&job);
        return NULL;
    }
    char dir[] = "/tmp/ol-crash-XXXXXX";
    if (!mkdtemp(dir)) {
        proc_job_free(&job);
        return NULL;
    }
    job.out_path = path_join(dir, "addr2line.txt");
    char *said = NULL;
    if (proc_run(&job) == 0 && job.exit_code == 0) said = read_file(job.out_path, NULL);
    unlink(job.out_path);
    rmdir(dir);
    proc_job_free(&job);
    if (!said) return NULL;
    /* addr2line -f: a function's line, then "FILE:LINE" (with " (discriminator N)") */
    strbuf out = {0};
    char *fn = NULL;
    for (char *save = NULL, *line = strtok_r(said, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (!fn) {
            fn = line;
            continue;
        }
        char *colon = strrchr(line, ':');
        char *disc = strstr(line, " (discriminator");
        if (disc) *disc = 0;
        colon = strrchr(line, ':');
        int lineno = colon ? atoi(colon + 1) : 0;
        if (colon) *colon = 0;
        sb_printf(&out, "%s\t%s\t%d\n", fn, line, lineno);
        fn = NULL;
    }
    free(said);
    return sb_take(&out);
}

/* A file the student may be shown: theirs (the workspace) or the course's
 * tests; never the reference (the lesson's or the runtime's). */
static bool shown_file(ol_ctx *ctx, const char *file) {
    if (!*file || strcmp(file, "??") == 0) return false;
    char *ref = path_join(ctx->root, "reference/");
    bool hidden = strncmp(file, ref, strlen(ref)) == 0 || strncmp(file, "reference/", 10) == 0;
    free(ref);
    if (hidden) return false;
    return path_rel(file, ctx->ws) != file || path_rel(file, ctx->root) != file;
}

/* Picks the frame to show: the innermost in a file the student may see; the
 * function named is the innermost of all (it may be the lesson's, or the
 * runtime's, called from there). */
static void locate(ol_ctx *ctx, test_result *t, const char *frames) {
    char *copy = xstrdup(frames);
    char *innermost = NULL, *file = NULL;
    int line = 0;
    for (char *save = NULL, *f = strtok_r(copy, "\n", &save); f && !file;
         f = strtok_r(NULL, "\n", &save)) {
        char *tab1 = strchr(f, '\t'), *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
        if (!tab2) continue;
        *tab1 = *tab2 = 0;
        if (!innermost && strcmp(f, "??") != 0) innermost = xstrdup(f);
        if (shown_file(ctx, tab1 + 1) && atoi(tab2 + 1) > 0) {
            file = xstrdup(tab1 + 1);
            line = atoi(tab2 + 1);
        }
    }
    free(copy);
    if (file) {
        free(t->file);
        t->file = file;
        t->line = line;
        free(t->crash_in);
        t->crash_in = innermost ? innermost : xstrdup("?");
    } else {
        free(innermost);
    }
}

void crash_locate(ol_ctx *ctx, run_result *r, const char *bin) {
    if (!r->output || !strstr(r->output, "ol-backtrace: signal")) return;
    strlist blocks = {0};
    const char *p = r->output;
    for (char *b; (b = next_block(&p)) != NULL;) sl_push_owned(&blocks, b);
    /* matched from the last: the output kept is its tail, so the first
     * backtraces are the ones that may be cut */
    int k = blocks.n - 1;
    for (int i = r->n - 1; i >= 0 && k >= 0; i--) {
        if (r->t[i].status != TEST_CRASH) continue;
        char *frames = crash_frames(bin, blocks.v[k--]);
        if (frames) locate(ctx, &r->t[i], frames);
        free(frames);
    }
    sl_free(&blocks);
}
