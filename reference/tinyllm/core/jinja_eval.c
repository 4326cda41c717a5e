/* jinja_eval.c: renders a parsed template (chat_template.h), with Jinja2's
 * semantics for what chat templates rely on:
 *  - a name that is not set is undefined: it prints as "", is false, iterates
 *    as nothing, fails "is defined"; taking an attribute of it is an error;
 *  - a for loop has its own scope (a set inside does not leak out: templates
 *    use namespace() for that) and the loop variable (index, index0, first,
 *    last, length, revindex, revindex0, previtem, nextitem, cycle);
 *  - x.name is the method of that name when x has one (dict.items), else the
 *    item; x["name"] is the item;
 *  - a or b / a and b return an operand, as in Python; / is true division.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_internal.h"
#include "tinyllm/tensor.h"

enum { MAX_DEPTH = 200 };

typedef enum { FLOW_OK, FLOW_BREAK, FLOW_CONTINUE, FLOW_ERROR } flow;

static jframe *new_frame(jctx *x, jframe *parent) {
    jframe *f = ja_alloc(x->arena, sizeof *f);
    if (f) f->parent = parent;
    return f;
}

static void set_var(jctx *x, jframe *f, const char *name, jv value) {
    jd_set(x->arena, &f->vars, jv_cstring(name), value);
}

static const char *GLOBAL_FUNCTIONS[] = {"raise_exception", "strftime_now", "namespace",
                                         "range", "dict", NULL};

static jv lookup(jctx *x, jframe *f, const char *name) {
    for (; f; f = f->parent) {
        jv *v = jd_get_str(&f->vars, name);
        if (v) return *v;
    }
    (void)x;
    for (size_t i = 0; GLOBAL_FUNCTIONS[i]; i++)
        if (!strcmp(GLOBAL_FUNCTIONS[i], name))
            return (jv){.kind = JV_BUILTIN, .u.fn = {GLOBAL_FUNCTIONS[i], NULL}};
    return jv_undefined(name);
}

static bool eval(jctx *x, jframe *f, const jnode *n, jv *out);
static flow render(jctx *x, jframe *f, const jnode *body);

/* ---- strings by code point ------------------------------------------------------ */

static size_t utf8_count(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* The byte offset of code point k. */
static size_t utf8_offset(const char *s, size_t n, size_t k) {
    size_t i = 0, c = 0;
    while (i < n && c < k) {
        i++;
        while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80) i++;
        c++;
    }
    return i;
}

/* ---- items, attributes, slices ------------------------------------------------------ */

static bool item(jctx *x, jv obj, jv key, int line, jv *out) {
    *out = jv_undefined("item");
    if (obj.kind == JV_DICT) {
        jv *v = jd_get(obj.u.dict, key);
        if (v) *out = *v;
        return true;
    }
    if (obj.kind == JV_LIST || obj.kind == JV_STRING) {
        /* jinja2 tries the attribute of that name, then gives undefined (a
         * message's content may be a string or a list of parts {type: ...}) */
        if (key.kind != JV_INT && key.kind != JV_BOOL) {
            if (key.kind == JV_STRING && jb_has_method(obj, key.u.str.s))
                *out = (jv){.kind = JV_METHOD, .u.fn = {key.u.str.s, NULL}};
            return true;
        }
        int64_t i = key.kind == JV_INT ? key.u.i : key.u.b;
        int64_t n = obj.kind == JV_LIST ? (int64_t)obj.u.list->count
                                        : (int64_t)utf8_count(obj.u.str.s, obj.u.str.len);
        if (i < 0) i += n;
        if (i < 0 || i >= n) return true;   /* Jinja gives undefined, not an IndexError */
        if (obj.kind == JV_LIST) {
            *out = obj.u.list->items[i];
        } else {
            size_t a = utf8_offset(obj.u.str.s, obj.u.str.len, (size_t)i);
            size_t b = utf8_offset(obj.u.str.s, obj.u.str.len, (size_t)i + 1);
            *out = jv_string(obj.u.str.s + a, b - a);
        }
        return true;
    }
    if (obj.kind == JV_UNDEFINED)
        return jx_fail(x, line, "'%s' is undefined (it has no items)",
                       obj.undefined_name ? obj.undefined_name : "value");
    return true;   /* none['x'], 3[0]: undefined, as jinja2 */
}

static bool attr(jctx *x, jv obj, const char *name, int line, jv *out) {
    if (obj.kind == JV_UNDEFINED)
        return jx_fail(x, line, "'%s' is undefined, so it has no attribute '%s'",
                       obj.undefined_name ? obj.undefined_name : "value", name);
    if (jb_has_method(obj, name)) {
        jv *self = ja_alloc(x->arena, sizeof *self);
        if (!self) return false;
        *self = obj;
        *out = (jv){.kind = JV_METHOD, .u.fn = {name, self}};
        return true;
    }
    if (obj.kind == JV_DICT) {
        jv *v = jd_get_str(obj.u.dict, name);
        *out = v ? *v : jv_undefined(name);
        return true;
    }
    *out = jv_undefined(name);
    return true;
}

