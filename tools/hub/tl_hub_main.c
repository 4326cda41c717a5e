/* tl-hub: the fake Hub as a standalone program, for trying it by hand and
 * for the tests that talk to it with curl and Python (the same command as
 * `ol hub serve`). */
#include <stdio.h>
#include <string.h>
#include "tinyllm/testing/hub.h"

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "serve")) return hub_serve_command(argc - 1, argv + 1);
    fprintf(stderr, "usage: %s serve DIR [--port N] [--cdn-port N] [--lfs-threshold BYTES]\n"
                    "         [--page-size N]\n"
                    "  (%s serve --help says more)\n", argv[0], argv[0]);
    return 2;
}
