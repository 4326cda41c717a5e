/* build: compiles and links through the C compiler, with every product
 * cached under build/ol by the SHA-256 of what made it (sources, headers,
 * flags, the runtime libraries), so an unchanged rerun compiles nothing. */
#ifndef OL_BUILD_H
#define OL_BUILD_H

#include <stdbool.h>
#include "hash.h"
#include "util.h"
#include "workspace.h"

/* One C file compiled to an object. */
typedef struct unit {
    char *src;      /* as given to the compiler: relative to cwd, or absolute */
    char *cwd;      /* where the compiler runs; NULL: the course root */
    strlist flags;  /* extra compiler flags */
    strlist deps;   /* other files the object depends on (hashed into its key) */
    bool coverage;  /* -O0 --coverage, for the baseline's line counts */
    bool sanitize;  /* -O1 with AddressSanitizer and UBSan, for `ol tests --asan` */
    bool test;      /* a test wrapper made by testgen */
    bool student;   /* the student's file (or a wrapper of one): compiled in a sandbox that reads
                     * only the system, the contracts, the student's c/ and the wrapper */
    /* results */
    char key[HASH_HEX];
    char *obj;      /* the cached object */
    char *log;      /* what the compiler said ("" when nothing) */
    char *includes; /* build_include_trees: what the preprocessor opened */
    bool ok, cached;
} unit;

/* Something a link consumes: an object or an archive, and its cache key. */
typedef struct {
    char *path;
    char key[HASH_HEX];
} link_input;

/* One test program. */
typedef struct link_spec {
    link_input *inputs; /* in link order */
    int ninputs;
    strlist ldflags;    /* the lessons' "link" flags */
    strlist wraps;      /* symbols redirected with -Wl,--wrap (the canary) */
    bool coverage;
    bool sanitize;      /* linked with AddressSanitizer and UBSan */
    /* results */
    char key[HASH_HEX];
    char *bin, *log;
    bool ok, cached;
} link_spec;

/* The toolchain's hash (compiler, flags, runtime libraries, headers). */
int build_prepare(ol_ctx *ctx);

/* Compiles every unit not already cached (or whose cached object fails its
 * seal), ctx->jobs at a time, each within $OL_COMPILE_TIMEOUT seconds (120).
 * Returns how many failed (their log says why), or -1 when interrupted. */
int build_units(ol_ctx *ctx, unit *u, int n);
void unit_free(unit *u);

/* What the preprocessor finds for each unit, in u->includes, one record a
 * line: "D<TAB>DEPTH<TAB>PATH" for every file it opens (as `cc -H` lists
 * them: depth 1 is what the source includes itself), "S<TAB>DIR" for each
 * folder of the compiler's <...> search path, "T<TAB>NAME" for each test
 * the preprocessed text declares (what START_TEST(NAME) expands to), and
 * "A" when it holds an assembler .incbin (a file copied into the program),
 * "X<TAB>asm|section<TAB>FILE<TAB>LINE" where its text hands the assembler
 * text of its own (FILE and LINE from the line markers), "E<TAB>FILE<TAB>LINE
 * <TAB>NAME" where the compiler's sandbox kept an #include out, "M<TAB>N" when
 * it opened more than N files (the rest is not listed);
 * "F" when the preprocessor failed (the records are then partial). The
 * preprocessor, not a scan of the text, decides: macros, #if 0, trigraphs
 * and line continuations are as the compiler sees them.
 * Cached by the unit's key. Returns how many failed (compiling them says
 * why), -1 when interrupted. */
int build_include_trees(ol_ctx *ctx, unit *u, int n);

/* An archive of the units' objects (all must be ok), cached by their keys. */
int build_archive(ol_ctx *ctx, unit *u, int n, link_input *out);

void link_add(link_spec *l, const link_input *in);
void link_add_unit(link_spec *l, const unit *u);
/* Links every spec not already cached. Returns how many failed, -1 when interrupted. */
int build_links(ol_ctx *ctx, link_spec *l, int n);
void link_free(link_spec *l);
void link_input_free(link_input *in);

/* Prints what the compiler said on stderr: paths relative to the workspace
 * or the root, without the lines naming testgen's generated wrappers. */
void print_compiler_log(ol_ctx *ctx, const char *log);

/* The files a test program's link reads (ld --trace on a program of main
 * only, with the lessons' `ldflags`): objects, archives, shared libraries,
 * linker scripts, as real paths. 0, or -1 (said why). */
int build_link_inputs(ol_ctx *ctx, const strlist *ldflags, strlist *out);

/* Global functions an object defines (nm), for the canary. */
int defined_functions(ol_ctx *ctx, const char *obj, strlist *out);

#endif
