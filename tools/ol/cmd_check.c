/* ol check: lands in the next commit. */
#include "cli.h"

int cmd_check(int argc, char **argv) {
    (void)argc;
    (void)argv;
    ol_error("ol check is not written yet");
    return OL_USAGE;
}
