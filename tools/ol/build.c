#include "build.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "proc.h"
#include "sandbox.h"

/* The libraries every test program links, as the Makefile found them. */
#ifndef OL_CHECK_CFLAGS
#define OL_CHECK_CFLAGS ""
#endif
#ifndef OL_CHECK_LIBS
#define OL_CHECK_LIBS "-lcheck -lsubunit -lrt -lm -lpthread"
#endif
#ifndef OL_BLAS_LIBS
#define OL_BLAS_LIBS "-lopenblas"
#endif

/* Bump when the layout of the cache changes. */
#define OL_CACHE_VERSION "ol-cache-3"

/* `ol tests --asan`: what a sanitized object and program are built with. */
static const char *const SANITIZE_FLAGS[] = {
    "-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined"};

/* Student code gets warnings, not errors: they are shown, never fatal. Two are
 * errors, as GCC 14 makes them: a call to an undeclared function (a missing
 * #include, whose pointer result is cut to an int) and an int taken as a
 * pointer build code that crashes far from the line that said so. */
static const char *const BASE_CFLAGS[] = {"-std=c11",
                                          "-g",
                                          "-Wall",
                                          "-Wextra",
                                          "-Werror=implicit-function-declaration",
                                          "-Werror=int-conversion",
                                          "-D_GNU_SOURCE",
                                          "-fopenmp",
                                          "-fdiagnostics-color=never"};

static void add_words(strlist *l, const char *words) {
    char *copy = xstrdup(words);
    for (char *save = NULL, *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
        sl_push(l, w);
    free(copy);
}

/* Every .h under dir, recursively, into the hash. */
static void hash_headers(hasher *h, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    strlist names = {0};
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') sl_push(&names, e->d_name);
    closedir(d);
    sl_sort(&names);
    for (int i = 0; i < names.n; i++) {
        char *full = path_join(dir, names.v[i]);
        size_t len = strlen(names.v[i]);
        if (is_dir(full)) hash_headers(h, full);
        else if (len > 2 && strcmp(names.v[i] + len - 2, ".h") == 0) {
            hash_str(h, full);
            hash_file(h, full);
        }
        free(full);
    }
    sl_free(&names);
}

int build_prepare(ol_ctx *ctx) {
    if (ctx->toolchain_ready) return 0;
    if (ctx_require_runtime(ctx) != 0) return -1;
    hasher *h = hash_new();
    hash_str(h, OL_CACHE_VERSION);
    hash_str(h, ctx->cc);
    for (size_t i = 0; i < sizeof BASE_CFLAGS / sizeof *BASE_CFLAGS; i++)
        hash_str(h, BASE_CFLAGS[i]);
    hash_str(h, OL_CHECK_CFLAGS);
    hash_str(h, OL_CHECK_LIBS);
    hash_str(h, OL_BLAS_LIBS);
    hash_str(h, ctx->root);
    char *contracts = path_join(ctx->root, "contracts");
    char *reference = path_join(ctx->root, "reference");
    hash_headers(h, contracts);
    hash_headers(h, reference);
    free(contracts);
    free(reference);
    hash_done(h, ctx->toolchain);
    /* objects depend on headers only: a rebuilt runtime means relinking, not recompiling */
    h = hash_new();
    hash_str(h, ctx->toolchain);
    hash_file(h, ctx->core_lib);
    hash_file(h, ctx->testing_lib);
    hash_done(h, ctx->runtime);
    ctx->toolchain_ready = true;
    return 0;
}

/* The compiler's arguments except the output, in order. */
static void compile_args(ol_ctx *ctx, const unit *u, strlist *args) {
    sl_push(args, ctx->cc);
    for (size_t i = 0; i < sizeof BASE_CFLAGS / sizeof *BASE_CFLAGS; i++)
        sl_push(args, BASE_CFLAGS[i]);
    if (u->coverage) {
        sl_push(args, "-O0");
        sl_push(args, "--coverage");
    } else if (u->sanitize) {
        sl_push(args, "-O1");
        for (size_t i = 0; i < sizeof SANITIZE_FLAGS / sizeof *SANITIZE_FLAGS; i++)
            sl_push(args, SANITIZE_FLAGS[i]);
    } else {
        sl_push(args, "-O2");
    }
    if (u->test) { /* testgen's wrappers: a file without tests leaves its TCase unused */
        sl_push(args, "-Wno-unused-function");
        sl_push(args, "-Wno-unused-parameter");
    }
    sl_push_owned(args, xasprintf("-I%s/contracts", ctx->root));
    add_words(args, OL_CHECK_CFLAGS);
    for (int i = 0; i < u->flags.n; i++) sl_push(args, u->flags.v[i]);
    sl_push(args, "-c");
    sl_push(args, u->src);
}

static void unit_key(ol_ctx *ctx, unit *u, const strlist *args) {
    hasher *h = hash_new();
    hash_str(h, ctx->toolchain);
    for (int i = 0; i < args->n; i++) hash_str(h, args->v[i]);
    const char *cwd = u->cwd ? u->cwd : ctx->root;
    hash_str(h, cwd);
    char *src = u->src[0] == '/' ? xstrdup(u->src) : path_join(cwd, u->src);
    hash_file(h, src);
    free(src);
    for (int i = 0; i < u->deps.n; i++) {
        hash_str(h, u->deps.v[i]);
        hash_file(h, u->deps.v[i]);
    }
    hash_done(h, u->key);
}

/* The base name of a source without .c: coverage objects keep it, so gcov
 * finds name.gcno and name.gcda beside name.o. */
static char *stem(const char *src) {
    const char *b = path_base(src);
    size_t n = strlen(b);
    if (n > 2 && strcmp(b + n - 2, ".c") == 0) n -= 2;
    return xstrndup(b, n);
}

/* Every compile's wall-clock limit: a header that never ends (a pipe, an
 * include that doubles itself) must not hold a check forever. */
static double compile_timeout(void) {
    const char *env = getenv("OL_COMPILE_TIMEOUT");
    double t = env ? atof(env) : 0;
    return t > 0 ? t : 120;
}

/* The files outside contracts/ that contract headers include by a quoted
 * path (a forwarding header: tinyllm/testing/hub.h reads tools/hub/hub.h),
 * and what those include in turn: the instructor's, so a plain scan. */
static void reached_from(const char *file, const char *contracts, strlist *out, int depth) {
    char *text = depth < 8 ? read_file(file, NULL) : NULL;
    char *dir = path_dirname(file);
    for (char *save = NULL, *line = text ? strtok_r(text, "\n", &save) : NULL; line;
         line = strtok_r(NULL, "\n", &save)) {
        char *p = line + strspn(line, " \t");
        if (*p++ != '#') continue;
        p += strspn(p, " \t");
        if (strncmp(p, "include", 7) != 0) continue;
        char *q = strchr(p, '"'), *end = q ? strchr(q + 1, '"') : NULL;
        if (!end) continue;
        char *name = xstrndup(q + 1, (size_t)(end - q - 1)), *joined = path_join(dir, name),
             real[PATH_MAX];
        if (realpath(joined, real) && strncmp(real, contracts, strlen(contracts)) != 0 &&
            !sl_contains(out, real)) {
            sl_push(out, real);
            reached_from(real, contracts, out, depth + 1);
        }
        free(name);
        free(joined);
    }
    free(dir);
    free(text);
}

static void contract_reaches(const char *dir, const char *contracts, strlist *out) {
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char *full = path_join(dir, e->d_name);
        size_t n = strlen(e->d_name);
        if (is_dir(full)) contract_reaches(full, contracts, out);
        else if (n > 2 && strcmp(e->d_name + n - 2, ".h") == 0)
            reached_from(full, contracts, out, 0);
        free(full);
    }
    if (d) closedir(d);
}

