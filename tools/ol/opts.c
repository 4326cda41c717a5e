#include "opts.h"

#include <string.h>

#include "cli.h"

/* The option called `name` (len characters of it): an exact match, else the
 * one long name it is a prefix of. NULL, with *ambiguous set, when several are. */
static const ol_option *find_long(const ol_option *opts, const char *name, size_t len,
                                  bool *ambiguous) {
    const ol_option *prefix = NULL;
    int prefixes = 0;
    *ambiguous = false;
    for (const ol_option *o = opts; o->name || o->letter; o++) {
        if (!o->name) continue;
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) return o;
        if (len > 0 && strncmp(o->name, name, len) == 0) {
            prefix = o;
            prefixes++;
        }
    }
    *ambiguous = prefixes > 1;
    return prefixes == 1 ? prefix : NULL;
}

static const ol_option *find_letter(const ol_option *opts, char letter) {
    for (const ol_option *o = opts; o->name || o->letter; o++)
        if (o->letter && o->letter == letter) return o;
    return NULL;
}

static void take(const ol_option *o, const char *value) {
    if (o->value && o->str) *o->str = value;
    if (!o->value && o->flag) *o->flag = true;
}

opts_result opts_parse(const char *cmd, int argc, char **argv, const ol_option *opts,
                       int stop_after, strlist *args) {
    bool options_end = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (options_end || (stop_after > 0 && args->n >= stop_after)) {
            sl_push(args, a);
            continue;
        }
        if (strcmp(a, "--") == 0) {
            options_end = true;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return OPTS_HELP;
        if (a[0] != '-' || a[1] == 0) {
            sl_push(args, a);
            continue;
        }
        if (a[1] == '-') {
            const char *name = a + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            bool ambiguous;
            const ol_option *o = find_long(opts, name, len, &ambiguous);
            if (!o) {
                usage_error(cmd, "%s option --%.*s", ambiguous ? "ambiguous" : "unknown", (int)len,
                            name);
                return OPTS_ERROR;
            }
            if (!o->value && eq) {
                usage_error(cmd, "--%s takes no value", o->name);
                return OPTS_ERROR;
            }
            const char *value = eq ? eq + 1 : NULL;
            if (o->value && !value) {
                if (i + 1 >= argc) {
                    usage_error(cmd, "--%s needs a %s", o->name, o->value);
                    return OPTS_ERROR;
                }
                value = argv[++i];
            }
            take(o, value);
            continue;
        }
        /* -x, -xVALUE, -x VALUE */
        const ol_option *o = find_letter(opts, a[1]);
        if (!o) {
            usage_error(cmd, "unknown option -%c", a[1]);
            return OPTS_ERROR;
        }
        const char *value = NULL;
        if (o->value) {
            if (a[2])
                value = a + 2;
            else if (i + 1 < argc)
                value = argv[++i];
            else {
                usage_error(cmd, "-%c needs a %s", o->letter, o->value);
                return OPTS_ERROR;
            }
        } else if (a[2]) {
            usage_error(cmd, "-%c takes no value (\"%s\")", o->letter, a);
            return OPTS_ERROR;
        }
        take(o, value);
    }
    return OPTS_RUN;
}

bool opts_one_lesson(const char *cmd, int argc, char **argv, const ol_option *opts,
                     const char *help, const char *example, char **id, int *status) {
    strlist args = {0};
    opts_result parsed = opts_parse(cmd, argc, argv, opts, 0, &args);
    *id = parsed == OPTS_RUN && args.n == 1 ? xstrdup(args.v[0]) : NULL;
    sl_free(&args);
    if (*id) return true;
    if (parsed == OPTS_HELP)
        *status = print_help(help);
    else if (parsed == OPTS_ERROR)
        *status = OL_USAGE;
    else
        *status = usage_error(cmd, "give one lesson, e.g. `ol %s %s`", cmd, example);
    return false;
}
