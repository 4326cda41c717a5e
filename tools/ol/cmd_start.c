/* ol start L7.x: the starting code into c/, the student's test folder with
 * one example test. Never overwrites: a file that exists is kept. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "harness.h"
#include "opts.h"
#include "scaffold.h"

static const char HELP[] =
    "usage: ol start L7.x [--draft] [--workspace DIR]\n"
    "\n"
    "Copies the lesson's starting code (stubs/) into your c/ folder and creates your\n"
    "test folder, c/tests/<lesson>/, with one example test. Files that already exist\n"
    "are never overwritten, so running it again is safe. Then prints where your\n"
    "tests go and the rung the lesson asks for.\n"
    "\n"
    "Your tests are plain Check tests, START_TEST(name) ... END_TEST, in any .c file\n"
    "of that folder; ol finds and registers them. They may include only contract\n"
    "headers (\"tinyllm/...\"), <check.h> and standard C headers.\n"
    "\n"
    "  --draft   start a lesson whose lesson.json says \"draft\": true (instructors)\n";


/* Does the file at path hold exactly data? */
static bool same_text(const char *path, const char *data, size_t len) {
    size_t n;
    char *text = read_file(path, &n);
    bool same = text && n == len && memcmp(text, data, len) == 0;
    free(text);
    return same;
}

/* Creates dst from data unless it exists. Returns 1 created, 0 kept, -1 error. */
static int create_once(ol_ctx *ctx, const char *dst, const char *data, size_t len) {
    char *dir = path_dirname(dst);
    int made = mkdir_p(dir);
    free(dir);
    if (made != 0) {
        ol_error("cannot create the folder of %s: %s", shown_path(ctx, dst), strerror(errno));
        return -1;
    }
    if (write_file_new(dst, data, len) == 0) return 1;
    if (errno == EEXIST) return 0;
    ol_error("cannot write %s: %s", shown_path(ctx, dst), strerror(errno));
    return -1;
}

int cmd_start(int argc, char **argv) {
    const char *workspace = NULL;
    bool draft = false;
    const ol_option opts[] = {
        {"workspace", 'w', "DIR", &workspace, NULL}, {"draft", 0, NULL, NULL, &draft}, {0}};
    char *id;
    int status;
    if (!opts_one_lesson("start", argc, argv, opts, HELP, "L7.1", &id, &status)) return status;
    ol_ctx ctx;
    lesson l;
    int opened = open_lesson(&ctx, &l, workspace, id);
    free(id);
    if (opened != 0) return OL_USAGE;
    if (l.draft && !draft) {
        /* a student sees no draft: as if it were not there yet */
        ol_error(
            "%s is not open yet (a draft of the course; `ol list` shows the lessons you can start)",
            l.id);
        lesson_free(&l);
        ctx_free(&ctx);
        return OL_USAGE;
    }
    if (require_student_workspace(&ctx) != 0) {
        lesson_free(&l);
        ctx_free(&ctx);
        return OL_USAGE;
    }
    int rc = OL_PASS;
    for (int i = 0; i < l.sources.n && rc == OL_PASS; i++) {
        char *stub = xasprintf("%s/stubs/%s", ctx.root, l.sources.v[i]);
        char *dst = path_join(ctx.student, l.sources.v[i]);
        size_t len;
        char *text = read_file(stub, &len);
        if (!text) {
            ol_error(
                "the course has no starting code %s (lesson.json \"sources\"): tell your "
                "instructor",
                shown_path(&ctx, stub));
            rc = OL_USAGE;
        } else {
            int made = create_once(&ctx, dst, text, len);
            if (made < 0) rc = OL_USAGE;
            else if (made) printf("created c/%s\n", l.sources.v[i]);
            else printf("kept    c/%s (%s: ol never overwrites it)\n", l.sources.v[i],
                        same_text(dst, text, len) ? "still the starting code" : "yours");
        }
        free(text);
        free(stub);
        free(dst);
    }
    char *tests = path_join(ctx.student, l.student_tests);
    if (rc == OL_PASS) {
        strlist existing = {0};
        if (mkdir_p(tests) != 0) {
            ol_error("cannot create c/%s: %s", l.student_tests, strerror(errno));
            rc = OL_USAGE;
        } else if (list_files(tests, ".c", &existing) == 0 && existing.n > 0) {
            printf("kept    c/%s/ (%d test file%s of yours)\n", l.student_tests, existing.n,
                   existing.n == 1 ? "" : "s");
        } else if (existing.n == 0) {
            char *name;
            char *example = example_test_text(&ctx, &l, &name);
            char *dst = path_join(tests, name);
            int made = create_once(&ctx, dst, example, strlen(example));
            if (made < 0) rc = OL_USAGE;
            else if (made) printf("created c/%s/%s (an example test)\n", l.student_tests, name);
            free(dst);
            free(name);
            free(example);
        }
        sl_free(&existing);
    }
    if (rc == OL_PASS) {
        printf("\n%s: %s\n", l.id, l.title);
        printf("Your code:  c/%s", l.sources.v[0]);
        for (int i = 1; i < l.sources.n; i++) printf(", c/%s", l.sources.v[i]);
        printf(
            "\nYour tests: c/%s/  (START_TEST blocks in any .c file; include only contract "
            "headers)\n",
            l.student_tests);
        printf("Rung %s:    the course tests pass on your code", l.rung);
        if (l.level >= 2) printf("; your tests pass on the reference");
        if (l.level >= 3) printf("; mutation score >= %.2f", l.threshold);
        if (l.required_pitfalls.n) {
            char *ids = sl_join(&l.required_pitfalls, ", ");
            printf("; every required pitfall killed (%s)", ids);
            free(ids);
        }
        printf("\n");
        for (int i = 0; i < l.needs.n; i++) {
            lesson dep;
            char *err = NULL;
            if (lesson_load(ctx.root, l.needs.v[i], &dep, &err) == 0) {
                printf("Needs %s (%s): %s\n", dep.id, dep.title,
                       lesson_started(&ctx, &dep)
                           ? "yours, from c/"
                           : "not started: use --ref-deps for the reference");
                lesson_free(&dep);
            }
            free(err);
        }
        printf("\nNext: ol tests %s    (the course tests on your code)\n"
               "      ol check %s    (the grade: course tests, then your tests by mutation)\n",
               l.id, l.id);
    }
    free(tests);
    lesson_free(&l);
    ctx_free(&ctx);
    return rc;
}