/* The compiler's sandbox for a student's file: it reads the system's files,
 * the contracts, the student's c/ and its own folder (testgen's wrapper),
 * and writes only its scratch folder, which is also its TMPDIR. The course
 * (its reference), the rest of the workspace and ol's caches stay out, so
 * no #include, .incbin or error message can show them. */
static sandbox *compile_sandbox(ol_ctx *ctx, const unit *u, const char *scratch) {
    sandbox *sb = xcalloc(1, sizeof *sb);
    strlist keep_out = {0};
    sl_push(&keep_out, ctx->root);
    sl_push(&keep_out, ctx->ws);
    sandbox_system(sb, &keep_out, false);
    sl_free(&keep_out);
    /* nor /proc and /sys: an #include of /proc/self/environ would print ol's environment */
    for (int i = sb->read.n - 1; i >= 0; i--)
        if (!strcmp(sb->read.v[i], "/proc") || !strcmp(sb->read.v[i], "/sys") ||
            !strncmp(sb->read.v[i], "/proc/", 6) || !strncmp(sb->read.v[i], "/sys/", 5)) {
            free(sb->read.v[i]);
            sb->read.v[i] = sb->read.v[--sb->read.n];
        }
    char *contracts = path_join(ctx->root, "contracts"), real[PATH_MAX];
    sandbox_allow(sb, contracts, false);
    static strlist reached; /* once per run of ol */
    static bool scanned;
    if (!scanned && realpath(contracts, real)) contract_reaches(real, real, &reached);
    scanned = true;
    for (int i = 0; i < reached.n; i++) sandbox_allow(sb, reached.v[i], false);
    free(contracts);
    sandbox_allow(sb, ctx->student, false);
    if (u->cwd && strcmp(u->cwd, ctx->ws) != 0) sandbox_allow(sb, u->cwd, false);
    sandbox_allow(sb, scratch, true);
    sandbox_allow(sb, "/dev/null", true);
    sb->cpu_seconds = compile_timeout();
    sb->memory_bytes = 4LL << 30;
    sb->file_bytes = 256LL << 20;
    sb->extra_tasks = 64;
    return sb;
}

static void compile_job_free(proc_job *j) {
    sandbox *sb = (sandbox *)j->sandbox;
    if (sb) {
        sandbox_free(sb);
        free(sb);
    }
    proc_job_free(j);
}

/* What a compile that did not finish says, after what the compiler said. */
static char *ended_log(ol_ctx *ctx, const char *log, const proc_job *j) {
    if (j->timed_out)
        return xasprintf(
            "%s(the compiler ran past its time limit of %g s, $OL_COMPILE_TIMEOUT, and was "
            "stopped)\n",
            log, j->timeout);
    char *what = proc_describe(j);
    char *more = xasprintf("%s(the compiler %s ended with %s)\n", log, ctx->cc, what);
    free(what);
    return more;
}

