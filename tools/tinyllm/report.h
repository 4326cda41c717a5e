/* report.h: what a generate run measured, as a summary on stderr and as
 * the JSON of --json (the fields are listed in course/MS-L7/README.md). */
#ifndef TINYLLM_TOOL_REPORT_H
#define TINYLLM_TOOL_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "tinyllm/tokenizer.h"
#include "generator.h"
#include "reply.h"

typedef struct {
    const char *dir;
    int threads;
    double tokenize_seconds;
    double total_seconds;
    int64_t rss_before_load, rss_after_load;
} gen_report;

void gen_report_init(gen_report *r, const char *dir, int threads);
/* Reads the resident size right after the load. */
void gen_report_loaded(gen_report *r);
/* The summary: tokens, times, rates, memory; and, when interrupted, so. */
void gen_report_print(const gen_report *r, const generator *g, const reply_stats *st, FILE *out);
/* The JSON report to path (written to a new file beside it, then renamed
 * over it). -1 with an error. */
int gen_report_write(const gen_report *r, const generator *g, const reply_stats *st,
                     const char *path, const char *rendered, const int64_t *prompt, int64_t n,
                     const tl_tokenizer *tok);

#endif
