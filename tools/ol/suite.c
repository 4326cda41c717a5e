#include "suite.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "codegen.h"
#include "testgen.h"

/* The tests of dir's *.c files, after the ones s holds. */
static int scan_dir(suite *s, const char *dir, char **err) {
    if (!is_dir(dir)) {
        *err = xasprintf("the test folder %s does not exist", dir);
        return -1;
    }
    int first = s->files.n;
    strlist found = {0};
    list_files(dir, ".c", &found);
    for (int i = 0; i < found.n; i++) {
        for (int k = 0; k < s->files.n && !*err; k++)
            if (strcmp(path_base(s->files.v[k]), path_base(found.v[i])) == 0)
                *err = xasprintf("%s and %s have the same name (each file is a TCase named "
                                 "after it): rename one",
                                 s->files.v[k], found.v[i]);
        sl_push(&s->files, found.v[i]);
    }
    sl_free(&found);
    if (*err) return -1;
    for (int i = first; i < s->files.n; i++) {
        /* each file's name becomes a C string in the generated runner (its TCase) */
        const char *base = path_base(s->files.v[i]);
        for (const char *c = base; *c; c++)
            if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20) {
                *err = xasprintf(
                    "the test file name \"%s\" holds a quote, a backslash or a control character, "
                    "which the generated runner cannot spell: rename it",
                    base);
                return -1;
            }
        /* ... and a key of the JSON report, which is UTF-8: U+FFFD for its bytes would name
         * another file, or two files alike */
        if (!utf8_valid(base)) {
            *err = xasprintf("the test file name \"%s\" is not UTF-8 text, which ol's reports "
                             "cannot spell: rename it",
                             base);
            return -1;
        }
    }
    for (int i = first; i < s->files.n; i++) {
        char **names = NULL;
        int n = testgen_scan(s->files.v[i], &names);
        if (n < 0) {
            *err = xasprintf("cannot read %s: %s", s->files.v[i], strerror(errno));
            return -1;
        }
        for (int k = 0; k < n; k++) {
            for (int j = 0; j < s->tests.n; j++)
                if (strcmp(s->tests.v[j], names[k]) == 0 && !*err)
                    *err = xasprintf(
                        "the test %s is defined twice, in %s and %s: give each test its own name",
                        names[k], path_base(s->test_file.v[j]), path_base(s->files.v[i]));
            sl_push(&s->tests, names[k]);
            sl_push(&s->test_file, s->files.v[i]);
        }
        testgen_free_names(names, n);
        if (*err) return -1;
    }
    return 0;
}

int suite_scan(suite *s, const char *name, const char *dir, char **err) {
    memset(s, 0, sizeof *s);
    *err = NULL;
    s->name = xstrdup(name);
    s->dir = xstrdup(dir);
    return scan_dir(s, dir, err);
}

int suite_add_dir(suite *s, const char *dir, char **err) {
    *err = NULL;
    sl_push(&s->more_dirs, dir);
    return scan_dir(s, dir, err);
}

/* Every regular file beneath dir (links followed, at most 8 folders deep). */
static void list_tree_at(const char *dir, strlist *out, int depth) {
    DIR *d = depth < 8 ? opendir(dir) : NULL;
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char *full = path_join(dir, e->d_name);
        if (is_dir(full)) list_tree_at(full, out, depth + 1);
        else if (is_file(full)) sl_push(out, full);
        free(full);
    }
    closedir(d);
}

static void list_tree(const char *dir, strlist *out) { list_tree_at(dir, out, 0); }

/* Copies a generated file into place only when it changed, so a rerun sees
 * the same paths and contents (and the cache keys hold). */
static int sync_file(const char *from, const char *to) {
    char *a = read_file(from, NULL), *b = read_file(to, NULL);
    int rc = 0;
    if (!a) rc = -1;
    else if (!b || strcmp(a, b) != 0) rc = copy_file_atomic(from, to);
    free(a);
    free(b);
    return rc;
}

/* testgen's finish line of a test, from the cache's secret (ctx). */
static long finish_of(const char *test, void *secret) {
    return codegen_finish_line(secret, test);
}

