/* main.c: `tinyllm VERB [ARGS]`, the milestone's command line. The verbs
 * are listed in verbs.h; this file only finds the one asked for. */
#include <errno.h>
#include <stdbool.h>
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

/* A verb's C name has '_' where the command line has '-' (chat_template is
 * typed chat-template). */
static bool same_verb(const char *typed, const char *name) {
    for (; *typed && *name; typed++, name++)
        if (*typed != *name && !(*typed == '-' && *name == '_')) return false;
    return *typed == *name;
}

static void usage(FILE *out) {
    fprintf(out, "usage: tinyllm VERB [ARGS]\n\nverbs:\n");
    for (size_t i = 0; i < N_VERBS; i++) {
        char shown[32];
        snprintf(shown, sizeof shown, "%s", VERBS[i].name);
        for (char *c = shown; *c; c++)
            if (*c == '_') *c = '-';
        fprintf(out, "  %-13s %-6s %s\n", shown, VERBS[i].args, VERBS[i].help);
    }
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
        if (same_verb(name, VERBS[i].name)) {
            int status = VERBS[i].run(argc - 1, argv + 1);
            tl_shutdown();   /* so leak checkers see a clean exit */
            /* Output that never reached its file (a full disk) is a failed run. */
            if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, "tinyllm %s: cannot write the output to stdout: %s (a full "
                        "disk?); the output is incomplete\n", VERBS[i].name,
                        strerror(errno ? errno : EIO));
                if (status == 0) status = 1;
            }
            return status;
        }
    fprintf(stderr, "tinyllm: unknown verb '%s'\n\n", name);
    usage(stderr);
    return 2;
}
