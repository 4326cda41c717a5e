/* workspace: where the course is (the root) and where the student works
 * (the workspace: code in c/, ol's builds and caches in build/ol/). */
#ifndef OL_WORKSPACE_H
#define OL_WORKSPACE_H

#include <stdbool.h>
#include "hash.h"

typedef struct ol_ctx {
    char *root;        /* the course: $OL_ROOT, else the compiled-in TL_SOURCE_ROOT */
    char *ws;          /* --workspace, else $OL_WORKSPACE, else the current directory */
    char *student;     /* ws/c */
    char *cache;       /* ws/build/ol */
    char *cc;          /* $CC, else gcc */
    char *core_lib;    /* ROOT/build/lib/libtinyllm_core.a */
    char *testing_lib; /* ROOT/build/lib/libtinyllm_testing.a */
    int jobs;          /* how many compilers or test programs run at once */
    bool verbose;      /* print every command */
    char toolchain[HASH_HEX]; /* compiler, flags, headers: part of every cache key */
    char runtime[HASH_HEX];   /* the runtime libraries: part of every link's key */
    bool toolchain_ready;
    double run_budget; /* seconds test programs may still run (ol check's limit); 0: no limit */
    bool run_budget_spent;    /* a run was stopped, or not started, because it ran out */
} ol_ctx;

/* Resolves the root and the workspace (workspace_opt may be NULL). Prints
 * what is wrong and returns -1 when the root is not a course. */
int ctx_init(ol_ctx *ctx, const char *workspace_opt);
void ctx_free(ol_ctx *ctx);

/* The runtime libraries exist (else says to run make in the root), and so
 * does ctx_require_writable. */
int ctx_require_runtime(ol_ctx *ctx);

/* The workspace's build/ol can be created and written (else says how). */
int ctx_require_writable(ol_ctx *ctx);

/* A folder under the cache, created; caller frees. */
char *ctx_cache_dir(ol_ctx *ctx, const char *name);

/* A path as messages show it: relative to the workspace or the root when
 * under one of them, else as it is ("" for NULL). */
const char *shown_path(ol_ctx *ctx, const char *path);

#endif