int suite_generate(ol_ctx *ctx, suite *s, char **err) {
    *err = NULL;
    hasher *h = hash_new();
    hash_str(h, "gen-1");
    hash_str(h, s->name);
    for (int i = 0; i < s->files.n; i++) hash_str(h, s->files.v[i]);
    char key[HASH_HEX];
    hash_done(h, key);
    char *gen_root = ctx_cache_dir(ctx, "gen");
    if (!gen_root) {
        *err = xstrdup("cannot create build/ol/gen");
        return -1;
    }
    char *dir = path_join(gen_root, key);
    char *tmp = make_temp_dir(gen_root, "new");
    int rc = -1;
    if (!tmp || mkdir_p(dir) != 0) {
        *err = xasprintf("cannot create a folder under %s", gen_root);
        goto done;
    }
    char msg[1024];
    char secret[HASH_HEX];
    if (codegen_secret(ctx, secret) != 0) {
        *err = xstrdup("ol's cache has no secret (above)");
        goto done;
    }
    if (testgen_write(tmp, s->name, (const char *const *)s->files.v, s->files.n, finish_of,
                      secret, msg, sizeof msg) < 0) {
        *err = xasprintf("cannot register the tests of %s: %s", s->dir, msg);
        goto done;
    }
    /* a test may include any file of its folder (helper headers, in
     * subfolders too): each object depends on all of them */
    strlist headers = {0};
    list_tree(s->dir, &headers);
    for (int i = 0; i < s->more_dirs.n; i++) list_tree(s->more_dirs.v[i], &headers);
    sl_sort(&headers);
    s->nunits = s->files.n + 1;
    s->units = xcalloc((size_t)s->nunits, sizeof *s->units);
    for (int i = 0; i < s->nunits; i++) {
        char *name = i < s->files.n ? xasprintf("wrap_%d.c", i) : xstrdup("main.c");
        char *from = path_join(tmp, name), *to = path_join(dir, name);
        if (sync_file(from, to) != 0) {
            *err = xasprintf("cannot write %s", to);
            free(name);
            free(from);
            free(to);
            sl_free(&headers);
            goto done;
        }
        unit *u = &s->units[i];
        u->src = to;
        u->cwd = xstrdup(dir);
        u->test = true;
        /* the student's tests compile in the student's sandbox (build.c) */
        u->student = path_rel(s->dir, ctx->student) != s->dir;
        if (i < s->files.n) {
            sl_push(&u->deps, s->files.v[i]);
            for (int k = 0; k < headers.n; k++) sl_push(&u->deps, headers.v[k]);
        }
        free(name);
        free(from);
    }
    sl_free(&headers);
    rc = 0;
done:
    if (tmp) remove_tree(tmp, ctx->cache);
    free(tmp);
    free(dir);
    free(gen_root);
    return rc;
}

int suite_compile(ol_ctx *ctx, suite *s, const char *label) {
    int failed = build_units(ctx, s->units, s->nunits);
    if (failed < 0) return -1;
    for (int i = 0; i < s->nunits; i++) print_compiler_log(ctx, s->units[i].log);
    if (failed > 0) {
        int bad = 0;
        for (int i = 0; i < s->files.n; i++)
            if (!s->units[i].ok) bad++;
        if (!bad) ol_error("the generated runner of %s did not compile (see above)", label);
        return bad ? bad : 1;
    }
    return 0;
}

void suite_free(suite *s) {
    free(s->name);
    free(s->dir);
    sl_free(&s->files);
    sl_free(&s->more_dirs);
    sl_free(&s->tests);
    sl_free(&s->test_file);
    for (int i = 0; i < s->nunits; i++) unit_free(&s->units[i]);
    free(s->units);
    memset(s, 0, sizeof *s);
}

void suite_link(const suite *s, link_spec *l) {
    for (int i = 0; i < s->nunits; i++) link_add_unit(l, &s->units[i]);
}

/* ---- the include rule ---- */

static const char *const STANDARD_HEADERS[] = {
    "assert.h", "complex.h", "ctype.h",     "errno.h",    "fenv.h",     "float.h",
    "inttypes.h", "iso646.h", "limits.h",   "locale.h",   "math.h",     "setjmp.h",
    "signal.h", "stdalign.h", "stdarg.h",   "stdatomic.h", "stdbool.h", "stddef.h",
    "stdint.h", "stdio.h",   "stdlib.h",    "stdnoreturn.h", "string.h", "tgmath.h",
    "threads.h", "time.h",   "uchar.h",     "wchar.h",    "wctype.h",   "check.h"};

