/* report_html: `ol check --html FILE`, the --json report shown by Stryker's
 * own viewer, mutation-testing-elements (npm, pinned by
 * tools/ol/report-viewer/package-lock.json; `make report-viewer` installs
 * it into build/npm/report-viewer, and a student release carries its
 * bundle in share/). The bundle and the report are inlined in one file, so
 * it opens offline, from anywhere. As with --json, the source shown is the
 * student's own until the lesson passes (and in a student release). */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* Where the viewer's browser bundle is, under the course root. */
static const char *const VIEWER_PATHS[] = {
    "share/mutation-testing-elements/mutation-test-elements.js",
    "build/npm/report-viewer/node_modules/mutation-testing-elements/dist/mutation-test-elements.js",
};

char *report_viewer_path(ol_ctx *ctx) {
    for (size_t i = 0; i < sizeof VIEWER_PATHS / sizeof *VIEWER_PATHS; i++) {
        char *path = path_join(ctx->root, VIEWER_PATHS[i]);
        if (is_file(path)) return path;
        free(path);
    }
    return NULL;
}

static char *read_viewer(ol_ctx *ctx) {
    char *path = report_viewer_path(ctx);
    char *text = path ? read_file(path, NULL) : NULL;
    free(path);
    if (text) return text;
    ol_error(
        "the HTML report's viewer (mutation-testing-elements) is not installed in %s: run "
        "`make -C %s report-viewer` (npm ci, as tools/ol/report-viewer/package-lock.json pins)",
        ctx->root, ctx->root);
    return NULL;
}

/* An inlined script ends at the first "</script", whatever its case. */
static bool closes_script(const char *text) {
    for (const char *p = strstr(text, "</"); p; p = strstr(p + 2, "</")) {
        const char *tag = "script";
        size_t k = 0;
        while (tag[k] && tolower((unsigned char)p[2 + k]) == tag[k]) k++;
        if (!tag[k]) return true;
    }
    return false;
}

/* JSON inside a <script>: every '<' (found only in strings) as \u003c. */
static void add_json(strbuf *b, const char *json) {
    for (const char *p = json; *p; p++) {
        if (*p == '<')
            sb_add(b, "\\u003c");
        else
            sb_addn(b, p, 1);
    }
}

/* Text for an HTML attribute. */
static void add_attr(strbuf *b, const char *text) {
    for (const char *p = text; *p; p++) {
        switch (*p) {
        case '&': sb_add(b, "&amp;"); break;
        case '"': sb_add(b, "&quot;"); break;
        case '<': sb_add(b, "&lt;"); break;
        default: sb_addn(b, p, 1);
        }
    }
}

int report_write_html(ol_ctx *ctx, const check_report *r, const char *path) {
    char *viewer = read_viewer(ctx);
    if (!viewer) return -1;
    if (closes_script(viewer)) {
        ol_error(
            "the viewer's bundle holds \"</script\" and cannot be inlined: pin another version");
        free(viewer);
        return -1;
    }
    cJSON *report = report_stryker_json(ctx, r);
    char *json = report_json_text(report, false);
    cJSON_Delete(report);
    char *title = xasprintf("ol check %s (rung %s): %s", r->l->id, r->l->rung,
                            r->harness_broken ? "the harness is broken, no grade"
                            : r->passed       ? "PASS"
                                              : "FAIL");
    strbuf b = {0};
    sb_add(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
    add_attr(&b, title);
    sb_add(&b, "</title>\n</head>\n<body>\n<mutation-test-report-app title-postfix=\"");
    add_attr(&b, title);
    sb_add(&b, "\">This report needs a browser with JavaScript and custom "
               "elements.</mutation-test-report-app>\n"
               "<script>\ndocument.querySelector('mutation-test-report-app').report = ");
    add_json(&b, json);
    sb_add(&b, ";\n</script>\n<script>\n");
    sb_add(&b, viewer);
    sb_add(&b, "\n</script>\n</body>\n</html>\n");
    int rc = write_file_atomic(path, b.s, b.len);
    if (rc != 0) ol_error("cannot write %s", path);
    sb_free(&b);
    free(title);
    free(json);
    free(viewer);
    return rc;
}
