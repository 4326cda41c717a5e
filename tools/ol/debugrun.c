#include "debugrun.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox.h"

const char *debug_tool_option(debug_tool tool) {
    switch (tool) {
    case TOOL_GDB: return "--gdb";
    case TOOL_ASAN: return "--asan";
    case TOOL_VALGRIND: return "--valgrind";
    default: return "";
    }
}

/* Does a report of valgrind name one of the lesson's files in its stack? */
static bool names_a_source(const char *report, const strlist *sources) {
    if (!sources) return true; /* without the lesson's files, every report counts */
    for (int i = 0; i < sources->n; i++) {
        char *at = xasprintf("(%s:", path_base(sources->v[i]));
        bool yes = strstr(report, at) != NULL;
        free(at);
        if (yes) return true;
    }
    return false;
}

/* Prints the reports of the logs valgrind wrote in dir (one per process)
 * whose stack reaches the lesson's code; returns how many, -1 without logs.
 * A report is a run of "==PID== ..." lines ended by an empty "==PID==". */
static int valgrind_reports(const char *dir, const strlist *sources) {
    strlist logs = {0};
    list_files(dir, ".log", &logs);
    int errors = 0, others = 0, found = 0;
    for (int i = 0; i < logs.n; i++) {
        if (strncmp(path_base(logs.v[i]), "valgrind.", 9) != 0) continue;
        found++;
        char *text = read_file(logs.v[i], NULL);
        strbuf report = {0};
        const char *p = text ? text : "";
        while (true) {
            const char *eol = strchr(p, '\n');
            size_t n = eol ? (size_t)(eol - p) : strlen(p);
            const char *mark = memmem(p, n, "== ", 3);
            bool blank = !*p || (mark && (size_t)(mark + 3 - p) >= n) || (n && p[n - 1] == '=');
            if (!blank) {
                sb_addn(&report, p, n);
                sb_add(&report, "\n");
            } else if (report.len) {
                if (names_a_source(report.s, sources)) {
                    fprintf(stderr, "%s\n", report.s);
                    errors++;
                } else {
                    others++;
                }
                sb_free(&report);
            }
            if (!eol) break;
            p = eol + 1;
        }
        if (report.len && names_a_source(report.s, sources)) {
            fprintf(stderr, "%s\n", report.s);
            errors++;
        }
        sb_free(&report);
        free(text);
    }
    sl_free(&logs);
    if (others)
        fprintf(stderr,
                "ol: valgrind: %d report%s in the tests' own code (not the lesson's) not counted\n",
                others, others == 1 ? "" : "s");
    return found ? errors : -1;
}

/* name's file on $PATH (absolute: the jail execs by path), or NULL. */
static char *find_program(const char *name) {
    const char *path = getenv("PATH");
    char *copy = xstrdup(path && *path ? path : "/usr/bin:/bin");
    char *found = NULL;
    for (char *save = NULL, *d = strtok_r(copy, ":", &save); d && !found;
         d = strtok_r(NULL, ":", &save)) {
        char *p = path_join(d, name);
        if (*d == '/' && access(p, X_OK) == 0)
            found = p;
        else
            free(p);
    }
    free(copy);
    return found;
}

/* The sandbox of a test program (run.c's), as a debug run: the system, the
 * fixtures, the student's own c/ (gdb lists their sources) and the scratch
 * folder; not the course, its reference or ol's caches. NULL when it cannot
 * be made (said). */