/* One compile of build_units, for install_object. */
typedef struct {
    ol_ctx *ctx;
    unit *unit;
    const char *tmp_obj; /* where the compiler wrote (a coverage build writes in place) */
} compiled;

/* As a compiler ends: its log and, when it succeeded, its object (sealed)
 * under their names in the cache; the unit's ok and log say how it went. */
static void install_object(proc_job *j) {
    const compiled *c = j->data;
    unit *x = c->unit;
    char *log_path = xasprintf("%s.log", x->obj);
    x->log = read_file(j->out_path, NULL);
    if (!x->log) x->log = xstrdup("");
    x->ok = j->exit_code == 0 && !j->timed_out;
    if (x->ok) {
        rename(j->out_path, log_path);
        if (x->coverage) {
            char *dir = path_dirname(x->obj);
            char *marker = path_join(dir, "done");
            char *st = stem(x->src);
            char *notes = xasprintf("%s/%s.gcno", dir, st);
            if (cache_seal(x->obj) != 0 || cache_seal(notes) != 0) x->ok = false;
            else write_file_atomic(marker, "", 0);
            free(notes);
            free(st);
            free(marker);
            free(dir);
        } else if (rename(c->tmp_obj, x->obj) != 0 || cache_seal(x->obj) != 0) {
            x->ok = false;
        }
    } else {
        unlink(j->out_path);
        if (c->tmp_obj) unlink(c->tmp_obj);
        if (j->exit_code < 0 || j->exit_code == 127 || j->timed_out) {
            char *more = ended_log(c->ctx, x->log, j);
            free(x->log);
            x->log = more;
        }
    }
    free(log_path);
}

int build_units(ol_ctx *ctx, unit *u, int n) {
    if (build_prepare(ctx) != 0) return n ? n : 1;
    char *objdir = ctx_cache_dir(ctx, "obj");
    char *covdir = ctx_cache_dir(ctx, "cov");
    char *tmpdir = ctx_cache_dir(ctx, "tmp");
    if (!objdir || !covdir || !tmpdir) {
        free(objdir);
        free(covdir);
        free(tmpdir);
        return n ? n : 1;
    }
    proc_job *jobs = xcalloc((size_t)n + 1, sizeof *jobs);
    int *which = xcalloc((size_t)n + 1, sizeof *which);
    char **tmp_objs = xcalloc((size_t)n + 1, sizeof *tmp_objs);
    char **scratch = xcalloc((size_t)n + 1, sizeof *scratch);
    int *same_as = xcalloc((size_t)n + 1, sizeof *same_as); /* a unit of this batch with its key */
    int njobs = 0;
    for (int i = 0; i < n; i++) {
        same_as[i] = -1;
        strlist args = {0};
        compile_args(ctx, &u[i], &args);
        unit_key(ctx, &u[i], &args);
        free(u[i].obj);
        free(u[i].log);
        u[i].log = NULL;
        char *marker, *notes = NULL;
        if (u[i].coverage) {
            char *dir = path_join(covdir, u[i].key);
            char *st = stem(u[i].src);
            u[i].obj = xasprintf("%s/%s.o", dir, st);
            notes = xasprintf("%s/%s.gcno", dir, st);
            marker = path_join(dir, "done");
            free(st);
            free(dir);
        } else {
            u[i].obj = xasprintf("%s/%s.o", objdir, u[i].key);
            marker = xstrdup(u[i].obj);
        }
        char *log_path = xasprintf("%s.log", u[i].obj);
        /* The same object twice in one batch (a mutant's untouched files are the
         * reference's): compile it once, and let the second share the result. */
        for (int k = 0; k < i && same_as[i] < 0; k++)
            if (!u[i].coverage && !u[k].coverage && strcmp(u[k].key, u[i].key) == 0) same_as[i] = k;
        if (same_as[i] >= 0 && !is_file(marker)) {
            u[i].ok = u[i].cached = false;
            sl_free(&args);
        } else if (is_file(marker) && cache_intact(u[i].obj) && (!notes || cache_intact(notes))) {
            cache_touch(marker);
            u[i].ok = u[i].cached = true;
            u[i].log = read_file(log_path, NULL);
            if (!u[i].log) u[i].log = xstrdup("");
            sl_free(&args);
        } else {
            u[i].ok = u[i].cached = false;
            proc_job *j = &jobs[njobs];
            j->argv = args;
            proc_arg(j, "-o");
            if (u[i].coverage) {
                /* gcov data names follow the object's name: compile in place,
                 * and let the "done" marker say the object is whole. */
                char *dir = path_dirname(u[i].obj);
                remove_tree(dir, ctx->cache);
                mkdir_p(dir);
                free(dir);
                proc_arg(j, u[i].obj);
            } else if (u[i].student) {
                scratch[njobs] = make_temp_dir(tmpdir, "cc");
                tmp_objs[njobs] = scratch[njobs] ? path_join(scratch[njobs], "out.o")
                                                 : xstrdup("/nonexistent/out.o");
                proc_arg(j, tmp_objs[njobs]);
                if (scratch[njobs]) {
                    j->sandbox = compile_sandbox(ctx, &u[i], scratch[njobs]);
                    j->clean_env = true; /* the student's file sees nothing of ol's */
                    proc_env(j, "TMPDIR", scratch[njobs]);
                }
            } else {
                tmp_objs[njobs] = xasprintf("%s.tmp%ld.o", u[i].obj, (long)getpid());
                proc_arg(j, tmp_objs[njobs]);
            }
            j->cwd = xstrdup(u[i].cwd ? u[i].cwd : ctx->root);
            j->out_path = xasprintf("%s.tmp%ld", log_path, (long)getpid());
            j->timeout = compile_timeout();
            if (ctx->verbose) {
                char *cmd = sl_join(&j->argv, " ");
                fprintf(stderr, "ol: (in %s) %s\n", j->cwd, cmd);
                free(cmd);
            }
            which[njobs++] = i;
        }
        free(notes);
        free(marker);
        free(log_path);
    }
    /* each object goes into the cache as its compiler ends, so a batch that
     * is stopped (Ctrl-C, ol check's helper stopped) keeps what it finished */
    compiled *done = xcalloc((size_t)njobs + 1, sizeof *done);
    for (int k = 0; k < njobs; k++) {
        done[k] = (compiled){.ctx = ctx, .unit = &u[which[k]], .tmp_obj = tmp_objs[k]};
        jobs[k].data = &done[k];
        jobs[k].on_done = install_object;
    }
    int failed = 0;
    if (njobs && proc_run_all(jobs, njobs, ctx->jobs) != 0) failed = -1;
    for (int k = 0; k < njobs && failed >= 0; k++)
        if (!u[which[k]].ok) failed++;
    free(done);
    for (int i = 0; i < n; i++) {
        if (same_as[i] < 0 || (u[i].cached && u[i].ok)) continue;
        const unit *first = &u[same_as[i]];
        u[i].ok = first->ok;
        u[i].log = xstrdup(first->log ? first->log : "");
        if (!u[i].ok && failed >= 0) failed++;
    }
    free(same_as);
    for (int k = 0; k < njobs; k++) {
        if (scratch[k]) remove_tree(scratch[k], ctx->cache);
        free(scratch[k]);
        free(tmp_objs[k]);
        compile_job_free(&jobs[k]);
    }
    free(scratch);
    free(tmp_objs);
    free(jobs);
    free(which);
    free(objdir);
    free(covdir);
    free(tmpdir);
    return failed;
}

