/* report: what `ol check` shows. report.c: the terminal, stage by stage as
 * they end, then the summary; report_json.c: Stryker's schema-2 JSON and
 * Gradescope's results.json; report_html.c: the JSON in Stryker's viewer. */
#ifndef OL_REPORT_H
#define OL_REPORT_H

#include "check.h"
#include "workspace.h"

/* A duration as a person reads it: "240 µs", "1.3 ms", "85 ms", "2.41 s". */
void duration_text(double seconds, char *buf, size_t size);
/* "ol check L7.1: <title> (rung R3)", before the stages. */
void report_header(const lesson *l);
/* A stage that just ended, with what made it fail (a check_progress: data is the ol_ctx). */
void report_stage(const check_report *r, int stage, void *ctx);
void report_summary(ol_ctx *ctx, const check_report *r);

int report_write_stryker(ol_ctx *ctx, const check_report *r, const char *path);
/* The same report as a cJSON object (the caller deletes it). */
struct cJSON *report_stryker_json(ol_ctx *ctx, const check_report *r);
/* A report's JSON text, as every report is written: valid UTF-8 whatever bytes the student's
 * files and names hold (cJSON copies a string's bytes as they are, so each ill-formed sequence
 * becomes U+FFFD here; outside strings the text is ASCII). Caller frees; NULL if out of memory. */
char *report_json_text(const struct cJSON *o, bool formatted);
/* report_html.c: that report in Stryker's own viewer (mutation-testing-
 * elements), inlined in one HTML file that opens offline. */
int report_write_html(ol_ctx *ctx, const check_report *r, const char *path);
/* Where that viewer's bundle is (the release's share/, else the course's
 * build/npm/report-viewer), or NULL when it is not installed (caller frees). */
char *report_viewer_path(ol_ctx *ctx);
int report_write_gradescope(ol_ctx *ctx, const check_report *r, const char *path);

#endif
