/* jinja_context.c: a render's error (jinja_internal.h). One message per
 * render: the first failure is the cause; the calls that return false after
 * it only pass it up. */
#include <stdarg.h>
#include <stdio.h>

#include "jinja_internal.h"
#include "tinyllm/tensor.h"

jarena *jx_arena(jctx *x) { return x->arena; }

bool jx_fail(jctx *x, int line, const char *fmt, ...) {
    if (!x->failed) {
        char what[900];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        tl_fail("tl_jinja_render: line %d: %s", line, what);
    }
    x->failed = true;
    return false;
}