/* "X<TAB>WHAT<TAB>FILE<TAB>LINE" for each place of the preprocessed text
 * (line markers say which file and line it came from) that hands the
 * assembler text of its own: the asm keyword in any spelling, and a
 * section attribute (its name goes into the assembly as written, so
 * ".data\n.incbin ..." would be a directive). Strings and characters
 * are skipped. */
static void scan_assembler(const char *text, strbuf *records) {
    char file[PATH_MAX] = "";
    long line = 0;
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        /* "# LINE "FILE" FLAGS" (no sscanf: it would measure the whole text each time) */
        char *after = NULL;
        long lineno = p[0] == '#' && p[1] == ' ' && isdigit((unsigned char)p[2])
                          ? strtol(p + 2, &after, 10)
                          : 0;
        if (after && after[0] == ' ' && after[1] == '"') {
            const char *q = after + 2, *end = q;
            while (end < p + len && *end != '"') end += *end == '\\' && end + 1 < p + len ? 2 : 1;
            snprintf(file, sizeof file, "%.*s", (int)(end - q), q);
            line = lineno;
        } else {
            bool attribute = false;
            for (const char *c = p; c < p + len;) {
                if (*c == '"' || *c == '\'') {
                    char quote = *c++;
                    while (c < p + len && *c != quote) c += *c == '\\' ? 2 : 1;
                    c++;
                    continue;
                }
                if (!(isalpha((unsigned char)*c) || *c == '_')) {
                    c++;
                    continue;
                }
                const char *w = c;
                while (c < p + len && (isalnum((unsigned char)*c) || *c == '_')) c++;
                size_t n = (size_t)(c - w);
                const char *what = NULL;
                if ((n == 3 && !strncmp(w, "asm", 3)) || (n == 5 && !strncmp(w, "__asm", 5)) ||
                    (n == 7 && !strncmp(w, "__asm__", 7)))
                    what = "asm";
                if ((n == 13 && !strncmp(w, "__attribute__", 13)) ||
                    (n == 11 && !strncmp(w, "__attribute", 11)))
                    attribute = true;
                if (attribute && ((n == 7 && !strncmp(w, "section", 7)) ||
                                  (n == 11 && !strncmp(w, "__section__", 11))))
                    what = "section";
                if (what) sb_printf(records, "X\t%s\t%s\t%ld\n", what, file, line);
            }
            line++;
        }
        p += len + (eol ? 1 : 0);
    }
}

/* What the preprocessed text (cc -E, with line markers) says: "T<TAB>NAME"
 * for each test it declares (START_TEST(NAME) expands to "static const
 * TTest * NAME = & NAME_ttest;"), "A" when it holds .incbin (string pieces
 * joined first, so ".inc" "bin" is found too), and scan_assembler's "X". */
