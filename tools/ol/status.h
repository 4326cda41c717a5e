/* status: the result of the student's last `ol check` of a lesson, kept in
 * build/ol/status/ID.json for `ol list` and `ol diff`. */
#ifndef OL_STATUS_H
#define OL_STATUS_H

#include <stdbool.h>
#include "workspace.h"

typedef struct {
    bool passed;
    double score; /* -1 when unknown */
} check_status;

int status_save(ol_ctx *ctx, const char *lesson_id, const check_status *st);
int status_load(ol_ctx *ctx, const char *lesson_id, check_status *st);

#endif