static bool slice_index(jctx *x, jframe *f, const jnode *n, int64_t fallback, int64_t *out) {
    if (!n) {
        *out = fallback;
        return true;
    }
    jv v;
    if (!eval(x, f, n, &v)) return false;
    if (v.kind == JV_NONE) {
        *out = fallback;
        return true;
    }
    if (v.kind != JV_INT) return jx_fail(x, n->line, "slice indices must be integers");
    *out = v.u.i;
    return true;
}

static bool slice(jctx *x, jframe *f, const jnode *n, jv *out) {
    jv obj;
    if (!eval(x, f, n->a, &obj)) return false;
    if (obj.kind != JV_LIST && obj.kind != JV_STRING)
        return jx_fail(x, n->line, "a %s cannot be sliced", jv_type_name(obj));
    int64_t len = obj.kind == JV_LIST ? (int64_t)obj.u.list->count
                                      : (int64_t)utf8_count(obj.u.str.s, obj.u.str.len);
    int64_t step;
    if (!slice_index(x, f, n->d, 1, &step)) return false;
    if (step == 0) return jx_fail(x, n->line, "slice step cannot be zero");
    int64_t start, stop;
    if (!slice_index(x, f, n->b, step > 0 ? 0 : len - 1, &start) ||
        !slice_index(x, f, n->c, step > 0 ? len : -len - 1, &stop))
        return false;
    /* Python's PySlice_AdjustIndices */
    if (n->b) {
        if (start < 0) start += len;
        if (start < 0) start = step < 0 ? -1 : 0;
        if (start >= len) start = step < 0 ? len - 1 : len;
    }
    if (n->c) {
        if (stop < 0) stop += len;
        if (stop < 0) stop = step < 0 ? -1 : 0;
        if (stop >= len) stop = step < 0 ? len - 1 : len;
    } else if (step < 0) {
        stop = -1;
    }
    jv list = jv_new_list(x->arena);
    jstr text = {.arena = x->arena};
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        if (obj.kind == JV_LIST) {
            jl_push(x->arena, list.u.list, obj.u.list->items[i]);
        } else {
            size_t a = utf8_offset(obj.u.str.s, obj.u.str.len, (size_t)i);
            size_t b = utf8_offset(obj.u.str.s, obj.u.str.len, (size_t)i + 1);
            js_append(&text, obj.u.str.s + a, b - a);
        }
    }
    *out = obj.kind == JV_LIST ? list : jv_string(text.data ? text.data : "", text.len);
    return true;
}

/* ---- calls ------------------------------------------------------------------------------ */

static bool iterable(jctx *x, jv v, int line, jlist **out);

/* Evaluates a call's arguments into positional and keyword arrays, with one
 * slot to spare (a {% call %} block's caller). *list adds the items of a
 * list, a dict's keys or a string's characters as positional arguments, and
 * **dict a dict's entries as keyword ones, as Python does. */
static bool call_args(jctx *x, jframe *f, const jnode *n, jv **args, size_t *nargs, jv **names,
                      jv **values, size_t *nkw) {
    jlist *spread = NULL;
    const jdict *spread_kw = NULL;
    size_t slots = n->count + 1;
    for (size_t i = 0; i < n->count; i++) {
        const jnode *k = n->kids[i];
        if (k->kind != JN_SPLAT) continue;
        jv v;
        if (!eval(x, f, k->a, &v)) return false;
        if (!strcmp(k->name, "*")) {
            if (!iterable(x, v, k->line, &spread)) return false;
            slots += spread->count;
        } else if (v.kind == JV_DICT && !v.u.dict->is_namespace) {
            for (size_t e = 0; e < v.u.dict->count; e++)
                if (v.u.dict->keys[e].kind != JV_STRING)
                    return jx_fail(x, k->line, "**dict needs string keys (names); a key is a %s",
                                   jv_type_name(v.u.dict->keys[e]));
            spread_kw = v.u.dict;
            slots += spread_kw->count;
        } else if (v.kind == JV_UNDEFINED) {   /* jinja2: no keys to read */
            return jx_fail(x, k->line, "'%s' is undefined, so ** cannot spread it",
                           v.undefined_name ? v.undefined_name : "value");
        } else {
            return jx_fail(x, k->line, "the value after ** must be a dict, not a %s",
                           jv_type_name(v));
        }
    }
    *args = ja_alloc(x->arena, slots * sizeof **args);
    *names = ja_alloc(x->arena, slots * sizeof **names);
    *values = ja_alloc(x->arena, slots * sizeof **values);
    if (!*args || !*names || !*values) return false;
    *nargs = *nkw = 0;
    for (size_t i = 0; i < n->count; i++) {
        const jnode *k = n->kids[i];
        if (k->kind == JN_SPLAT) {
            bool positional = !strcmp(k->name, "*");
            for (size_t e = 0; positional && e < spread->count; e++)
                (*args)[(*nargs)++] = spread->items[e];
            for (size_t e = 0; !positional && spread_kw && e < spread_kw->count; e++) {
                (*names)[*nkw] = spread_kw->keys[e];
                (*values)[(*nkw)++] = spread_kw->values[e];
            }
        } else if (k->kind == JN_KWARG) {
            (*names)[*nkw] = jv_cstring(k->name);
            if (!eval(x, f, k->a, &(*values)[(*nkw)++])) return false;
        } else {
            if (*nkw) return jx_fail(x, k->line, "a positional argument follows a keyword one");
            if (!eval(x, f, k, &(*args)[(*nargs)++])) return false;
        }
    }
    return true;
}