static void scan_preprocessed(const char *path, strbuf *records) {
    char *text = read_file(path, NULL);
    if (!text) return;
    scan_assembler(text, records);
    /* the line markers out: what follows reads the text alone */
    char *keep = text;
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p + 1) : strlen(p);
        if (!(p[0] == '#' && p[1] == ' ' && isdigit((unsigned char)p[2]))) {
            memmove(keep, p, len);
            keep += len;
        }
        p += len;
    }
    *keep = 0;
    /* blanks to one space, and "a" "b" to "ab" */
    char *w = text;
    for (const char *p = text; *p; p++) {
        if (isspace((unsigned char)*p)) {
            if (w > text && w[-1] != ' ') *w++ = ' ';
            continue;
        }
        if (*p == '"' && w > text) {
            const char *q = p + 1;
            while (isspace((unsigned char)*q)) q++;
            if (*q == '"') {
                p = q;
                continue;
            }
        }
        *w++ = *p;
    }
    *w = 0;
    static const char DECL[] = "static const TTest * ";
    for (const char *p = strstr(text, DECL); p; p = strstr(p + 1, DECL)) {
        const char *name = p + sizeof DECL - 1;
        size_t n = 0; /* an identifier, UCNs (\u00e9, as cc -E spells é) included */
        while (isalnum((unsigned char)name[n]) || name[n] == '_' || name[n] == '$' ||
               name[n] == '\\' || (unsigned char)name[n] >= 0x80)
            n++;
        if (n == 0 || strncmp(name + n, " = & ", 5) != 0 || strncmp(name + n + 5, name, n) != 0 ||
            strncmp(name + n + 5 + n, "_ttest", 6) != 0)
            continue;
        sb_printf(records, "T\t%.*s\n", (int)n, name);
    }
    for (char *c = text; *c; c++) *c = (char)tolower((unsigned char)*c);
    if (strstr(text, "incbin")) sb_add(records, "A\n");
    free(text);
}

/* The records build_include_trees keeps, from `cc -E -H -v`'s messages and
 * the preprocessed text. */
#define MAX_INCLUDES 20000 /* more files than any test opens: the rest is not read */

static char *include_records(const char *said, const char *preprocessed) {
    strbuf b = {0};
    bool in_search = false;
    int opened = 0;
    char *copy = xstrdup(said ? said : "");
    for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "#include <...> search starts here:", 34) == 0) in_search = true;
        else if (strncmp(line, "End of search list.", 19) == 0) in_search = false;
        else if (in_search && line[0] == ' ') sb_printf(&b, "S\t%s\n", line + 1);
        else if (line[0] == '.') {
            size_t depth = strspn(line, ".");
            if (line[depth] != ' ' || !line[depth + 1]) continue;
            if (++opened > MAX_INCLUDES) {
                sb_printf(&b, "M\t%d\n", MAX_INCLUDES);
                break;
            }
            sb_printf(&b, "D\t%zu\t%s\n", depth, line + depth + 1);
        }
    }
    free(copy);
    /* "FILE:LINE:COL: fatal error: NAME: Permission denied": the sandbox kept an include out */
    copy = xstrdup(said ? said : "");
    for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char *fatal = strstr(line, ": fatal error: "),
             *denied = strstr(line, ": Permission denied");
        if (!fatal || !denied || denied < fatal) continue;
        char *colon = fatal, *file_end = NULL;
        /* FILE:LINE:COL before ": fatal error" */
        *colon = 0;
        char *col = strrchr(line, ':');
        if (col) *col = 0;
        char *ln = strrchr(line, ':');
        if (ln) file_end = ln;
        if (!file_end) continue;
        *file_end = 0;
        const char *name = fatal + 15;
        sb_printf(&b, "E\t%s\t%s\t%.*s\n", line, file_end + 1, (int)(denied - name), name);
    }
    free(copy);
    scan_preprocessed(preprocessed, &b);
    return sb_take(&b);
}

