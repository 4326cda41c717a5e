/* ol lesson: for instructors. Show a lesson as ol reads it (validated:
 * what scripts and the Makefile use instead of parsing lesson.json), list
 * the lessons, write a new lesson's skeleton, or (re)generate a stub from
 * its contract. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "opts.h"
#include "scaffold.h"

static const char HELP[] =
    "usage: ol lesson show L7.x [--json | --field KEY]\n"
    "       ol lesson list\n"
    "       ol lesson new L7.x --title TEXT --module AREA/NAME [--rung R1..R5] [--needs L7.3,...]\n"
    "       ol lesson stub L7.x\n"
    "\n"
    "show   the lesson as ol reads it, after validating lesson.json against\n"
    "       course/FORMAT.md (every key, every path it names): the values in\n"
    "       effect, defaults included. --json prints them as one JSON object;\n"
    "       --field KEY prints one value (a list: one item a line), for scripts.\n"
    "list   every lesson id of course/, drafts included, one a line.\n"
    "new    writes a lesson skeleton that `ol mutants verify` accepts: lesson.json\n"
    "       (a draft), the chapter with every section of the lesson checklist, the\n"
    "       contract contracts/tinyllm/AREA/NAME.h (empty, with its include guard),\n"
    "       the stub and the reference, tests/L7.x/, reference/tests/<slug>/, and\n"
    "       the seeded oracle oracle/L7.x/make_fixtures.py, which it runs once\n"
    "       (fixtures/L7.x/). It never overwrites a file, and refuses a module\n"
    "       another lesson owns. --rung is R3 unless given.\n"
    "stub   writes the stub of each source from its contract's prototypes: each\n"
    "       function fails with tl_fail(\"not implemented: NAME (L7.x)\") and returns\n"
    "       what its type says a failure returns. Rerun it as the header grows;\n"
    "       a stub that differs from what it would write is never overwritten.\n"
    "\n"
    "Options: --workspace DIR (where build/ol/ goes).\n"
    "Exit status: 0 done, 1 a check failed, 2 usage error or an invalid lesson.json.\n";

/* The lesson's values in effect, as JSON (paths as lesson.json gives them). */
static cJSON *lesson_json(const char *root, const lesson *l) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", l->id);
    cJSON_AddStringToObject(o, "slug", l->slug);
    cJSON_AddStringToObject(o, "title", l->title);
    cJSON_AddStringToObject(o, "rung", l->rung);
    cJSON_AddBoolToObject(o, "draft", l->draft);
    const struct {
        const char *key;
        const strlist *list;
    } lists[] = {{"needs", &l->needs},
                 {"sources", &l->sources},
                 {"contracts", &l->contracts},
                 {"required_pitfalls", &l->required_pitfalls}};
    for (size_t i = 0; i < sizeof lists / sizeof *lists; i++) {
        cJSON *a = cJSON_AddArrayToObject(o, lists[i].key);
        for (int k = 0; k < lists[i].list->n; k++)
            cJSON_AddItemToArray(a, cJSON_CreateString(lists[i].list->v[k]));
    }
    cJSON *link = cJSON_AddArrayToObject(o, "link");
    for (int k = 0; k < l->link.n; k++)
        cJSON_AddItemToArray(link, cJSON_CreateString(path_rel(l->link.v[k], root)));
    const struct {
        const char *key, *value;
    } strings[] = {{"course_tests", l->course_tests},
                   {"student_tests", l->student_tests},
                   {"model_tests", l->model_tests},
                   {"fixtures", l->fixtures},
                   {"oracle", l->oracle},
                   {"example_test", l->example_test}};
    for (size_t i = 0; i < sizeof strings / sizeof *strings; i++) {
        if (strings[i].value)
            cJSON_AddStringToObject(o, strings[i].key, strings[i].value);
        else
            cJSON_AddNullToObject(o, strings[i].key);
    }
    cJSON_AddNumberToObject(o, "test_timeout_seconds", l->test_timeout);
    cJSON_AddNumberToObject(o, "threshold", l->threshold);
    return o;
}

/* One value of item, as a script reads it: a string or number on its line,
 * a list one item a line, null nothing. */
static void print_value(const cJSON *item) {
    if (cJSON_IsString(item))
        printf("%s\n", item->valuestring);
    else if (cJSON_IsBool(item))
        printf("%s\n", cJSON_IsTrue(item) ? "true" : "false");
    else if (cJSON_IsNumber(item))
        printf("%g\n", item->valuedouble);
    else if (cJSON_IsArray(item)) {
        const cJSON *e;
        cJSON_ArrayForEach(e, item) printf("%s\n", e->valuestring);
    }
}