/* How a tree first uses a name, in jinja2's visiting order: 1 read, -1
 * bound (a target of set or for, a macro's parameter, also inside a tuple
 * of targets), 0 not at all. `binds`: n is such a target. */
static int first_use(const jnode *n, const char *name, bool binds) {
    if (!n) return 0;
    if (n->kind == JN_NAME && !strcmp(n->name, name)) return binds ? -1 : 1;
    bool kids_bind = (binds && n->kind == JN_TUPLE) || n->kind == JN_SET ||
                     n->kind == JN_SET_BLOCK || n->kind == JN_FOR || n->kind == JN_MACRO;
    int use = 0;
    for (size_t i = 0; i < n->count && !use; i++) {
        const jnode *k = n->kids[i];
        use = first_use(k, name, kids_bind && (k->kind == JN_NAME || k->kind == JN_TUPLE));
        if (!use && n->kind == JN_MACRO) use = first_use(k->a, name, false);   /* a default */
    }
    const jnode *parts[4] = {n->a, n->b, n->c, n->d};
    for (int i = 0; i < 4 && !use && !binds; i++) use = first_use(parts[i], name, false);
    return use;
}

/* Whether a macro's body reads a name that no parameter and nothing before
 * binds: how jinja2 decides that a macro takes caller, varargs or kwargs. */
static bool mentions(const jnode *def, const char *name) {
    for (size_t i = 0; i < def->count; i++)
        if (!strcmp(def->kids[i]->name, name)) return false;
    return first_use(def->b, name, false) > 0;
}

/* A macro call as jinja2's Macro makes it: positional arguments fill the
 * parameters in order, keywords the rest; a body that names varargs takes
 * extra positional arguments (a tuple), one that names kwargs the keywords
 * no parameter took (a dict), and one that names caller a {% call %}
 * block's caller. Anything else left over is refused, as jinja2 does. */
bool jx_call_macro(jctx *x, jv macro, const jv *args, size_t n, const jv *kw_names,
                   const jv *kw_values, size_t nkw, int line, jv *out) {
    const jnode *def = macro.u.macro.node;
    bool takes_varargs = mentions(def, "varargs"), takes_kwargs = mentions(def, "kwargs");
    if (n > def->count && !takes_varargs)
        return jx_fail(x, line, "macro '%s' takes at most %zu arguments (%zu given)", def->name,
                       def->count, n);
    if (x->depth >= MAX_DEPTH)
        return jx_fail(x, line, "macro calls nest deeper than %d (a runaway recursion?)",
                       MAX_DEPTH);
    jframe *f = new_frame(x, macro.u.macro.scope);
    jv varargs = jv_new_list(x->arena), kwargs = jv_new_dict(x->arena);
    if (!f || !varargs.u.list || !kwargs.u.dict) return false;
    varargs.u.list->is_tuple = true;
    for (size_t i = def->count; i < n; i++) jl_push(x->arena, varargs.u.list, args[i]);
    for (size_t i = 0; i < def->count; i++) {
        const jnode *param = def->kids[i];
        jv v = jv_undefined(param->name);
        bool given = i < n;
        if (given) v = args[i];
        for (size_t k = 0; k < nkw && !given; k++)
            if (!strcmp(kw_names[k].u.str.s, param->name)) {
                v = kw_values[k];
                given = true;
            }
        if (!given && param->a && !eval(x, f, param->a, &v)) return false;
        set_var(x, f, param->name, v);
    }
    for (size_t k = 0; k < nkw; k++) {
        const char *name = kw_names[k].u.str.s;
        bool taken = false;   /* by a parameter no positional argument filled */
        for (size_t i = n; i < def->count; i++) taken |= !strcmp(name, def->kids[i]->name);
        if (taken) continue;
        /* A {% call %} block's caller, which jinja2 passes only to a macro
         * whose body names it. */
        if (!strcmp(name, "caller") && mentions(def, "caller")) {
            set_var(x, f, "caller", kw_values[k]);
        } else if (takes_kwargs) {
            jd_set(x->arena, kwargs.u.dict, kw_names[k], kw_values[k]);
        } else if (!strcmp(name, "caller")) {
            return jx_fail(x, line, "macro '%s' never calls caller(), so a {%% call %%} "
                           "block gives it nothing to fill", def->name);
        } else {
            bool positional = false;
            for (size_t i = 0; i < n && i < def->count; i++)
                positional |= !strcmp(name, def->kids[i]->name);
            return jx_fail(x, line, positional ? "macro '%s' got '%s' by position and by name"
                                               : "macro '%s' has no parameter '%s'",
                           def->name, name);
        }
    }
    if (takes_varargs) set_var(x, f, "varargs", varargs);
    if (takes_kwargs) set_var(x, f, "kwargs", kwargs);
    jstr body = {.arena = x->arena}, *saved = x->out;
    x->out = &body;
    x->depth++;
    flow fl = render(x, f, def->b);
    x->depth--;
    x->out = saved;
    if (fl == FLOW_ERROR) return false;
    *out = jv_string(body.data ? body.data : "", body.len);
    return true;
}

