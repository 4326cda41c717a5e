/* main.c: `tinyllm VERB [ARGS]`, the milestone's command line. The verbs
 * are listed in verbs.h; this file only finds the one asked for. */
#include <stdio.h>
#include <string.h>

#include "tinyllm/tensor.h"
#include "verbs.h"

typedef struct {
    const char *name, *args, *help;
    int (*run)(int argc, char **argv);
} verb;

static const verb VERBS[] = {
#define TINYLLM_TABLE_ROW(name, args, help) {#name, args, help, tinyllm_##name},
    TINYLLM_VERBS(TINYLLM_TABLE_ROW)
#undef TINYLLM_TABLE_ROW
};
#define N_VERBS (sizeof VERBS / sizeof VERBS[0])

static void usage(FILE *out) {
    fprintf(out, "usage: tinyllm VERB [ARGS]\n\nverbs:\n");
    for (size_t i = 0; i < N_VERBS; i++)
        fprintf(out, "  %-10s %-8s %s\n", VERBS[i].name, VERBS[i].args, VERBS[i].help);
    fprintf(out, "\n`tinyllm VERB --help` describes one verb.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "help") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < N_VERBS; i++)
        if (strcmp(name, VERBS[i].name) == 0) {
            int status = VERBS[i].run(argc - 1, argv + 1);
            tl_shutdown();   /* so leak checkers see a clean exit */
            return status;
        }
    fprintf(stderr, "tinyllm: unknown verb '%s'\n\n", name);
    usage(stderr);
    return 2;
}
