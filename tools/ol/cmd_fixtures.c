/* ol fixtures: lands in the next commit. */
#include "cli.h"

int cmd_fixtures(int argc, char **argv) {
    (void)argc;
    (void)argv;
    ol_error("ol fixtures is not written yet");
    return OL_USAGE;
}
