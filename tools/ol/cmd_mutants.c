/* ol mutants: lands in the next commit. */
#include "cli.h"

int cmd_mutants(int argc, char **argv) {
    (void)argc;
    (void)argv;
    ol_error("ol mutants is not written yet");
    return OL_USAGE;
}