int build_include_trees(ol_ctx *ctx, unit *u, int n) {
    if (build_prepare(ctx) != 0) return n ? n : 1;
    char *objdir = ctx_cache_dir(ctx, "obj");
    char *tmpdir = ctx_cache_dir(ctx, "tmp");
    if (!objdir || !tmpdir) {
        free(objdir);
        free(tmpdir);
        return n ? n : 1;
    }
    proc_job *jobs = xcalloc((size_t)n + 1, sizeof *jobs);
    int *which = xcalloc((size_t)n + 1, sizeof *which);
    char **outs = xcalloc((size_t)n + 1, sizeof *outs);
    char **scratch = xcalloc((size_t)n + 1, sizeof *scratch);
    int njobs = 0;
    for (int i = 0; i < n; i++) {
        strlist args = {0};
        compile_args(ctx, &u[i], &args);
        unit_key(ctx, &u[i], &args);
        free(u[i].includes);
        u[i].includes = NULL;
        char *cached = xasprintf("%s/%s.inc-3", objdir, u[i].key);
        u[i].includes = cache_intact(cached) ? read_file(cached, NULL) : NULL;
        free(cached);
        if (u[i].includes) {
            sl_free(&args);
            continue;
        }
        /* compile_args ends with "-c SRC": preprocess instead */
        free(args.v[--args.n]);
        free(args.v[--args.n]);
        proc_job *j = &jobs[njobs];
        j->argv = args;
        if (u[i].student) {
            /* the preprocessor reads what the compiler may, no more */
            scratch[njobs] = make_temp_dir(tmpdir, "cpp");
            outs[njobs] =
                scratch[njobs] ? path_join(scratch[njobs], "out.i") : xstrdup("/nonexistent/out.i");
            if (scratch[njobs]) {
                j->sandbox = compile_sandbox(ctx, &u[i], scratch[njobs]);
                j->clean_env = true;
                proc_env(j, "TMPDIR", scratch[njobs]);
            }
        } else {
            outs[njobs] = xasprintf("%s/%s.tmp%ld.i", objdir, u[i].key, (long)getpid());
        }
        j->timeout = compile_timeout();
        if (j->sandbox) ((sandbox *)j->sandbox)->file_bytes = 32LL << 20;
        proc_arg(j, "-E");
        proc_arg(j, "-H");
        proc_arg(j, "-v");
        proc_arg(j, u[i].src);
        proc_arg(j, "-o");
        proc_arg(j, outs[njobs]);
        proc_env(j, "LC_ALL", "C"); /* the search list's headings, in English */
        j->cwd = xstrdup(u[i].cwd ? u[i].cwd : ctx->root);
        j->out_path = xasprintf("%s/%s.tmp%ld.i.log", objdir, u[i].key, (long)getpid());
        which[njobs++] = i;
    }
    int failed = 0;
    if (njobs && proc_run_all(jobs, njobs, ctx->jobs) != 0) failed = -1;
    for (int k = 0; k < njobs && failed >= 0; k++) {
        unit *x = &u[which[k]];
        char *said = read_file(jobs[k].out_path, NULL);
        x->includes = include_records(said, outs[k]);
        if (jobs[k].exit_code == 0 && !jobs[k].timed_out) {
            char *cached = xasprintf("%s/%s.inc-3", objdir, x->key);
            if (write_file_atomic(cached, x->includes, strlen(x->includes)) == 0)
                cache_seal(cached);
            free(cached);
        } else {
            failed++; /* compiling it says why, without -v's noise */
            char *more = xasprintf("%sF\n", x->includes);
            free(x->includes);
            x->includes = more;
        }
        free(said);
    }
    for (int k = 0; k < njobs; k++) {
        unlink(outs[k]);
        if (jobs[k].out_path) unlink(jobs[k].out_path);
        if (scratch[k]) remove_tree(scratch[k], ctx->cache);
        free(scratch[k]);
        free(outs[k]);
        compile_job_free(&jobs[k]);
    }
    free(scratch);
    free(outs);
    free(jobs);
    free(which);
    free(objdir);
    free(tmpdir);
    return failed;
}

void unit_free(unit *u) {
    free(u->includes);
    free(u->src);
    free(u->cwd);
    sl_free(&u->flags);
    sl_free(&u->deps);
    free(u->obj);
    free(u->log);
    memset(u, 0, sizeof *u);
}

int build_archive(ol_ctx *ctx, unit *u, int n, link_input *out) {
    hasher *h = hash_new();
    hash_str(h, "archive");
    for (int i = 0; i < n; i++) hash_str(h, u[i].key);
    hash_done(h, out->key);
    char *dir = ctx_cache_dir(ctx, "lib");
    if (!dir) return -1;
    out->path = xasprintf("%s/%s.a", dir, out->key);
    free(dir);
    if (is_file(out->path) && cache_intact(out->path)) {
        cache_touch(out->path);
        return 0;
    }
    proc_job job = {0};
    char *tmp = xasprintf("%s.tmp%ld.a", out->path, (long)getpid());
    proc_arg(&job, "ar");
    proc_arg(&job, "rcs");
    proc_arg(&job, tmp);
    for (int i = 0; i < n; i++) proc_arg(&job, u[i].obj);
    job.out_path = xasprintf("%s.log", tmp);
    int rc = -1;
    job.timeout = compile_timeout();
    if (proc_run(&job) == 0 && job.exit_code == 0 && rename(tmp, out->path) == 0 &&
        cache_seal(out->path) == 0)
        rc = 0;
    else {
        char *log = read_file(job.out_path, NULL);
        ol_error("cannot make the archive %s: %s", out->path, log ? log : "ar failed");
        free(log);
        unlink(tmp);
    }
    unlink(job.out_path);
    proc_job_free(&job);
    free(tmp);
    return rc;
}

void link_add(link_spec *l, const link_input *in) {
    l->inputs = xrealloc(l->inputs, (size_t)(l->ninputs + 1) * sizeof *l->inputs);
    link_input *d = &l->inputs[l->ninputs++];
    d->path = xstrdup(in->path);
    memcpy(d->key, in->key, HASH_HEX);
}

void link_add_unit(link_spec *l, const unit *u) {
    link_input in = {.path = u->obj};
    memcpy(in.key, u->key, HASH_HEX);
    link_add(l, &in);
}

static void link_args(ol_ctx *ctx, const link_spec *l, strlist *args) {
    sl_push(args, ctx->cc);
    for (int i = 0; i < l->ninputs; i++) sl_push(args, l->inputs[i].path);
    sl_push(args, ctx->testing_lib);
    sl_push(args, ctx->core_lib);
    for (int i = 0; i < l->ldflags.n; i++) sl_push(args, l->ldflags.v[i]);
    sl_push(args, "-lcjson");
    sl_push(args, "-lonig");        /* the runtime's tokenizer (tokenizer.h) */
    sl_push(args, "-lutf8proc");
    add_words(args, OL_BLAS_LIBS);
    add_words(args, OL_CHECK_LIBS);
    sl_push(args, "-lm");
    sl_push(args, "-lpthread");
    sl_push(args, "-fopenmp");
    if (l->coverage) sl_push(args, "--coverage");
    for (size_t i = 0; l->sanitize && i < sizeof SANITIZE_FLAGS / sizeof *SANITIZE_FLAGS; i++)
        sl_push(args, SANITIZE_FLAGS[i]);
    for (int i = 0; i < l->wraps.n; i++)
        sl_push_owned(args, xasprintf("-Wl,--wrap=%s", l->wraps.v[i]));
}

