/* ol hub serve DIR ...: the fake Hugging Face Hub of tools/hub, for trying
 * the downloader by hand (the Hub's own code parses the options). */
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "tinyllm/testing/hub.h"
#include "opts.h"

static const char HELP[] =
    "usage: ol hub serve DIR [--port N] [--cdn-port N] [--lfs-threshold BYTES] [--page-size N]\n"
    "                        [--rename OLD=NEW]...\n"
    "\n"
    "Serves DIR/<org>/<name>/ as the Hub repo <org>/<name> on 127.0.0.1 until\n"
    "Ctrl-C, and prints how to point HF_ENDPOINT at it (`ol hub serve --help`\n"
    "says more).\n";

int cmd_hub(int argc, char **argv) {
    if (argc < 2) {
        fputs(HELP, stderr);
        return OL_USAGE;
    }
    /* ol's part is the verb; what follows `serve` is the Hub's to parse */
    const ol_option none[] = {{0}};
    strlist args = {0};
    opts_result parsed = opts_parse("hub", argc, argv, none, 1, &args);
    int rc = -1;
    if (parsed == OPTS_HELP) rc = print_help(HELP);
    else if (parsed == OPTS_ERROR) rc = OL_USAGE;
    else if (strcmp(args.v[0], "serve") != 0)
        rc = usage_error("hub", "\"%s\" is not a hub command (only: serve)", args.v[0]);
    sl_free(&args);
    if (rc >= 0) return rc;
    int at = 1;
    while (strcmp(argv[at], "serve") != 0) at++; /* after a leading "--" */
    return hub_serve_command(argc - at, argv + at);
}