static sandbox *debug_sandbox(ol_ctx *ctx, const debug_spec *spec, const char *prog,
                              const char *work, const char *tool) {
    sandbox *sb = xcalloc(1, sizeof *sb);
    strlist keep_out = {0};
    sl_push(&keep_out, ctx->root);
    sl_push(&keep_out, ctx->ws);
    sandbox_system(sb, &keep_out, !sandbox_jails());
    sl_free(&keep_out);
    char *fixtures = path_join(ctx->root, "fixtures");
    sandbox_allow(sb, fixtures, false);
    free(fixtures);
    sandbox_allow(sb, ctx->student, false);
    sandbox_allow(sb, work, true);
    /* a tool outside the system's trees (a gdb of one's own): its folder, unless that holds
     * the course or the workspace, or lies in the workspace (the program itself, under ASan) */
    char *tool_dir = path_dirname(tool);
    bool holds = path_rel(ctx->root, tool_dir) != ctx->root ||
                 path_rel(ctx->ws, tool_dir) != ctx->ws || !strcmp(tool_dir, ctx->root) ||
                 !strcmp(tool_dir, ctx->ws);
    if (strcmp(tool, prog) != 0 && !holds && path_rel(tool_dir, ctx->ws) == tool_dir)
        sandbox_allow(sb, tool_dir, false);
    free(tool_dir);
    sb->file_bytes = 64LL << 20;
    sb->extra_tasks = 256;
    /* the lesson's memory where a group holds the whole run; per process, a
     * tool's own reservations (valgrind's, ASan's shadow) would not fit it */
    sb->memory_bytes = cgroup_available(NULL) ? spec->memory_bytes : 0;
    if (sandbox_debug_program(sb, prog, work, work) != 0) {
        sandbox_release(sb);
        sandbox_free(sb);
        free(sb);
        return NULL;
    }
    sandbox_allow(sb, prog, false); /* for Landlock: the jail has it already */
    return sb;
}

/* "KEY=VALUE" pairs set in the child, and shown. */
static void env_push(strlist *env, const char *key, const char *value) {
    sl_push_owned(env, xasprintf("%s=%s", key, value));
}

