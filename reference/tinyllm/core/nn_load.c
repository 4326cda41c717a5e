/* nn_load.c: tl_module_load_state_dict, copying a checkpoint's tensors into a
 * module's parameters by name (L0.4).
 *
 * All or nothing: every key is checked first, and the first copy happens only
 * when nothing is wrong, so a failed load leaves the module as it was. A
 * failed strict load reports every problem in one message,
 *   "load_state_dict: 2 missing keys: a.weight, b.bias; 1 unexpected key: c.weight"
 * because fixing a checkpoint one key per run is slow.
 *
 * A tensor registered under several names (a tied head) is loaded once,
 * from the first of its names the dict holds. Its later names may be absent
 * even in a strict load; when present they must have its shape, and their
 * values are ignored (the first name wins).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"
#include "tinyllm/nn.h"

/* Keys listed per kind before "and N more": the message (at most 1 KB, see
 * error.c) stays readable when a whole model's names are wrong (a missing
 * "model." prefix, say). */
#define MAX_LISTED 8
#define MAX_MISMATCHES 3

/* A growable message; on allocation failure it keeps what it has. */
typedef struct {
    char *text;
    size_t len, cap;
} msg_buf;

static void msg_add(msg_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void msg_add(msg_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0) return;
    if (b->len + (size_t)need + 1 > b->cap) {
        size_t cap = 2 * (b->len + (size_t)need + 1);
        char *grown = realloc(b->text, cap);
        if (!grown) return;
        b->text = grown;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->text + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)need;
}

/* Appends "; 2 missing keys: a, b" for the names flags marks; returns how
 * many it marks. */
static int list_keys(msg_buf *b, const char *kind, const tl_named_tensor *items, int count,
                      const bool *flags) {
    int n = 0;
    for (int i = 0; i < count; i++) n += flags[i];
    if (n == 0) return 0;
    msg_add(b, "%s%d %s key%s:", b->len ? "; " : "", n, kind, n == 1 ? "" : "s");
    int listed = 0;
    for (int i = 0; i < count && listed < MAX_LISTED; i++)
        if (flags[i])
            msg_add(b, "%s %s", listed++ ? "," : "", items[i].name ? items[i].name : "(NULL)");
    if (n > listed) msg_add(b, " and %d more", n - listed);
    return n;
}

/* The index of the first entry of sd named name, or -1. */
static int find_key(const tl_state_dict *sd, const char *name) {
    for (int i = 0; i < sd->count; i++)
        if (sd->items[i].name && strcmp(sd->items[i].name, name) == 0) return i;
    return -1;
}

/* Why the tensor src cannot fill the parameter dst named name, written into
 * why; "" when it can. */
static const char *mismatch(const char *name, const tl_tensor *dst, const tl_tensor *src,
                            char *why, size_t size) {
    char a[96], b[96];
    if (!src)
        snprintf(why, size, "%s is NULL in the state dict", name);
    else if (!tl_dtype_is_float(src->dtype))
        snprintf(why, size, "%s is %s in the checkpoint; a parameter needs a float dtype", name,
                 tl_dtype_name(src->dtype));
    else if (!tl_same_shape(dst, src))
        snprintf(why, size, "size mismatch for %s: the checkpoint has shape %s, the module %s",
                 name, tl_shape_str(src, a, sizeof a), tl_shape_str(dst, b, sizeof b));
    else
        why[0] = '\0';
    return why;
}

int tl_load_plan(tl_module *m, const tl_state_dict *sd, bool strict, const char *fn,
                 tl_state_dict *mine, int **source_out) {
    *source_out = NULL;
    *mine = (tl_state_dict){NULL, 0};
    if (!m || !sd || (sd->count > 0 && !sd->items)) {
        return tl_propagate_status("%s: %s is NULL", fn, m ? "the state dict" : "the module");
    }
    if (tl_module_slots(m, mine) != 0) return -1;

    int *source = malloc(((size_t)mine->count + 1) * sizeof *source);  /* sd index or -1 */
    bool *missing = calloc((size_t)mine->count + 1, sizeof *missing);
    bool *used = calloc((size_t)sd->count + 1, sizeof *used);
    msg_buf problems = {NULL, 0, 0};
    int n_problems = 0, rc = -1;
    if (!source || !missing || !used) {
        tl_fail("%s: out of memory", fn);
        goto done;
    }

    /* Match names; a tensor's first slot takes its values from the first of
     * its names present (a later slot points back with source = -1). */
    for (int i = 0; i < mine->count; i++) {
        int k = find_key(sd, mine->items[i].name);
        source[i] = -1;
        if (k >= 0) used[k] = true;
        if (!mine->items[i].shared) {
            source[i] = k;
            missing[i] = k < 0 && strict;
            continue;
        }
        int first = 0;
        while (mine->items[first].tensor != mine->items[i].tensor) first++;
        if (source[first] < 0 && k >= 0) source[first] = k;
    }

    if (strict) {
        n_problems += list_keys(&problems, "missing", mine->items, mine->count, missing);
        bool *unexpected = used;   /* the same flags, turned round */
        for (int k = 0; k < sd->count; k++) unexpected[k] = !used[k];
        n_problems += list_keys(&problems, "unexpected", sd->items, sd->count, unexpected);
    }
    /* Every present key must fit, including the ignored repeats of a tie. */
    int n_mismatches = 0;
    for (int i = 0; i < mine->count; i++) {
        int k = find_key(sd, mine->items[i].name);
        char why[512];
        if (k < 0 || !*mismatch(mine->items[i].name, mine->items[i].tensor, sd->items[k].tensor,
                                why, sizeof why))
            continue;
        if (n_mismatches++ < MAX_MISMATCHES)
            msg_add(&problems, "%s%s", problems.len ? "; " : "", why);
    }
    if (n_mismatches > MAX_MISMATCHES)
        msg_add(&problems, "; and %d more tensors that do not fit", n_mismatches - MAX_MISMATCHES);
    n_problems += n_mismatches;
    if (n_problems > 0) {
        tl_fail("%s: %s; nothing was loaded", fn,
                problems.text ? problems.text : "the checkpoint does not fit the module");
        goto done;
    }
    rc = 0;
done:
    free(problems.text);
    free(used);
    free(missing);
    if (rc == 0) {
        *source_out = source;
    } else {
        free(source);
        tl_state_dict_free(mine);
    }
    return rc;
}

int tl_module_load_state_dict(tl_module *m, const tl_state_dict *sd, bool strict) {
    tl_state_dict mine;
    int *source;
    if (tl_load_plan(m, sd, strict, "load_state_dict", &mine, &source) != 0) return -1;
    int rc = 0;
    for (int i = 0; i < mine.count && rc == 0; i++) {
        if (source[i] < 0) continue;
        tl_tensor *dst = mine.items[i].tensor, *src = sd->items[source[i]].tensor;
        if (src == dst) continue;   /* loading a module's own state dict */
        if (tl_copy_into(dst, src) != 0)
            rc = tl_fail_status("load_state_dict: copying %s: %s", mine.items[i].name,
                                tl_error() ? tl_error() : "copy failed");
    }
    free(source);
    tl_state_dict_free(&mine);
    return rc;
}