int build_link_inputs(ol_ctx *ctx, const strlist *ldflags, strlist *out) {
    if (build_prepare(ctx) != 0) return -1;
    char *gen = ctx_cache_dir(ctx, "gen"), *tmp = ctx_cache_dir(ctx, "tmp");
    if (!gen || !tmp) {
        free(gen);
        free(tmp);
        return -1;
    }
    char *probe = path_join(gen, "link-probe.c");
    int rc = 0;
    if (!is_file(probe) && write_file_atomic(probe, "int main(void) { return 0; }\n", 29) != 0)
        rc = -1;
    link_spec spec = {0};
    for (int i = 0; ldflags && i < ldflags->n; i++) sl_push(&spec.ldflags, ldflags->v[i]);
    proc_job job = {0};
    link_args(ctx, &spec, &job.argv);
    proc_arg(&job, probe);
    char *bin = xasprintf("%s/link-probe.%ld", tmp, (long)getpid());
    proc_arg(&job, "-o");
    proc_arg(&job, bin);
    proc_arg(&job, "-Wl,--trace");
    job.out_path = xasprintf("%s.log", bin);
    job.timeout = compile_timeout();
    if (rc == 0 && (proc_run(&job) != 0 || job.exit_code != 0)) {
        char *said = read_file(job.out_path, NULL);
        ol_error("cannot link a test program to see its libraries: %s", said ? said : "");
        free(said);
        rc = -1;
    }
    char *text = rc == 0 ? read_file(job.out_path, NULL) : NULL;
    for (char *save = NULL, *line = text ? strtok_r(text, "\n", &save) : NULL; line;
         line = strtok_r(NULL, "\n", &save)) {
        if (line[0] != '/' || strstr(line, "link-probe")) continue; /* ld's own notes, the probe */
        char real[PATH_MAX];
        const char *path = realpath(line, real) ? real : line;
        if (!sl_contains(out, path)) sl_push(out, path);
    }
    free(text);
    unlink(bin);
    unlink(job.out_path);
    free(bin);
    proc_job_free(&job);
    link_free(&spec);
    free(probe);
    free(gen);
    free(tmp);
    return rc;
}

int build_links(ol_ctx *ctx, link_spec *l, int n) {
    if (build_prepare(ctx) != 0) return n ? n : 1;
    char *bindir = ctx_cache_dir(ctx, "bin");
    if (!bindir) return n ? n : 1;
    proc_job *jobs = xcalloc((size_t)n, sizeof *jobs);
    int *which = xcalloc((size_t)n, sizeof *which);
    char **tmps = xcalloc((size_t)n, sizeof *tmps);
    int njobs = 0, unbuildable = 0;
    for (int i = 0; i < n; i++) {
        strlist args = {0};
        link_args(ctx, &l[i], &args);
        hasher *h = hash_new();
        hash_str(h, ctx->runtime);
        hash_str(h, "link");
        for (int k = 0; k < l[i].ninputs; k++) hash_str(h, l[i].inputs[k].key);
        /* the arguments minus the inputs' paths, which the keys stand for */
        for (int k = 1 + l[i].ninputs; k < args.n; k++) hash_str(h, args.v[k]);
        hash_done(h, l[i].key);
        free(l[i].bin);
        free(l[i].log);
        l[i].log = NULL;
        l[i].bin = path_join(bindir, l[i].key);
        if (access(l[i].bin, X_OK) == 0 && cache_intact(l[i].bin)) {
            cache_touch(l[i].bin);
            l[i].ok = l[i].cached = true;
            l[i].log = xstrdup("");
            sl_free(&args);
            continue;
        }
        l[i].ok = l[i].cached = false;
        const char *missing = NULL;
        for (int k = 0; k < l[i].ldflags.n && !missing; k++)
            if (l[i].ldflags.v[k][0] == '/' && !is_file(l[i].ldflags.v[k]))
                missing = l[i].ldflags.v[k];
        if (missing) {
            /* a library the lesson links is built by the course's Makefile */
            l[i].log = xasprintf("ol: %s is missing: run `make -C %s` first\n", missing, ctx->root);
            sl_free(&args);
            unbuildable++;
            continue;
        }
        proc_job *j = &jobs[njobs];
        j->argv = args;
        tmps[njobs] = xasprintf("%s.tmp%ld", l[i].bin, (long)getpid());
        proc_arg(j, "-o");
        proc_arg(j, tmps[njobs]);
        j->out_path = xasprintf("%s.log", tmps[njobs]);
        j->timeout = compile_timeout();
        if (ctx->verbose) {
            char *cmd = sl_join(&j->argv, " ");
            fprintf(stderr, "ol: %s\n", cmd);
            free(cmd);
        }
        which[njobs++] = i;
    }
    int failed = 0;
    if (njobs && proc_run_all(jobs, njobs, ctx->jobs) != 0) failed = -1;
    for (int k = 0; k < njobs && failed >= 0; k++) {
        link_spec *x = &l[which[k]];
        x->log = read_file(jobs[k].out_path, NULL);
        if (!x->log) x->log = xstrdup("");
        x->ok = jobs[k].exit_code == 0 && !jobs[k].timed_out && rename(tmps[k], x->bin) == 0 &&
                cache_seal(x->bin) == 0;
        if (!x->ok && jobs[k].timed_out) {
            char *more = ended_log(ctx, x->log, &jobs[k]);
            free(x->log);
            x->log = more;
        }
        if (!x->ok) {
            unlink(tmps[k]);
            failed++;
        }
        unlink(jobs[k].out_path);
    }
    for (int k = 0; k < njobs; k++) {
        free(tmps[k]);
        proc_job_free(&jobs[k]);
    }
    free(tmps);
    free(jobs);
    free(which);
    free(bindir);
    return failed < 0 ? failed : failed + unbuildable;
}