int debug_run(ol_ctx *ctx, const debug_spec *spec) {
    char *dir = ctx_cache_dir(ctx, "debug");
    char *tmp = ctx_cache_dir(ctx, "tmp");
    char *work = tmp ? make_temp_dir(tmp, "debug") : NULL;
    if (!dir || !work) {
        free(dir);
        free(tmp);
        free(work);
        return OL_USAGE;
    }
    char *prog = path_join(dir, spec->readable);
    int rc = OL_PASS;
    if (copy_file_atomic(spec->bin, prog) != 0 || chmod(prog, 0755) != 0) {
        ol_error("cannot put the test program at %s: %s", shown_path(ctx, prog), strerror(errno));
        rc = OL_USAGE;
    }
    strlist argv = {0}, env = {0};
    if (spec->tool == TOOL_GDB) {
        sl_push(&argv, "gdb");
        sl_push(&argv, "-q");
        sl_push(&argv, "--args");
    } else if (spec->tool == TOOL_VALGRIND) {
        /* one log per process: a test's own children (a download it kills,
         * say) leave without freeing, and only reports that reach the
         * lesson's code count */
        sl_push(&argv, "valgrind");
        sl_push(&argv, "-q");
        sl_push_owned(&argv, xasprintf("--log-file=%s/valgrind.%%p.log", work));
        sl_push(&argv, "--leak-check=full");
        sl_push(&argv, "--show-leak-kinds=definite");
    }
    sl_push(&argv, prog);
    if (spec->test) {
        sl_push(&argv, "-x");
        sl_push(&argv, spec->test);
    } else if (spec->filter) {
        sl_push(&argv, "-k");
        sl_push(&argv, spec->filter);
    }
    /* under a debugger or valgrind, the test runs in the program itself */
    env_push(&env, "CK_FORK", spec->tool == TOOL_GDB || spec->tool == TOOL_VALGRIND ? "no" : "yes");
    if (spec->tcase) env_push(&env, "CK_RUN_CASE", spec->tcase);
    env_push(&env, "CK_VERBOSITY", "normal");
    char value[64];
    snprintf(value, sizeof value, "%g", spec->timeout);
    env_push(&env, "OL_TEST_TIMEOUT", value);
    char *fixtures = path_join(ctx->root, "fixtures");
    env_push(&env, "TINYLLM_FIXTURES", fixtures);
    free(fixtures);
    if (spec->tool == TOOL_ASAN) {
        env_push(&env, "ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0");
        env_push(&env, "UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1");
    }
    strlist shown = {0}; /* the command as the student can type it from the workspace */
    for (int i = 0; i < argv.n; i++)
        sl_push(&shown, !strcmp(argv.v[i], prog) ? shown_path(ctx, prog) : argv.v[i]);
    char *cmd = sl_join(&shown, " "), *vars = sl_join(&env, " ");
    sl_free(&shown);
    printf("ol: running %s\n    (in %s, with %s)\n", cmd, shown_path(ctx, work), vars);
    fflush(stdout);
    free(vars);
    int status = -1;
    char *tool =
        rc == OL_PASS ? (argv.v[0][0] == '/' ? xstrdup(argv.v[0]) : find_program(argv.v[0])) : NULL;
    sandbox *sb = tool ? debug_sandbox(ctx, spec, prog, work, tool) : NULL;
    if (rc == OL_PASS && (!sb || !tool)) {
        if (!tool)
            ol_error("cannot run %s: it is not installed (tools/install-deps.sh installs it)",
                     argv.v[0]);
        rc = OL_USAGE;
    }
    int status_pipe[2] = {-1, -1};
    if (rc == OL_PASS && pipe2(status_pipe, O_CLOEXEC) != 0) {
        ol_error("cannot make a pipe: %s", strerror(errno));
        rc = OL_USAGE;
    }
    if (rc == OL_PASS) {
        /* the terminal is the program's (gdb reads it): ol waits, and leaves Ctrl-C to it */
        struct sigaction ignore = {0}, old_int, old_quit;
        ignore.sa_handler = SIG_IGN;
        sigaction(SIGINT, &ignore, &old_int);
        sigaction(SIGQUIT, &ignore, &old_quit);
        /* in the sandbox: jailed, PID 1 writes the program's wait status to the pipe */
        char *term = getenv("TERM") ? xstrdup(getenv("TERM")) : NULL;
        fflush(NULL);
        pid_t pid = sandbox_fork(sb);
        if (pid == 0) {
            signal(SIGINT, SIG_DFL);
            signal(SIGQUIT, SIG_DFL);
            close(status_pipe[0]);
            /* none of ol's environment: the tool's, Check's settings, the fixtures */
            clearenv();
            setenv("PATH", "/usr/local/bin:/usr/bin:/bin", 1);
            setenv("HOME", work, 1);
            if (term) setenv("TERM", term, 1);
            for (int i = 0; i < env.n; i++) putenv(env.v[i]);
            if (chdir(work) != 0) _exit(126);
            free(argv.v[0]);
            argv.v[0] = tool;
            sl_push_owned(&argv, NULL);
            sandbox_exec(sb, argv.v, status_pipe[1]);
        }
        free(term);
        close(status_pipe[1]);
        if (pid < 0)
            ol_error("cannot start %s: %s", argv.v[0], strerror(errno));
        else
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
        int inner = 0;
        if (pid > 0 && sb->jl.root && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
            read(status_pipe[0], &inner, sizeof inner) == (ssize_t)sizeof inner)
            status = inner;
        close(status_pipe[0]);
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        if (pid < 0 ||
            (WIFEXITED(status) && (WEXITSTATUS(status) == 127 || WEXITSTATUS(status) == 126)))
            rc = OL_USAGE;
        else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            rc = OL_PASS;
        else {
            rc = OL_FAIL;
            if (WIFSIGNALED(status))
                ol_error("the test program died of signal %d (%s)", WTERMSIG(status),
                         strsignal(WTERMSIG(status)));
        }
        if (spec->tool == TOOL_VALGRIND && rc != OL_USAGE) {
            int errors = valgrind_reports(work, spec->sources);
            if (errors > 0) {
                ol_error("valgrind found %d memory error%s or leak%s in the lesson's code (above)",
                         errors, errors == 1 ? "" : "s", errors == 1 ? "" : "s");
                rc = OL_FAIL;
            } else if (errors < 0) {
                ol_error("valgrind left no report in %s: did it run?", shown_path(ctx, work));
                rc = OL_USAGE;
            }
        }
    }
    if (sb) {
        sandbox_release(sb);
        sandbox_free(sb);
        free(sb);
    }
    free(tool); /* argv took it in the child only */
    remove_tree(work, ctx->cache);
    free(cmd);
    sl_free(&argv);
    sl_free(&env);
    free(prog);
    free(work);
    free(tmp);
    free(dir);
    return rc;
}