/* A call, with a {% call %} block's caller as one more keyword (or none). */
static bool call_with(jctx *x, jframe *f, const jnode *n, const jv *caller, jv *out) {
    jv fn;
    if (!eval(x, f, n->a, &fn)) return false;
    jv *args, *names, *values;
    size_t nargs, nkw;
    if (!call_args(x, f, n, &args, &nargs, &names, &values, &nkw)) return false;
    if (caller) {   /* call_args leaves room for one more */
        if (fn.kind != JV_MACRO && fn.kind != JV_UNDEFINED)
            return jx_fail(x, n->line, "{%% call %%} calls a %s; it takes a macro",
                           jv_type_name(fn));
        names[nkw] = jv_cstring("caller");
        values[nkw++] = *caller;
    }
    if (fn.kind == JV_MACRO)
        return jx_call_macro(x, fn, args, nargs, names, values, nkw, n->line, out);
    if (fn.kind == JV_BUILTIN || fn.kind == JV_METHOD)
        return jb_call(x, fn, args, nargs, names, values, nkw, n->line, out);
    if (fn.kind == JV_UNDEFINED)
        return jx_fail(x, n->line, "'%s' is undefined, so it cannot be called",
                       fn.undefined_name ? fn.undefined_name : "value");
    return jx_fail(x, n->line, "a %s is not callable", jv_type_name(fn));
}

static bool call(jctx *x, jframe *f, const jnode *n, jv *out) {
    return call_with(x, f, n, NULL, out);
}

/* ---- operators ---------------------------------------------------------------------------- */

static bool number(jv v) { return v.kind == JV_INT || v.kind == JV_FLOAT || v.kind == JV_BOOL; }
static double dbl(jv v) {
    return v.kind == JV_FLOAT ? v.u.f : v.kind == JV_INT ? (double)v.u.i : (double)v.u.b;
}
static int64_t integer(jv v) { return v.kind == JV_INT ? v.u.i : v.u.b; }

static bool repeat(jctx *x, jv seq, int64_t times, jv *out) {
    if (times > 1000000)
        return jx_fail(x, 0, "a repetition of %lld is too large", (long long)times);
    if (seq.kind == JV_STRING) {
        jstr s = {.arena = x->arena};
        for (int64_t i = 0; i < times; i++) js_append(&s, seq.u.str.s, seq.u.str.len);
        *out = jv_string(s.data ? s.data : "", s.len);
    } else {
        *out = jv_new_list(x->arena);
        for (int64_t i = 0; i < times; i++)
            for (size_t k = 0; k < seq.u.list->count; k++)
                jl_push(x->arena, out->u.list, seq.u.list->items[k]);
    }
    return true;
}

/* Python's integers have no bound; ours are 64 bits: a result past them is an
 * error, never a wrapped number. */
static bool int_overflow(jctx *x, int line, const char *op) {
    return jx_fail(x, line, "integer overflow in '%s': the result is past the 64-bit integers "
                   "a template may use here (Python's have no bound)", op);
}

/* base ** exp for exp >= 0, by squaring; false on overflow. */
static bool int_power(int64_t base, int64_t exp, int64_t *out) {
    int64_t r = 1;
    while (exp > 0) {
        if ((exp & 1) && __builtin_mul_overflow(r, base, &r)) return false;
        exp >>= 1;
        if (exp > 0 && __builtin_mul_overflow(base, base, &base)) return false;
    }
    *out = r;
    return true;
}

