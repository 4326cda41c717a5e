/* tl-testgen OUT_DIR SUITE FILE...: the build's front end to testgen. */
#include <stdio.h>
#include "testgen.h"

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s OUT_DIR SUITE FILE...\n", argv[0]);
        return 2;
    }
    char err[1024];
    int n =
        testgen_write(argv[1], argv[2], (const char *const *)argv + 3, argc - 3, NULL, NULL, err,
                      sizeof err);
    if (n < 0) {
        fprintf(stderr, "tl-testgen: %s\n", err);
        return 2;
    }
    return 0;
}
