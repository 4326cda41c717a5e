/* ol: the course driver. `ol list`, `ol start L7.1`, `ol tests L7.1`,
 * `ol check L7.1`, `ol diff L7.1`; for instructors `ol mutants`, `ol
 * fixtures`; and `ol hub serve`. Each command has --help. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "proc.h"
#include "util.h"

static const char USAGE[] =
    "usage: ol COMMAND [ARGS]   (ol COMMAND --help for each)\n"
    "\n"
    "Students:\n"
    "  list                 the lessons, their rungs, and where you are\n"
    "  start L7.x           copy the starting code into c/ and make your test folder\n"
    "  tests L7.x           build your code and run the course tests\n"
    "  check L7.x           the full grade: course tests, then your own tests by mutation\n"
    "  diff L7.x            your code beside the reference (after a passing check)\n"
    "  tinyllm [ARGS]       the milestone's command line built with your code (and run)\n"
    "  milestone MS-L7      check that command line: info, logits, generate, pull\n"
    "\n"
    "Instructors:\n"
    "  lesson show|new|stub L7.x   a lesson as ol reads it; a new one's skeleton; its stub\n"
    "  lesson list                 every lesson id, drafts included, one a line\n"
    "  mutants [verify|new|rebase] L7.x   list, verify, author or re-anchor its mutants\n"
    "  fixtures L7.x [--check]     rerun the oracle that makes the golden data\n"
    "  hub serve DIR ...           the fake Hugging Face Hub\n"
    "  dist OUT [--lessons ...]    the student release (the reference only compiled)\n"
    "  grade SUBS --lessons ... --out DIR   a class's submissions at once\n"
    "\n"
    "Where: the course is $OL_ROOT (else the folder ol was built in); your\n"
    "workspace is --workspace DIR, else $OL_WORKSPACE, else the current folder\n"
    "(or, from inside it, the folder above that holds your c/): your code in c/,\n"
    "ol's builds and caches in build/ol/.\n"
    "Exit status: 0 pass, 1 fail, 2 usage error or a broken harness (130 after Ctrl-C).\n";

static const struct {
    const char *name;
    int (*run)(int, char **);
} COMMANDS[] = {
    {"list", cmd_list},       {"start", cmd_start},       {"tests", cmd_tests},
    {"check", cmd_check},     {"diff", cmd_diff},         {"mutants", cmd_mutants},
    {"fixtures", cmd_fixtures}, {"hub", cmd_hub},         {"dist", cmd_dist},
    {"grade", cmd_grade},       {"lesson", cmd_lesson},   {"tinyllm", cmd_tinyllm},
    {"milestone", cmd_milestone},
};

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(USAGE, stderr);
        return OL_USAGE;
    }
    bool help = !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help");
    if (help && argc == 2) {
        fputs(USAGE, stdout);
        return OL_PASS;
    }
    /* `ol help tests` is `ol tests --help` */
    static char help_opt[] = "--help";
    char *help_argv[] = {argv[0], argv[2], help_opt, NULL};
    if (help) {
        argc = 3;
        argv = help_argv;
    }
    const char *name = argv[1];
    /* the Hub handles Ctrl-C itself; elsewhere ol stops its children first */
    if (strcmp(name, "hub") != 0 && !help) proc_setup();
    for (size_t i = 0; i < sizeof COMMANDS / sizeof *COMMANDS; i++)
        if (!strcmp(name, COMMANDS[i].name)) {
            /* getopt names the program in its messages: "ol tests: ..." */
            char prog[32];
            snprintf(prog, sizeof prog, "ol %s", name);
            argv[1] = prog;
            int rc = COMMANDS[i].run(argc - 1, argv + 1);
            return proc_interrupted() ? 130 : rc;
        }
    const char *names[sizeof COMMANDS / sizeof *COMMANDS];
    for (size_t i = 0; i < sizeof COMMANDS / sizeof *COMMANDS; i++) names[i] = COMMANDS[i].name;
    const char *near = closest_word(name, names, (int)(sizeof names / sizeof *names));
    if (near)
        fprintf(stderr,
                "ol: \"%s\" is not a command: did you mean `ol %s`?\n(ol --help lists them)\n",
                name, near);
    else fprintf(stderr, "ol: \"%s\" is not a command\n\n%s", name, USAGE);
    return OL_USAGE;
}