static int show(ol_ctx *ctx, const lesson *l, bool json, const char *field) {
    cJSON *o = lesson_json(ctx->root, l);
    int rc = OL_PASS;
    if (field) {
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(o, field);
        if (!item) {
            int n = 0;
            while (LESSON_KEYS[n]) n++;
            const char *near = closest_word(field, LESSON_KEYS, n);
            rc = usage_error("lesson show",
                             "\"%s\" is not a key of lesson.json%s%s%s (course/FORMAT.md)", field,
                             near ? ": did you mean \"" : "", near ? near : "", near ? "\"?" : "");
        } else {
            print_value(item);
        }
    } else if (json) {
        char *text = cJSON_Print(o);
        printf("%s\n", text);
        free(text);
    } else {
        const cJSON *e;
        cJSON_ArrayForEach(e, o) {
            printf("%-21s", e->string);
            if (cJSON_IsArray(e)) {
                strlist items = {0};
                const cJSON *x;
                cJSON_ArrayForEach(x, e) sl_push(&items, x->valuestring);
                char *all = sl_join(&items, ", ");
                printf("%s\n", items.n ? all : "-");
                free(all);
                sl_free(&items);
            } else if (cJSON_IsNull(e)) {
                printf("-\n");
            } else {
                print_value(e);
            }
        }
        printf("(course/%s/lesson.json is valid: every key is known and every path it names is "
               "there)\n",
               l->id);
    }
    cJSON_Delete(o);
    return rc;
}

int cmd_lesson(int argc, char **argv) {
    const char *sub = argc > 1 ? argv[1] : "";
    static const char *const SUBS[] = {"show", "list", "new", "stub"};
    bool known = false;
    for (size_t i = 0; i < sizeof SUBS / sizeof *SUBS; i++) known = known || !strcmp(sub, SUBS[i]);
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h")) return print_help(HELP);
    if (!known) {
        const char *near = closest_word(sub, SUBS, (int)(sizeof SUBS / sizeof *SUBS));
        if (!*sub) return usage_error("lesson", "say what to do: show, list, new or stub");
        return usage_error("lesson", "\"%s\" is not one of show, list, new, stub%s%s%s", sub,
                           near ? " (did you mean " : "", near ? near : "", near ? "?)" : "");
    }
    const char *workspace = NULL, *field = NULL;
    bool json = false;
    scaffold_options so = {0};
    const ol_option show_opts[] = {{"workspace", 'w', "DIR", &workspace, NULL},
                                   {"json", 0, NULL, NULL, &json},
                                   {"field", 0, "KEY", &field, NULL},
                                   {0}};
    const ol_option new_opts[] = {
        {"workspace", 'w', "DIR", &workspace, NULL},  {"title", 0, "TEXT", &so.title, NULL},
        {"module", 0, "AREA/NAME", &so.module, NULL}, {"rung", 0, "R1..R5", &so.rung, NULL},
        {"needs", 0, "L7.x,...", &so.needs, NULL},    {0}};
    const ol_option plain_opts[] = {{"workspace", 'w', "DIR", &workspace, NULL}, {0}};
    bool is_show = !strcmp(sub, "show"), is_new = !strcmp(sub, "new"),
         is_list = !strcmp(sub, "list");
    char *cmd = xasprintf("lesson %s", sub);
    strlist args = {0};
    opts_result parsed = opts_parse(cmd, argc - 1, argv + 1,
                                    is_show  ? show_opts
                                    : is_new ? new_opts
                                             : plain_opts,
                                    0, &args);
    int rc = OL_PASS;
    if (parsed == OPTS_HELP)
        rc = print_help(HELP);
    else if (parsed == OPTS_ERROR)
        rc = OL_USAGE;
    else if (is_list && args.n)
        rc = usage_error(cmd, "takes no lesson: \"%s\"", args.v[0]);
    else if (!is_list && args.n != 1)
        rc = usage_error(cmd, "give one lesson, e.g. `ol %s L7.2`", cmd);
    else if (json && field)
        rc = usage_error(cmd, "--json or --field, not both");
    if (rc != OL_PASS || parsed == OPTS_HELP) {
        sl_free(&args);
        free(cmd);
        return rc;
    }
    ol_ctx ctx;
    if (open_workspace(&ctx, workspace) != 0)
        rc = OL_USAGE;
    else if (is_list) {
        strlist ids = {0};
        lesson_ids(ctx.root, &ids);
        for (int i = 0; i < ids.n; i++) printf("%s\n", ids.v[i]);
        sl_free(&ids);
    } else if (is_new) {
        rc = scaffold_lesson(&ctx, args.v[0], &so);
    } else {
        lesson l;
        char *err = NULL;
        /* the stubs are what `stub` makes: they may be missing */
        unsigned flags = is_show ? 0 : LESSON_STUBS_MAY_BE_MISSING;
        char *id = resolve_lesson_id(&ctx, args.v[0]);
        if (!id || lesson_load_flags(ctx.root, id, flags, &l, &err) != 0) {
            if (err) ol_error("%s", err);
            free(err);
            free(id);
            rc = OL_USAGE;
        } else {
            rc = is_show ? show(&ctx, &l, json, field) : scaffold_stubs(&ctx, &l);
            lesson_free(&l);
            free(id);
        }
    }
    ctx_free(&ctx);
    sl_free(&args);
    free(cmd);
    return rc;
}