static bool is_standard(const char *name) {
    for (size_t i = 0; i < sizeof STANDARD_HEADERS / sizeof *STANDARD_HEADERS; i++)
        if (strcmp(name, STANDARD_HEADERS[i]) == 0) return true;
    return false;
}

/* path is dir or lies beneath it */
static bool beneath(const char *path, const char *dir) {
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == 0 || path[n] == '/');
}

/* The real path (links resolved) of a path the preprocessor printed, which
 * is relative to where it ran when not absolute. */
static char *real_path(const char *path, const char *cwd) {
    char *joined = path[0] == '/' ? xstrdup(path) : path_join(cwd, path);
    char buf[PATH_MAX];
    char *r = realpath(joined, buf) ? xstrdup(buf) : xstrdup(joined);
    free(joined);
    return r;
}

/* The line of `includer` whose #include names `included` (by its last
 * component), or 0: the preprocessor's tree has no line numbers, and a
 * name built by a macro is not in the text. */
static int include_line(const char *includer, const char *included) {
    char *text = read_file(includer, NULL);
    if (!text) return 0;
    const char *base = path_base(included);
    int found = 0, lineno = 1;
    for (char *line = text, *next; line && !found; line = next, lineno++) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        char *p = line + strspn(line, " \t");
        if ((*p == '#' || strncmp(p, "?\?=", 3) == 0) && strstr(p, "include") && strstr(p, base))
            found = lineno;
    }
    free(text);
    return found;
}

typedef struct {
    ol_ctx *ctx;
    bool code; /* the student's code (c/): any system header; else tests: standard C only */
    const char *test_dir;   /* real path: the test folder, or (code) the student's c/ */
    char *contracts;        /* real path */
    strlist sysdirs;        /* the compiler's <...> folders, outside the course and workspace */
    strlist *problems;
} include_rule;

/* Checks one file a student's file includes (`path`, links resolved;
 * `as_named`, as the preprocessor opened it); a problem is "file:line: message". */
static void check_one(include_rule *rule, const char *includer, const char *path,
                      const char *as_named) {
    ol_ctx *ctx = rule->ctx;
    int line = include_line(includer, as_named);
    char *where = line ? xasprintf("%s:%d", shown_path(ctx, includer), line)
                       : xstrdup(shown_path(ctx, includer));
    char *problem = NULL;
    if (rule->code) {
        bool system = false;
        for (int i = 0; i < rule->sysdirs.n; i++)
            system = system || beneath(path, rule->sysdirs.v[i]);
        if (!beneath(path, rule->test_dir) && !beneath(path, rule->contracts) && !system)
            problem = xasprintf(
                "%s: #include \"%s\" is not allowed: your code may include contract headers "
                "(contracts/tinyllm/...), system headers and its own files under c/, not the "
                "course's reference or any other file",
                where, shown_path(ctx, path));
    } else if (beneath(path, rule->test_dir)) {
        /* the student's own helper, unless it stands in for a contract */
        const char *rel = path + strlen(rule->test_dir) + (path[strlen(rule->test_dir)] == '/');
        char *contract = path_join(rule->contracts, rel);
        if (*rel && is_file(contract))
            problem = xasprintf(
                "%s: \"%s\" reads the copy in your test folder, not the contract: remove %s", where,
                rel, shown_path(ctx, path));
        free(contract);
    } else if (beneath(path, rule->contracts)) {
        /* a contract */
    } else {
        const char *sysdir = NULL;
        for (int i = 0; i < rule->sysdirs.n; i++)
            if (beneath(path, rule->sysdirs.v[i]) &&
                (!sysdir || strlen(rule->sysdirs.v[i]) > strlen(sysdir)))
                sysdir = rule->sysdirs.v[i];
        const char *name = sysdir ? path + strlen(sysdir) + 1 : NULL;
        if (!name || !is_standard(name))
            problem = xasprintf(
                "%s: #include %s%s%s is not allowed: tests include only contract headers "
                "(contracts/tinyllm/...), <check.h>, standard C headers and headers of their own "
                "test folder, so they test the contract, not one implementation",
                where, name ? "<" : "\"", name ? name : shown_path(ctx, path), name ? ">" : "\"");
    }
    if (problem && !sl_contains(rule->problems, problem)) sl_push_owned(rule->problems, problem);
    else free(problem);
    free(where);
}

