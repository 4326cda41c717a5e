/* error.c: the runtime's error model (L0.1).
 *
 * One message per thread. tl_fail keeps the first message since the last
 * tl_clear_error, because the first failure is the cause and everything after
 * it is a consequence (an op given NULL returns NULL without a new message).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "internal.h"

static _Thread_local char message[1024];
static _Thread_local bool is_set;

const char *tl_error(void) { return is_set ? message : NULL; }

void tl_clear_error(void) {
    is_set = false;
    message[0] = '\0';
}

static void set_message(const char *fmt, va_list ap) {
    vsnprintf(message, sizeof message, fmt, ap);
    is_set = true;
}

void *tl_fail(const char *fmt, ...) {
    if (!is_set) {
        va_list ap;
        va_start(ap, fmt);
        set_message(fmt, ap);
        va_end(ap);
    }
    return NULL;
}

void tl_set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_message(fmt, ap);
    va_end(ap);
}