static bool binary_op(jctx *x, const char *op, jv a, jv b, int line, jv *out) {
    bool ints = (a.kind == JV_INT || a.kind == JV_BOOL) && (b.kind == JV_INT || b.kind == JV_BOOL);
    if (!strcmp(op, "+")) {
        if (number(a) && number(b)) {
            int64_t r;
            if (ints && __builtin_add_overflow(integer(a), integer(b), &r))
                return int_overflow(x, line, op);
            *out = ints ? jv_int(r) : jv_float(dbl(a) + dbl(b));
            return true;
        }
        if (a.kind == JV_STRING && b.kind == JV_STRING) {
            jstr s = {.arena = x->arena};
            js_append(&s, a.u.str.s, a.u.str.len);
            js_append(&s, b.u.str.s, b.u.str.len);
            *out = jv_string(s.data ? s.data : "", s.len);
            return true;
        }
        if (a.kind == JV_LIST && b.kind == JV_LIST) {
            *out = jv_new_list(x->arena);
            for (size_t i = 0; i < a.u.list->count; i++)
                jl_push(x->arena, out->u.list, a.u.list->items[i]);
            for (size_t i = 0; i < b.u.list->count; i++)
                jl_push(x->arena, out->u.list, b.u.list->items[i]);
            return true;
        }
    } else if (!strcmp(op, "*")) {
        if (number(a) && number(b)) {
            int64_t r;
            if (ints && __builtin_mul_overflow(integer(a), integer(b), &r))
                return int_overflow(x, line, op);
            *out = ints ? jv_int(r) : jv_float(dbl(a) * dbl(b));
            return true;
        }
        if ((a.kind == JV_STRING || a.kind == JV_LIST) && (b.kind == JV_INT || b.kind == JV_BOOL))
            return repeat(x, a, integer(b), out);
        if ((b.kind == JV_STRING || b.kind == JV_LIST) && (a.kind == JV_INT || a.kind == JV_BOOL))
            return repeat(x, b, integer(a), out);
    } else if (number(a) && number(b)) {
        if (!strcmp(op, "-")) {
            int64_t r;
            if (ints && __builtin_sub_overflow(integer(a), integer(b), &r))
                return int_overflow(x, line, op);
            *out = ints ? jv_int(r) : jv_float(dbl(a) - dbl(b));
            return true;
        }
        if (!strcmp(op, "**")) {
            if (ints && integer(b) >= 0) {
                int64_t r;
                if (!int_power(integer(a), integer(b), &r)) return int_overflow(x, line, op);
                *out = jv_int(r);
            } else {
                *out = jv_float(pow(dbl(a), dbl(b)));
            }
            return true;
        }
        if (dbl(b) == 0) return jx_fail(x, line, "division by zero");
        bool min_by_minus_1 = ints && integer(a) == INT64_MIN && integer(b) == -1;
        if (min_by_minus_1 && !strcmp(op, "%")) {   /* C would trap; Python gives 0 */
            *out = jv_int(0);
            return true;
        }
        if (min_by_minus_1 && !strcmp(op, "//")) return int_overflow(x, line, op);
        if (!strcmp(op, "/")) {
            *out = jv_float(dbl(a) / dbl(b));
            return true;
        }
        if (!strcmp(op, "//")) {
            if (ints) {
                int64_t q = integer(a) / integer(b);
                if ((integer(a) % integer(b) != 0) && ((integer(a) < 0) != (integer(b) < 0))) q--;
                *out = jv_int(q);
            } else {
                *out = jv_float(floor(dbl(a) / dbl(b)));
            }
            return true;
        }
        if (!strcmp(op, "%")) {
            if (ints) {
                int64_t r = integer(a) % integer(b);
                if (r != 0 && ((r < 0) != (integer(b) < 0))) r += integer(b);
                *out = jv_int(r);
            } else {
                double r = fmod(dbl(a), dbl(b));
                if (r != 0 && ((r < 0) != (dbl(b) < 0))) r += dbl(b);
                *out = jv_float(r);
            }
            return true;
        }
    } else if (!strcmp(op, "%") && a.kind == JV_STRING) {
        return jx_fail(x, line, "unsupported construct: string formatting with '%%' "
                                "(use ~ or |format instead)");
    }
    return jx_fail(x, line, "unsupported operand types for %s: '%s' and '%s'", op,
                   jv_type_name(a), jv_type_name(b));
}

static bool contains(jctx *x, jv needle, jv hay, int line, bool *out) {
    if (hay.kind == JV_STRING) {
        if (needle.kind != JV_STRING)
            return jx_fail(x, line, "'in <string>' needs a string on the left, not %s",
                           jv_type_name(needle));
        *out = needle.u.str.len == 0 ||
               memmem(hay.u.str.s, hay.u.str.len, needle.u.str.s, needle.u.str.len) != NULL;
        return true;
    }
    if (hay.kind == JV_LIST) {
        *out = false;
        for (size_t i = 0; i < hay.u.list->count && !*out; i++)
            *out = jv_equal(needle, hay.u.list->items[i]);
        return true;
    }
    if (hay.kind == JV_DICT) {
        *out = jd_get(hay.u.dict, needle) != NULL;
        return true;
    }
    if (hay.kind == JV_UNDEFINED) {
        *out = false;
        return true;
    }
    return jx_fail(x, line, "a %s does not support 'in'", jv_type_name(hay));
}

static bool compare(jctx *x, const jnode *n, jv a, jv b, jv *out) {
    const char *op = n->name;
    bool r = false;
    if (!strcmp(op, "in")) {
        if (!contains(x, a, b, n->line, &r)) return false;
        r = n->negated ? !r : r;
    } else if (!strcmp(op, "==")) {
        r = jv_equal(a, b);
    } else if (!strcmp(op, "!=")) {
        r = !jv_equal(a, b);
    } else {
        int order;
        if (!jv_compare(a, b, &order))
            return jx_fail(x, n->line, "'%s' is not supported between '%s' and '%s'", op,
                           jv_type_name(a), jv_type_name(b));
        r = !strcmp(op, "<") ? order < 0 : !strcmp(op, ">") ? order > 0
          : !strcmp(op, "<=") ? order <= 0 : order >= 0;
    }
    *out = jv_bool(r);
    return true;
}

/* ---- expressions ----------------------------------------------------------------------------- */