void link_input_free(link_input *in) {
    free(in->path);
    in->path = NULL;
}

void link_free(link_spec *l) {
    for (int i = 0; i < l->ninputs; i++) free(l->inputs[i].path);
    free(l->inputs);
    sl_free(&l->ldflags);
    sl_free(&l->wraps);
    free(l->bin);
    free(l->log);
    memset(l, 0, sizeof *l);
}

int defined_functions(ol_ctx *ctx, const char *obj, strlist *out) {
    char *dir = ctx_cache_dir(ctx, "tmp");
    if (!dir) return -1;
    proc_job job = {0};
    proc_arg(&job, "nm");
    proc_arg(&job, "-g");
    proc_arg(&job, "--defined-only");
    proc_arg(&job, obj);
    job.out_path = xasprintf("%s/nm.%ld.txt", dir, (long)getpid());
    free(dir);
    int rc = -1;
    if (proc_run(&job) == 0 && job.exit_code == 0) {
        char *text = read_file(job.out_path, NULL);
        for (char *save = NULL, *line = text ? strtok_r(text, "\n", &save) : NULL; line;
             line = strtok_r(NULL, "\n", &save)) {
            char addr[64], type[8], name[512];
            if (sscanf(line, "%63s %7s %511s", addr, type, name) == 3 && strcmp(type, "T") == 0 &&
                !sl_contains(out, name))
                sl_push(out, name);
        }
        free(text);
        rc = 0;
    } else {
        ol_error("nm could not read %s: is binutils installed?", obj);
    }
    unlink(job.out_path);
    proc_job_free(&job);
    return rc;
}

/* The compiler names testgen's wrapper as the includer of every test file
 * ("In file included from build/ol/gen/KEY/wrap_0.c:3:"): news to no one,
 * so those lines go (and the line before ends with ':' again). */
static char *without_wrappers(ol_ctx *ctx, const char *log) {
    char *gen = xasprintf("%s/gen/", ctx->cache);
    strbuf b = {0};
    for (const char *line = log; *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        const char *from = NULL;
        if (strncmp(line, "In file included from ", 22) == 0) from = line + 22;
        else if (len > 22 && strspn(line, " ") >= 10 &&
                 strncmp(line + strspn(line, " "), "from ", 5) == 0)
            from = line + strspn(line, " ") + 5;
        bool wrapper = from && strncmp(from, gen, strlen(gen)) == 0 &&
                       memmem(from, len - (size_t)(from - line), "/wrap_", 6);
        if (wrapper) {
            if (from != line + 22 && b.len >= 2 && b.s[b.len - 2] == ',') b.s[b.len - 2] = ':';
        } else {
            sb_addn(&b, line, len);
            if (eol) sb_add(&b, "\n");
        }
        line += len + (eol ? 1 : 0);
    }
    free(gen);
    return sb_take(&b);
}

/* ld names the two definitions but not the usual cause: a helper left
 * non-static in two of the student's files (two lessons, often), which link
 * apart and clash only together, as in the milestone's tinyllm. */
static void hint_multiple_definition(const char *log) {
    const char *at = strstr(log, "multiple definition of `");
    if (!at) return;
    at += strlen("multiple definition of `");
    int len = (int)strcspn(at, "'\n");
    fprintf(stderr, "ol: hint: `%.*s` is defined twice (the linker's lines above say where). If "
            "it is a helper of yours, make it static: then each file keeps its own.\n", len, at);
}

void print_compiler_log(ol_ctx *ctx, const char *raw) {
    if (!raw || !*raw) return;
    char *log = without_wrappers(ctx, raw);
    /* absolute paths are long: show them from the workspace or the root */
    char *ws = xasprintf("%s/", ctx->ws), *root = xasprintf("%s/", ctx->root);
    strbuf b = {0};
    for (const char *p = log; *p;) {
        const char *w = strstr(p, ws), *r = strstr(p, root);
        const char *hit = w && (!r || w <= r) ? w : r;
        size_t skip = hit == w ? strlen(ws) : strlen(root);
        if (!hit) {
            sb_add(&b, p);
            break;
        }
        sb_addn(&b, p, (size_t)(hit - p));
        p = hit + skip;
    }
    /* the compiler quotes the student's lines as they are (its colours are off) */
    char *text = sb_take(&b), *shown = shown_text(text);
    fputs(shown, stderr);
    hint_multiple_definition(shown);
    free(shown);
    free(text);
    free(ws);
    free(root);
    free(log);
}
