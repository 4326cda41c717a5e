/* ol hub serve DIR ...: the fake Hugging Face Hub of tools/hub, for trying
 * the downloader by hand (the Hub's own code parses the options). */
#include <string.h>

#include "cli.h"
#include "hub/hub.h"

static const char HELP[] =
    "usage: ol hub serve DIR [--port N] [--cdn-port N] [--lfs-threshold BYTES] [--page-size N]\n"
    "\n"
    "Serves DIR/<org>/<name>/ as the Hub repo <org>/<name> on 127.0.0.1 until\n"
    "Ctrl-C, and prints how to point HF_ENDPOINT at it (`ol hub serve --help`\n"
    "says more).\n";

int cmd_hub(int argc, char **argv) {
    if (argc < 2) {
        fputs(HELP, stderr);
        return OL_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) return print_help(HELP);
    if (strcmp(argv[1], "serve") != 0) return usage_error("hub", "\"%s\" is not a hub command (only: serve)", argv[1]);
    return hub_serve_command(argc - 1, argv + 1);
}
