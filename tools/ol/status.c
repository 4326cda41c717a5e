#include "status.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

static char *status_path(ol_ctx *ctx, const char *id) {
    return xasprintf("%s/status/%s.json", ctx->cache, id);
}

int status_save(ol_ctx *ctx, const char *lesson_id, const check_status *st) {
    char *dir = ctx_cache_dir(ctx, "status");
    if (!dir) return -1;
    free(dir);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "lesson", lesson_id);
    cJSON_AddBoolToObject(o, "passed", st->passed);
    if (st->score >= 0) cJSON_AddNumberToObject(o, "score", st->score);
    cJSON_AddNumberToObject(o, "time", (double)time(NULL));
    char *text = cJSON_Print(o);
    char *path = status_path(ctx, lesson_id);
    int rc = write_file_atomic(path, text, strlen(text));
    free(path);
    free(text);
    cJSON_Delete(o);
    return rc;
}

int status_load(ol_ctx *ctx, const char *lesson_id, check_status *st) {
    char *path = status_path(ctx, lesson_id);
    char *text = read_file(path, NULL);
    free(path);
    if (!text) return -1;
    cJSON *o = cJSON_Parse(text);
    free(text);
    if (!o) return -1;
    st->passed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "passed"));
    const cJSON *score = cJSON_GetObjectItemCaseSensitive(o, "score");
    st->score = cJSON_IsNumber(score) ? score->valuedouble : -1;
    cJSON_Delete(o);
    return 0;
}