static bool eval_node(jctx *x, jframe *f, const jnode *n, jv *out) {
    if (x->failed || x->arena->failed) return false;
    jv a, b;
    switch (n->kind) {
    case JN_LITERAL: *out = n->value; return true;
    case JN_NAME: *out = lookup(x, f, n->name); return true;
    case JN_LIST:
    case JN_TUPLE:
        *out = jv_new_list(x->arena);
        if (!out->u.list) return false;
        out->u.list->is_tuple = n->kind == JN_TUPLE;
        for (size_t i = 0; i < n->count; i++) {
            if (!eval(x, f, n->kids[i], &a)) return false;
            jl_push(x->arena, out->u.list, a);
        }
        return true;
    case JN_DICT:
        *out = jv_new_dict(x->arena);
        for (size_t i = 0; i + 1 < n->count; i += 2) {
            if (!eval(x, f, n->kids[i], &a) || !eval(x, f, n->kids[i + 1], &b)) return false;
            jd_set(x->arena, out->u.dict, a, b);
        }
        return true;
    case JN_ATTR:
        return eval(x, f, n->a, &a) && attr(x, a, n->name, n->line, out);
    case JN_ITEM:
        return eval(x, f, n->a, &a) && eval(x, f, n->b, &b) && item(x, a, b, n->line, out);
    case JN_SLICE: return slice(x, f, n, out);
    case JN_CALL: return call(x, f, n, out);
    case JN_FILTER: {
        if (!eval(x, f, n->a, &a)) return false;
        jv *args, *names, *values;
        size_t nargs, nkw;
        if (!call_args(x, f, n, &args, &nargs, &names, &values, &nkw)) return false;
        return jb_filter(x, n->name, a, args, nargs, names, values, nkw, n->line, out);
    }
    case JN_TEST: {
        if (!eval(x, f, n->a, &a)) return false;
        jv *args, *names, *values;
        size_t nargs, nkw;
        if (!call_args(x, f, n, &args, &nargs, &names, &values, &nkw)) return false;
        bool r;
        if (!jb_test(x, n->name, a, args, nargs, n->line, &r)) return false;
        *out = jv_bool(n->negated ? !r : r);
        return true;
    }
    case JN_UNARY:
        if (!eval(x, f, n->a, &a)) return false;
        if (!number(a)) return jx_fail(x, n->line, "bad operand type for unary %s: '%s'", n->name,
                                       jv_type_name(a));
        if (n->name[0] == '+') *out = a.kind == JV_BOOL ? jv_int(a.u.b) : a;
        else if (a.kind != JV_FLOAT && integer(a) == INT64_MIN)
            return int_overflow(x, n->line, "-");
        else *out = a.kind == JV_FLOAT ? jv_float(-a.u.f) : jv_int(-integer(a));
        return true;
    case JN_BINARY:
        return eval(x, f, n->a, &a) && eval(x, f, n->b, &b) &&
               binary_op(x, n->name, a, b, n->line, out);
    case JN_COMPARE:
        return eval(x, f, n->a, &a) && eval(x, f, n->b, &b) && compare(x, n, a, b, out);
    case JN_AND:
        if (!eval(x, f, n->a, &a)) return false;
        if (!jv_truthy(a)) {
            *out = a;
            return true;
        }
        return eval(x, f, n->b, out);
    case JN_OR:
        if (!eval(x, f, n->a, &a)) return false;
        if (jv_truthy(a)) {
            *out = a;
            return true;
        }
        return eval(x, f, n->b, out);
    case JN_NOT:
        if (!eval(x, f, n->a, &a)) return false;
        *out = jv_bool(!jv_truthy(a));
        return true;
    case JN_CONDITIONAL:
        if (!eval(x, f, n->a, &a)) return false;
        if (jv_truthy(a)) return eval(x, f, n->b, out);
        if (n->c) return eval(x, f, n->c, out);
        *out = jv_undefined("the else of a conditional");
        return true;
    case JN_CONCAT: {
        jstr s = {.arena = x->arena};
        for (size_t i = 0; i < n->count; i++) {
            if (!eval(x, f, n->kids[i], &a)) return false;
            jv_print(&s, a);
        }
        *out = jv_string(s.data ? s.data : "", s.len);
        return true;
    }
    default:
        return jx_fail(x, n->line, "a statement where an expression belongs");
    }
}

/* ---- statements ------------------------------------------------------------------------------ */

/* eval_node, within JINJA_MAX_NESTING: a left-deep chain the parser built
 * in a loop (a ~ b ~ c ..., x|f|f|f ...) nests here too. */
static bool eval(jctx *x, jframe *f, const jnode *n, jv *out) {
    if (x->nesting >= JINJA_MAX_NESTING)
        return jx_fail(x, n->line, "the expression nests deeper than %d levels",
                       JINJA_MAX_NESTING);
    x->nesting++;
    bool ok = eval_node(x, f, n, out);
    x->nesting--;
    return ok;
}

