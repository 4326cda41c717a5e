/* cache: build/ol grows with every change a student tests; keep it bounded.
 * Hits are touched, so a file's mtime says when it was last used, and
 * pruning removes the least recently used first. */
#ifndef OL_CACHE_H
#define OL_CACHE_H

#include <stdbool.h>
#include "workspace.h"

/* Marks a cached file as just used. */
void cache_touch(const char *path);
/* A cached product is trusted only while its seal holds: PATH.sum keeps
 * the SHA-256 of what was written. Whatever spoiled it (a disk, a killed
 * ol, an older ol), a product whose seal fails is made again, never used. */
int cache_seal(const char *path);
bool cache_intact(const char *path);

/* Removes the least recently used objects, archives, programs and results
 * until build/ol holds at most $OL_CACHE_MB megabytes (default 512); never
 * a file used in the last hour (a run in progress may need it). */
void cache_prune(ol_ctx *ctx);

#endif
