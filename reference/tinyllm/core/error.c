/* error.c: the runtime's error model (L0.1; the rule is in tensor.h).
 *
 * One message per thread. A failure sets it (tl_fail, tl_fail_status), so
 * it always describes the failure that just happened, even when an earlier
 * one was handled and never cleared. A NULL input keeps it (tl_propagate,
 * tl_propagate_status): that NULL came from the call that failed, whose
 * message is the cause; only when no message is set does the NULL get one.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define MESSAGE_SIZE 1024

static _Thread_local char message[MESSAGE_SIZE];
static _Thread_local bool is_set;

const char *tl_error(void) { return is_set ? message : NULL; }

void tl_clear_error(void) {
    is_set = false;
    message[0] = '\0';
}

/* Formats into scratch first, so an argument may be tl_error() itself (a
 * caller adding context: tl_fail("load: copying %s: %s", name, tl_error())). */
static void set_message(const char *fmt, va_list ap) {
    char scratch[MESSAGE_SIZE];
    vsnprintf(scratch, sizeof scratch, fmt, ap);
    memcpy(message, scratch, sizeof message);
    is_set = true;
}

void *tl_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_message(fmt, ap);
    va_end(ap);
    return NULL;
}

int tl_fail_status(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_message(fmt, ap);
    va_end(ap);
    return -1;
}

void *tl_propagate(const char *fmt, ...) {
    if (!is_set) {
        va_list ap;
        va_start(ap, fmt);
        set_message(fmt, ap);
        va_end(ap);
    }
    return NULL;
}

int tl_propagate_status(const char *fmt, ...) {
    if (!is_set) {
        va_list ap;
        va_start(ap, fmt);
        set_message(fmt, ap);
        va_end(ap);
    }
    return -1;
}

void tl_set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_message(fmt, ap);
    va_end(ap);
}

/* Rule 2 for an op's n tensor inputs: the first NULL one gets a message only
 * when none is set (the cause is kept). */
bool tl_inputs_ok(const char *op, int n, ...) {
    va_list ap;
    va_start(ap, n);
    int missing = 0;
    for (int k = 1; k <= n; k++) {
        const tl_tensor *t = va_arg(ap, const tl_tensor *);
        if (!t && !missing) missing = k;
    }
    va_end(ap);
    if (missing) tl_propagate("%s: input %d is NULL", op, missing);   /* keeps the cause */
    return missing == 0;
}