static bool assign(jctx *x, jframe *f, const jnode *target, jv value) {
    if (target->kind == JN_NAME) {
        set_var(x, f, target->name, value);
        return true;
    }
    jv ns = lookup(x, f, target->a->name);
    if (ns.kind != JV_DICT || !ns.u.dict->is_namespace)
        return jx_fail(x, target->line, "cannot set '%s.%s': '%s' is not a namespace()",
                       target->a->name, target->name, target->a->name);
    jd_set(x->arena, ns.u.dict, jv_cstring(target->name), value);
    return true;
}

static bool unpack(jctx *x, jframe *f, const jnode *targets, jv value, int line) {
    if (targets->count == 1) return assign(x, f, targets->kids[0], value);
    if (value.kind != JV_LIST || value.u.list->count != targets->count)
        return jx_fail(x, line, "cannot unpack a %s into %zu names", jv_type_name(value),
                       targets->count);
    for (size_t i = 0; i < targets->count; i++)
        if (!assign(x, f, targets->kids[i], value.u.list->items[i])) return false;
    return true;
}

/* The items a for loop walks: a list's items, a dict's keys, a string's characters. */
static bool iterable(jctx *x, jv v, int line, jlist **out) {
    jv list = jv_new_list(x->arena);
    if (!list.u.list) return false;
    if (v.kind == JV_LIST) {
        *out = v.u.list;
    } else if (v.kind == JV_DICT && !v.u.dict->is_namespace) {
        for (size_t i = 0; i < v.u.dict->count; i++)
            jl_push(x->arena, list.u.list, v.u.dict->keys[i]);
        *out = list.u.list;
    } else if (v.kind == JV_STRING) {
        for (size_t i = 0; i < v.u.str.len;) {
            size_t k = i + 1;
            while (k < v.u.str.len && ((unsigned char)v.u.str.s[k] & 0xC0) == 0x80) k++;
            jl_push(x->arena, list.u.list, jv_string(v.u.str.s + i, k - i));
            i = k;
        }
        *out = list.u.list;
    } else if (v.kind == JV_UNDEFINED) {
        *out = list.u.list;
    } else {
        return jx_fail(x, line, "a %s is not iterable", jv_type_name(v));
    }
    return true;
}

static flow render_for(jctx *x, jframe *f, const jnode *n) {
    jv seq;
    jlist *items = NULL;
    if (!eval(x, f, n->a, &seq) || !iterable(x, seq, n->line, &items)) return FLOW_ERROR;
    if (n->d) {   /* {% for x in xs if cond %}: filtered before the loop counts */
        jlist *kept = jv_new_list(x->arena).u.list;
        for (size_t i = 0; i < items->count; i++) {
            jframe *g = new_frame(x, f);
            jv keep;
            if (!g || !unpack(x, g, n, items->items[i], n->line) || !eval(x, g, n->d, &keep))
                return FLOW_ERROR;
            if (jv_truthy(keep)) jl_push(x->arena, kept, items->items[i]);
        }
        items = kept;
    }
    size_t count = items->count;
    for (size_t i = 0; i < count; i++) {
        jframe *g = new_frame(x, f);
        if (!g || !unpack(x, g, n, items->items[i], n->line)) return FLOW_ERROR;
        jv loop = jv_new_dict(x->arena);
        jdict *d = loop.u.dict;
        if (!d) return FLOW_ERROR;
        jd_set(x->arena, d, jv_cstring("index"), jv_int((int64_t)i + 1));
        jd_set(x->arena, d, jv_cstring("index0"), jv_int((int64_t)i));
        jd_set(x->arena, d, jv_cstring("revindex"), jv_int((int64_t)(count - i)));
        jd_set(x->arena, d, jv_cstring("revindex0"), jv_int((int64_t)(count - i - 1)));
        jd_set(x->arena, d, jv_cstring("first"), jv_bool(i == 0));
        jd_set(x->arena, d, jv_cstring("last"), jv_bool(i + 1 == count));
        jd_set(x->arena, d, jv_cstring("length"), jv_int((int64_t)count));
        jd_set(x->arena, d, jv_cstring("depth"), jv_int(1));
        jd_set(x->arena, d, jv_cstring("depth0"), jv_int(0));
        jd_set(x->arena, d, jv_cstring("previtem"),
               i ? items->items[i - 1] : jv_undefined("loop.previtem"));
        jd_set(x->arena, d, jv_cstring("nextitem"),
               i + 1 < count ? items->items[i + 1] : jv_undefined("loop.nextitem"));
        jv *self = ja_alloc(x->arena, sizeof *self);
        if (!self) return FLOW_ERROR;
        *self = loop;
        jd_set(x->arena, d, jv_cstring("cycle"), (jv){.kind = JV_METHOD, .u.fn = {"cycle", self}});
        set_var(x, g, "loop", loop);
        flow fl = render(x, g, n->b);
        if (fl == FLOW_ERROR) return fl;
        if (fl == FLOW_BREAK) break;
    }
    if (count == 0 && n->c) return render(x, f, n->c);
    return FLOW_OK;
}