/* Every file included by a student's file (what the preprocessor actually
 * opened, nested as `cc -H` lists it) must be allowed; what a contract or
 * a system header includes in turn is theirs. */
static void check_tree(include_rule *rule, const unit *u, const char *test_file) {
    strlist stack = {
        0}; /* stack.v[d]: the file open at depth d (0: the wrapper, or the code's source) */
    sl_push_owned(&stack, real_path(u->src, u->cwd));
    bool incbin = false;
    char *copy = xstrdup(u->includes ? u->includes : "");
    for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == 'A') incbin = true;
        if (line[0] == 'M' && !rule->code) {
            char *problem = xasprintf(
                "%s: the test opens more than %s header files (an include that includes "
                "itself?): ol reads no further",
                shown_path(rule->ctx, test_file), line + 2);
            if (!sl_contains(rule->problems, problem)) sl_push_owned(rule->problems, problem);
            else free(problem);
        }
        if (line[0] == 'X' && !rule->code) {
            /* "X<TAB>asm|section<TAB>FILE<TAB>LINE": the assembler text of the test's own */
            char *what = line + 2, *file = strchr(what, '\t'),
                 *at = file ? strchr(file + 1, '\t') : NULL;
            if (!at) continue;
            *file++ = 0;
            *at++ = 0;
            char *real = real_path(file, u->cwd);
            if (beneath(real, rule->test_dir)) {
                char *problem = xasprintf(
                    "%s:%s: %s is not allowed in tests: it hands the assembler text of its "
                    "own (a .incbin could copy a file into the program); call the "
                    "contract's functions and the C library instead",
                    shown_path(rule->ctx, real), at,
                    strcmp(what, "asm") == 0 ? "asm (__asm__, __asm)" : "a section attribute");
                if (!sl_contains(rule->problems, problem)) sl_push_owned(rule->problems, problem);
                else free(problem);
            }
            free(real);
            continue;
        }
        if (line[0] == 'E') {
            /* "E<TAB>FILE<TAB>LINE<TAB>NAME": the sandbox refused to open NAME */
            char *file = line + 2, *ln = strchr(file, '\t'),
                 *name = ln ? strchr(ln + 1, '\t') : NULL;
            if (!name) continue;
            *ln++ = 0;
            *name++ = 0;
            char *real = real_path(file, u->cwd);
            if (beneath(real, rule->test_dir)) {
                char *problem = xasprintf(
                    "%s:%s: #include \"%s\" is not allowed: %s", shown_path(rule->ctx, real), ln,
                    name,
                    rule->code
                        ? "your code may include contract headers "
                          "(contracts/tinyllm/...), system headers and its own files under c/"
                        : "tests include only contract headers (contracts/tinyllm/...), "
                          "<check.h>, standard C headers and headers of their own test folder");
                if (!sl_contains(rule->problems, problem)) sl_push_owned(rule->problems, problem);
                else free(problem);
            }
            free(real);
            continue;
        }
        if (line[0] != 'D') continue;
        char *end;
        long depth = strtol(line + 2, &end, 10);
        if (depth < 1 || depth > stack.n || *end != '\t') continue;
        char *path = real_path(end + 1, u->cwd);
        while (stack.n > depth) free(stack.v[--stack.n]);
        const char *includer = stack.v[depth - 1];
        /* a test's wrapper (depth 0) is ol's; the code's own source is the student's */
        if ((depth >= 2 || rule->code) && beneath(includer, rule->test_dir))
            check_one(rule, includer, path, end + 1);
        sl_push_owned(&stack, path);
    }
    if (incbin && !rule->code) {
        char *problem = xasprintf(
            "%s: the preprocessed test holds an assembler .incbin, which copies a file into "
            "the test program: tests may not embed files",
            shown_path(rule->ctx, test_file));
        if (!sl_contains(rule->problems, problem)) sl_push_owned(rule->problems, problem);
        else free(problem);
    }
    free(copy);
    sl_free(&stack);
}

