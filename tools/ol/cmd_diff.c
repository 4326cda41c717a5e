/* ol diff: lands in the next commit. */
#include "cli.h"

int cmd_diff(int argc, char **argv) {
    (void)argc;
    (void)argv;
    ol_error("ol diff is not written yet");
    return OL_USAGE;
}