static flow render_node(jctx *x, jframe *f, const jnode *n) {
    jv v;
    switch (n->kind) {
    case JN_TEXT: js_append(x->out, n->value.u.str.s, n->value.u.str.len); return FLOW_OK;
    case JN_OUTPUT:
        if (!eval(x, f, n->a, &v)) return FLOW_ERROR;
        if (v.kind == JV_MACRO || v.kind == JV_BUILTIN || v.kind == JV_METHOD) {
            jx_fail(x, n->line, "printing a %s (a call's parentheses are missing?)",
                    jv_type_name(v));
            return FLOW_ERROR;
        }
        jv_print(x->out, v);
        return FLOW_OK;
    case JN_IF:
        if (!eval(x, f, n->a, &v)) return FLOW_ERROR;
        if (jv_truthy(v)) return render(x, f, n->b);
        return n->c ? (n->c->kind == JN_IF ? render_node(x, f, n->c) : render(x, f, n->c))
                    : FLOW_OK;
    case JN_FOR: return render_for(x, f, n);
    case JN_SET:
        if (!eval(x, f, n->a, &v) || !unpack(x, f, n, v, n->line)) return FLOW_ERROR;
        return FLOW_OK;
    case JN_SET_BLOCK:
    case JN_FILTER_BLOCK:
    case JN_GENERATION: {
        if (n->kind == JN_GENERATION) return render(x, f, n->b);
        jstr body = {.arena = x->arena}, *saved = x->out;
        x->out = &body;
        flow fl = render(x, f, n->b);
        x->out = saved;
        if (fl != FLOW_OK) return fl;
        v = jv_string(body.data ? body.data : "", body.len);
        if (n->kind == JN_SET_BLOCK) {
            set_var(x, f, n->kids[0]->name, v);
            return FLOW_OK;
        }
        /* apply the chain innermost first: the node with a == NULL */
        const jnode *chain[32];
        size_t depth = 0;
        for (const jnode *c = n->a; c && depth < 32; c = c->a) chain[depth++] = c;
        while (depth--) {
            const jnode *fn = chain[depth];
            jv *args, *names, *values;
            size_t nargs, nkw;
            if (!call_args(x, f, fn, &args, &nargs, &names, &values, &nkw) ||
                !jb_filter(x, fn->name, v, args, nargs, names, values, nkw, fn->line, &v))
                return FLOW_ERROR;
        }
        jv_print(x->out, v);
        return FLOW_OK;
    }
    case JN_MACRO:
        set_var(x, f, n->name, (jv){.kind = JV_MACRO, .u.macro = {n, f}});
        return FLOW_OK;
    case JN_CALL_BLOCK: {
        jv caller = {.kind = JV_MACRO, .u.macro = {n->b, f}};
        if (!call_with(x, f, n->a, &caller, &v)) return FLOW_ERROR;
        jv_print(x->out, v);
        return FLOW_OK;
    }
    case JN_BREAK: return FLOW_BREAK;
    case JN_CONTINUE: return FLOW_CONTINUE;
    default:
        jx_fail(x, n->line, "an expression where a statement belongs");
        return FLOW_ERROR;
    }
}

static flow render(jctx *x, jframe *f, const jnode *body) {
    for (size_t i = 0; i < body->count; i++) {
        flow fl = render_node(x, f, body->kids[i]);
        if (x->arena->failed) {
            if (x->arena->over_budget)
                jx_fail(x, body->kids[i]->line, "the render needs more than %zu MiB (a loop "
                        "that runs away?)", JINJA_ARENA_MAX >> 20);
            else if (x->arena->too_deep)
                jx_fail(x, body->kids[i]->line, "a value nests deeper than %d levels (a list "
                        "or dict inside itself, again and again?)", JINJA_MAX_NESTING);
            else
                jx_fail(x, body->kids[i]->line, "out of memory");
            return FLOW_ERROR;
        }
        if (fl != FLOW_OK) return fl;
    }
    return FLOW_OK;
}

/* ---- the entry point ------------------------------------------------------------------------- */

char *jinja_render_value(const char *source, jv variables, jarena *arena, size_t *len) {
    jtokens tokens = {0};
    if (!jinja_lex(arena, source, strlen(source), &tokens)) return NULL;
    jnode *root = jinja_parse(arena, &tokens);
    if (!root) return NULL;
    jctx x = {.arena = arena};
    x.globals = new_frame(&x, NULL);
    if (!x.globals) return tl_fail("tl_jinja_render: out of memory");
    if (variables.kind == JV_DICT)
        for (size_t i = 0; i < variables.u.dict->count; i++)
            if (variables.u.dict->keys[i].kind == JV_STRING)
                jd_set(arena, &x.globals->vars, variables.u.dict->keys[i],
                       variables.u.dict->values[i]);
    jstr out = {.arena = arena};
    x.out = &out;
    flow fl = render(&x, new_frame(&x, x.globals), root);
    if (fl == FLOW_ERROR || x.failed) return NULL;
    if (fl != FLOW_OK)
        return tl_fail("tl_jinja_render: {%% break %%} or {%% continue %%} outside a loop");
    char *result = malloc(out.len + 1);
    if (!result) return tl_fail("tl_jinja_render: out of memory");
    if (out.len) memcpy(result, out.data, out.len);
    result[out.len] = '\0';
    if (len) *len = out.len;
    return result;
}