/* The line of `file` that says START_TEST(... name ...), or 0. */
static int start_test_line(const char *file, const char *name) {
    char *text = read_file(file, NULL);
    if (!text) return 0;
    int found = 0, lineno = 1;
    for (char *line = text, *next; line && !found; line = next, lineno++) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        char *at = strstr(line, "START_TEST");
        if (at && strstr(at, name)) found = lineno;
    }
    free(text);
    return found;
}

/* "test_\U000000e9t\U000000e9" (how cc -E spells an identifier) as UTF-8. */
static char *ucn_to_utf8(const char *s) {
    strbuf b = {0};
    while (*s) {
        int digits = s[0] == '\\' && s[1] == 'U' ? 8 : s[0] == '\\' && s[1] == 'u' ? 4 : 0;
        unsigned long c = 0;
        int k = 0;
        for (; digits && k < digits && isxdigit((unsigned char)s[2 + k]); k++)
            c = c * 16 + (unsigned long)(isdigit((unsigned char)s[2 + k])
                                             ? s[2 + k] - '0'
                                             : (s[2 + k] | 32) - 'a' + 10);
        if (!digits || k < digits || c > 0x10FFFF) {
            sb_addn(&b, s++, 1);
            continue;
        }
        char u[4];
        size_t n = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        if (n == 1) u[0] = (char)c;
        else {
            for (size_t i = n - 1; i > 0; i--, c >>= 6) u[i] = (char)(0x80 | (c & 0x3F));
            u[0] = (char)((n == 2 ? 0xC0 : n == 3 ? 0xE0 : 0xF0) | c);
        }
        sb_addn(&b, u, n);
        s += 2 + digits;
    }
    return sb_take(&b);
}

/* The tests testgen registers (START_TEST(name) in the text) must be the
 * tests the compiler sees: one inside #if 0 would not compile, one made
 * by a macro would never run. */
static void check_tests_seen(ol_ctx *ctx, const suite *s, int file, const char *records,
                             strlist *problems) {
    strlist seen = {0};
    char *copy = xstrdup(records ? records : "");
    for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save))
        if (line[0] == 'T' && line[1] == '\t') sl_push(&seen, line + 2);
    free(copy);
    const char *path = s->files.v[file], *shown = shown_path(ctx, path);
    strlist registered = {0};
    for (int t = 0; t < s->tests.n; t++) {
        if (strcmp(s->test_file.v[t], path) != 0) continue;
        sl_push(&registered, s->tests.v[t]);
        if (sl_contains(&seen, s->tests.v[t])) continue;
        int line = start_test_line(path, s->tests.v[t]);
        char *where = line ? xasprintf("%s:%d", shown, line) : xstrdup(shown);
        sl_push_owned(
            problems,
            xasprintf("%s: START_TEST(%s) is not compiled (it is inside #if 0, or a macro "
                      "hides it): delete it, or let the compiler see it",
                      where, s->tests.v[t]));
        free(where);
    }
    for (int i = 0; i < seen.n; i++) {
        if (sl_contains(&registered, seen.v[i]) || sl_contains(&s->tests, seen.v[i])) continue;
        size_t plain = strspn(seen.v[i], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789_");
        if (strchr(seen.v[i], '\\')) {
            char *name = ucn_to_utf8(seen.v[i]);
            sl_push_owned(
                problems,
                xasprintf("%s: the test name %s has letters beyond ASCII, which ol cannot "
                          "register: name it with a-z, A-Z, 0-9 and _ only",
                          shown, name));
            free(name);
        } else if (seen.v[i][plain] != '\0') {   /* gcc takes '$' in a name; testgen does not */
            sl_push_owned(
                problems,
                xasprintf("%s: the test name %s has '%c', which ol cannot register: name it "
                          "with a-z, A-Z, 0-9 and _ only",
                          shown, seen.v[i], seen.v[i][plain]));
        } else {
            sl_push_owned(
                problems,
                xasprintf("%s: the test %s is declared through a macro or an included file, "
                          "which ol does not look into, so it would never run: write "
                          "START_TEST(%s) ... END_TEST in the .c file itself",
                          shown, seen.v[i], seen.v[i]));
        }
    }
    sl_free(&registered);
    sl_free(&seen);
}

/* The compiler's <...> folders from a unit's "S" records, but the course's
 * and the workspace's (-I contracts is searched for <...> too). */
