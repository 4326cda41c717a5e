/* cdecl: the functions a C header declares and a C file defines, read from
 * the text the way a contract is written (comments, preprocessor lines,
 * structs and typedefs skipped): enough for `ol lesson stub` to write a
 * stub from a contract's prototypes. Not a C parser: a prototype it cannot
 * read is an error naming its line, never a wrong stub. */
#ifndef OL_CDECL_H
#define OL_CDECL_H

#include <stdbool.h>
#include "util.h"

typedef enum {
    RET_VOID,     /* nothing to return */
    RET_POINTER,  /* return tl_fail(...): NULL with the message */
    RET_SIGNED,   /* int, int64_t, long ...: -1 */
    RET_UNSIGNED, /* size_t, uint32_t ...: 0 */
    RET_BOOL,     /* false */
    RET_FLOAT,    /* float, double: NAN */
    RET_OTHER     /* a struct or enum by value: (T){0} */
} ret_kind;

typedef struct {
    char *name;      /* the function */
    char *ret;       /* the return type as written ("tl_tensor *", "int") */
    ret_kind kind;   /* what a failure returns */
    char *signature; /* the prototype without its ';', one line of whitespace */
    strlist params;  /* the parameters' names (none for "(void)") */
    int line;        /* where the prototype starts */
} c_function;

/* The prototypes of text, in order (inline functions defined in the header
 * and function pointer typedefs are skipped). -1 with *err ("LINE: why")
 * on a prototype that cannot be read (an unnamed parameter, say). */
int cdecl_prototypes(const char *text, c_function **out, int *n, char **err);
/* The names of the functions text defines (a body at file level). */
void cdecl_definitions(const char *text, strlist *names);

/* A function text defines, and its lines: from its name to its last brace. */
typedef struct {
    char *name;
    int first, last;
} c_span;
/* Every function text defines, in order; returns how many (*out: free with cdecl_spans_free). */
int cdecl_spans(const char *text, c_span **out);
void cdecl_spans_free(c_span *s, int n);
/* The function holding line, or NULL. */
const char *cdecl_function_at(const c_span *s, int n, int line);
void cdecl_free(c_function *f, int n);

#endif