static void system_dirs(ol_ctx *ctx, const unit *u, strlist *dirs) {
    char *copy = xstrdup(u->includes ? u->includes : "");
    for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (line[0] != 'S' || line[1] != '\t') continue;
        char *dir = real_path(line + 2, ctx->root);
        if (!beneath(dir, ctx->root) && !beneath(dir, ctx->ws) && !sl_contains(dirs, dir))
            sl_push(dirs, dir);
        free(dir);
    }
    free(copy);
}

int code_check_includes(ol_ctx *ctx, unit *units, int n, strlist *problems) {
    int before = problems->n;
    if (build_include_trees(ctx, units, n) < 0) return -1;
    char buf[PATH_MAX];
    char *contracts = path_join(ctx->root, "contracts");
    include_rule rule = {.ctx = ctx,
                         .code = true,
                         .test_dir = realpath(ctx->student, buf) ? buf : ctx->student,
                         .contracts = real_path(contracts, ctx->root),
                         .problems = problems};
    free(contracts);
    for (int i = 0; i < n; i++) {
        strlist dirs = {0};
        system_dirs(ctx, &units[i], &dirs);
        rule.sysdirs = dirs;
        check_tree(&rule, &units[i], units[i].src);
        sl_free(&dirs);
    }
    free(rule.contracts);
    return problems->n - before;
}

/* What a folder entry is, when it is not a file or a folder. */
static const char *odd_kind(mode_t mode) {
    if (S_ISLNK(mode)) return "a symbolic link";
    if (S_ISFIFO(mode)) return "a named pipe";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
    return NULL;
}

static void odd_files_at(ol_ctx *ctx, const char *dir, int depth, strlist *problems) {
    DIR *d = depth < 12 ? opendir(dir) : NULL;
    if (!d) return;
    strlist names = {0};
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) sl_push(&names, e->d_name);
    closedir(d);
    sl_sort(&names);
    for (int i = 0; i < names.n; i++) {
        char *path = path_join(dir, names.v[i]);
        struct stat st;
        const char *kind = lstat(path, &st) == 0 ? odd_kind(st.st_mode) : NULL;
        if (kind)
            sl_push_owned(
                problems,
                xasprintf("%s: %s is %s, not a regular file: ol reads only regular files in "
                          "your folders (a link could reach the course's reference, a pipe "
                          "would hang the compiler); replace it with the file itself",
                          shown_path(ctx, path), shown_path(ctx, path), kind));
        else if (S_ISDIR(st.st_mode))
            odd_files_at(ctx, path, depth + 1, problems);
        free(path);
    }
    sl_free(&names);
}

int student_files_check(ol_ctx *ctx, const char *dir, strlist *problems) {
    int before = problems->n;
    struct stat st;
    const char *kind = lstat(dir, &st) == 0 ? odd_kind(st.st_mode) : NULL;
    if (kind)
        sl_push_owned(problems,
                      xasprintf("%s: %s is %s, not a folder: make it a folder of your files",
                                shown_path(ctx, dir), shown_path(ctx, dir), kind));
    else
        odd_files_at(ctx, dir, 0, problems);
    return problems->n - before;
}

int suite_check_includes(ol_ctx *ctx, suite *s, strlist *problems) {
    int before = problems->n;
    if (build_include_trees(ctx, s->units, s->files.n) < 0) return -1;
    char buf[PATH_MAX];
    char *contracts = path_join(ctx->root, "contracts");
    include_rule rule = {.ctx = ctx, .test_dir = realpath(s->dir, buf) ? buf : s->dir,
                         .contracts = real_path(contracts, ctx->root), .problems = problems};
    free(contracts);
    for (int i = 0; i < s->files.n; i++) {
        strlist dirs = {0};
        system_dirs(ctx, &s->units[i], &dirs);
        rule.sysdirs = dirs;
        check_tree(&rule, &s->units[i], s->files.v[i]);
        sl_free(&dirs);
        /* a file the preprocessor could not finish: compiling it says why */
        const char *rec = s->units[i].includes ? s->units[i].includes : "";
        if (strncmp(rec, "F\n", 2) != 0 && !strstr(rec, "\nF\n"))
            check_tests_seen(ctx, s, i, rec, problems);
    }
    free(rule.contracts);
    return problems->n - before;
}
